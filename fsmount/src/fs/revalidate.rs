//! Serving only the current bytes. A blob file can be replaced while mounted: a repair
//! after damage re-ingests a package (a new file under the same blob name), gc removes one.
//! The daemon then must stop serving the old file — neither its open descriptor nor the
//! kernel's page cache of it. [`Served`] remembers which blob file (device, inode) each
//! FUSE file inode was served from; [`Watcher`] looks again whenever the index changes and
//! invalidates what was replaced.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuser::{INodeNo, Notifier};
use tstore_store::Store;

/// Open blob files by FUSE inode (see `StoreFs::no_open`), shared with the [`Watcher`].
pub(crate) type OpenFiles = Arc<Mutex<HashMap<u64, Arc<std::fs::File>>>>;

/// The blob file each FUSE file inode was served from.
#[derive(Debug, Default)]
pub(crate) struct Served {
    files: Mutex<HashMap<u64, (PathBuf, u64, u64)>>,
}

impl Served {
    /// Remember that inode `ino` is served from `file`, opened at `path`.
    pub(crate) fn record(&self, ino: u64, path: &Path, file: &std::fs::File) {
        if let Ok(meta) = file.metadata() {
            self.files
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(ino, (path.to_owned(), meta.dev(), meta.ino()));
        }
    }

    /// The inodes whose blob file is no longer the one served (replaced or removed); they
    /// are forgotten, so the next read opens the current file.
    pub(crate) fn stale(&self) -> Vec<u64> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let stale: Vec<u64> = files
            .iter()
            .filter(|(_, (path, dev, ino))| {
                std::fs::metadata(path).map_or(true, |m| m.dev() != *dev || m.ino() != *ino)
            })
            .map(|(ino, _)| *ino)
            .collect();
        for ino in &stale {
            files.remove(ino);
        }
        stale
    }
}

/// Watches the index of one store and invalidates what the mount served from replaced
/// blob files: the daemon's open descriptor and the kernel's caches of the inode.
pub(crate) struct Watcher {
    pub(crate) store_root: PathBuf,
    pub(crate) served: Arc<Served>,
    pub(crate) open_files: OpenFiles,
}

/// How often the index generation is looked at.
const POLL: Duration = Duration::from_millis(200);

impl Watcher {
    /// Run until the process ends (a daemon thread).
    pub(crate) fn run(self, notifier: Notifier) {
        let store = match Store::open(&self.store_root) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("the mount cannot watch the store for replaced blobs: {e}");
                return;
            }
        };
        let mut seen = store.index_generation().ok();
        loop {
            std::thread::sleep(POLL);
            let Ok(generation) = store.index_generation() else {
                continue;
            };
            if seen == Some(generation) {
                continue;
            }
            seen = Some(generation);
            for ino in self.served.stale() {
                self.open_files
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&ino);
                // The kernel may have forgotten the inode already; that is fine.
                let _ = notifier.inval_inode(INodeNo(ino), 0, 0);
                tracing::info!("inode {ino}: its blob was replaced; caches invalidated");
            }
        }
    }
}
