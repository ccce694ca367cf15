//! The configuration loader against terraform 1.0.3: override files merge into `module`
//! blocks argument by argument, and `.tofu` files exist only for the tofu flavor.

use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{
    mirror, module_records, modules_json_path, read_modules_json, run_ok, stderr, GitRepo, TestEnv,
};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

/// A bare git repository `<base>/mod.git` (tag v1) holding one module with an output.
pub(crate) fn module_repo(base: &Path) -> String {
    GitRepo::init(
        base.join("mod-src"),
        &[("main.tf", "output \"msg\" {\n  value = \"hello\"\n}\n")],
    )
    .commit("init")
    .tag("v1")
    .clone_bare(base.join("mod.git"))
    .source("v1")
}

/// The `(Key, Source, Version)` of each `modules.json` record.
fn records(dir: &Path) -> Vec<(String, String, Option<String>)> {
    module_records(dir)
        .into_iter()
        .map(|r| (r.key, r.source, r.version))
        .collect()
}

/// An override file that gives only `version` changes the version the primary block's
/// registry source installs; terraform and tstore pick the same one.
#[test]
fn an_override_file_sets_a_module_version() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let reg = ModuleRegistry::start();
    for v in ["1.0.0", "1.1.0", "2.0.0"] {
        reg.publish("acme/mod/null", v, &git);
    }
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let files = [
        (
            "main.tf",
            format!(
                "module \"m\" {{\n  source  = \"{host}/acme/mod/null\"\n  version = \"~> 1.0\"\n}}\n"
            ),
        ),
        (
            "override.tf",
            "module \"m\" {\n  version = \"2.0.0\"\n}\n".to_owned(),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(n, c)| (*n, c.as_str())).collect();
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&ours)
        .ok();
    let want = records(&theirs);
    assert!(
        want.iter()
            .any(|(k, _, v)| k == "m" && v.as_deref() == Some("2.0.0")),
        "terraform installed {want:?}"
    );
    assert_eq!(records(&ours), want);
}

/// terraform reads no `.tofu` file: a broken one changes nothing under `--flavor
/// terraform`, while the tofu flavor reads it and names it in the error.
#[test]
fn tofu_files_are_read_only_by_the_tofu_flavor() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    // Unpacked: the lock file is then exactly terraform's (a packed mirror adds the zip's
    // zh:, a documented difference).
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let files = [
        ("main.tf", NULL_CONFIG),
        ("broken.tofu", "this is { not valid\n"),
        ("main.tofu", "terraform {\n  required_providers {\n    nope = {\n      source = \"acme/nope\"\n    }\n  }\n}\n"),
    ];
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore().cli_config(&cfg).arg("init").arg(&ours).ok();
    assert_eq!(
        fs_err::read_to_string(ours.join(".terraform.lock.hcl")).unwrap(),
        fs_err::read_to_string(theirs.join(".terraform.lock.hcl")).unwrap(),
        "the lock files differ"
    );

    let tofu = env.checkout("tofu", &files);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .env("TSTORE_FLAVOR", "tofu")
        .arg("init")
        .arg(&tofu)
        .fails();
    let err = stderr(&out);
    assert!(err.contains("broken.tofu:1"), "{err}");
}

/// A CLI configuration in JSON (as HCL 1 reads it: objects become blocks) installs from
/// the same filesystem mirror for terraform and tstore; a `TF_CLI_CONFIG_FILE` naming a
/// missing file is skipped by both.
#[test]
fn json_cli_configuration_and_a_missing_one() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.root.path().join("cli.tfrc.json");
    fs_err::write(
        &cfg,
        serde_json::json!({
            "provider_installation": {
                "filesystem_mirror": [{ "path": mirror_dir, "include": ["hashicorp/*"] }],
                "direct": { "exclude": ["hashicorp/*"] },
            }
        })
        .to_string(),
    )
    .unwrap();
    let theirs = env.checkout("theirs", &[("main.tf", NULL_CONFIG)]);
    let ours = env.checkout("ours", &[("main.tf", NULL_CONFIG)]);
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore().cli_config(&cfg).arg("init").arg(&ours).ok();
    assert_eq!(
        fs_err::read_to_string(ours.join(".terraform.lock.hcl")).unwrap(),
        fs_err::read_to_string(theirs.join(".terraform.lock.hcl")).unwrap()
    );

    let missing = env.root.path().join("no-such.tfrc");
    let files = [("main.tf", "locals {\n  x = 1\n}\n")];
    let theirs = env.checkout("theirs-missing", &files);
    let ours = env.checkout("ours-missing", &files);
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &missing)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore()
        .cli_config(&missing)
        .arg("init")
        .arg(&ours)
        .ok();
}

