//! Package freshness: may a committed package be trusted without reading it?
//!
//! A package's hashes (the memoized `h1:` of its tree, the `zh:` of the archive it came
//! from) were computed when its content was ingested. Verifying a lock file against them
//! later, with no network and no re-hash, is only sound if the files behind the package
//! are still the ones that were hashed. So at its first commit each
//! package gets a **content stat**: for every file of its tree, `lstat` of the view file
//! and of the blob file(s) it is served from (size, mtime, inode, device), digested into
//! one string and kept in `package_stats`. [`Store::package_freshness`] recomputes it
//! (stat calls only) and compares.
//!
//! The stat leaves out ctime on purpose: linking another package's view to a shared blob
//! changes the blob's ctime (its link count), which is not a change of content. Writing
//! a blob in place changes its mtime; restoring the mtime by hand is not defended
//! against (a user who can do that can also rewrite the index).
//!
//! A [`Freshness::Stale`] package is re-verified by [`Store::reverify_package`]: every
//! blob file is re-hashed and the view checked. If all is well the new stat is recorded;
//! if not, the package row, its source memos, its view and the damaged blob files are
//! removed (rows first, then files), so the next install fetches and ingests it again.

use std::fmt::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use rusqlite::OptionalExtension as _;

use crate::blob::hash_file;
use crate::index::package_keys;
use crate::layout::Layout;
use crate::package::PackageKey;
use crate::tree::{EntryKind, Tree};
use crate::view::{check_view, remove_view};
use crate::{Result, Store, StoreError};

/// Whether a committed package's files are as they were when last verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Freshness {
    /// Every file has the stat recorded at commit (or last re-verification).
    Fresh,
    /// Some file changed, vanished, or no stat was recorded: re-verify before trusting.
    Stale,
    /// No such package.
    Missing,
}

/// The outcome of [`Store::reverify_package`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reverified {
    /// Every blob and the view match the tree; the new stat is recorded.
    Intact,
    /// Something did not match; the package was removed from the store (see the module
    /// docs). One line per problem.
    Removed(Vec<String>),
    /// No such package.
    Missing,
}

/// The content stat of `tree` as materialized at `view` (see the module docs).
pub(crate) fn content_stat(layout: &Layout, tree: &Tree, view: &Path) -> String {
    fn stat(listing: &mut String, what: &str, path: &Path) {
        match fs_err::symlink_metadata(path) {
            Ok(m) => {
                let _ = writeln!(
                    listing,
                    "{what}\t{}\t{}.{:09}\t{}\t{}\t{:o}",
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ino(),
                    m.dev(),
                    m.mode()
                );
            }
            Err(e) => {
                let _ = writeln!(listing, "{what}\tmissing\t{:?}", e.kind());
            }
        }
    }
    let mut listing = String::new();
    for entry in tree.entries() {
        let _ = writeln!(listing, "{:?}", entry.path);
        stat(&mut listing, "view", &view.join(&entry.path));
        if let EntryKind::File { blob, exec } = &entry.kind {
            let primary = layout.blob_path(blob);
            stat(&mut listing, "blob", &primary);
            // The twin exists only when the primary's mode is not the one needed.
            let primary_exec = fs_err::symlink_metadata(&primary)
                .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
            if primary_exec != *exec {
                stat(&mut listing, "twin", &layout.blob_twin_path(blob, *exec));
            }
        }
    }
    format!("s1:{}", blake3::hash(listing.as_bytes()).to_hex())
}

impl Store {
    /// Compare the package's files with the stat recorded when it was committed (or last
    /// re-verified). Costs one `lstat` per file and blob; reads no content.
    pub fn package_freshness(&self, key: &PackageKey) -> Result<Freshness> {
        let Some((tree, recorded)) = self.package_tree_and_stat(key)? else {
            return Ok(Freshness::Missing);
        };
        let current = content_stat(&self.layout, &tree, &self.view_dir(key)?);
        Ok(if recorded.as_deref() == Some(current.as_str()) {
            Freshness::Fresh
        } else {
            Freshness::Stale
        })
    }

