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
//! every init, because tags move. See ARCHITECTURE.md, Decisions, "Module packages".

mod apply;
pub(crate) mod archive;
mod asked_once;
mod decide;
mod error;
mod fetch;
mod foreign_copy;
pub(crate) mod git;
mod git_cache;
mod lock;
pub(crate) mod manifest;
mod oci;
mod package_dirs;
pub(crate) mod package_meta;
pub(crate) mod policy;
mod reach;
pub(crate) mod registry;
#[cfg(test)]
mod test_repos;
mod tree;
mod walk;

use std::path::PathBuf;

use package_meta::ReadOnlyStatus;
pub use package_meta::META_FILE;
use serde::Serialize;
use tstore_store::{Diagnostic, Store};
use tstore_tofu::config::{self, SourcePos};

pub(crate) use self::error::FetchError;
use crate::modules::apply::apply;
use crate::modules::decide::decide;
use crate::modules::walk::walk;
use crate::options::WorkdirOptions;
use crate::report::{LockFileChange, Reporter};
use lock::{LockUpdate, Pins};
use tstore_tofu::module_lock;

/// How deep module calls may nest before we assume a cycle.
const MAX_DEPTH: usize = 64;

/// How many module instances (calls, counted along every path of the tree) one working
/// directory may have. Each is a `modules.json` record and a configuration walk; a tree
/// that fans out (31 levels of two calls each is two billion instances) would otherwise
/// walk until memory runs out. Real configurations have hundreds.
const MAX_MODULE_INSTANCES: usize = 10_000;

/// tstore's own record of what it installed under `.terraform/modules`.
const STATE_FILE: &str = ".tstore-installs.json";

/// What the module phase of `init` needs.
#[derive(Clone, Debug)]
pub struct ModuleOptions {
    /// The working directory and what both phases share.
    pub workdir: WorkdirOptions,
    /// What to do with packages whose read-only status their authors do not state: the
    /// repository's and machine's source rules, and `--assume-read-only`.
    pub policy: policy::ModulePolicy,
    /// Under `workdir.upgrade`, the calls resolved again (call paths as the module lock
    /// file keys them: `vpc`, `vpc.label`), each with the calls inside it; empty: every
    /// call. The other calls keep their entries.
    pub upgrade_only: Vec<String>,
    /// This machine's record of checks that a git ref reaches a locked commit
    /// (`$XDG_STATE_HOME/tstore/git-reach.json`; never in the store); `None`: no state
    /// directory, every check asks the remote.
    pub reach_records: Option<PathBuf>,
    /// `TSTORE_TRUST_LOCK=1` / `--trust-lock`: where the remote cannot be asked whether a
    /// ref reaches its locked commit (an outage) and no record exists, the lock's checksums
    /// alone decide, and the refs left unchecked are said.
    pub trust_lock: bool,
}

/// What happened to one module call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `.terraform/modules/KEY` links to the store.
    Link,
    /// `.terraform/modules/KEY` is a private, writable copy.
    Copy,
    /// Read where it is (a local call, or a module inside its caller's install).
    InPlace,
}

/// One module call, as `init --json` and `--explain` report it.
#[derive(Clone, Debug, Serialize)]
pub struct CallReport {
    /// Module key (`a.b`).
    pub key: String,
    /// Source as written, as [`display_url`](crate::redact::display_url) shows it.
    pub source: String,
    /// `local`, `registry`, `git`, `http`, `file`.
    pub kind: &'static str,
    /// Selected registry version.
    pub version: Option<String>,
    /// `Dir` in modules.json.
    pub dir: String,
    /// Store package id (remote calls and modules inside them).
    pub package: Option<String>,
    /// What was done.
    pub action: Action,
    /// The module's read-only status.
    pub read_only: ReadOnlyStatus,
    /// Why.
    pub reason: String,
    /// For a private copy, the bytes of its files (what it costs without reflinks).
    pub copy_bytes: Option<u64>,
    /// Where the call is (`file:line`).
    pub at: String,
    /// A remote call's standing in the module lock file.
    pub lock: Option<CallLock>,
    /// Where a remote call's version or commit came from: `lock`, `constraint` (the newest
    /// the call allows, or the ref it names) or `upgrade`.
    pub selected_by: Option<&'static str>,
}

