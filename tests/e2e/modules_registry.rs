//! Registry modules and http archives: version constraints through a module registry
//! (`modules.v1`, `204` + `X-Terraform-Get`), archives of every format, the same records as
//! `terraform init`; an archive URL revalidated (`If-None-Match`) and ingested again when its
//! bytes change; an exactly pinned version in the store needs no registry; bad registry and
//! archive sources fail clearly and write nothing.

use std::collections::BTreeSet;
use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{run_ok, stderr, stdout, ModuleRecord, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::{json, sh};
use crate::modules_fixture::{
    checkout, env_with_git_dir, full_fixture, module_packages, package_repo, records,
};

/// Registry modules with version constraints (`modules.v1` through a CLI-config `host`
/// block, `204` + `X-Terraform-Get`, git and relative archive locations) and http archives
/// (zip, tar.gz, tar.xz, tar.bz2, `?archive=`, a page's `X-Terraform-Get`): the same
/// modules.json records as `terraform init`, then `validate` and `plan` offline, and a later
/// `terraform init` trusts the install.
#[test]
fn full_fixture_with_registry_and_archives_matches_terraform() {
    let (env, base) = env_with_git_dir();
    let (reg, cfg, extra) = full_fixture(&env, &base, None);

    let theirs = checkout(&env, "theirs", &base, None);
    fs_err::write(theirs.join("remote.tf"), &extra).unwrap();
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .arg("init")
            .arg("-no-color"),
    );
    let ours = checkout(&env, "ours", &base, None);
    fs_err::write(ours.join("remote.tf"), &extra).unwrap();
    let before = reg.server.requests().len();
    let out = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg("--json")
        .arg(&ours)
        .ok();
    let report = json(&out);
    let theirs_records = records(&theirs);
    assert_eq!(records(&ours), theirs_records);
    assert!(
        theirs_records.contains(&ModuleRecord::new(
            "reg",
            &format!("{}/acme/gitpkg/null", reg.host()),
            Some("1.1.0"),
            ".terraform/modules/reg"
        )),
        "{theirs_records:?}"
    );
    // tstore fetched each package once: the git repo (reg, regsub, gita, ... share it), two
    // tar.gz (tarreg and tgz have the same bytes, but their URLs differ), one zip (zip and
    // page resolve to the same URL), one tar.xz, one tar.bz2.
    let downloads: Vec<String> = reg.server.requests()[before..]
        .iter()
        .filter(|r| r.path.starts_with("/archives/"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(downloads.len(), 5, "{downloads:?}");
    // `store ls` names module packages by the addresses they were installed for.
    let listed = stdout(
        &env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .args(["store", "ls"])
            .ok(),
    );
    assert!(
        listed.contains(&format!("{}/acme/tarpkg/null 1.1.0", reg.host())),
        "{listed}"
    );
    assert!(listed.contains("/archives/pkg.tar.xz"), "{listed}");
    assert!(
        listed.contains(&format!(
            "git::file://{}/repo.git?ref=v1.0.0 (",
            base.display()
        )),
        "{listed}"
    );
    let fetched = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["package"].as_str())
        .collect::<BTreeSet<_>>();
    assert_eq!(
        fetched.len(),
        7,
        "git (and its variant without dot entries), zip, tar.gz twice, xz, bz2: {fetched:?}"
    );
    // The first call of the git repo has its dot entries, later ones do not, as terraform
    // installs them.
    for key in ["gita", "gitb", "reg"] {
        let hidden = |d: &Path| {
            d.join(".terraform/modules")
                .join(key)
                .join(".hidden")
                .exists()
        };
        assert_eq!(hidden(&ours), hidden(&theirs), "{key}");
    }
    assert!(ours.join(".terraform/modules/gita/.hidden").exists());
    assert!(!ours.join(".terraform/modules/gitb/.hidden").exists());

    for dir in [&ours, &theirs] {
        run_ok(env.terraform(dir).arg("validate").arg("-no-color"));
    }
    let plan = |dir: &Path| {
        let text = stdout(&run_ok(
            env.terraform(dir)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .arg("plan")
                .arg("-no-color"),
        ));
        text.lines()
            .filter(|l| l.contains('"'))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let ours_plan = plan(&ours);
    assert_eq!(ours_plan, plan(&theirs));
    assert!(
        ours_plan.iter().any(|l| l.contains("\"sub:inner:deep\"")),
        "{ours_plan:?}"
    );
    // A later plain `terraform init` trusts every record: nothing is downloaded.
    let before = reg.server.requests().len();
    let again = stdout(&run_ok(
        env.terraform(&ours)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .arg("init")
            .arg("-no-color"),
    ));
    assert!(!again.contains("Downloading"), "{again}");
    assert!(
        reg.server.requests()[before..]
            .iter()
            .all(|r| !r.path.starts_with("/archives/")),
        "{:?}",
        reg.server.requests()
    );
}

/// A plain archive URL is revalidated, not trusted (docs/decisions.md, "Module packages"):
/// after the first download each init sends a conditional GET (`If-None-Match`); `304`
/// reuses the stored package, and new bytes at the same URL (a new `ETag`, `200`) are
/// downloaded and ingested as a new package, which the call then uses.
#[test]
fn a_changed_archive_at_the_same_url_is_fetched_and_ingested_again() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let src = env.root.path().join("archive-src");
    let tarball = |value: &str| -> Vec<u8> {
        let _ = fs_err::remove_dir_all(&src);
        fs_err::create_dir_all(&src).unwrap();
        fs_err::write(
            src.join("main.tf"),
            format!("output \"v\" {{\n  value = \"{value}\"\n}}\n"),
        )
        .unwrap();
        sh(&src, "tar czf ../m.tar.gz main.tf");
        fs_err::read(env.root.path().join("m.tar.gz")).unwrap()
    };
    let one = tarball("one");
    let etag_one = tstore_test_support::server::etag_of(&one);
    let url = reg.archive("m.tar.gz", one);
    let dir = env.checkout(
        "w",
        &[(
            "main.tf",
            format!("module \"m\" {{\n  source = \"{url}\"\n}}\n").as_str(),
        )],
    );
    // -upgrade: the call is not pinned by the module lock file (which would install the
    // stored package without asking), so every init revalidates the URL.
    let init = || -> (Vec<String>, Vec<String>, String) {
        let report = json(
            &env.tstore()
                .no_fuse()
                .arg("init")
                .arg("--json")
                .arg("-upgrade")
                .arg(&dir)
                .ok(),
        );
        let main = fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap();
        (
            module_packages(&report, "fetched"),
            module_packages(&report, "reused"),
            main,
        )
    };
    let (fetched, reused, main) = init();
    assert_eq!(
        (fetched.len(), reused.len()),
        (1, 0),
        "{fetched:?} {reused:?}"
    );
    assert!(main.contains("\"one\""), "{main}");
    let first = fetched[0].clone();
    let (fetched, reused, _) = init();
    assert_eq!(
        (fetched, reused),
        (vec![], vec![first.clone()]),
        "304: reused"
    );

    // New bytes at the same URL: a new ETag, so the conditional GET gets them.
    reg.archive("m.tar.gz", tarball("two"));
    let (fetched, reused, main) = init();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert!(reused.is_empty(), "{reused:?}");
    assert_ne!(fetched[0], first, "new bytes, new package");
    assert!(
        main.contains("\"two\""),
        "the call uses the new package: {main}"
    );
    let second = fetched[0].clone();
    let (fetched, reused, _) = init();
    assert_eq!((fetched, reused), (vec![], vec![second]), "304 again");

    let log: Vec<_> = reg
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/archives/m.tar.gz")
        .collect();
    let statuses: Vec<u16> = log.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 304, 200, 304], "{log:?}");
    assert_eq!(log[0].if_none_match, None, "the first GET is plain");
    assert_eq!(log[2].if_none_match.as_deref(), Some(etag_one.as_str()));
    env.tstore().args(["store", "verify"]).ok();
}

