//! Installing OpenTofu/Terraform providers and modules into tstore's store and linking them
//! into working directories: the install flows behind `tstore init` and
//! `tstore providers lock`, their sources, and the network they talk to.
//!
//! The language (addresses, versions, the lock file, configuration, the CLI configuration)
//! is `tstore-tofu`; the store is `tstore-store`. Rooms:
//!
//! - [`net`]: HTTP, service discovery, signatures;
//! - [`providers`]: the provider install flow, `providers lock`, and the installation
//!   sources (filesystem mirror, registry, network mirror);
//! - [`modules`]: module sources, the read-only policy, `modules.json`;
//! - [`workdir`]: what tstore writes under a working directory's `.terraform/`.

#![allow(clippy::result_large_err)] // errors carry their context (paths, versions) by value; they are cold.

pub mod modules;
pub mod net;
pub mod providers;
pub mod workdir;