/// A remote call's standing in the module lock file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallLock {
    /// Its entry pinned what was installed, and the package matched it.
    Verified,
    /// It had no entry; one was added.
    Added,
    /// Its entry was replaced (`-upgrade`, a changed source or constraint).
    Changed,
}

/// The result of installing modules.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ModulesReport {
    /// Every call, sorted by key.
    pub calls: Vec<CallReport>,
    /// Package ids fetched in this run.
    pub fetched: Vec<String>,
    /// Package ids found in the store.
    pub reused: Vec<String>,
    /// What happened to the module lock file.
    pub lock_file: LockFileChange,
}

/// What the module install ignored and went on without, for the binary to say.
#[derive(Clone, Debug)]
pub enum ModuleWarning {
    /// A package's `module-package.meta.hcl` is invalid: its statements are ignored (the
    /// package is judged as one that makes none).
    InvalidMeta {
        /// The call that installs the package.
        at: SourcePos,
        /// Its key.
        key: String,
        /// The package id.
        package: String,
        /// What is wrong with the file.
        error: String,
    },
    /// tstore's install state under `.terraform/modules` cannot be read: no earlier install
    /// of tstore's is removed.
    UnreadableInstallState {
        /// Why.
        error: String,
    },
    /// An entry of the install state that is not a module key tstore writes: ignored, never
    /// followed.
    ForeignStateEntry {
        /// The state file.
        state_file: PathBuf,
        /// The entry's key.
        key: String,
    },
    /// A directory tstore did not create filled a call's slot (terraform's copy of the
    /// package) and held more than the package (files a module wrote there, edits): moved
    /// aside, not deleted.
    KeptForeignCopy {
        /// The slot, `.terraform/modules/KEY`.
        slot: PathBuf,
        /// Where the directory is now.
        kept_as: PathBuf,
    },
    /// A git call's ref moved on from the commit the lock pins and still reaches it: the
    /// locked commit is installed. A tag (`tag`) should never move.
    RefMovedOn {
        /// The call.
        key: String,
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The commit installed (the lock's).
        locked: String,
        /// The commit the ref names now.
        tip: String,
        /// Whether the ref is a tag.
        tag: bool,
    },
    /// Whether a git call's ref reaches its locked commit was not checked: the remote could
    /// not be asked, and the user trusts the lock (`TSTORE_TRUST_LOCK`).
    RefUnchecked {
        /// The call.
        key: String,
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// Why the remote could not be asked.
        why: String,
    },
}

/// The warning in words, as the binary prints it.
impl std::fmt::Display for ModuleWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleWarning::InvalidMeta {
                at,
                key,
                package,
                error,
            } => write!(
                f,
                "{at}: module \"{key}\": ignoring invalid {META_FILE} of package {package}: {error}"
            ),
            ModuleWarning::UnreadableInstallState { error } => {
                write!(f, "{error}; ignoring tstore's install state")
            }
            ModuleWarning::ForeignStateEntry { state_file, key } => write!(
                f,
                "{}: ignoring the entry {key:?}, which is not a module key tstore writes",
                state_file.display()
            ),
            ModuleWarning::RefMovedOn {
                key,
                repo,
                reference,
                locked,
                tip,
                tag,
            } => {
                let repo = crate::redact::display_url(repo);
                if *tag {
                    write!(
                        f,
                        "module \"{key}\": the tag {reference:?} of {repo} MOVED since the lock \
                         was written: it named {locked}, it names {tip} now. Tags should never \
                         move: the locked commit {locked}, which the tag's new commit descends \
                         from, was installed. Find out who moved the tag; run `tstore init \
                         -upgrade` only to take its new commit."
                    )
                } else {
                    write!(
                        f,
                        "module \"{key}\": {reference:?} of {repo} moved on since the lock was \
                         written (to {tip}); the locked commit {locked}, which it still reaches, \
                         was installed. Run `tstore init -upgrade` to take the new commit."
                    )
                }
            }
            ModuleWarning::RefUnchecked {
                key,
                repo,
                reference,
                why,
            } => write!(
                f,
                "module \"{key}\": not checked that {reference:?} of {} still reaches the locked \
                 commit ({why}); installed on the lock's checksums alone (TSTORE_TRUST_LOCK)",
                crate::redact::display_url(repo)
            ),
            ModuleWarning::KeptForeignCopy { slot, kept_as } => write!(
                f,
                "{} was not made by tstore and held files its package does not (written there \
                 by the module, or edited): it was moved to {} instead of being replaced. Take \
                 what you need from it, then delete it.",
                slot.display(),
                kept_as.display()
            ),
        }
    }
}

