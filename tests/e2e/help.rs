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
    &["store", "facts"],
    &["store", "verify"],
    &["store", "import"],
    &["store", "rm"],
    &["mount"],
    &["umount"],
    &["providers"],
    &["providers", "lock"],
    &["providers", "outdated"],
    &["modules"],
    &["modules", "lock"],
    &["modules", "outdated"],
    &["fetch"],
    &["cli-config"],
    &["gc"],
    &["roots"],
    &["roots", "ls"],
    &["serve"],
    &["push"],
    &["completions"],
    &["man"],
    &["version"],
];

/// The commands under `path` as its `--help` lists them (`Commands:` section), without
/// clap's `help`.
fn subcommands(path: &[&str]) -> Vec<String> {
    let mut args = path.to_vec();
    args.push("--help");
    let help = tstore_clean(&args);
    let Some(start) = help.find("\nCommands:\n") else {
        return Vec::new();
    };
    help[start + "\nCommands:\n".len()..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command and nested command, found by walking `--help` from the top.
fn every_command() -> Vec<Vec<String>> {
    let mut found = vec![Vec::new()];
    let mut i = 0;
    while i < found.len() {
        let path = found[i].clone();
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        for sub in subcommands(&words) {
            let mut child = path.clone();
            child.push(sub);
            found.push(child);
        }
        i += 1;
    }
    found
}

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

/// Every command's `--help`, nested ones and groups included, ends with examples, and the
/// snapshot list above covers every command there is.
#[test]
fn every_command_shows_examples() {
    let all = every_command();
    let listed: Vec<Vec<String>> = COMMANDS
        .iter()
        .map(|p| p.iter().map(|w| w.to_string()).collect())
        .collect();
    let mut sorted_all = all.clone();
    sorted_all.sort();
    let mut sorted_listed = listed;
    sorted_listed.sort();
    assert_eq!(
        sorted_all, sorted_listed,
        "COMMANDS must list every command"
    );
    for path in &all {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = tstore_clean(&args);
        let examples = help
            .split_once("\nExamples:\n")
            .unwrap_or_else(|| panic!("{path:?} --help has no examples:\n{help}"))
            .1;
        assert!(
            examples
                .lines()
                .any(|l| l.trim_start().starts_with("tstore ")
                    || l.contains("&& tstore ")
                    || l.contains("| tstore ")),
            "{path:?}: no tstore command among the examples:\n{examples}"
        );
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
    assert!(!man.contains("tstore-help"), "{man}");
    let version = tstore_clean(&["--version"]);
    assert!(version.starts_with("tstore 0."), "{version}");
}

/// `tstore man --dir DIR` writes one page per command, and every page a page refers to
/// (`tstore-init(1)`, `tstore-store-verify(1)`, …) is among them; `tstore man` prints the
/// same top page.
#[test]
fn every_man_page_a_page_refers_to_exists() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let dir_arg = pages.display().to_string();
    tstore_clean(&["man", "--dir", &dir_arg]);
    let mut written: Vec<String> = fs_err::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = every_command()
        .iter()
        .map(|path| {
            let mut words = vec!["tstore".to_owned()];
            words.extend(path.iter().cloned());
            format!("{}.1", words.join("-"))
        })
        .collect();
    expected.sort();
    assert_eq!(written, expected);
    let mut references = 0;
    for page in &written {
        // roff writes a hyphen as `\-`.
        let text = fs_err::read_to_string(pages.join(page))
            .unwrap()
            .replace("\\-", "-");
        let name = page.trim_end_matches(".1");
        assert!(text.contains(&format!(".TH {name} 1")), "{page}:\n{text}");
        for (at, _) in text.match_indices("(1)") {
            let start = text[..at]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .map_or(0, |i| i + 1);
            let referred = &text[start..at];
            if referred.starts_with("tstore") {
                references += 1;
                assert!(
                    pages.join(format!("{referred}.1")).is_file(),
                    "{page} refers to {referred}(1), which was not written"
                );
            }
        }
    }
    assert!(references >= written.len() - 1, "{references} references");
    assert_eq!(
        tstore_clean(&["man"]),
        fs_err::read_to_string(pages.join("tstore.1")).unwrap()
    );
}

/// `man --dir DIR` never writes through a link planted in `DIR` under a page's name: the
/// page replaces the link, and the file the link named keeps its bytes and mode.
#[test]
fn man_dir_replaces_a_planted_link_instead_of_writing_through_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret");
    fs_err::write(&secret, "KEY").unwrap();
    fs_err::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dir = tmp.path().join("man");
    fs_err::create_dir(&dir).unwrap();
    for page in ["tstore.1", "tstore-init.1"] {
        std::os::unix::fs::symlink(&secret, dir.join(page)).unwrap();
    }
    tstore_clean(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(fs_err::read_to_string(&secret).unwrap(), "KEY");
    for page in ["tstore.1", "tstore-init.1"] {
        let meta = fs_err::symlink_metadata(dir.join(page)).unwrap();
        assert!(meta.is_file(), "{page} is still a link");
        assert!(fs_err::read_to_string(dir.join(page))
            .unwrap()
            .contains(".TH"));
    }
}