/// A registry version that does not exist, a 404 archive and a corrupt archive name the
/// call and file:line, and leave `.terraform/modules` alone.
#[test]
fn bad_registry_and_archive_sources_fail_clearly_and_write_nothing() {
    let (env, base) = env_with_git_dir();
    let (reg, cfg, _) = full_fixture(&env, &base, None);
    let url = reg.server.url();
    reg.archive("corrupt.tar.gz", b"\x1f\x8bnot really gzip".to_vec());
    reg.archive("corrupt.zip", b"PK\x03\x04 truncated".to_vec());
    let host = reg.host();
    for (i, (source, version, expect)) in [
        (
            format!("{host}/acme/gitpkg/null"),
            Some("9.9.9"),
            "no available version",
        ),
        (format!("{host}/acme/nope/null"), None, "Module not found"),
        (format!("{url}/archives/missing.zip"), None, "404"),
        (format!("{url}/archives/corrupt.tar.gz"), None, "corrupt"),
        (format!("{url}/archives/corrupt.zip"), None, "zip"),
    ]
    .into_iter()
    .enumerate()
    {
        let version = version.map_or(String::new(), |v| format!("  version = \"{v}\"\n"));
        let dir = env.checkout(
            &format!("bad{i}"),
            &[(
                "main.tf",
                &format!("\n\nmodule \"m\" {{\n  source = \"{source}\"\n{version}}}\n"),
            )],
        );
        let out = env
            .tstore()
            .cli_config(&cfg)
            .no_fuse()
            .arg("init")
            .arg(&dir)
            .fails();
        let err = stderr(&out);
        assert!(err.contains("main.tf:3"), "{err}");
        assert!(err.contains("module \"m\""), "{err}");
        assert!(err.contains(expect), "{source}: {err}");
        assert!(!dir.join(".terraform/modules").exists());
    }
}

