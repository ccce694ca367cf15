//! OpenTofu knowledge for tstore: provider addresses, version constraints, the
//! dependency lock file, configuration loading, the CLI configuration and provider
//! sources, plus the install flow behind `tstore init`.

#![allow(clippy::result_large_err)] // errors carry their context (paths, versions) by value; they are cold.

pub mod addr;
pub mod cliconfig;
pub mod config;
pub mod discovery;
pub mod flavor;
pub mod fsmirror;
pub mod http;
pub mod install;
pub mod link;
pub mod lockfile;
pub mod module_tree;
pub mod modules;
pub mod mountpoint;
pub mod netmirror;
pub mod providers_lock;
pub mod registry;
pub mod signing;
pub mod version;
