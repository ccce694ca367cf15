//! Which flavor `tstore init` follows when none is given, and what it reads: the first rule
//! that answers, in order (`--flavor` / `TSTORE_FLAVOR`, `.tstore.hcl`, the lock file's
//! header then its hosts, `.tofu` files, the only tool on `PATH`, the default), said in
//! `--json` as `flavor.decided_by`; `TSTORE_LOG=debug` names the CLI configuration files
//! looked at and read, the store and the mount path; a provider found nowhere names the
//! CLI configuration file that was read.
//!
//! These tests run tstore with no `TSTORE_FLAVOR` (unlike `env.tstore()`) and with a
//! `PATH` of one directory holding only the stubs a test puts there: a stub is never run,
//! only its name is looked at.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::{lock_file, mirror, run_ok, stderr, Layout, NullMirror, TestEnv, Tstore};

use crate::common::{json, TstoreEnv as _, NULL_CONFIG};

/// `tstore` without any flavor setting, `PATH` = `path_dir` only, no FUSE, the CLI
/// configuration `cfg` when given.
fn tstore_plain(env: &TestEnv, path_dir: &Path, cfg: Option<&Path>) -> Tstore {
    env.tstore_plain()
        .env("PATH", path_dir)
        .no_fuse()
        .maybe_cli_config(cfg)
}

/// A directory for `PATH` holding an executable stub for each name in `tools`.
fn path_with_tools(env: &TestEnv, name: &str, tools: &[&str]) -> PathBuf {
    let dir = env.root.path().join("path").join(name);
    fs_err::create_dir_all(&dir).unwrap();
    for tool in tools {
        let stub = dir.join(tool);
        fs_err::write(&stub, "#!/bin/sh\nexit 99\n").unwrap();
        fs_err::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `tstore init --json DIR`, which must succeed; its JSON document.
fn init_json(tstore: Tstore, dir: &Path) -> serde_json::Value {
    json(&tstore.args(["init", "--json"]).arg(dir).ok())
}

#[track_caller]
fn assert_flavor(report: &serde_json::Value, name: &str, decided_by: &str) {
    assert_eq!(
        report["flavor"],
        serde_json::json!({ "name": name, "decided_by": decided_by }),
        "{report:#}"
    );
    assert_eq!(report["format_version"], 1);
}

/// A mirror holding the real null provider under OpenTofu's registry host too (what
/// `hashicorp/null` means under the tofu flavor), beside terraform's.
fn add_tofu_null(mirror_dir: &Path) -> String {
    let tofu_null = mirror::NULL_ADDR.replacen("registry.terraform.io", "registry.opentofu.org", 1);
    mirror::write_unpacked(
        mirror_dir,
        &tofu_null,
        mirror::NULL_VERSION,
        mirror::PLATFORM,
        &mirror::null_files(),
    );
    tofu_null
}

/// The lock file the real terraform 1.0.3 writes for `NULL_CONFIG` from the mirror (an
/// unpacked one: from a packed mirror tstore adds the verified zip's `zh:`, on purpose).
fn terraform_written_lock(env: &TestEnv, cfg: &Path) -> String {
    let theirs = env.checkout("theirs", &[("main.tf", NULL_CONFIG)]);
    run_ok(&mut env.terraform_init(&theirs, cfg));
    let lock = lock_file(&theirs);
    assert!(
        lock.contains("maintained automatically by \"terraform init\""),
        "{lock}"
    );
    assert!(
        lock.contains("provider \"registry.terraform.io/hashicorp/null\""),
        "{lock}"
    );
    lock
}

/// A lock file terraform wrote, with no flavor given and no tool on `PATH`: the lock file
/// decides terraform, by its header and, without the header, by its hosts; tstore keeps
/// the file byte for byte and terraform plans with what tstore linked.
#[test]
fn a_lock_file_terraform_wrote_keeps_its_header_and_hosts() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let lock = terraform_written_lock(&env, &cfg);
    let no_tools = path_with_tools(&env, "none", &[]);

    let ours = env.checkout(
        "ours",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let report = init_json(tstore_plain(&env, &no_tools, Some(&cfg)), &ours);
    assert_flavor(&report, "terraform", "lock file header");
    assert_eq!(report["lock_file"], "unchanged", "{report:#}");
    assert!(report.get("lock_entries_rewritten").is_none(), "{report:#}");
    assert_eq!(lock_file(&ours), lock, "the lock file changed");
    assert!(ours
        .join(".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
        .exists());
    env.assert_terraform_plans_null(&ours);

    // Without its header, the hosts of its entries say the same.
    let headless: String = lock
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!headless.contains("terraform init"));
    let bare = env.checkout(
        "bare",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &headless)],
    );
    let report = init_json(tstore_plain(&env, &no_tools, Some(&cfg)), &bare);
    assert_flavor(&report, "terraform", "lock file hosts");
    assert_eq!(lock_file(&bare), headless, "the lock file changed");
}