/// A local module reached through a symlinked directory is recorded with the symlink
/// resolved, as terraform records it, so `path.module` is the same after either init.
#[test]
fn a_symlinked_local_module_gets_terraforms_dir() {
    let env = TestEnv::new();
    let files = [
        ("main.tf", "module \"l\" {\n  source = \"./link\"\n}\n"),
        (
            "real/main.tf",
            "module \"inner\" {\n  source = \"../shared\"\n}\n",
        ),
        ("shared/main.tf", "output \"x\" {\n  value = 1\n}\n"),
    ];
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    for dir in [&theirs, &ours] {
        std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
    }
    run_ok(
        env.terraform(&theirs)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore().no_fuse().arg("init").arg(&ours).ok();
    let want = records(&theirs);
    assert!(
        want.contains(&("l".to_owned(), "./link".to_owned(), None)),
        "{want:?}"
    );
    assert_eq!(records(&ours), want);
    let dir_of = |d: &std::path::Path, key: &str| -> String {
        module_records(d)
            .into_iter()
            .find(|r| r.key == key)
            .unwrap()
            .dir
    };
    assert_eq!(dir_of(&ours, "l"), "real");
    assert_eq!(dir_of(&ours, "l"), dir_of(&theirs, "l"));
}

/// `//*` in an archive source names the archive's single top-level directory; terraform and
/// tstore record the same directory for it.
#[test]
fn an_archive_subdir_glob_selects_the_single_top_level_directory() {
    let env = TestEnv::new();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    {
        let mut tar = tar::Builder::new(&mut gz);
        let body = b"output \"x\" {\n  value = \"from the archive\"\n}\n";
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, "pkg-1.0/main.tf", &body[..])
            .unwrap();
        tar.finish().unwrap();
    }
    let reg = ModuleRegistry::start();
    reg.archive("pkg.tar.gz", gz.finish().unwrap());
    let url = format!("{}/archives/pkg.tar.gz//*", reg.server.url());
    let main = format!("module \"a\" {{\n  source = \"{url}\"\n}}\n");
    let theirs = env.checkout("theirs", &[("main.tf", &main)]);
    let ours = env.checkout("ours", &[("main.tf", &main)]);
    run_ok(
        env.terraform(&theirs)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore().no_fuse().arg("init").arg(&ours).ok();
    let text = |d: &Path| fs_err::read_to_string(modules_json_path(d)).unwrap();
    assert!(
        text(&theirs).contains(".terraform/modules/a/pkg-1.0"),
        "{}",
        text(&theirs)
    );
    assert_eq!(records(&ours), records(&theirs));
    let dir = module_records(&ours)
        .into_iter()
        .find(|r| r.key == "a")
        .unwrap()
        .dir;
    assert_eq!(dir, ".terraform/modules/a/pkg-1.0");
    assert!(ours.join(".terraform/modules/a/pkg-1.0/main.tf").is_file());
}

/// `TF_DATA_DIR` moves `.terraform` for tstore as for terraform: providers and modules land
/// in it, `modules.json` records the same directories, and terraform plans with it.
#[test]
fn tf_data_dir_moves_the_data_directory() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let main = format!(
        "{NULL_CONFIG}module \"g\" {{\n  source = \"{git}\"\n}}\nmodule \"l\" {{\n  source = \"./local\"\n}}\n"
    );
    let files = [
        ("main.tf", main.as_str()),
        ("local/main.tf", "output \"y\" {\n  value = 2\n}\n"),
    ];
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .env("TF_DATA_DIR", "data")
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore()
        .cli_config(&cfg)
        .env("TF_DATA_DIR", "data")
        .no_fuse()
        .arg("init")
        .arg(&ours)
        .ok();
    assert!(!ours.join(".terraform").exists(), "tstore wrote .terraform");
    assert!(ours
        .join("data/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
        .is_symlink());
    let records_in = |d: &Path| -> Vec<(String, String)> {
        read_modules_json(&d.join("data/modules/modules.json"))
            .into_iter()
            .map(|r| (r.key, r.dir))
            .collect()
    };
    let want = records_in(&theirs);
    assert!(
        want.iter().any(|(_, dir)| dir.contains("data/modules/g")),
        "{want:?}"
    );
    assert_eq!(records_in(&ours), want);
    assert_eq!(
        fs_err::read_to_string(ours.join(".terraform.lock.hcl")).unwrap(),
        fs_err::read_to_string(theirs.join(".terraform.lock.hcl")).unwrap()
    );
    run_ok(
        env.terraform(&ours)
            .env("TF_DATA_DIR", "data")
            .args(["validate", "-no-color"]),
    );
}
