//! Module installation: every module call of the configuration, its package in the store,
//! `.terraform/modules/KEY` linked to the store's read-only view or privately copied as
//! `module-package.meta.hcl` says, and `.terraform/modules/modules.json` as terraform writes
//! it. tofu's own installer, for comparison:
//! <https://github.com/opentofu/opentofu/blob/main/internal/initwd/module_install.go>.
//!
//! # Flow
//!
//! 1. **Walk** the module tree from the root (override files applied by [`tstore_tofu::config`]).
//!    Local calls resolve against the caller (inside a remote package they stay inside it);
//!    remote calls are fetched into the store (or found there), then read from the view.
//!    The packages of one module's calls are fetched in parallel first (`Walker::prefetch`,
//!    one fetch per package address), with a progress bar on a terminal.
//! 2. **Decide** per remote call (one `.terraform/modules/KEY` = one package instance):
//!    *link* when every module of the instance is read-only, *private copy* otherwise (a
//!    package's own [`package_meta`], else the repository's and machine's [`policy`]).
//!    Nothing in the working directory has been touched so far: a failed fetch leaves
//!    `.terraform/modules` as it was.
//! 3. **Apply**: links (`KEY -> $TSTORE_MOUNT/modules/<id>`), copies (reflink or copy,
//!    writable), stale installs removed, `modules.json` written atomically.
//!
//! # Layout in the working directory
//!
//! ```text
//! .terraform/modules/modules.json       terraform's manifest (one line, sorted by Key)
//! .terraform/modules/KEY -> $TSTORE_MOUNT/modules/<package id>    linked install
//! .terraform/modules/KEY/…              private copy (writable)
//! .terraform/modules/.tstore-installs.json   KEY -> package id and action (tstore's own)
//! ```
//!
//! # Package ids
//!
//! `<kind>-<readable slug>-<20 hex of SHA-256(identity)>`, where the identity is
//! `git\0REPO\0COMMIT`, `http\0FINAL_URL\0SHA256(archive)` or `file\0PATH\0TREE`: one
//! segment, filesystem-safe, and equal for `?ref=v1.0.0` and `?ref=<its commit>`.
//!
//! # Not fetching again
//!
//! The store's `module_sources` memos ([`tstore_store::ModuleSourceMemo`]), used only when
//! their package is intact ([`Store::trusted_package`]): a registry `(module, exact
//! version)` is immutable, so its download endpoint and location are skipped (the version
//! listing is still read); a plain archive URL is revalidated with a conditional GET
//! (`ETag`/`Last-Modified`) and reused on `304`; git refs are re-resolved with `ls-remote`
//! every init, because tags move. See docs/decisions.md, "Module packages".

mod apply;
mod decide;
mod error;
mod fetch;
mod foreign_copy;
pub(crate) mod getters;
mod locked;
pub(crate) mod manifest;
pub(crate) mod mirror;
mod operations;
mod options;
mod package_dirs;
pub(crate) mod package_meta;
pub(crate) mod policy;
mod report;
pub(crate) mod repository_file;
#[cfg(test)]
mod test_repos;
mod tree;
mod walk;

pub(crate) use self::error::{chain, FetchError};
pub use self::error::{ModuleInstallError, PolicyError};
pub use self::fetch::claims_origin;
pub use self::mirror::ModuleMirror;
pub use self::operations::{install, lock, outdated, prefetch};
pub use self::options::ModuleOptions;
pub use self::report::{
    Action, CallLock, CallReport, LockedCall, ModuleLockReport, ModuleWarning, ModulesReport,
    NewerTag, ObtainedFrom, OutdatedCall, OutdatedReport,
};
pub use package_meta::META_FILE;

#[cfg(test)]
mod tests {
    use super::*;
    use tstore_tofu::config::SourcePos;

    #[test]
    fn a_failed_call_shows_its_source_without_credentials() {
        let e = ModuleInstallError::Call {
            at: SourcePos {
                file: "main.tf".into(),
                line: Some(3),
            },
            key: "net".into(),
            address: "https://TOK3N@h.test/net.zip?X-Amz-Signature=SIGV4&archive=zip".into(),
            source: FetchError::Protocol("no".into()),
        };
        let shown = chain(&e);
        assert!(
            shown.contains(
                "(source \"https://h.test/net.zip?X-Amz-Signature=redacted&archive=zip\")"
            ),
            "{shown}"
        );
        assert!(
            !shown.contains("TOK3N") && !shown.contains("SIGV4"),
            "{shown}"
        );
    }
}
