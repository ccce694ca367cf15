//! A repository's `.tstore.hcl` and the CLI configuration's `tstore_modules` block decide
//! link or copy for packages whose authors say nothing; the repository wins over the
//! machine, `copy` over `read_only`, and an author's statement over both. terraform
//! ignores the `tstore_modules` block.

use std::path::Path;

use tstore_test_support::{run_ok, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;
use crate::config_loader::module_repo;

/// `(action, reason)` of call `key` in `tstore init --json`'s report.
fn decision(env: &TestEnv, cli_config: Option<&Path>, dir: &Path, key: &str) -> (String, String) {
    let out = env
        .tstore()
        .maybe_cli_config(cli_config)
        .no_fuse()
        .args(["init", "--json"])
        .arg(dir)
        .ok();
    let report = json(&out);
    let call = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == key)
        .unwrap_or_else(|| panic!("no call {key}: {report}"))
        .clone();
    (
        call["action"].as_str().unwrap().to_owned(),
        call["reason"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn repository_and_machine_rules_decide_unstated_packages() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let main = format!("module \"m\" {{\n  source = \"{git}\"\n}}\n");
    let files = [("stacks/a/main.tf", main.as_str())];

    // Nothing said anywhere: the default policy (auto) links a module that writes nothing.
    let repo = env.checkout("plain", &files);
    let (action, reason) = decision(&env, None, &repo.join("stacks/a"), "m");
    assert_eq!(action, "link", "{reason}");
    assert!(reason.contains("auto"), "{reason}");

    // default = "copy" (the compatible setting) copies; --explain says what it costs.
    let repo = env.checkout("copying", &files);
    fs_err::write(
        repo.join(".tstore.hcl"),
        "modules {\n  default = \"copy\"\n}\n",
    )
    .unwrap();
    let (action, reason) = decision(&env, None, &repo.join("stacks/a"), "m");
    assert_eq!(action, "copy", "{reason}");
    let out = env
        .tstore()
        .no_fuse()
        .args(["init", "--explain"])
        .arg(repo.join("stacks/a"))
        .ok();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("private copy (0.0 MiB"), "{text}");
    assert!(text.contains("sets default = \"copy\""), "{text}");

    // The repository trusts the source: linked, found from a subdirectory.
    let repo = env.checkout("trusted", &files);
    fs_err::write(
        repo.join(".tstore.hcl"),
        "modules {\n  read_only = [\"git::file://*\"]\n}\n",
    )
    .unwrap();
    let dir = repo.join("stacks/a");
    let (action, reason) = decision(&env, None, &dir, "m");
    assert_eq!(action, "link", "{reason}");
    assert!(
        reason.contains(".tstore.hcl") && reason.contains("read_only"),
        "{reason}"
    );
    assert!(dir.join(".terraform/modules/m").is_symlink());

    // The machine says copy it and link everything else; the repository's rule still wins.
    let cfg = env.root.path().join("machine.tfrc");
    fs_err::write(
        &cfg,
        "tstore_modules {\n  copy    = [\"*mod.git*\"]\n  default = \"link\"\n}\n",
    )
    .unwrap();
    let (action, _) = decision(&env, Some(&cfg), &dir, "m");
    assert_eq!(action, "link");
    let plain = env.checkout("machine", &files);
    let (action, reason) = decision(&env, Some(&cfg), &plain.join("stacks/a"), "m");
    assert_eq!(action, "copy", "{reason}");
    assert!(reason.contains("tstore_modules"), "{reason}");
    assert!(!plain.join("stacks/a/.terraform/modules/m").is_symlink());

    // terraform reads the same CLI configuration without complaint.
    let theirs = env.checkout("theirs", &files);
    run_ok(
        env.terraform(&theirs.join("stacks/a"))
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["init", "-backend=false", "-no-color"]),
    );

    // A broken policy is an error naming its file, and nothing is installed.
    let broken = env.checkout("broken", &files);
    fs_err::write(
        broken.join(".tstore.hcl"),
        "modules {\n  default = \"sometimes\"\n}\n",
    )
    .unwrap();
    let out = env
        .tstore()
        .no_fuse()
        .arg("init")
        .arg(broken.join("stacks/a"))
        .fails();
    let err = tstore_test_support::stderr(&out);
    assert!(
        err.contains(".tstore.hcl") && err.contains("default"),
        "{err}"
    );
    assert!(!broken.join("stacks/a/.terraform").exists());
}
