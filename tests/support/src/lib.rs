//! Dev-only helpers for tstore's end-to-end tests.
//!
//! This crate uses no tstore crate: it drives the real `tstore` binary, the real `terraform`
//! v1.0.3 and the real `null` 2.1.2 provider binary (see "Real peers, not mocks" in the design
//! guide), and builds the fixtures those programs read.
//!
//! - [`TestEnv`]: one isolated environment per test (store, mount point, `HOME`, XDG dirs,
//!   checkouts), all in a temp dir removed on drop. The real store of the user is never touched.
//! - [`TestEnv::with_null_mirror`]: a [`TestEnv`] with the real null provider in a filesystem
//!   mirror and a CLI config using it ([`NullMirror`]); with [`TestEnv::ours_and_theirs`],
//!   [`TestEnv::terraform_init`], [`lock_file`] and [`TestEnv::assert_terraform_plans_null`],
//!   the steps that compare tstore with terraform.
//! - [`peers`]: the real terraform and null provider, fetched once into `target/peers/` by
//!   `scripts/fetch-peers` when missing.
//! - [`run_ok`] / [`run_fail`]: run a command and panic with everything needed to debug it.
//! - [`mirror`]: filesystem mirrors (unpacked and packed layouts) and the `h1:`/`zh:` hashes.
//! - [`hostile`]: provider zips crafted to attack an unpacker (path traversal, links, devices,
//!   duplicates, a ratio bomb).
//! - [`module_registry`]: a module registry (`modules.v1`, `204` + `X-Terraform-Get`) and
//!   archive host on a loopback [`server::Server`].
//! - [`oci_registry`]: a real OCI registry (`docker-registry`); [`oci_token`]: a token
//!   service for it; [`oci_split`]: a small registry whose blobs, uploads and tag pages are on
//!   a second host (another origin) that logs every `Authorization` header it gets.
//! - [`tls`]: a CA made at test time for the HTTPS mode of [`server::Server`]
//!   ([`server::Server::start_tls`]); its PEM is the `SSL_CERT_FILE` of tstore and terraform.
//! - [`snapshot`]: a directory tree as a map, for "nothing changed" assertions.
//! - [`GitRepo`]: git repositories made by a test (commit, tag, move a tag, branch, clone
//!   bare, push), isolated from the user's git configuration and dated.
//! - [`Tstore`]: a `tstore` command line (`.init(dir)`, `.no_fuse()`, `.ok()`, `.fails()`,
//!   `.json()`), on a binary the caller names.
//! - [`module_records`]: the records of `.terraform/modules/modules.json` ([`ModuleRecord`]).
//!
//! # Example
//!
//! ```no_run
//! use std::path::Path;
//! use tstore_test_support::{mirror, run_ok, stdout, TestEnv};
//!
//! let env = TestEnv::new();
//! let mirror_root = mirror::null_packed(&env.root.path().join("mirror"));
//! let config = env.cli_config_fs_mirror(&mirror_root);
//! let dir = env.checkout(
//!     "a",
//!     &[("main.tf", r#"terraform { required_providers { null = { source = "hashicorp/null" } } }"#)],
//! );
//! // The installer's tests use `Path::new(env!("CARGO_BIN_EXE_tstore"))`.
//! let tstore = Path::new("target/debug/tstore");
//! let out = run_ok(
//!     env.command(tstore)
//!         .env("TF_CLI_CONFIG_FILE", &config)
//!         .args(["--flavor", "terraform", "init"])
//!         .arg(&dir),
//! );
//! println!("{}", stdout(&out));
//! ```

// The test support crate starts the real programs it drives itself.
#![allow(clippy::disallowed_methods)]

mod env;
mod fixture;
mod git;
pub mod gpg;
pub mod hostile;
pub mod mirror;
pub mod module_registry;
mod modules_json;
pub mod oci_registry;
pub mod oci_split;
pub mod oci_token;
mod peers;
mod process;
pub mod registry;
pub mod server;
mod snapshot;
pub mod tls;
mod tstore;

use std::path::PathBuf;

pub use env::TestEnv;
pub use fixture::{lock_file, Layout, NullMirror};
pub use git::{GitRepo, GIT_DATE};
pub use modules_json::{
    module_records, modules_json_path, parse_modules_json, read_modules_json, ModuleRecord,
};
pub use peers::{peers, peers_dir, Peers, NULL_H1, NULL_PROVIDER_FILE};
pub use process::{command_line, run_fail, run_ok, stderr, stdout};
pub use snapshot::snapshot;
pub use tstore::{json, Tstore};

/// The workspace root (`tests/support/../..`, from this crate's `CARGO_MANIFEST_DIR`).
pub fn workspace_root() -> PathBuf {
    let support = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    support
        .parent()
        .and_then(|tests| tests.parent())
        .expect("tests/support has a workspace root two levels up")
        .to_path_buf()
}
