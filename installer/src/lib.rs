//! OpenTofu knowledge for tstore: provider addresses, version constraints, the
//! dependency lock file, configuration loading, the CLI configuration and provider
//! sources, plus the install flow behind `tstore init`.

pub mod addr;
pub mod cliconfig;
pub mod config;
pub mod flavor;
pub mod fsmirror;
pub mod lockfile;
pub mod version;
pub mod install;
pub mod link;
pub mod mountpoint;
