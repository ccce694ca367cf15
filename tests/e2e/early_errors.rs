//! What is wrong is said early, and where it is: a `TF_CLI_CONFIG_FILE` naming no file is
//! warned of (as terraform from 1.5 and OpenTofu do) and named in a network error's hint;
//! a repository's top without configuration names the roots below and `--recursive`; a
//! working directory that cannot be written is refused before anything is fetched; `fetch`
//! words a lock that would change for itself.

use std::path::Path;

use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{json, stderr, stdout, GitRepo, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

#[test]
fn a_missing_cli_configuration_file_is_warned_of_and_named_in_a_network_hint() {
    let env = TestEnv::new();
    let missing = env.root.path().join("nowhere/team.tfrc");
    // A provider whose registry is a closed loopback port: the install fails on the network.
    let main = "terraform {\n  required_providers {\n    x = {\n      source = \"127.0.0.1:1/ns/x\"\n    }\n  }\n}\n";
    let dir = env.checkout("w", &[("main.tf", main)]);
    let out = env
        .tstore()
        .cli_config(&missing)
        .no_fuse()
        .arg("init")
        .arg(&dir)
        .fails();
    let err = stderr(&out);
    assert_eq!(
        err.matches("Unable to open CLI configuration file").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "The CLI configuration file at \"{}\" does not exist",
            missing.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "tstore read no CLI configuration file (TF_CLI_CONFIG_FILE names {}, which does not exist)",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn a_repository_top_without_configuration_names_the_roots_below() {
    let env = TestEnv::new();
    let top = env.root.path().join("mono");
    GitRepo::init(
        &top,
        &[
            ("README.md", "stacks\n"),
            ("stacks/a/main.tf", "output \"a\" {\n  value = 1\n}\n"),
            ("stacks/b/main.tf", "output \"b\" {\n  value = 2\n}\n"),
        ],
    );
    let out = env.tstore().arg("init").arg(&top).ok();
    let said = stdout(&out);
    assert!(
        said.contains("initialized in an empty directory!"),
        "{said}"
    );
    assert!(
        said.contains("2 working directories with Terraform configuration files lie below it: \"tstore init --recursive\" initializes every one."),
        "{said}"
    );
    let report = json(&env.tstore().args(["init", "--json"]).arg(&top).ok());
    assert_eq!(report["roots_below"], 2, "{report}");
    // A directory that is not a repository's top is not searched.
    let plain = env.checkout("plain", &[("notes.txt", "x\n"), ("sub/main.tf", "")]);
    let said = stdout(&env.tstore().arg("init").arg(&plain).ok());
    assert!(!said.contains("--recursive"), "{said}");
}

/// A read-only bind mount of the checkout (root ignores modes, not a read-only mount).
struct ReadOnly<'a>(&'a Path);

impl<'a> ReadOnly<'a> {
    fn mount(src: &Path, at: &'a Path) -> ReadOnly<'a> {
        fs_err::create_dir_all(at).unwrap();
        let ok = |args: &[&str]| {
            let st = std::process::Command::new("mount")
                .args(args)
                .status()
                .unwrap();
            assert!(st.success(), "mount {args:?} (the suite runs as root)");
        };
        ok(&["--bind", &src.to_string_lossy(), &at.to_string_lossy()]);
        let guard = ReadOnly(at);
        ok(&["-o", "remount,bind,ro", &at.to_string_lossy()]);
        guard
    }
}

impl Drop for ReadOnly<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn a_working_directory_that_cannot_be_written_is_refused_before_any_fetch() {
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    reg.publish_null();
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["registry.terraform.io"],
        "  direct {}",
    );
    let src = env.checkout("src", &[("main.tf", NULL_CONFIG)]);
    let at = env.root.path().join("ro");
    let _ro = ReadOnly::mount(&src, &at);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&at)
        .fails();
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot write {}", at.display()))
            && err.contains("Read-only file system"),
        "{err}"
    );
    assert!(
        reg.server.requests().is_empty(),
        "{:?}",
        reg.server.requests()
    );
}

#[test]
fn fetch_words_a_lock_that_would_change_for_itself() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = GitRepo::tagged_module(
        &base,
        "m",
        &[("main.tf", "output \"v\" {\n  value = 1\n}\n")],
    );
    let call = |name: &str| {
        format!(
            "module \"{name}\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
            repo.display()
        )
    };
    let dir = env.checkout("w", &[("main.tf", call("a").as_str())]);
    env.tstore().no_fuse().arg("init").arg(&dir).ok();
    // A second call the lock does not pin yet.
    fs_err::write(dir.join("main.tf"), format!("{}{}", call("a"), call("b"))).unwrap();
    let err = stderr(&env.tstore().arg("fetch").arg(&dir).fails());
    assert!(!err.contains("-lockfile=readonly"), "{err}");
    assert!(
        err.contains("tstore fetch installs only what a lock file pins and never writes one")
            && err.contains("Run \"tstore init\""),
        "{err}"
    );
}
