//! Helpers shared by the end-to-end tests that need the tstore binary itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::{TestEnv, Tstore};

/// The `tstore` binary under test, built by cargo for this test target.
pub(crate) fn tstore_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tstore"))
}

/// Parse stdout as JSON.
pub(crate) use tstore_test_support::json;

/// `env.tstore()`: the `tstore` command of a test's environment as a [`Tstore`] builder.
pub(crate) trait TstoreEnv {
    /// `tstore` with the test's isolated environment, the judge's flavor
    /// (`TSTORE_FLAVOR=terraform`) and the judge first on `PATH` (the peers' terraform 1.0.3,
    /// whose `version -json` then gives the tool version; a test that sets
    /// `TSTORE_FLAVOR=tofu` finds no `tofu` and follows the newest tofu), no CLI config.
    fn tstore(&self) -> Tstore;
    /// The binary in the isolated environment alone ([`TestEnv::command`]): no flavor, the
    /// caller's `PATH`.
    fn tstore_plain(&self) -> Tstore;
}

impl TstoreEnv for TestEnv {
    fn tstore(&self) -> Tstore {
        let judge = &tstore_test_support::peers().terraform;
        let mut path = std::ffi::OsString::from(judge.parent().expect("the peers directory"));
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        self.tstore_plain()
            .env("TSTORE_FLAVOR", "terraform")
            .env("PATH", path)
    }

    fn tstore_plain(&self) -> Tstore {
        Tstore::new(self, &tstore_bin())
    }
}

/// The configuration terraform 1.0.3 wrote the reference lock files from (the null
/// provider 2.1.2, `constraints = ">= 2.0.0, ~> 2.1"`).
pub(crate) const NULL_CONFIG: &str = r#"terraform {
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = ">= 2.0.0, ~> 2.1"
    }
  }
}

resource "null_resource" "x" {}
"#;

/// Run `tstore`, which must succeed, and return its stdout.
#[track_caller]
pub(crate) fn stdout_of(tstore: Tstore) -> String {
    String::from_utf8_lossy(&tstore.ok().stdout).into_owned()
}

/// Run `script` with `sh -e` in `dir`, git identified and dated, no system or user git
/// configuration; panics with its stderr unless it succeeds.
pub(crate) fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The first `h1:` of a module lock file's text.
pub(crate) fn first_h1(lock: &str) -> String {
    lock.lines()
        .find_map(|l| l.trim().strip_prefix('"')?.strip_prefix("h1:"))
        .map(|rest| format!("h1:{}", rest.trim_end_matches(['"', ','])))
        .unwrap_or_else(|| panic!("no h1: in\n{lock}"))
}

/// A run's status, stdout and stderr, for an assertion's message.
pub(crate) fn said(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