    /// Re-hash every blob of the package (counted in [`Store::bytes_hashed`]) and check its
    /// view. Intact: record the new stat. Damaged: remove the package (row, source memos of
    /// its tree, view, damaged blob files) so that it is fetched and ingested again.
    pub fn reverify_package(&self, key: &PackageKey) -> Result<Reverified> {
        let Some((tree, _)) = self.package_tree_and_stat(key)? else {
            return Ok(Reverified::Missing);
        };
        let view = self.view_dir(key)?;
        let (mut problems, damaged_files) = self.rehash_blobs(&tree)?;
        problems.extend(check_view(&self.layout, &tree, &view, &self.bytes_hashed)?);
        problems.sort();
        problems.dedup();
        if problems.is_empty() {
            let stat = content_stat(&self.layout, &tree, &view);
            let index = self.index();
            index
                .conn
                .execute(
                    "INSERT INTO package_stats (package, stat)
                     SELECT id, ?5 FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4
                     ON CONFLICT (package) DO UPDATE SET stat = excluded.stat",
                    rusqlite::params![key.kind(), key.name(), key.version(), key.platform(), stat],
                )
                .map_err(index.err("recording a package stat"))?;
            return Ok(Reverified::Intact);
        }
        tracing::warn!(
            "{key} changed on disk since it was verified ({}); removing it from the store",
            problems.join("; ")
        );
        self.remove_damaged_package(key, &view, &damaged_files)?;
        Ok(Reverified::Removed(problems))
    }

