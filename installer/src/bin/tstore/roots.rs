//! The root an `init` records: the working directory and its links into the store, which
//! keep the linked packages alive through `tstore gc`.

use std::path::Path;

use anyhow::{Context, Result};
use tstore_installer::roots;
use tstore_store::{Store, StoreLock};

use crate::Settings;

/// Record `dir` as a root with the links it has now. Called by `init` while it still holds
/// the shared store lock, on success and on failure (a failed provider install keeps the
/// module links it made and the provider links it had).
pub(crate) fn record_root(
    settings: &Settings,
    store: &Store,
    lock: &StoreLock,
    dir: &Path,
    data_dir: &tstore_installer::DataDir,
) -> Result<()> {
    let links = roots::scan_links(data_dir, &settings.mount, &store.views_dir());
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