/// `flavor = "terraform"` at the top of a `.tstore.hcl` above the working directory
/// decides before the `.tofu` files of the directory and the tool on `PATH`.
#[test]
fn the_repository_file_sets_the_flavor() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    fs_err::write(
        env.work.join(".tstore.hcl"),
        "flavor = \"terraform\"\n\nmodules {\n  default = \"auto\"\n}\n",
    )
    .unwrap();
    let dir = env.checkout(
        "stack",
        &[
            ("main.tf", NULL_CONFIG),
            ("extra.tofu", "# only tofu reads this\n"),
        ],
    );
    let only_tofu = path_with_tools(&env, "tofu", &["tofu"]);
    let report = init_json(tstore_plain(&env, &only_tofu, Some(&cfg)), &dir);
    assert_flavor(&report, "terraform", ".tstore.hcl");
    let lock = lock_file(&dir);
    assert!(
        lock.starts_with("# This file is maintained automatically by \"terraform init\"."),
        "{lock}"
    );
    assert!(
        lock.contains("provider \"registry.terraform.io/hashicorp/null\""),
        "{lock}"
    );
    env.assert_terraform_plans_null(&dir);

    // --explain says it in words, naming the file.
    let out = tstore_plain(&env, &only_tofu, Some(&cfg))
        .args(["init", "--explain"])
        .arg(&dir)
        .ok();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "Flavor: terraform, decided by flavor in {}",
            env.work.join(".tstore.hcl").display()
        )),
        "{said}"
    );
}

/// `.tofu` files in the working directory decide tofu, before the tool on `PATH`.
#[test]
fn tofu_files_decide_tofu() {
    let NullMirror { env, cfg, mirror } = TestEnv::with_null_mirror(Layout::Unpacked);
    let tofu_null = add_tofu_null(&mirror);
    let dir = env.checkout("stack", &[("main.tofu", NULL_CONFIG)]);
    let only_terraform = path_with_tools(&env, "terraform", &["terraform"]);
    let report = init_json(tstore_plain(&env, &only_terraform, Some(&cfg)), &dir);
    assert_flavor(&report, "tofu", ".tofu files");
    let lock = lock_file(&dir);
    assert!(
        lock.starts_with("# This file is maintained automatically by \"tofu init\"."),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("provider \"{tofu_null}\"")),
        "{lock}"
    );
}

/// With nothing else to go by, the only one of `tofu` and `terraform` on `PATH` decides;
/// both, or neither, leave the default (tofu).
#[test]
fn the_only_tool_on_path_decides() {
    let NullMirror { env, cfg, mirror } = TestEnv::with_null_mirror(Layout::Unpacked);
    let only_terraform = path_with_tools(&env, "terraform", &["terraform"]);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let report = init_json(tstore_plain(&env, &only_terraform, Some(&cfg)), &dir);
    assert_flavor(&report, "terraform", "PATH");
    let lock = lock_file(&dir);
    assert!(
        lock.starts_with("# This file is maintained automatically by \"terraform init\"."),
        "{lock}"
    );
    assert!(
        lock.contains("provider \"registry.terraform.io/hashicorp/null\""),
        "{lock}"
    );
    env.assert_terraform_plans_null(&dir);

    add_tofu_null(&mirror);
    let both = path_with_tools(&env, "both", &["tofu", "terraform"]);
    let dir = env.checkout("other", &[("main.tf", NULL_CONFIG)]);
    let report = init_json(tstore_plain(&env, &both, Some(&cfg)), &dir);
    assert_flavor(&report, "tofu", "default");
}