    /// Re-hash the primary file and the twin of every blob of `tree` against the blob's
    /// name: one problem line per modified file or missing primary (twins are optional),
    /// and the modified files.
    fn rehash_blobs(&self, tree: &Tree) -> Result<(Vec<String>, Vec<PathBuf>)> {
        let mut problems = Vec::new();
        let mut damaged_files = Vec::new();
        for entry in tree.entries() {
            let EntryKind::File { blob, exec } = &entry.kind else {
                continue;
            };
            let primary = self.layout.blob_path(blob);
            let twin = self.layout.blob_twin_path(blob, *exec);
            for path in [primary, twin] {
                match hash_file(&path, &self.bytes_hashed) {
                    Ok(actual) if actual == *blob.as_bytes() => {}
                    Ok(_) => {
                        problems.push(format!("{}: blob {blob} was modified", entry.path));
                        damaged_files.push(path);
                    }
                    Err(StoreError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        // Twins are optional; a missing primary shows in the view check
                        // (hardlinks) or here.
                        if path == self.layout.blob_path(blob) {
                            problems.push(format!("{}: blob {blob} is missing", entry.path));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok((problems, damaged_files))
    }

    /// Remove a damaged package: rows first (the package and the source memos of its tree),
    /// then files (its view, the damaged blob files), so the index never points at nothing.
    fn remove_damaged_package(
        &self,
        key: &PackageKey,
        view: &Path,
        damaged_files: &[PathBuf],
    ) -> Result<()> {
        {
            let mut index = self.index();
            let (tx, op) = index.write(format!("removing damaged package {key}"))?;
            let err = op.err();
            let tree_id: Option<String> = tx
                .query_row(
                    "SELECT tree FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
                    [key.kind(), key.name(), key.version(), key.platform()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(err)?;
            if let Some(tree_id) = tree_id {
                tx.execute("DELETE FROM sources WHERE tree = ?1", [&tree_id])
                    .map_err(err)?;
            }
            tx.execute(
                "DELETE FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
                [key.kind(), key.name(), key.version(), key.platform()],
            )
            .map_err(err)?;
            tx.commit().map_err(err)?;
        }
        if crate::blob::exists(view)? {
            remove_view(&self.layout, view)?;
        }
        for path in damaged_files {
            match fs_err::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io(path, e)),
            }
        }
        Ok(())
    }

    /// The package `key` if its files may be trusted without reading them: fresh by the
    /// recorded stat, or stale but re-verified intact. A damaged package is removed (see
    /// [`Store::reverify_package`]) and `None` is returned, so the caller fetches it
    /// again instead of linking corrupt content. Every path that reuses a committed
    /// package goes through here.
    pub fn trusted_package(&self, key: &PackageKey) -> Result<Option<crate::Package>> {
        match self.package_freshness(key)? {
            Freshness::Fresh => {}
            Freshness::Missing => return Ok(None),
            Freshness::Stale => match self.reverify_package(key)? {
                Reverified::Intact => {}
                Reverified::Removed(problems) => {
                    tracing::warn!(
                        "{key} changed in the store ({}); it will be fetched again",
                        problems.join("; ")
                    );
                    return Ok(None);
                }
                Reverified::Missing => return Ok(None),
            },
        }
        self.package(key)
    }

    /// A memo hit or a reused package must not bring back corrupt content: every package
    /// using `tree` is checked against its content stat (stat calls only), and a stale one
    /// re-verified; `false` if one was found damaged (and removed, with the memos of its
    /// tree, by [`Store::reverify_package`]), so the caller ingests again.
    pub(crate) fn tree_packages_intact(&self, tree: &str) -> Result<bool> {
        let keys = package_keys(
            &self.index(),
            "reading packages of a tree",
            "SELECT kind, name, version, platform FROM packages WHERE tree = ?1",
            [tree],
        )?;
        for key in keys {
            if self.package_freshness(&key)? == Freshness::Stale
                && matches!(self.reverify_package(&key)?, Reverified::Removed(_))
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The tree of a committed package and its recorded stat.
    fn package_tree_and_stat(&self, key: &PackageKey) -> Result<Option<(Tree, Option<String>)>> {
        let index = self.index();
        let row: Option<(Vec<u8>, Option<String>)> = index
            .conn
            .query_row(
                "SELECT t.encoding, s.stat FROM packages p JOIN trees t ON t.id = p.tree
                 LEFT JOIN package_stats s ON s.package = p.id
                 WHERE p.kind = ?1 AND p.name = ?2 AND p.version = ?3 AND p.platform = ?4",
                [key.kind(), key.name(), key.version(), key.platform()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(index.err("reading a package's stat"))?;
        drop(index);
        row.map(|(encoding, stat)| Ok((Tree::decode(&encoding)?, stat)))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashRecord;

    fn commit(store: &Store, dir: &Path, name: &str, files: &[(&str, &[u8], u32)]) -> PackageKey {
        let src = dir.join(name);
        for (path, content, mode) in files {
            let p = src.join(path);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(&p, content).unwrap();
            fs_err::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        let got = store.ingest_dir(&src).unwrap();
        let key = PackageKey::provider(format!("example.com/test/{name}"), "1.0.0", "linux_amd64");
        store
            .commit_package(
                &key,
                &got.tree,
                &[HashRecord::verified_locally(got.h1)],
                None,
            )
            .unwrap();
        key
    }

    #[test]
    fn stat_detects_changed_blobs_and_reverify_repairs_or_removes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let a = commit(
            &store,
            dir.path(),
            "a",
            &[("bin", b"shared\n", 0o755), ("x", b"a\n", 0o644)],
        );
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Fresh);
        // Another package sharing a blob with the other mode (a twin, new links) does not
        // make the first one stale.
        let b = commit(&store, dir.path(), "b", &[("bin", b"shared\n", 0o644)]);
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Fresh);
        assert_eq!(store.package_freshness(&b).unwrap(), Freshness::Fresh);
        let missing = PackageKey::provider("example.com/test/none", "1.0.0", "linux_amd64");
        assert_eq!(
            store.package_freshness(&missing).unwrap(),
            Freshness::Missing
        );

        // Same content, new mtime: stale, re-verified intact, fresh again.
        let tree = store
            .tree(&store.package(&a).unwrap().unwrap().tree)
            .unwrap();
        let EntryKind::File { blob, .. } = &tree.entries()[1].kind else {
            panic!("x is a file")
        };
        let x_blob = store.blob_path(blob);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let f = fs_err::File::open(&x_blob).unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
        drop(f);
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Stale);
        let before = store.bytes_hashed();
        assert_eq!(store.reverify_package(&a).unwrap(), Reverified::Intact);
        assert!(store.bytes_hashed() > before);
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Fresh);

        // Content changed: removed, and its damaged blob with it.
        fs_err::set_permissions(&x_blob, std::fs::Permissions::from_mode(0o644)).unwrap();
        fs_err::write(&x_blob, b"A\n").unwrap();
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Stale);
        let Reverified::Removed(problems) = store.reverify_package(&a).unwrap() else {
            panic!("expected the package to be removed")
        };
        assert!(
            problems.iter().any(|p| p.contains("x: blob")),
            "{problems:?}"
        );
        assert!(store.package(&a).unwrap().is_none());
        assert!(!x_blob.exists());
        assert!(!store.view_dir(&a).unwrap().exists());
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Missing);
        // The package can be ingested and committed again.
        let a2 = commit(&store, dir.path(), "a", &[]);
        assert_eq!(a2, a);
        assert_eq!(store.package_freshness(&a).unwrap(), Freshness::Fresh);
        assert_eq!(fs_err::read(&x_blob).unwrap(), b"a\n");
    }
}