/// One remote call of `tstore modules lock`.
#[derive(Clone, Debug, Serialize)]
pub struct LockedCall {
    /// Module key (`a.b`).
    pub key: String,
    /// Its source, as the lock file writes it.
    pub source: String,
    /// Registry version, or git ref.
    pub version: Option<String>,
    /// Git commit.
    pub commit: Option<String>,
    /// Its standing in the lock file.
    pub lock: CallLock,
}

/// The result of `tstore modules lock`.
#[derive(Clone, Debug, Serialize)]
pub struct ModuleLockReport {
    /// Every remote call, sorted by key.
    pub calls: Vec<LockedCall>,
    /// Keys whose entries were dropped (calls no longer in the configuration).
    pub removed: Vec<String>,
    /// What happened to the lock file.
    pub lock_file: LockFileChange,
    /// Package ids fetched in this run.
    pub fetched: Vec<String>,
    /// Package ids found in the store.
    pub reused: Vec<String>,
}

/// Why module installation failed.
#[derive(Debug, thiserror::Error)]
pub enum ModuleInstallError {
    /// One call cannot be installed.
    #[error(
        "{at}: cannot install module \"{key}\" (source {:?})",
        crate::redact::display_url(address)
    )]
    Call {
        /// Where the call is.
        at: SourcePos,
        /// Its key.
        key: String,
        /// Its source as written (messages show it by
        /// [`display_url`](crate::redact::display_url)).
        address: String,
        /// What went wrong.
        #[source]
        source: FetchError,
    },
    /// A module's configuration is invalid.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The root package's meta file is invalid.
    #[error("{}: invalid {META_FILE}", path.display())]
    Meta {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: package_meta::MetaError,
    },
    /// The module lock file cannot be read.
    #[error(transparent)]
    Lock(#[from] module_lock::ModuleLockError),
    /// `-lockfile=readonly` and the module lock file would change.
    #[error(
        "the module lock file {} would change ({}), and -lockfile=readonly forbids it",
        module_lock::FILE_NAME,
        changes.join("; ")
    )]
    LockReadonly {
        /// What would change, per call.
        changes: Vec<String>,
    },
    /// An upgrade names a call the configuration does not make.
    #[error("the configuration has no module call \"{call}\" to upgrade")]
    UnknownCall {
        /// The call path as given.
        call: String,
    },
    /// Writing `.terraform/modules` failed.
    #[error("cannot update {}: {message}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Diagnostic for ModuleInstallError {
    fn hint(&self) -> Option<String> {
        match self {
            ModuleInstallError::Call { source, .. } => source.hint(),
            ModuleInstallError::LockReadonly { .. } => Some(format!(
                "run \"tstore init\" without -lockfile=readonly to record the changes, and \
                 commit {}",
                module_lock::FILE_NAME
            )),
            ModuleInstallError::UnknownCall { .. } => Some(format!(
                "name a call as {} keys it: a module block's label, nested calls joined by \
                 dots (\"vpc\", \"vpc.label\")",
                module_lock::FILE_NAME
            )),
            ModuleInstallError::Config(_)
            | ModuleInstallError::Meta { .. }
            | ModuleInstallError::Lock(_)
            | ModuleInstallError::Write { .. } => None,
        }
    }
}

