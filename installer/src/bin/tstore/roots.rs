//! The root an `init` records: the working directory and its links into the store, which
//! keep the linked packages alive through `tstore gc`.

use std::path::Path;

use anyhow::{Context, Result};
use tstore_store::{package_of_view_relpath, RootLink, Store, StoreLock};

use crate::Settings;

/// The links of working directory `dir` into the store: every symlink at
/// `.terraform/providers/H/N/T/V/OS_ARCH` and `.terraform/modules/KEY` whose target is under
/// the mount path or the store's views and names a package.
pub(crate) fn scan_root_links(settings: &Settings, store: &Store, dir: &Path) -> Vec<RootLink> {
    let views = store.views_dir();
    let dot = dir.join(".terraform");
    let mut links = Vec::new();
    for (sub, depth) in [("providers", 5), ("modules", 1)] {
        let base = dot.join(sub);
        if !base.is_dir() {
            continue;
        }
        for entry in walkdir::WalkDir::new(&base)
            .min_depth(1)
            .max_depth(depth)
            .sort_by_file_name()
            .into_iter()
            .filter_map(std::result::Result::ok)
            .filter(|e| e.path_is_symlink())
        {
            let Ok(target) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let rel = target
                .strip_prefix(&settings.mount)
                .or_else(|_| target.strip_prefix(&views));
            if let Some(package) = rel.ok().and_then(package_of_view_relpath) {
                links.push(RootLink {
                    link: entry.into_path(),
                    target,
                    package,
                });
            }
        }
    }
    links
}

/// Record `dir` as a root with the links it has now. Called by `init` while it still holds
/// the shared store lock, on success and on failure (a failed provider install keeps the
/// module links it made and the provider links it had).
pub(crate) fn record_root(
    settings: &Settings,
    store: &Store,
    lock: &StoreLock,
    dir: &Path,
) -> Result<()> {
    let links = scan_root_links(settings, store, dir);
    let recorded = store
        .record_root(lock, dir, &links)
        .with_context(|| format!("cannot record {} as a root of the store", dir.display()))?;
    for key in recorded.unknown {
        tracing::warn!(
            "{} links {key}, which the store does not hold",
            dir.display()
        );
    }
    Ok(())
}
