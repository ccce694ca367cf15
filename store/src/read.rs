//! Read-only accessors for readers that serve the store without going through views (the
//! FUSE filesystem in `tstore-fsmount`). Nothing here writes.

use std::path::PathBuf;

use crate::blob::BlobId;
use crate::index::tree_row;
use crate::tree::{Tree, TreeId};
use crate::{Result, Store, StoreError};

impl Store {
    /// The tree `id`, decoded from the index.
    pub fn tree(&self, id: &TreeId) -> Result<Tree> {
        let index = self.index();
        let row = tree_row(&index.conn, &id.to_string()).map_err(index.err("reading a tree"))?;
        let row = row.ok_or(StoreError::UnknownTree(*id))?;
        Tree::decode(&row.encoding)
    }

    /// The primary file of a blob: `blobs-v1/ab/<rest>`. Its content is the blob's whatever its
    /// mode; a reader that only reads (FUSE) never needs the twin with the other mode.
    pub fn blob_path(&self, id: &BlobId) -> PathBuf {
        self.layout.blob_path(id)
    }

    /// A number that changes whenever another connection (process) commits to the index
    /// (SQLite's `PRAGMA data_version`). Cheap: no I/O beyond the WAL index. Readers poll it to
    /// notice packages committed while they run.
    pub fn index_generation(&self) -> Result<u64> {
        let index = self.index();
        index
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
            .map(|v| v as u64)
            .map_err(index.err("reading the index generation"))
    }
}