/// `--flavor` (and `TSTORE_FLAVOR`) win over every other rule. `--flavor tofu` on a lock
/// file terraform wrote does what OpenTofu does, said as a warning and in `--json`: the
/// `registry.terraform.io/hashicorp/null` entry becomes `registry.opentofu.org`'s at the
/// same version, with tofu's header.
#[test]
fn the_flag_and_the_variable_override_every_rule() {
    let NullMirror { env, cfg, mirror } = TestEnv::with_null_mirror(Layout::Unpacked);
    let lock = terraform_written_lock(&env, &cfg);
    let tofu_null = add_tofu_null(&mirror);
    fs_err::write(env.work.join(".tstore.hcl"), "flavor = \"terraform\"\n").unwrap();
    let only_terraform = path_with_tools(&env, "terraform", &["terraform"]);
    let files = [
        ("main.tf", NULL_CONFIG),
        (".terraform.lock.hcl", lock.as_str()),
    ];

    let dir = env.checkout("flag", &files);
    let out = tstore_plain(&env, &only_terraform, Some(&cfg))
        .args(["--flavor", "tofu"])
        .args(["init", "--json"])
        .arg(&dir)
        .ok();
    let report = json(&out);
    assert_flavor(&report, "tofu", "--flavor");
    assert_eq!(
        report["lock_entries_rewritten"],
        serde_json::json!([{ "from": mirror::NULL_ADDR, "to": tofu_null }]),
        "{report:#}"
    );
    let warned = stderr(&out);
    assert!(
        warned.contains("Dependency lock file entries automatically updated")
            && warned.contains(&format!("{} => {tofu_null}", mirror::NULL_ADDR)),
        "{warned}"
    );
    let new = lock_file(&dir);
    assert!(
        new.starts_with("# This file is maintained automatically by \"tofu init\"."),
        "{new}"
    );
    assert!(
        new.contains(&format!(
            "provider \"{tofu_null}\" {{\n  version     = \"2.1.2\""
        )),
        "{new}"
    );
    assert!(!new.contains(mirror::NULL_ADDR), "{new}");

    // TSTORE_FLAVOR the same, named as the variable.
    let dir = env.checkout("variable", &files);
    let tstore = tstore_plain(&env, &only_terraform, Some(&cfg)).env("TSTORE_FLAVOR", "terraform");
    let report = init_json(tstore, &dir);
    assert_flavor(&report, "terraform", "TSTORE_FLAVOR");
    assert_eq!(lock_file(&dir), lock);
}

/// `TSTORE_LOG=debug` names the CLI configuration files looked at and the one read, says
/// that a `~/.tofurc` the terraform flavor does not read exists, and names the store, the
/// mount path and the flavor with its rule.
#[test]
fn the_debug_log_says_what_was_read() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let terraformrc = env.home.join(".terraformrc");
    fs_err::copy(&cfg, &terraformrc).unwrap();
    let tofurc = env.home.join(".tofurc");
    fs_err::write(&tofurc, "# the user's OpenTofu settings\n").unwrap();
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let no_tools = path_with_tools(&env, "none", &[]);
    let out = tstore_plain(&env, &no_tools, None)
        .env("TSTORE_LOG", "debug")
        .args(["--flavor", "terraform", "init"])
        .arg(&dir)
        .ok();
    let log = stderr(&out);
    for line in [
        format!(
            "CLI configuration (terraform): looked at {}, {}",
            terraformrc.display(),
            env.home.join(".terraform.d/*.tfrc").display()
        ),
        format!(
            "CLI configuration: read the CLI configuration file {}",
            terraformrc.display()
        ),
        format!(
            "{} exists but is not read under the terraform flavor",
            tofurc.display()
        ),
        format!("store {}", env.store.display()),
        format!("mount path {}", env.mount.display()),
        "flavor terraform: decided by --flavor".to_owned(),
    ] {
        assert!(log.contains(&line), "no {line:?} in:\n{log}");
    }
}

/// A provider no installation method has: the hint names the CLI configuration file that
/// was read (here `~/.terraformrc`, or the file `TF_CLI_CONFIG_FILE` names), never a
/// variable that is not set.
#[test]
fn a_provider_found_nowhere_names_the_configuration_read() {
    let env = TestEnv::new();
    let empty_mirror = env.root.path().join("empty-mirror");
    fs_err::create_dir_all(&empty_mirror).unwrap();
    let cfg = env.cli_config_fs_mirror(&empty_mirror);
    let terraformrc = env.home.join(".terraformrc");
    fs_err::copy(&cfg, &terraformrc).unwrap();
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let no_tools = path_with_tools(&env, "none", &[]);

    let out = tstore_plain(&env, &no_tools, None)
        .args(["--flavor", "terraform", "init"])
        .arg(&dir)
        .fails();
    let said = stderr(&out);
    assert!(
        said.contains("was not found in any of the search locations"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "tstore read the CLI configuration file {}",
            terraformrc.display()
        )),
        "{said}"
    );
    assert!(!said.contains("TF_CLI_CONFIG_FILE"), "{said}");

    let out = tstore_plain(&env, &no_tools, Some(&cfg))
        .args(["--flavor", "terraform", "init"])
        .arg(&dir)
        .fails();
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "tstore read the CLI configuration file {}",
            cfg.display()
        )),
        "{said}"
    );
}

