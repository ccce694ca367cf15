//! Where things live under the store root.
//!
//! ```text
//! <root>/
//! ├── .lock                     advisory lock: shared for init/import, exclusive for gc
//! ├── index.sqlite              the index (WAL): blobs, trees, packages, hashes, sources
//! ├── blobs-v1/                 file contents, named by BLAKE3, read-only
//! │   └── ab/<62 hex>           mode 0444, or 0555 if first needed executable
//! │       ab/<62 hex>.x / .r    "twin" with the other mode (reflink or copy), made on demand
//! ├── tmp/                      temp files and dirs (same filesystem, so renames are atomic)
//! └── views/                    materialized read-only packages (until/without FUSE)
//!     └── providers/HOST/NS/TYPE/VERSION/OS_ARCH/…
//! ```
//!
//! The layout is versioned in directory names (`blobs-v1`), so a future format can live next to
//! this one and be migrated or pruned.

use std::path::{Path, PathBuf};

use crate::blob::BlobId;

/// Name of the blob directory (versioned).
pub(crate) const BLOBS_DIR: &str = "blobs-v1";

/// The paths of one store.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) root: PathBuf,
    pub(crate) blobs: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) views: PathBuf,
    pub(crate) index: PathBuf,
    pub(crate) lock: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            blobs: root.join(BLOBS_DIR),
            tmp: root.join("tmp"),
            views: root.join("views"),
            index: root.join("index.sqlite"),
            lock: root.join(".lock"),
        }
    }

    /// `blobs-v1/ab/<rest>`: the primary file of a blob.
    pub(crate) fn blob_path(&self, id: &BlobId) -> PathBuf {
        let hex = id.to_string();
        self.blobs.join(&hex[..2]).join(&hex[2..])
    }

    /// The twin of a blob with the other mode: `<rest>.x` (0555) or `<rest>.r` (0444).
    pub(crate) fn blob_twin_path(&self, id: &BlobId, exec: bool) -> PathBuf {
        let hex = id.to_string();
        let suffix = if exec { "x" } else { "r" };
        self.blobs
            .join(&hex[..2])
            .join(format!("{}.{suffix}", &hex[2..]))
    }
}
