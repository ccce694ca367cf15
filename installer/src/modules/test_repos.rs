//! Real git repositories for the modules' unit tests: a directory with files committed and
//! tagged, read through a `file://` remote. git runs without the user's or system's
//! configuration.

use std::path::Path;
use std::process::{Command, Output};

/// Run `git ARGS` in `dir`; panics unless it succeeds.
// Test fixtures make their repositories with git directly.
#[allow(clippy::disallowed_methods)]
pub(super) fn git(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    out
}

/// A repository at `repo` with `files` committed on `main` and tagged `v1`; its commit id.
pub(super) fn tagged_repository(repo: &Path, files: &[(&str, &str)]) -> String {
    for (rel, text) in files {
        let path = repo.join(rel);
        fs_err::create_dir_all(path.parent().expect("a file in the repository")).unwrap();
        fs_err::write(path, text).unwrap();
    }
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "one"],
        &["tag", "v1"],
    ] {
        git(repo, args);
    }
    let head = git(repo, &["rev-parse", "HEAD"]);
    String::from_utf8(head.stdout).unwrap().trim().to_owned()
}
