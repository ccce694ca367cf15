//! What a CI cache keeps (`tstore gc --ci`): the packages the lock files of a repository's
//! roots pin, so that a cache saved on every job holds what the next job installs and
//! nothing of old branches.
//!
//! Rules:
//! - The roots are found under each directory as `init --recursive` finds them.
//! - A provider is pinned when a root's `.terraform.lock.hcl` locks its address and
//!   version and the package holds one of the entry's hashes (any platform the store has).
//! - A module package is pinned when it holds one of the hashes of an entry of a root's
//!   `.tstore.lock.hcl` (under every name the store gives that content: its origin's, a
//!   lock's, a mirror's), with the copy made without dot entries (`ID-nodot`).
//! - The git cache is needed when some root's git calls are not all pinned: a root with
//!   remote module calls (in its configuration, or installed deeper by its last init) but no
//!   module lock file, a git entry without a commit, or one whose
//!   package the store does not hold. Otherwise every install comes from the store by the
//!   lock's hash and the git cache can go.
//! - Everything read is read as tofu reads it: a lock file that does not parse is an error
//!   naming it (keeping a cache on a guess is worse than saying so).

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use tstore_store::{PackageKey, Store};
use tstore_tofu::lockfile::LockFile;
use tstore_tofu::module_lock;

/// Why the packages a CI cache keeps could not be found.
#[derive(Debug, thiserror::Error)]
pub enum CiCacheError {
    /// The roots could not be listed.
    #[error(transparent)]
    Roots(#[from] crate::RootSearchError),
    /// A provider lock file does not parse.
    #[error(transparent)]
    ProviderLock(#[from] tstore_tofu::lockfile::LockFileError),
    /// A module lock file does not parse.
    #[error(transparent)]
    ModuleLock(#[from] module_lock::ModuleLockError),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] tstore_store::StoreError),
}

/// What the lock files under a repository's directories pin.
#[derive(Clone, Debug, Default)]
pub struct CiKeep {
    /// The roots found.
    pub roots: Vec<PathBuf>,
    /// The store's packages they pin.
    pub pinned: HashSet<PackageKey>,
    /// Why the git cache is still needed (`None`: every git call is pinned and held).
    pub git_cache_needed: Option<String>,
}

/// The packages of `store` that the lock files of the roots under `dirs` pin (module docs).
pub fn ci_keep(store: &Store, dirs: &[PathBuf]) -> Result<CiKeep, CiCacheError> {
    let mut keep = CiKeep::default();
    for dir in dirs {
        keep.roots.extend(crate::find_roots(dir, &[])?);
    }
    keep.roots.sort();
    keep.roots.dedup();
    let packages = store.packages()?;
    let hashes_of = |p: &tstore_store::Package| -> BTreeSet<String> {
        p.hashes.iter().map(|r| r.hash.to_string()).collect()
    };
    let ids: HashSet<String> = packages
        .iter()
        .filter_map(|p| match &p.key {
            PackageKey::Module { id } => Some(id.clone()),
            PackageKey::Provider { .. } => None,
        })
        .collect();
    for root in &keep.roots {
        if let Some(lock) = LockFile::load(&root.join(".terraform.lock.hcl"))? {
            for (addr, locked) in &lock.providers {
                let (addr, version) = (addr.to_string(), locked.version.to_string());
                for p in &packages {
                    let PackageKey::Provider {
                        addr: a,
                        version: v,
                        ..
                    } = &p.key
                    else {
                        continue;
                    };
                    if *a == addr && *v == version && !hashes_of(p).is_disjoint(&locked.hashes) {
                        keep.pinned.insert(p.key.clone());
                    }
                }
            }
        }
        let Some(lock) = module_lock::load(&root.join(module_lock::FILE_NAME))? else {
            if keep.git_cache_needed.is_none() && has_remote_calls(root) {
                keep.git_cache_needed = Some(format!(
                    "{} has module calls but no {}",
                    root.display(),
                    module_lock::FILE_NAME
                ));
            }
            continue;
        };
        for (key, entry) in &lock.entries {
            let hashes: BTreeSet<String> = entry.hashes.iter().cloned().collect();
            let mut held = false;
            for p in &packages {
                let PackageKey::Module { id } = &p.key else {
                    continue;
                };
                if !hashes_of(p).is_disjoint(&hashes) {
                    held = true;
                    keep.pinned.insert(p.key.clone());
                    let nodot = format!("{id}-nodot");
                    if ids.contains(&nodot) {
                        keep.pinned.insert(PackageKey::module(nodot));
                    }
                }
            }
            let git = entry.source.starts_with("git::") || entry.commit.is_some();
            if git && keep.git_cache_needed.is_none() && (entry.commit.is_none() || !held) {
                keep.git_cache_needed = Some(format!(
                    "module {key:?} of {} is a git call the store does not hold by its lock entry",
                    root.display()
                ));
            }
        }
    }
    Ok(keep)
}

/// Whether the root calls a module that is not a local directory: its own configuration
/// does (a root never initialized has no record), or its last init installed one deeper
/// (its `modules.json` says so). A configuration that cannot be read counts as calling one:
/// the git cache is kept rather than dropped on a guess.
fn has_remote_calls(root: &Path) -> bool {
    let local = |source: &str| source.starts_with("./") || source.starts_with("../");
    match tstore_tofu::config::load_module_requirements(root, tstore_tofu::flavor::Flavor::Tofu) {
        Ok(module) if module.module_calls.values().any(|c| !local(&c.source)) => return true,
        Ok(_) => {}
        Err(_) => return true,
    }
    let Ok(text) =
        tstore_tofu::read::read_own_capped(&root.join(".terraform/modules/modules.json"), 16 << 20)
    else {
        return false;
    };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
        return true;
    };
    doc["Modules"].as_array().into_iter().flatten().any(|m| {
        let source = m["Source"].as_str().unwrap_or_default();
        !source.is_empty() && !local(source)
    })
}
