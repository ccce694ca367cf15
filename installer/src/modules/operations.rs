//! The module phase's four operations: `install` (init's), `lock` (`tstore modules lock`),
//! `outdated` (`tstore modules outdated`) and `prefetch` (a run over many roots), each a walk
//! of the tree with the lock file's pins, then what the operation does with it.

use tstore_store::Store;
use tstore_tofu::module_lock;

use super::apply::apply;
use super::decide::{self, decide};
use super::locked::{LockUpdate, Pins};
use super::package_meta::{self, META_FILE};
use super::walk::{self, walk};
use super::{fetch, getters, locked, report};
use super::{
    LockedCall, ModuleInstallError, ModuleLockReport, ModuleOptions, ModuleWarning, ModulesReport,
    ObtainedFrom, OutdatedCall, OutdatedReport,
};
use crate::options::WorkdirOptions;
use crate::report::Reporter;

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