/// A registry module pinned to one exact version whose package the store holds installs in
/// a new checkout without asking the registry anything; a range still reads the version
/// list. The installed files and modules.json are the same either way.
#[test]
fn an_exactly_pinned_registry_module_in_the_store_needs_no_registry() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);
    let reg = ModuleRegistry::start();
    let git = format!("git::file://{}/repo.git?ref=v1.0.0", base.display());
    for v in ["1.0.0", "1.1.0"] {
        reg.publish("acme/gitpkg/null", v, &git);
    }
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let root = |version: &str| {
        format!(
            "module \"reg\" {{\n  source  = \"{host}/acme/gitpkg/null\"\n  version = \"{version}\"\n}}\n"
        )
    };
    let first = env.checkout("first", &[("main.tf", &root("1.0.0"))]);
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&first)
        .ok();
    let asked = reg.server.requests().len();

    let second = env.checkout("second", &[("main.tf", &root("1.0.0"))]);
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&second)
        .ok();
    assert_eq!(
        reg.server.requests().len(),
        asked,
        "the registry was asked: {:?}",
        &reg.server.requests()[asked..]
    );
    assert_eq!(records(&second), records(&first));

    let ranged = env.checkout("ranged", &[("main.tf", &root(">= 1.0.0, < 1.1.0"))]);
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&ranged)
        .ok();
    assert!(
        reg.server.requests()[asked..]
            .iter()
            .any(|r| r.path.ends_with("/versions")),
        "a range reads the version list"
    );
}

