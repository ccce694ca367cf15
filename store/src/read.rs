//! Read-only accessors for readers that serve the store without going through views (the
//! FUSE filesystem in `tstore-fsmount`). Nothing here writes.

use std::path::PathBuf;

use crate::blob::BlobId;
use crate::ids::PackageKey;
use crate::ids::TreeId;
use crate::index::{query_vec, tree_row};
use crate::tree::Tree;
use crate::{Result, Store, StoreError};

/// A change to the package list: a package and its tree now (`None`: removed).
pub type PackageChange = (PackageKey, Option<TreeId>);

impl Store {
    /// The tree `id` the index holds, decoded (once per process: `decoded_trees.rs`).
    pub fn tree(&self, id: &TreeId) -> Result<std::sync::Arc<Tree>> {
        let index = self.index();
        let row = tree_row(&index.conn, &id.to_string()).map_err(index.err("reading a tree"))?;
        let row = row.ok_or(StoreError::UnknownTree(*id))?;
        drop(index);
        crate::decoded_trees::decoded(id, &row.encoding)
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

    /// A number that grows whenever a package is added, removed or given another tree, by
    /// any process: the sequence number of the last change ([`Store::package_changes_since`]).
    /// Unlike [`Store::index_generation`], an init recording its root or marking packages
    /// used does not change it.
    pub fn package_generation(&self) -> Result<u64> {
        let index = self.index();
        index
            .conn
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM package_changes",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|v| v as u64)
            .map_err(index.err("reading the package generation"))
    }

    /// The changes to the package list after generation `since`, in order, each a package
    /// and its tree (`None`: removed); `None` when the index no longer keeps them all (it keeps
    /// the last 10,000): the reader must list every package again.
    pub fn package_changes_since(&self, since: u64) -> Result<Option<Vec<PackageChange>>> {
        let index = self.index();
        let err = || index.err("reading package changes");
        let since = since as i64;
        let oldest: Option<i64> = index
            .conn
            .query_row("SELECT MIN(seq) FROM package_changes", [], |r| r.get(0))
            .map_err(err())?;
        if oldest.is_some_and(|oldest| oldest > since + 1) {
            return Ok(None);
        }
        let rows: Vec<(String, String, String, String, Option<String>)> = query_vec(
            &index.conn,
            "SELECT kind, name, version, platform, tree FROM package_changes WHERE seq > ?1 ORDER BY seq",
            [since],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .map_err(err())?;
        rows.into_iter()
            .map(|(kind, name, version, platform, tree)| {
                Ok((
                    PackageKey::from_columns(&kind, name, version, platform)?,
                    tree.map(|t| t.parse()).transpose()?,
                ))
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// Every package's key and tree, in one query: what a reader listing packages needs
    /// ([`Store::packages`] also reads each package's hashes).
    pub fn package_trees(&self) -> Result<Vec<(PackageKey, TreeId)>> {
        let index = self.index();
        let rows: Vec<(String, String, String, String, String)> = query_vec(
            &index.conn,
            "SELECT kind, name, version, platform, tree FROM packages",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .map_err(index.err("listing packages"))?;
        rows.into_iter()
            .map(|(kind, name, version, platform, tree)| {
                Ok((
                    PackageKey::from_columns(&kind, name, version, platform)?,
                    tree.parse()?,
                ))
            })
            .collect()
    }
}
