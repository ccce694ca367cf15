//! The real peers: terraform v1.0.3 and the null 2.1.2 provider binary, both linux_amd64.
//!
//! They live in `target/peers/` (see [`peers_dir`]) and are installed by `scripts/fetch-peers`,
//! which writes `.complete` last, after checking their SHA-256 and `terraform version`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::workspace_root;

/// The `h1:` hash of the null provider 2.1.2 linux_amd64 package, as terraform writes it into
/// `.terraform.lock.hcl`.
pub const NULL_H1: &str = "h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE=";

/// The file name of the null provider 2.1.2 binary inside its package.
pub const NULL_PROVIDER_FILE: &str = "terraform-provider-null_v2.1.2_x4";

/// Paths of the real peer binaries, both executable.
#[derive(Debug)]
pub struct Peers {
    /// Terraform v1.0.3 linux_amd64.
    pub terraform: PathBuf,
    /// Terraform v1.11.4 linux_amd64, the machine image's (`scripts/fetch-peers` links it
    /// after checking its version and SHA-256): the conformance harness's second judge.
    pub terraform_current: PathBuf,
    /// The null provider 2.1.2 linux_amd64 binary (`terraform-provider-null_v2.1.2_x4`).
    pub null_provider: PathBuf,
}

impl Peers {
    /// The two judges, each with the tool version tstore is told for it
    /// (`TSTORE_TOOL_VERSION`, and the name used for its twin checkouts).
    pub fn judges(&self) -> [(&std::path::Path, &'static str); 2] {
        [
            (self.terraform.as_path(), "terraform 1.0.3"),
            (self.terraform_current.as_path(), "terraform 1.11.4"),
        ]
    }
}

/// Where the peers are installed: `$TSTORE_PEERS_DIR` if set, else `$CARGO_TARGET_DIR/peers`,
/// else `<workspace>/target/peers`. Relative values are taken from the workspace root.
/// `scripts/fetch-peers` resolves the same way.
pub fn peers_dir() -> PathBuf {
    let root = workspace_root();
    if let Some(dir) = std::env::var_os("TSTORE_PEERS_DIR") {
        return root.join(dir);
    }
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(target) => root.join(target).join("peers"),
        None => root.join("target").join("peers"),
    }
}

/// The real peers, installed on first use.
///
/// If `target/peers` is incomplete, runs `scripts/fetch-peers` once per process, under a file
/// lock so that parallel test processes do not race, and panics with what to run if that fails.
/// There is no skipping: a test that needs the peers and cannot get them fails.
pub fn peers() -> &'static Peers {
    // The outcome is kept, failure included, so a process with many tests fetches at most once.
    static PEERS: OnceLock<Result<Peers, String>> = OnceLock::new();
    let peers = PEERS.get_or_init(|| {
        let dir = peers_dir();
        if !complete(&dir) {
            fetch(&dir)?;
        }
        Ok(Peers {
            terraform: dir.join("terraform"),
            terraform_current: dir.join(CURRENT_TERRAFORM_FILE),
            null_provider: dir.join(NULL_PROVIDER_FILE),
        })
    });
    match peers {
        Ok(peers) => peers,
        Err(message) => panic!("{message}"),
    }
}

/// The file name of the second judge in the peers directory.
const CURRENT_TERRAFORM_FILE: &str = "terraform-1.11.4";

fn complete(dir: &std::path::Path) -> bool {
    dir.join(".complete").is_file()
        && dir.join("terraform").is_file()
        && dir.join(CURRENT_TERRAFORM_FILE).is_file()
        && dir.join(NULL_PROVIDER_FILE).is_file()
}

fn fetch(dir: &std::path::Path) -> Result<(), String> {
    fs_err::create_dir_all(dir).expect("create the peers dir");
    let lock = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".support.lock"))
        .expect("open the peers lock file");
    lock.lock().expect("lock the peers dir");
    // Another test process may have finished the job while we waited for the lock.
    if complete(dir) {
        return Ok(());
    }
    let script = workspace_root().join("scripts").join("fetch-peers");
    let status = Command::new("bash")
        .arg(&script)
        .env("TSTORE_PEERS_DIR", dir)
        .status();
    if matches!(&status, Ok(s) if s.success()) && complete(dir) {
        return Ok(());
    }
    Err(format!(
        "\n\n\
         ==================================================================\n\
         The real peers (terraform v1.0.3, null provider 2.1.2, the image's\n\
         terraform v1.11.4 on PATH) are missing or unverified\n\
         from {dir} and `{script}` failed ({status:?}).\n\
         They are needed by the end-to-end tests; install them with:\n\n    \
         scripts/fetch-peers     (needs pip and network access), or\n    \
         scripts/test            (installs everything, then runs the suite)\n\
         ==================================================================\n",
        dir = dir.display(),
        script = script.display(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_ok, stdout, TestEnv};

    #[test]
    fn peers_are_real() {
        let peers = peers();
        let env = TestEnv::new();
        let out = run_ok(env.terraform(env.root.path()).arg("version"));
        assert!(
            stdout(&out).starts_with("Terraform v1.0.3\n"),
            "{}",
            stdout(&out)
        );
        let null = fs_err::metadata(&peers.null_provider).unwrap();
        assert_eq!(null.len(), 20_373_856);
        let current = run_ok(env.command(&peers.terraform_current).arg("version"));
        assert!(
            stdout(&current).starts_with("Terraform v1.11.4\n"),
            "{}",
            stdout(&current)
        );
    }
}
