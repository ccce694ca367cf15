//! Embeds the commit and its date in `tstore --version` and `tstore version`
//! (`TSTORE_LONG_VERSION`, and apart as `TSTORE_COMMIT`, `TSTORE_COMMIT_DATE`), read with
//! `git` when the source is a git checkout; a source tree without git (a crate tarball) gets
//! neither and the version stays the package version.

use std::process::Command;

// The build script reads its own checkout, where git's discovery is what it wants.
#[allow(clippy::disallowed_methods)]
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
    let version = match (&commit, &date) {
        (Some(c), Some(d)) => format!("{} ({c} {d})", env!("CARGO_PKG_VERSION")),
        _ => env!("CARGO_PKG_VERSION").to_owned(),
    };
    println!("cargo:rustc-env=TSTORE_LONG_VERSION={version}");
    // `tstore version -json` names them apart; empty when unknown.
    println!(
        "cargo:rustc-env=TSTORE_COMMIT={}",
        commit.as_deref().unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=TSTORE_COMMIT_DATE={}",
        date.as_deref().unwrap_or_default()
    );
    // Rebuild when HEAD moves (a commit, a checkout): the files git keeps HEAD in. Only those
    // that exist: cargo counts a missing one as changed and would rebuild every time (a
    // repository without packed refs has no `packed-refs`).
    for path in ["HEAD", "refs/heads", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            if std::path::Path::new(&file).exists() {
                println!("cargo:rerun-if-changed={file}");
            }
        }
    }
    // The `tstore` executable is linked at a fixed address (not position-independent) on
    // Linux: a PIE start relocates ~28,000 pointers, one copy-on-write page fault per page
    // of them (~150 faults, ~0.6 ms of every process; docs/decisions.md, "The `tstore`
    // executable is not position-independent"). terraform's release executable is not PIE
    // either. Libraries, heap, stack and mappings are still placed at random.
    // A build whose every crate is static (`-C target-feature=+crt-static` in RUSTFLAGS) is
    // linked as rustc chooses: its objects are position-independent unless
    // `-C relocation-model=static` says otherwise, and `-no-pie` on a static-pie link makes
    // an executable that crashes before `main`. (`scripts/build-release` gives both flags to
    // the executable's own link, which this script does not see.)
    let static_crt = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|f| f == "crt-static"));
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") && !static_crt {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
