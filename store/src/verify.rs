//! [`Store::verify`]: re-read everything the index vouches for. Every blob file is re-hashed
//! against its name, every blob a tree needs must have its file, and every package's view
//! must match its tree. Nothing is changed here: [`Store::repair`] (repair.rs) acts on the
//! report, and init removes a damaged package it meets via [`Store::reverify_package`].

use std::path::PathBuf;

use crate::blob::hash_file;
use crate::blob::{exists, BlobId};
use crate::index::query_vec;
use crate::layout::blob_file_id;
use crate::package::PackageKey;
use crate::tree::{Tree, TreeId};
use crate::view::check_view;
use crate::{Result, Store, StoreError};

/// A blob file whose content does not match its name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CorruptBlob {
    /// The blob (from the file name).
    pub blob: BlobId,
    /// The file.
    pub path: PathBuf,
}

/// A blob a tree needs whose file is missing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MissingBlob {
    /// The blob.
    pub blob: BlobId,
    /// A tree that references it.
    pub referenced_by: TreeId,
}

/// A package whose view does not match its tree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BadView {
    /// The package.
    pub package: PackageKey,
    /// Its view directory.
    pub path: PathBuf,
    /// What is wrong, one line each.
    pub problems: Vec<String>,
}

/// Result of [`Store::verify`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Blob files re-hashed.
    pub blobs_checked: u64,
    /// Bytes read to do so (and to check copied view files).
    pub bytes_checked: u64,
    /// Blob files with the wrong content.
    pub corrupt: Vec<CorruptBlob>,
    /// Blobs referenced by trees but absent.
    pub missing: Vec<MissingBlob>,
    /// Views that do not match their package.
    pub views_bad: Vec<BadView>,
}

impl VerifyReport {
    /// Nothing wrong found.
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty() && self.missing.is_empty() && self.views_bad.is_empty()
    }
}

impl Store {
    /// Re-hash every blob file (BLAKE3) against its name, check that every tree's blobs exist
    /// and that every package's view matches its tree. Bytes read count into
    /// [`Store::bytes_hashed`].
    pub fn verify(&self) -> Result<VerifyReport> {
        let before = self.bytes_hashed();
        let (blobs_checked, corrupt) = self.corrupt_blob_files()?;
        let (tree_blobs, packages) = {
            let index = self.index();
            let err = || index.err("verifying");
            let rows = query_vec(
                &index.conn,
                "SELECT tree, blob FROM tree_blobs ORDER BY tree, blob",
                [],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
            )
            .map_err(err())?;
            let packages = query_vec(
                &index.conn,
                "SELECT p.kind, p.name, p.version, p.platform, t.encoding FROM packages p JOIN trees t ON t.id = p.tree",
                [],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Vec<u8>>(4)?,
                    ))
                },
            )
            .map_err(err())?;
            (rows, packages)
        };
        let missing = self.missing_blobs(tree_blobs)?;
        let mut views_bad = Vec::new();
        for (kind, name, version, platform, encoding) in packages {
            let key = PackageKey::from_columns(&kind, name, version, platform)?;
            let tree = Tree::decode(&encoding)?;
            if let Some(bad) = self.bad_view(key, &tree)? {
                views_bad.push(bad);
            }
        }
        views_bad.sort_by(|a, b| a.package.cmp(&b.package));
        Ok(VerifyReport {
            blobs_checked,
            bytes_checked: self.bytes_hashed() - before,
            corrupt,
            missing,
            views_bad,
        })
    }

    /// Re-hash every file of `blobs-v1/` named like a blob (primary or twin) against that
    /// name, in name order: how many were checked, and those whose content differs. Files
    /// not named like a blob are not the store's and are skipped.
    fn corrupt_blob_files(&self) -> Result<(u64, Vec<CorruptBlob>)> {
        let mut checked = 0;
        let mut corrupt = Vec::new();
        for entry in walkdir::WalkDir::new(&self.layout.blobs)
            .min_depth(2)
            .max_depth(2)
            .sort_by_file_name()
        {
            let entry = entry.map_err(|e| StoreError::io(&self.layout.blobs, e.into()))?;
            if !entry.file_type().is_file() {
                continue;
            }
            let fan = entry
                .path()
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let name = entry.file_name().to_str().unwrap_or_default();
            let Ok(blob) = blob_file_id(fan, name).parse::<BlobId>() else {
                tracing::debug!("verify: ignoring stray file {}", entry.path().display());
                continue;
            };
            checked += 1;
            let actual = hash_file(entry.path(), &self.bytes_hashed)?;
            if actual != *blob.as_bytes() {
                corrupt.push(CorruptBlob {
                    blob,
                    path: entry.into_path(),
                });
            }
        }
        Ok((checked, corrupt))
    }

    /// The `(tree, blob)` rows whose blob has no primary file.
    fn missing_blobs(&self, tree_blobs: Vec<(String, String)>) -> Result<Vec<MissingBlob>> {
        let mut missing = Vec::new();
        for (tree, blob) in tree_blobs {
            let blob: BlobId = blob.parse()?;
            if !exists(&self.layout.blob_path(&blob))? {
                missing.push(MissingBlob {
                    blob,
                    referenced_by: tree.parse()?,
                });
            }
        }
        Ok(missing)
    }

    /// The view of package `key` checked against its tree; `None` when it matches.
    fn bad_view(&self, key: PackageKey, tree: &Tree) -> Result<Option<BadView>> {
        let path = self.view_dir(&key)?;
        let problems = check_view(&self.layout, tree, &path, &self.bytes_hashed)?;
        Ok((!problems.is_empty()).then_some(BadView {
            package: key,
            path,
            problems,
        }))
    }
}
