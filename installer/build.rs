//! Embeds the commit and its date in `tstore --version` (`TSTORE_COMMIT`,
//! `TSTORE_COMMIT_DATE`), read with `git` when the source is a git checkout; a source tree
//! without git (a crate tarball) gets neither and the version stays the package version.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let date = git(&["log", "-1", "--format=%cs"]);
    let version = match (commit, date) {
        (Some(c), Some(d)) => format!("{} ({c} {d})", env!("CARGO_PKG_VERSION")),
        _ => env!("CARGO_PKG_VERSION").to_owned(),
    };
    println!("cargo:rustc-env=TSTORE_LONG_VERSION={version}");
    // Rebuild when HEAD moves (a commit, a checkout): the files git keeps HEAD in.
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(refs) = git(&["rev-parse", "--git-path", "refs/heads"]) {
        println!("cargo:rerun-if-changed={refs}");
    }
    if let Some(packed) = git(&["rev-parse", "--git-path", "packed-refs"]) {
        println!("cargo:rerun-if-changed={packed}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
