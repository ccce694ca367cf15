//! Module registry version selection as terraform 1.0.3 does it (hashicorp/go-version
//! constraints: a `v` prefix is allowed; a pre-release is selected only when the
//! constraint names exactly that version).

use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{module_records, GitRepo, TestEnv};

use crate::common::TstoreEnv as _;

/// A bare git repository `<base>/mod.git` (tag v1) holding one module.
fn module_repo(base: &Path) -> String {
    GitRepo::init(
        base.join("mod-src"),
        &[("main.tf", "output \"x\" {\n  value = 1\n}\n")],
    )
    .commit("init")
    .tag("v1")
    .clone_bare(base.join("mod.git"))
    .source("v1")
}

/// The version `modules.json` records for key `m`, or the failure.
fn selected(dir: &Path, out: &std::process::Output) -> Result<String, String> {
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(module_records(dir)
        .into_iter()
        .find(|m| m.key == "m")
        .and_then(|m| m.version)
        .unwrap_or_else(|| "(none)".to_owned()))
}

#[test]
fn constraints_select_what_terraform_selects() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let reg = ModuleRegistry::start();
    for v in [
        "0.9.0",
        "1.0.0",
        "1.1.0",
        "1.2.0-beta",
        "1.2.0-rc.1",
        "2.0.0",
        "2.1.0-alpha",
    ] {
        reg.publish("acme/mod/null", v, &git);
    }
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let constraints = [
        "1.0.0",
        "v1.0.0",
        ">= v1.0.0, < v2.0.0",
        "~> 1.0",
        "~> 1",
        "~> 1.1.0",
        "1.2.0-beta",
        "v1.2.0-beta",
        "= 1.2.0-rc.1",
        ">= 1.2.0-beta",
        "~> 1.2.0-beta",
        "> 1.0, != 1.1.0",
        "2.1.0-alpha",
        "< 1",
        "1.1",
        "= 1.1",
        ">= 3.0",
    ];
    let mut differences = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let main = format!(
            "module \"m\" {{\n  source  = \"{host}/acme/mod/null\"\n  version = \"{c}\"\n}}\n"
        );
        let theirs = env.checkout(&format!("theirs-{i}"), &[("main.tf", &main)]);
        let ours = env.checkout(&format!("ours-{i}"), &[("main.tf", &main)]);
        let tf = env
            .terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["init", "-backend=false", "-no-color"])
            .output()
            .unwrap();
        let us = env
            .tstore()
            .cli_config(&cfg)
            .no_fuse()
            .arg("init")
            .arg(&ours)
            .output();
        let (want, got) = (selected(&theirs, &tf), selected(&ours, &us));
        let same = match (&want, &got) {
            (Ok(a), Ok(b)) => a == b,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !same {
            differences.push(format!("{c:?}: terraform {want:?}, tstore {got:?}"));
        }
        // The version the lock file now pins is selected again from it, pre-releases too.
        if let Ok(first) = &got {
            assert!(
                ours.join(".tstore.lock.hcl").is_file(),
                "{c:?}: no lock file"
            );
            let again = env
                .tstore()
                .cli_config(&cfg)
                .no_fuse()
                .arg("init")
                .arg(&ours)
                .output();
            let locked = selected(&ours, &again);
            if locked.as_ref() != Ok(first) {
                differences.push(format!(
                    "{c:?}: first {first:?}, again from the lock {locked:?}"
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// The line a user compares: a registry module's "Downloading" names its address (the
/// host included) and the version chosen, as terraform 1.0.3 and 1.11.4 write it (judged
/// on twin checkouts, with two calls so that tstore's prefetch runs too; each judge against
/// an empty store, since tstore says "Downloading" only for what it downloads).
#[test]
fn the_downloading_line_of_a_registry_module_names_its_version_as_terraform_does() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let reg = ModuleRegistry::start();
    for v in ["1.0.0", "1.1.0"] {
        reg.publish("acme/mod/null", v, &git);
        reg.publish("acme/other/null", v, &git);
    }
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let main = format!(
        "module \"m\" {{\n  source  = \"{host}/acme/mod/null\"\n  version = \"~> 1.0\"\n}}\n\
         module \"o\" {{\n  source  = \"{host}/acme/other/null\"\n  version = \"1.0.0\"\n}}\n"
    );
    let lines = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("Downloading "))
            .map(str::to_owned)
            .collect()
    };
    let peers = tstore_test_support::peers();
    for (judge, tool) in peers.judges() {
        let name = tool.replace(' ', "-");
        let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", main.as_str())]);
        let store = TestEnv::new();
        let ours = store.checkout(&format!("ours-{name}"), &[("main.tf", main.as_str())]);
        let their_out = tstore_test_support::run_ok(&mut env.judge_init(judge, &theirs, &cfg));
        let our_out = store
            .tstore()
            .cli_config(&cfg)
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .tool_version(tool)
            .args(["--flavor", "terraform", "init"])
            .arg(&ours)
            .ok();
        let mut theirs_said = lines(&their_out);
        let mut ours_said = lines(&our_out);
        assert_eq!(
            theirs_said,
            vec![
                format!("Downloading {host}/acme/mod/null 1.1.0 for m..."),
                format!("Downloading {host}/acme/other/null 1.0.0 for o..."),
            ],
            "{tool}"
        );
        theirs_said.sort();
        ours_said.sort();
        assert_eq!(ours_said, theirs_said, "tstore under {tool}");
    }
}