/// An error and its sources on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Install every module of the configuration at `opts.workdir.dir`, and keep its module lock
/// file.
pub fn install(
    store: &Store,
    opts: &ModuleOptions,
    reporter: &dyn Reporter,
) -> Result<(ModulesReport, Vec<ModuleWarning>), ModuleInstallError> {
    let root_meta =
        package_meta::load(&opts.workdir.dir).map_err(|source| ModuleInstallError::Meta {
            path: opts.workdir.dir.join(META_FILE),
            source,
        })?;
    let (mut tree, update) = resolve(store, opts, reporter)?;
    let decisions = decide(
        &tree.nodes,
        &tree.installs,
        root_meta.as_ref(),
        &opts.policy,
        opts.workdir.flavor,
    );
    let mut calls = apply(store, opts, &tree.nodes, &decisions, &mut tree.warnings)?;
    // Written once `.terraform/modules` is in place, so a failed init leaves it as it was.
    let lock_file = update.write()?;
    for call in calls.iter_mut().filter(|c| c.selected_by.is_some()) {
        call.lock = Some(update.standing(&call.key));
    }
    calls.sort_by(|a, b| a.key.cmp(&b.key));
    let report = ModulesReport {
        calls,
        fetched: sorted(tree.fetched),
        reused: sorted(tree.reused),
        lock_file,
    };
    Ok((report, tree.warnings))
}

/// Bring every remote module package of the configuration at `opts.workdir.dir` into the
/// store and write the module lock file, without touching `.terraform` (`tstore modules
/// lock`).
pub fn lock(
    store: &Store,
    opts: &ModuleOptions,
    reporter: &dyn Reporter,
) -> Result<ModuleLockReport, ModuleInstallError> {
    let (tree, update) = resolve(store, opts, reporter)?;
    let lock_file = update.write()?;
    let calls = update
        .new_entries()
        .map(|(key, entry)| LockedCall {
            key: key.clone(),
            // The lock writes no secret; shown as every URL is, all the same.
            source: crate::redact::display_url(&entry.source),
            version: entry.version.clone(),
            commit: entry.commit.clone(),
            lock: update.standing(key),
        })
        .collect();
    Ok(ModuleLockReport {
        calls,
        removed: update.removed(),
        lock_file,
        fetched: sorted(tree.fetched),
        reused: sorted(tree.reused),
    })
}

/// Bring the packages of `opts.workdir.dir`'s module calls into the store, as `install`
/// would find them (the lock file's pins followed), writing nothing in the working
/// directory: a run over many roots fetches them in parallel first, then installs each
/// root in turn from a warm store.
pub fn prefetch(
    store: &Store,
    opts: &ModuleOptions,
    reporter: &dyn Reporter,
) -> Result<(), ModuleInstallError> {
    let old_lock = module_lock::load(&opts.workdir.dir.join(module_lock::FILE_NAME))?;
    let pins = Pins::new(old_lock.as_ref(), opts.workdir.upgrade, &opts.upgrade_only);
    walk(store, opts, &pins, reporter)?;
    Ok(())
}

/// The module tree, walked with the lock file's pins, and the lock file it calls for;
/// refused here under `-lockfile=readonly` when that differs, before anything is written.
fn resolve(
    store: &Store,
    opts: &ModuleOptions,
    reporter: &dyn Reporter,
) -> Result<(walk::ModuleTree, LockUpdate), ModuleInstallError> {
    let lock_path = opts.workdir.dir.join(module_lock::FILE_NAME);
    let old_lock = module_lock::load(&lock_path)?;
    let pins = Pins::new(old_lock.as_ref(), opts.workdir.upgrade, &opts.upgrade_only);
    let tree = walk(store, opts, &pins, reporter)?;
    if let Some(unknown) = opts
        .upgrade_only
        .iter()
        .find(|call| !tree.nodes.iter().any(|n| lock::within(&n.key, call)))
    {
        return Err(ModuleInstallError::UnknownCall {
            call: unknown.clone(),
        });
    }
    let keep_unused = !opts
        .workdir
        .tool
        .follows(&tstore_tofu::tool_version::DROPS_UNUSED_LOCK_ENTRIES);
    let update = LockUpdate::new(lock_path, old_lock, &tree.nodes, keep_unused);
    if opts.workdir.lockfile_readonly && update.changes_anything() {
        return Err(ModuleInstallError::LockReadonly {
            changes: update.describe_changes(),
        });
    }
    Ok((tree, update))
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

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
