//! What damage to a committed package takes with it, so that the index never names a file that
//! is gone and every checkout that links a damaged package works again on its next init.
//!
//! Without FUSE a view's files are hard links of the blob files, and root (or an owner who
//! makes them writable) can write through a checkout's link into the store. Rules:
//!
//! - A blob whose primary file no longer hashes to its name, or is gone, has lost its bytes.
//!   Every view that links it was changed by the same write, so its row goes with every tree
//!   that holds it and every package of those trees: rows first (one transaction), then the
//!   views, then the blob's files. The next install fetches each package again under the same
//!   name, so its view comes back at the same path and every checkout's link to it is whole.
//!   No tree row is left naming a blob that is gone (an install by a lock's `h1:` finds trees
//!   by their rows).
//! - A view whose blobs are intact but that is not its tree (a file added, removed, replaced
//!   or made writable; a changed twin file) is rebuilt from the tree under the same path:
//!   nothing is fetched and the package keeps its name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::blob::BlobId;
use crate::ids::PackageKey;
use crate::index::package_keys;
use crate::tree::Tree;
use crate::view::remove_view;
use crate::{Result, Store, StoreError};

impl Store {
    /// Forget the blobs `broken` (their bytes are lost), every tree that holds one and every
    /// package of those trees, then remove those packages' views and the blobs' files.
    /// Returns the packages removed.
    pub(crate) fn drop_broken_blobs(&self, broken: &BTreeSet<BlobId>) -> Result<Vec<PackageKey>> {
        let ids: Vec<String> = broken.iter().map(ToString::to_string).collect();
        let keys = {
            let mut index = self.index();
            let mut keys = Vec::new();
            for id in &ids {
                keys.extend(package_keys(
                    &index,
                    "reading the packages of a changed blob",
                    "SELECT p.kind, p.name, p.version, p.platform FROM packages p
                     JOIN tree_blobs tb ON tb.tree = p.tree WHERE tb.blob = ?1",
                    [id],
                )?);
            }
            keys.sort();
            keys.dedup();
            let (tx, op) =
                index.write("forgetting changed blobs and the packages that hold them")?;
            let err = op.err();
            for id in &ids {
                // Packages first (they name their tree), then the trees (their blob lists,
                // source memos, kept archives and times cascade), then the blob.
                tx.execute(
                    "DELETE FROM packages WHERE tree IN (SELECT tree FROM tree_blobs WHERE blob = ?1)",
                    [id],
                )
                .map_err(&err)?;
                tx.execute(
                    "DELETE FROM trees WHERE id IN (SELECT tree FROM tree_blobs WHERE blob = ?1)",
                    [id],
                )
                .map_err(&err)?;
                tx.execute("DELETE FROM archives WHERE blob = ?1", [id])
                    .map_err(&err)?;
                tx.execute("DELETE FROM file_facts WHERE blob = ?1", [id])
                    .map_err(&err)?;
                tx.execute("DELETE FROM blobs WHERE id = ?1", [id])
                    .map_err(&err)?;
            }
            tx.commit().map_err(err)?;
            keys
        };
        for key in &keys {
            let view = self.view_dir(key)?;
            if crate::blob::exists(&view)? {
                remove_view(&self.layout, &view)?;
            }
        }
        for blob in broken {
            for path in [
                self.layout.blob_path(blob),
                self.layout.blob_twin_path(blob, true),
                self.layout.blob_twin_path(blob, false),
            ] {
                remove_file_if_there(&path)?;
            }
        }
        Ok(keys)
    }

    /// Rebuild the view of `tree` at `view` from its blobs (all intact), the changed twin
    /// files `damaged_twins` made again from their primaries first.
    pub(crate) fn rebuild_view(
        &self,
        tree: &Tree,
        view: &Path,
        damaged_twins: &[PathBuf],
    ) -> Result<()> {
        for twin in damaged_twins {
            remove_file_if_there(twin)?;
        }
        if crate::blob::exists(view)? {
            remove_view(&self.layout, view)?;
        }
        self.materialize_view(tree, view)?;
        Ok(())
    }
}

fn remove_file_if_there(path: &Path) -> Result<()> {
    match fs_err::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}
