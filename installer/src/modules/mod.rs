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
mod package_dirs;
pub(crate) mod package_meta;
pub(crate) mod policy;
mod report;
pub(crate) mod repository_file;
#[cfg(test)]
mod test_repos;
mod tree;
mod walk;

use std::path::PathBuf;

pub use self::fetch::claims_origin;
pub use self::mirror::ModuleMirror;
pub use package_meta::META_FILE;
use tstore_store::Store;

pub use self::error::ModuleInstallError;
pub(crate) use self::error::{chain, FetchError};
pub use self::report::{
    Action, CallLock, CallReport, LockedCall, ModuleLockReport, ModuleWarning, ModulesReport,
    NewerTag, ObtainedFrom, OutdatedCall, OutdatedReport,
};
use crate::modules::apply::apply;
use crate::modules::decide::decide;
use crate::modules::walk::walk;
use crate::options::WorkdirOptions;
use crate::report::Reporter;
use locked::{LockUpdate, Pins};
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
    /// The module mirror (`module_mirror` in `.tstore.hcl`, `TSTORE_MODULE_MIRROR`): a
    /// pinned call whose package the store lacks is asked of it, by the entry's `h1:`,
    /// before its origin.
    pub module_mirror: Option<ModuleMirror>,
    /// The run this install is part of: what it asks remotes is asked once in it (every
    /// root of `init DIR...` shares one), and never believed by another run.
    pub run: std::sync::Arc<crate::Run>,
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
    tree.warnings
        .extend(decide::shared_by_instances(&tree.nodes, &decisions));
    let mut calls = apply(store, opts, &tree.nodes, &decisions, &mut tree.warnings)?;
    // Written once `.terraform/modules` is in place, so a failed init leaves it as it was.
    let lock_file = update.write()?;
    for call in calls.iter_mut().filter(|c| c.selected_by.is_some()) {
        call.lock = Some(update.standing(&call.key));
    }
    calls.sort_by(|a, b| a.key.cmp(&b.key));
    let (fetched, mirrored) = (sorted(tree.fetched), sorted(tree.mirrored));
    for call in calls.iter_mut().filter(|c| c.selected_by.is_some()) {
        call.obtained = call.package.as_deref().map(|id| {
            // A package without its dot entries was made from the one fetched.
            let id = id.strip_suffix("-nodot").unwrap_or(id);
            if mirrored.binary_search_by(|m| m.as_str().cmp(id)).is_ok() {
                ObtainedFrom::Mirror
            } else if fetched.binary_search_by(|f| f.as_str().cmp(id)).is_ok() {
                ObtainedFrom::Origin
            } else {
                ObtainedFrom::Store
            }
        });
        if call.obtained != Some(ObtainedFrom::Origin) {
            call.origin_why = None;
        }
    }
    let report = ModulesReport {
        calls,
        fetched,
        reused: sorted(tree.reused),
        mirrored,
        mirror: opts.module_mirror.as_ref().map(ToString::to_string),
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

/// What moved upstream since the module lock file was written: every call resolved again as
/// `-upgrade` resolves it (the newest version its constraint allows, the commit its ref
/// names now), compared with its entry; nothing is written in the working directory (the
/// packages asked for are kept in the store, as any fetch keeps them). `cargo update
/// --dry-run` for modules, for a scheduled CI job.
pub fn outdated(
    store: &Store,
    opts: &ModuleOptions,
    reporter: &dyn Reporter,
) -> Result<OutdatedReport, ModuleInstallError> {
    let lock_path = opts.workdir.dir.join(module_lock::FILE_NAME);
    let Some(old_lock) = module_lock::load(&lock_path)? else {
        return Err(ModuleInstallError::NoLockFile { path: lock_path });
    };
    let fresh = ModuleOptions {
        workdir: WorkdirOptions {
            upgrade: true,
            lockfile_readonly: false,
            ..opts.workdir.clone()
        },
        ..opts.clone()
    };
    let (tree, update) = resolve(store, &fresh, reporter)?;
    let held_back = |key: &str| {
        tree.nodes
            .iter()
            .find(|n| n.key == key)
            .map(|n| n.held_back.clone())
            .unwrap_or_default()
    };
    let mut calls = Vec::new();
    let mut checked = 0;
    for (key, now) in update.new_entries() {
        let Some(locked) = old_lock.entries.get(key) else {
            continue;
        };
        checked += 1;
        let moved = match (&locked.commit, &now.commit) {
            (Some(a), Some(b)) => a != b,
            _ => locked.version != now.version,
        };
        let held_back = held_back(key);
        let newer_tags = newer_tags(opts, locked);
        if moved || !held_back.is_empty() || !newer_tags.is_empty() {
            calls.push(OutdatedCall {
                key: key.clone(),
                source: crate::redact::display_url(&locked.source),
                locked_version: locked.version.clone(),
                locked_commit: locked.commit.clone(),
                latest_version: now.version.clone(),
                latest_commit: now.commit.clone(),
                moved,
                held_back,
                newer_tags,
            });
        }
    }
    Ok(OutdatedReport { checked, calls })
}

/// The newer version tags of a git call the lock pins at a version tag, with what the
/// cooldown holds back (listing them is this machine's first sighting of each). A
/// repository whose tags cannot be listed is said, and lists none.
fn newer_tags(
    opts: &ModuleOptions,
    locked: &tstore_tofu::module_lock::ModuleLockEntry,
) -> Vec<report::NewerTag> {
    let (Some(tag), Some(_)) = (&locked.version, &locked.commit) else {
        return Vec::new();
    };
    let default_host = opts.workdir.flavor.default_registry_host();
    let Ok(tstore_tofu::module_source::ModuleSource::Remote { package, .. }) =
        tstore_tofu::module_source::ModuleSource::parse(&locked.source, default_host)
    else {
        return Vec::new();
    };
    if package.getter != tstore_tofu::module_source::Getter::Git {
        return Vec::new();
    }
    let tags = getters::git::GitAddress::parse(&package.url)
        .and_then(|addr| Ok((getters::git::newer_version_tags(&addr, tag)?, addr)));
    let (tags, addr) = match tags {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(
                "cannot list the tags of {}: {}",
                crate::redact::display_url(&locked.source),
                getters::git_reach::short_reason(&e)
            );
            return Vec::new();
        }
    };
    let policy = opts
        .workdir
        .release_age
        .as_ref()
        .filter(|p| p.applies_to(std::slice::from_ref(&locked.source)));
    let now = crate::cooldown::now();
    // The team's module mirror dates a tag where it has a stamped record of it (as init
    // does); a mirror that cannot be asked dates none.
    let mirror = opts
        .module_mirror
        .as_ref()
        .zip(policy)
        .filter(|(m, p)| m.dates_count_under(p))
        .and_then(|(m, _)| {
            let http = opts.workdir.network.http_client().ok()?;
            let logins = opts.workdir.network.oci_logins().ok()?;
            Some((m, crate::net::oci::OciClient::new(http, logins)))
        });
    tags.into_iter()
        .map(|(tag, commit)| {
            let held_until = policy.and_then(|p| {
                // Listing a tag is this machine's sighting of it, with a mirror or without.
                let seen = getters::git_first_seen::sighted(
                    &opts.run,
                    &addr.repo,
                    &tag,
                    &commit,
                    opts.reach_records.as_deref(),
                );
                let seen = mirror
                    .as_ref()
                    .and_then(|(m, client)| {
                        fetch::reach_from_mirror(client, m, &addr.repo, &tag, &commit).ok()
                    })
                    .and_then(|record| record.first_seen)
                    .unwrap_or(seen);
                let eligible = seen.saturating_add(p.min_age.as_secs());
                (eligible > now).then_some(eligible)
            });
            report::NewerTag {
                tag,
                commit,
                held_until,
            }
        })
        .collect()
}

/// Bring the packages of `opts.workdir.dir`'s module calls into the store, as `install`
/// would find them (the lock file's pins followed), writing nothing in the working
/// directory: a run over many roots fetches them in parallel first, then installs each
/// root in turn from a warm store.
pub fn prefetch(
    store: &Store,
    opts: &ModuleOptions,
    reporter: &dyn Reporter,
) -> Result<PrefetchReport, ModuleInstallError> {
    let old_lock = module_lock::load(&opts.workdir.dir.join(module_lock::FILE_NAME))?;
    let pins = Pins::new(old_lock.as_ref(), opts.workdir.upgrade, &opts.upgrade_only);
    let tree = walk(store, opts, &pins, reporter)?;
    Ok(PrefetchReport {
        fetched: sorted(tree.fetched),
        mirrored: sorted(tree.mirrored),
    })
}

/// What a prefetch brought into the store: package ids from their origins and from the
/// module mirror.
#[derive(Clone, Debug, Default)]
pub struct PrefetchReport {
    /// Fetched from their origins.
    pub fetched: Vec<String>,
    /// Fetched from the module mirror.
    pub mirrored: Vec<String>,
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
        .find(|call| !tree.nodes.iter().any(|n| locked::within(&n.key, call)))
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
