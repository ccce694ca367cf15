//! The command line as a user first meets it: `--help` of every command is a reviewed
//! snapshot (`tests/e2e/snapshots/`, updated with `INSTA_UPDATE=always` and read in review),
//! and the completion scripts and the man page are generated from the same definition.

use std::process::Command;

use tstore_test_support::{run_ok, stdout};

use crate::common::tstore_bin;

/// `tstore ARGS` with no environment, so help shows no `[env: …=value]` of the caller.
fn tstore_clean(args: &[&str]) -> String {
    let mut cmd = Command::new(tstore_bin());
    cmd.env_clear().env("PATH", "/usr/bin:/bin").args(args);
    stdout(&run_ok(&mut cmd))
}

const COMMANDS: &[&[&str]] = &[
    &[],
    &["init"],
    &["store"],
    &["store", "ls"],
    &["store", "du"],
    &["store", "verify"],
    &["store", "import"],
    &["mount"],
    &["umount"],
    &["providers"],
    &["providers", "lock"],
    &["cli-config"],
    &["gc"],
    &["roots"],
    &["roots", "ls"],
    &["push"],
    &["completions"],
    &["man"],
    &["version"],
];

#[test]
fn every_command_has_reviewed_help() {
    for path in COMMANDS {
        let mut args = path.to_vec();
        args.push("--help");
        let help = tstore_clean(&args);
        let name = if path.is_empty() {
            "help".to_owned()
        } else {
            format!("help-{}", path.join("-"))
        };
        insta::assert_snapshot!(name, help);
    }
}

#[test]
fn every_command_with_examples_shows_them() {
    for path in [
        &["init"][..],
        &["gc"],
        &["mount"],
        &["providers", "lock"],
        &["push"],
        &["version"],
    ] {
        let mut args = path.to_vec();
        args.push("--help");
        let help = tstore_clean(&args);
        assert!(help.contains("Examples:"), "{path:?}:\n{help}");
    }
}

#[test]
fn completions_and_man_page_are_generated() {
    let bash = tstore_clean(&["completions", "bash"]);
    assert!(bash.contains("complete -F _tstore"), "{bash}");
    assert!(bash.contains("init") && bash.contains("push"), "{bash}");
    let zsh = tstore_clean(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef tstore"), "{zsh}");
    let man = tstore_clean(&["man"]);
    assert!(man.contains(".TH tstore 1"), "{man}");
    assert!(man.contains("install phase of"), "{man}");
    let version = tstore_clean(&["--version"]);
    assert!(version.starts_with("tstore 0."), "{version}");
}