/// `modules.json` records a registry call's `Source` as the tool version in force records
/// it, judged by terraform 1.0.3 and 1.11.4 on twin checkouts: the source as written up to
/// 1.0, the registry package's address after (the default host named, `//SUBDIR` kept), as
/// `ModuleSourceRegistry.String()` gives it from terraform 1.1 (and in OpenTofu). The
/// default host's registry is a loopback one, through a CLI-config `host` block.
#[test]
fn registry_sources_are_recorded_as_each_terraform_records_them() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);
    let reg = ModuleRegistry::start();
    let git = format!("git::file://{}/repo.git?ref=v1.0.0", base.display());
    reg.publish("acme/gitpkg/null", "1.0.0", &git);
    let cfg = env.root.path().join("cli-config/default-host.tfrc");
    fs_err::create_dir_all(cfg.parent().unwrap()).unwrap();
    fs_err::write(
        &cfg,
        format!(
            "host \"registry.terraform.io\" {{\n  services = {{\n    \"modules.v1\" = \"{}\"\n  }}\n}}\n\
             host \"{}\" {{\n  services = {{\n    \"modules.v1\" = \"{}\"\n  }}\n}}\n",
            reg.modules_url(),
            reg.host(),
            reg.modules_url()
        ),
    )
    .unwrap();
    let host = reg.host();
    let main = format!(
        "module \"short\" {{\n  source  = \"acme/gitpkg/null\"\n  version = \"1.0.0\"\n}}\n\
         module \"shortsub\" {{\n  source  = \"acme/gitpkg/null//sub\"\n  version = \"1.0.0\"\n}}\n\
         module \"named\" {{\n  source  = \"registry.terraform.io/acme/gitpkg/null\"\n  version = \"1.0.0\"\n}}\n\
         module \"loopback\" {{\n  source  = \"{host}/acme/gitpkg/null\"\n  version = \"1.0.0\"\n}}\n"
    );
    let peers = tstore_test_support::peers();
    for (judge, tool) in peers.judges() {
        let name = tool.replace(' ', "-");
        let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", main.as_str())]);
        let ours = env.checkout(&format!("ours-{name}"), &[("main.tf", main.as_str())]);
        run_ok(&mut env.judge_init(judge, &theirs, &cfg));
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .tool_version(tool)
            .arg("init")
            .arg(&ours)
            .ok();
        let want = records(&theirs);
        assert_eq!(records(&ours), want, "{tool}");
        let short = want.iter().find(|r| r.key == "short").unwrap();
        let expected = if tool.ends_with("1.0.3") {
            "acme/gitpkg/null"
        } else {
            "registry.terraform.io/acme/gitpkg/null"
        };
        assert_eq!(short.source, expected, "{tool}: {want:?}");
    }
}

/// Pre-release versions in a registry module's constraint select as each judge selects
/// (terraform 1.0.3 and 1.11.4 on twin checkouts): the bare pre-release (`1.2.0-beta`)
/// installs it, `>= 1.2.0-beta` the newest release, and a pre-release after `=` or `~>`, in
/// a list or with a `v` is unresolvable for both.
#[test]
fn pre_release_constraints_select_as_each_terraform_selects() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);
    let reg = ModuleRegistry::start();
    let git = format!("git::file://{}/repo.git?ref=v1.0.0", base.display());
    for v in ["1.0.0", "1.2.0-beta", "1.2.0"] {
        reg.publish("acme/gitpkg/null", v, &git);
    }
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/pre.tfrc"), "");
    let host = reg.host();
    let peers = tstore_test_support::peers();
    let mut installed_pre_release = 0;
    for constraint in [
        "1.2.0-beta",
        "= 1.2.0-beta",
        ">= 1.2.0-beta",
        "~> 1.2.0-beta",
        "1.2.0-beta, < 2.0.0",
        "v1.2.0-beta",
    ] {
        let main = format!(
            "module \"pre\" {{\n  source  = \"{host}/acme/gitpkg/null\"\n  version = \"{constraint}\"\n}}\n"
        );
        for (judge, tool) in peers.judges() {
            let case = format!("{tool} {constraint:?}");
            let name: String = case
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", main.as_str())]);
            let ours = env.checkout(&format!("ours-{name}"), &[("main.tf", main.as_str())]);
            let their = env
                .command(judge)
                .current_dir(&theirs)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .args(["init", "-backend=false", "-input=false", "-no-color"])
                .output()
                .unwrap();
            let our = env
                .tstore()
                .cli_config(&cfg)
                .no_fuse()
                .tool_version(tool)
                .arg("init")
                .arg(&ours)
                .output();
            assert_eq!(
                our.status.success(),
                their.status.success(),
                "{case}: terraform {}\ntstore {}",
                stderr(&their),
                stderr(&our)
            );
            if their.status.success() {
                let want = records(&theirs);
                assert_eq!(records(&ours), want, "{case}");
                if want
                    .iter()
                    .any(|r| r.version.as_deref() == Some("1.2.0-beta"))
                {
                    installed_pre_release += 1;
                }
            } else {
                assert!(
                    stderr(&our).contains("Unresolvable module version constraint"),
                    "{case}"
                );
            }
        }
    }
    assert_eq!(
        installed_pre_release, 2,
        "the bare pre-release, under both judges"
    );
}