/// A root with modules and no providers: the registry host its module lock file names
/// decides (here tofu, with only terraform on `PATH`), so its locked calls are not moved to
/// the other tool's registry and upgraded on the way.
#[test]
fn the_module_lock_hosts_decide_for_a_root_without_providers() {
    use tstore_test_support::module_registry::ModuleRegistry;
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let repo = crate::config_loader::module_repo(&env.root.path().join("git"));
    reg.publish("acme/mod/null", "1.0.0", &repo);
    // Both default registry hosts served by the loopback registry.
    let defaults: String = ["registry.opentofu.org", "registry.terraform.io"]
        .iter()
        .map(|h| {
            format!(
                "host \"{h}\" {{\n  services = {{\n    \"modules.v1\" = \"{}\"\n  }}\n}}\n",
                reg.modules_url()
            )
        })
        .collect();
    let cfg = reg.write_cli_config(&env.root.path().join("cli.tfrc"), &defaults);
    let main = "module \"m\" {\n  source  = \"acme/mod/null\"\n  version = \"~> 1.0\"\n}\n";
    let dir = env.checkout("w", &[("main.tf", main)]);
    let only_terraform = path_with_tools(&env, "terraform-only", &["terraform"]);
    // git itself, which the registry's `git::` locations need (not a tool the rule looks at).
    let git = String::from_utf8(run_ok(Command::new("sh").args(["-c", "command -v git"])).stdout)
        .unwrap();
    std::os::unix::fs::symlink(git.trim(), only_terraform.join("git")).unwrap();
    let first = tstore_plain(&env, &only_terraform, Some(&cfg)).env("TSTORE_FLAVOR", "tofu");
    assert_flavor(&init_json(first, &dir), "tofu", "TSTORE_FLAVOR");
    let lock = fs_err::read_to_string(dir.join(".tstore.lock.hcl")).unwrap();
    assert!(
        lock.contains("registry.opentofu.org/acme/mod/null"),
        "{lock}"
    );

    reg.publish("acme/mod/null", "1.1.0", &repo);
    let report = init_json(tstore_plain(&env, &only_terraform, Some(&cfg)), &dir);
    assert_flavor(&report, "tofu", "module lock file hosts");
    assert_eq!(
        fs_err::read_to_string(dir.join(".tstore.lock.hcl")).unwrap(),
        lock,
        "the module lock changed"
    );
}

/// The search for `.tstore.hcl` stops at the repository's root (the directory holding
/// `.git`), ignores a file owned by neither the user nor root (another user's, in a
/// world-writable parent of a shared host), and a directory of that name fails nothing.
#[test]
fn a_repository_file_above_the_repository_or_of_another_user_decides_nothing() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let no_tools = path_with_tools(&env, "none", &[]);
    let decided_by = |dir: &Path| -> String {
        let report = init_json(tstore_plain(&env, &no_tools, Some(&cfg)), dir);
        report["flavor"]["decided_by"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // Configurations without providers: the flavor is reported, nothing depends on it.
    // Above the repository root: not read.
    fs_err::write(env.work.join(".tstore.hcl"), "flavor = \"terraform\"\n").unwrap();
    let repo = env.checkout("repo/stack", &[("main.tf", "")]);
    fs_err::create_dir(env.work.join("repo/.git")).unwrap();
    assert_eq!(decided_by(&repo), "default");
    // Without `.git`, the same file above is the repository's.
    let plain = env.checkout("plain/stack", &[("main.tf", "")]);
    assert_eq!(decided_by(&plain), ".tstore.hcl");
    // Another user's file: ignored (the tests run as root, who may give it away).
    let shared = env.root.path().join("shared");
    let below = shared.join("alice/stack");
    fs_err::create_dir_all(&below).unwrap();
    fs_err::write(below.join("main.tf"), "").unwrap();
    fs_err::write(shared.join(".tstore.hcl"), "flavor = \"terraform\"\n").unwrap();
    std::os::unix::fs::chown(shared.join(".tstore.hcl"), Some(4242), Some(4242)).unwrap();
    assert_eq!(decided_by(&below), "default");
    // A directory of that name: no error, not read.
    fs_err::remove_file(shared.join(".tstore.hcl")).unwrap();
    fs_err::create_dir(shared.join(".tstore.hcl")).unwrap();
    assert_eq!(decided_by(&below), "default");
}
