//! The getters: each speaks one protocol of module packages, as tofu's go-getter getters
//! do (<https://github.com/opentofu/opentofu/blob/main/internal/getmodules/getter.go>).
//!
//! # The getter contract
//!
//! A getter turns an address it owns into something the store can take in, and nothing
//! more:
//!
//! - [`git`]: a ref resolved to its commit (`ls-remote`), and through [`git_cache`] that
//!   commit's tree checked out into a directory the caller gives;
//! - [`archive`]: an HTTP(S) archive downloaded into a file (or a `X-Terraform-Get`
//!   redirect, or "not modified"), and a tar archive extracted under the store's limits;
//! - [`registry`]: a module registry's version list, the version a constraint selects, and
//!   the address of its package (which another getter then fetches);
//! - [`oci`]: an `oci://` address resolved to the digest of its one zip layer.
//!
//! Rules every getter keeps:
//!
//! - It never writes into the store and never decides whether the store already holds a
//!   package: the fetcher (`modules::fetch`) asks the store first, ingests what a getter
//!   brought, and records the package with its hashes.
//! - Everything it reads from a remote is hostile input: bounded, checked, and shown only
//!   through [`redact`](crate::redact) (no credential in a message).
//! - Its errors are [`FetchError`](crate::modules::FetchError)s, which say what went wrong
//!   with the package; the call they belong to is added by the caller.
//! - A question a run may ask many times for many roots (a ref's commit, a version list, a
//!   ref's reach) is asked once per run ([`asked_once`]; a run is a process's command, or
//!   one request of the init server).
//!
//! [`git_reach`] is the git getter's check that a locked commit is still reached by the ref
//! its call names, with this machine's records of earlier checks ([`reach_records`]).

pub(crate) mod archive;
pub(crate) mod asked_once;
pub(crate) mod git;
pub(crate) mod git_cache;
pub(crate) mod git_first_seen;
pub(crate) mod git_reach;
pub(crate) mod oci;
pub(crate) mod reach_records;
pub(crate) mod registry;
