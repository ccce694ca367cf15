//! The OpenTofu/Terraform language as tstore needs it, and nothing else: provider
//! addresses ([`addr`]), versions and constraints ([`version`]), the dependency lock file
//! ([`lockfile`]) and tstore's module lock file ([`module_lock`]), the tool whose
//! conventions to follow ([`flavor`]), source positions ([`span`]), configuration loading
//! ([`config`]: one module directory with its override files, and the walk over the module
//! tree), the CLI configuration ([`cliconfig`]), what may write into a module's own
//! directory ([`writes`]) and HCL string literals as the tools write them
//! ([`string_literal`]).
//!
//! **Architecture Invariant:** this crate knows no store and no network. It reads files
//! and returns values; fetching, verifying and linking packages happen in
//! `tstore-installer`, which depends on this crate and never the other way round.

#![allow(clippy::result_large_err)] // errors carry their context (paths, versions) by value; they are cold.

pub mod addr;
pub mod cliconfig;
pub mod config;
pub mod flavor;
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzz_entry;
mod hclwrite;
pub mod lockfile;
pub mod module_lock;
pub mod module_source;
pub mod read;
pub mod span;
pub mod state;
pub mod static_eval;
pub mod string_literal;
pub mod tool_version;
pub mod version;
pub mod writes;
