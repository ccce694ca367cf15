//! OpenTofu knowledge for tstore: provider addresses, version constraints, the
//! dependency lock file, configuration loading, the CLI configuration and provider
//! sources, plus the install flow behind `tstore init`.

#![allow(clippy::result_large_err)] // errors carry their context (paths, versions) by value; they are cold.

pub mod discovery;
pub mod fsmirror;
pub mod http;
pub mod install;
pub mod link;
pub mod modules;
pub mod mountpoint;
pub mod netmirror;
pub mod providers_lock;
pub mod registry;
pub mod signing;

// The language lives in its own crate; these paths keep the installer's modules readable.
pub use tstore_tofu::config::tree as module_tree;
pub use tstore_tofu::{addr, cliconfig, config, flavor, lockfile, version};
