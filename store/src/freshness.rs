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
//! The stat covers the view's directories too: a file added to a view changes its
//! directory's mtime, so a package that grew is stale as well.
//!
//! A [`Freshness::Stale`] package is re-verified by [`Store::reverify_package`]: every
//! blob file is re-hashed (BLAKE3 against its name, SHA-256 for `h1:`), the view checked,
//! and what the index claims recomputed from the bytes, never taken from the index: the
//! tree row must hash to its id and record the `h1:` its files have, the package must
//! record that `h1:` as verified, a kept archive must have its `zh:`. If all is well the
//! new stat is recorded. A view that is not its tree while every blob is intact is rebuilt
//! from the blobs under the same path (`damaged.rs`). A blob whose bytes changed or are gone
//! takes every tree that holds it and every package of those trees, so the next install
//! fetches each again (`damaged.rs`). If a claim is false, the tree row goes, with every
//! package of it (a later ingest of the same content would believe it).

use std::fmt::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use rusqlite::OptionalExtension as _;

use std::collections::HashMap;

use crate::blob::{hash_file, hash_file_both, BlobId};
use crate::durability::split_recorded;
use crate::hash::Hash;
use crate::ids::PackageKey;
use crate::index::{package_keys, query_vec};
use crate::layout::Layout;
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
    /// The blobs were intact but the view was not its tree (a file added, removed, replaced
    /// or made writable) or a twin file was changed: the view was rebuilt from the tree under
    /// the same path, and the new stat recorded. One line per problem.
    Restored(Vec<String>),
    /// A blob file was changed or is gone, or the index's claims are false: the package was
    /// removed from the store, with every package that shares the blob (see the module
    /// docs). One line per problem.
    Removed(Vec<String>),
    /// No such package.
    Missing,
}

/// The content stat of `tree` as materialized at `view` (see the module docs).
pub(crate) fn content_stat(layout: &Layout, tree: &Tree, view: &Path) -> String {
    /// One line of the listing; the metadata it was made from, for a caller that needs more.
    fn stat(listing: &mut String, what: &str, path: &Path) -> Option<std::fs::Metadata> {
        match std::fs::symlink_metadata(path) {
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
                Some(m)
            }
            Err(e) => {
                let _ = writeln!(listing, "{what}\tmissing\t{:?}", e.kind());
                None
            }
        }
    }
    let mut listing = String::new();
    // Every directory of the view: a file added to (or removed from, or renamed in) one
    // changes its mtime, so a package that grew is stale too.
    let mut dirs = std::collections::BTreeSet::from([String::new()]);
    for entry in tree.entries() {
        let mut parent = Path::new(&entry.path).parent();
        while let Some(dir) = parent.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(dir.to_string_lossy().into_owned());
            parent = dir.parent();
        }
    }
    for dir in &dirs {
        let _ = writeln!(listing, "dir {dir:?}");
        stat(&mut listing, "view", &view.join(dir));
    }
    for entry in tree.entries() {
        let _ = writeln!(listing, "{:?}", entry.path);
        stat(&mut listing, "view", &view.join(&entry.path));
        if let EntryKind::File { blob, exec } = &entry.kind {
            let primary = layout.blob_path(blob);
            // The twin exists only when the primary's mode is not the one needed.
            let primary_exec = stat(&mut listing, "blob", &primary)
                .is_some_and(|m| m.permissions().mode() & 0o111 != 0);
            if primary_exec != *exec {
                stat(&mut listing, "twin", &layout.blob_twin_path(blob, *exec));
            }
        }
    }
    format!("s2:{}", blake3::hash(listing.as_bytes()).to_hex())
}

impl Store {
    /// Compare the package's files with the stat recorded when it was committed (or last
    /// re-verified). Costs one `lstat` per file and blob; reads no content.
    pub fn package_freshness(&self, key: &PackageKey) -> Result<Freshness> {
        self.ensure_trusted()?;
        let Some(PackageRow {
            tree,
            stat: recorded,
            ..
        }) = self.package_tree_and_stat(key)?
        else {
            return Ok(Freshness::Missing);
        };
        let Some(recorded) = recorded else {
            return Ok(Freshness::Stale);
        };
        // Files left to another boot's page cache may have been lost with it
        // (durability.rs): read them again from the disk before they are trusted.
        let (mark, recorded) = split_recorded(&recorded);
        if mark.is_some() && mark != self.durability.boot() {
            return Ok(Freshness::Stale);
        }
        let current = content_stat(&self.layout, &tree, &self.view_dir(key)?);
        Ok(if recorded == current {
            Freshness::Fresh
        } else {
            Freshness::Stale
        })
    }

    /// Re-hash every blob of the package (counted in [`Store::bytes_hashed`]) and check its
    /// view. Intact: record the new stat. Damaged: remove the package (row, source memos of
    /// its tree, view, damaged blob files) so that it is fetched and ingested again.
    pub fn reverify_package(&self, key: &PackageKey) -> Result<Reverified> {
        self.ensure_trusted()?;
        let Some(row) = self.package_tree_and_stat(key)? else {
            return Ok(Reverified::Missing);
        };
        let tree = &row.tree;
        let view = self.view_dir(key)?;
        let Rehashed {
            mut problems,
            broken,
            damaged_twins,
            sha_of,
        } = self.rehash_blobs(tree)?;
        problems.extend(check_view(&self.layout, tree, &view, &self.bytes_hashed)?);
        problems.sort();
        problems.dedup();
        if !broken.is_empty() {
            // The blob's bytes are lost: every view that links it was changed by the same
            // write, so every package of every tree that holds it goes, to be fetched again.
            tracing::warn!(
                "{key} changed on disk since it was verified ({}); removing it, and every package sharing the changed files, from the store; it will be fetched again",
                problems.join("; ")
            );
            self.drop_broken_blobs(&broken)?;
            return Ok(Reverified::Removed(problems));
        }
        let lies = self.false_claims(&row, &sha_of)?;
        if !lies.is_empty() {
            tracing::warn!(
                "the store's index says of {key} what its files contradict ({}); removing its tree and every package of it",
                lies.join("; ")
            );
            self.remove_lying_tree(&row.tree_id)?;
            return Ok(Reverified::Removed(lies));
        }
        if !problems.is_empty() {
            // Every blob is intact: the view is rebuilt from them, under the same name.
            tracing::warn!(
                "{key} changed on disk since it was verified ({}); restored it from its verified files",
                problems.join("; ")
            );
            self.rebuild_view(tree, &view, &damaged_twins)?;
        }
        let stat = content_stat(&self.layout, tree, &view);
        self.record_reverified_stat(key, &row.tree_id, stat)?;
        Ok(if problems.is_empty() {
            Reverified::Intact
        } else {
            Reverified::Restored(problems)
        })
    }

    /// What the index claims about a package that its bytes (every blob intact, SHA-256 of
    /// each in `sha_of`) contradict, one line each: the tree row's id and `h1:` memo, the
    /// `h1:` the package records as verified, the `zh:` of the tree's kept archives.
    fn false_claims(
        &self,
        row: &PackageRow,
        sha_of: &HashMap<BlobId, [u8; 32]>,
    ) -> Result<Vec<String>> {
        let mut lies = Vec::new();
        let actual_id = row.tree.id().to_string();
        if actual_id != row.tree_id {
            lies.push(format!(
                "tree {}: its encoding hashes to {actual_id}",
                row.tree_id
            ));
        }
        let h1 = row.tree.h1(sha_of).ok().map(|h| h.to_string());
        if !row.memo_h1.is_empty() && h1.as_deref() != Some(row.memo_h1.as_str()) {
            lies.push(format!(
                "tree {} records {}, its files have {}",
                row.tree_id,
                row.memo_h1,
                h1.as_deref().unwrap_or("no h1:")
            ));
        }
        if let Some(h1) = &h1 {
            if !row.verified_h1.is_empty() && !row.verified_h1.contains(h1) {
                lies.push(format!(
                    "it records {} as verified locally, its files have {h1}",
                    row.verified_h1.join(", ")
                ));
            }
        }
        let archives: Vec<(String, String)> = {
            let index = self.index();
            query_vec(
                &index.conn,
                "SELECT zh, blob FROM archives WHERE tree = ?1",
                [&row.tree_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(index.err("reading kept archives"))?
        };
        for (zh, blob) in archives {
            let id: BlobId = blob.parse()?;
            let (name, sha) = match hash_file_both(&self.layout.blob_path(&id), &self.bytes_hashed)
            {
                Ok(hashes) => hashes,
                Err(StoreError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    lies.push(format!("kept archive {zh}: blob {id} is missing"));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let actual = Hash::zh_from_sha256(&sha).to_string();
            if name != *id.as_bytes() || actual != zh {
                lies.push(format!("kept archive {zh}: its blob {id} has {actual}"));
            }
        }
        Ok(lies)
    }

    /// Remove the tree row `tree_id`, which the bytes contradict, with every package of it:
    /// rows first (packages, their source memos, the tree), then views. Blob files stay:
    /// their bytes match their names.
    fn remove_lying_tree(&self, tree_id: &str) -> Result<()> {
        let keys = {
            let mut index = self.index();
            let keys = package_keys(
                &index,
                "reading packages of a tree",
                "SELECT kind, name, version, platform FROM packages WHERE tree = ?1",
                [tree_id],
            )?;
            let (tx, op) = index.write(format!(
                "removing tree {tree_id}, which its files contradict"
            ))?;
            let err = op.err();
            tx.execute("DELETE FROM packages WHERE tree = ?1", [tree_id])
                .map_err(err)?;
            tx.execute("DELETE FROM trees WHERE id = ?1", [tree_id])
                .map_err(err)?;
            tx.commit().map_err(err)?;
            keys
        };
        for key in keys {
            let view = self.view_dir(&key)?;
            if crate::blob::exists(&view)? {
                remove_view(&self.layout, &view)?;
            }
        }
        Ok(())
    }

    /// Re-hash the primary file and the twin of every blob of `tree` against the blob's
    /// name: one problem line per modified file or missing primary (twins are optional).
    fn rehash_blobs(&self, tree: &Tree) -> Result<Rehashed> {
        let mut out = Rehashed::default();
        let mut seen = std::collections::HashSet::new();
        for entry in tree.entries() {
            let EntryKind::File { blob, exec } = &entry.kind else {
                continue;
            };
            // A blob used twice with one mode is read once.
            if !seen.insert((*blob, *exec)) {
                continue;
            }
            let primary = self.layout.blob_path(blob);
            let twin = self.layout.blob_twin_path(blob, *exec);
            for path in [primary, twin] {
                let is_primary = path == self.layout.blob_path(blob);
                let hashed = if is_primary {
                    hash_file_both(&path, &self.bytes_hashed).map(|(name, sha)| (name, Some(sha)))
                } else {
                    hash_file(&path, &self.bytes_hashed).map(|name| (name, None))
                };
                match hashed {
                    Ok((actual, sha)) if actual == *blob.as_bytes() => {
                        if let Some(sha) = sha {
                            out.sha_of.insert(*blob, sha);
                        }
                    }
                    Ok(_) => {
                        out.problems
                            .push(format!("{}: blob {blob} was modified", entry.path));
                        if is_primary {
                            out.broken.insert(*blob);
                        } else {
                            out.damaged_twins.push(path);
                        }
                    }
                    Err(StoreError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        // Twins are optional.
                        if is_primary {
                            out.problems
                                .push(format!("{}: blob {blob} is missing", entry.path));
                            out.broken.insert(*blob);
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(out)
    }

    /// Record the stat of package `key` of tree `tree_id`, just re-hashed intact. Its blobs
    /// marked by another boot were read from the disk (that boot's page cache is gone), so
    /// their marks go; a blob of this boot's keeps its mark, and so does the package
    /// (durability.rs).
    fn record_reverified_stat(&self, key: &PackageKey, tree_id: &str, stat: String) -> Result<()> {
        let boot = self.durability.boot();
        let mut index = self.index();
        let (tx, op) = index.write(format!("recording the stat of {key}"))?;
        let err = op.err();
        tx.execute(
            "UPDATE blobs SET written_boot = NULL
             WHERE written_boot IS NOT NULL AND written_boot IS NOT ?2
               AND id IN (SELECT blob FROM tree_blobs WHERE tree = ?1)",
            rusqlite::params![tree_id, boot],
        )
        .map_err(err)?;
        let mark = crate::durability::tree_mark(&tx, tree_id, boot).map_err(err)?;
        tx.execute(
            "INSERT INTO package_stats (package, stat)
             SELECT id, ?5 FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4
             ON CONFLICT (package) DO UPDATE SET stat = excluded.stat",
            rusqlite::params![
                key.kind(),
                key.name(),
                key.version(),
                key.platform(),
                crate::durability::recorded_stat(stat, mark.as_deref())
            ],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// The package `key` if its files may be trusted without reading them: fresh by the
    /// recorded stat, or stale but re-verified intact. A damaged package is removed (see
    /// [`Store::reverify_package`]) and `None` is returned, so the caller fetches it
    /// again instead of linking corrupt content. Every path that reuses a committed
    /// package goes through here.
    pub fn trusted_package(&self, key: &PackageKey) -> Result<Option<crate::Package>> {
        self.ensure_trusted()?;
        if self.was_found_fresh(key) {
            return self.package(key);
        }
        match self.package_freshness(key)? {
            Freshness::Fresh => {
                self.found_fresh
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key.clone());
            }
            Freshness::Missing => return Ok(None),
            Freshness::Stale => match self.reverify_package(key)? {
                Reverified::Intact | Reverified::Restored(_) => {}
                // Said by the re-verification, with what it removed.
                Reverified::Removed(_) => return Ok(None),
                Reverified::Missing => return Ok(None),
            },
        }
        self.package(key)
    }

    /// Whether this handle already found `key` fresh. A package removed since (gc, a
    /// damaged package) has no row, so [`Store::package`] still answers `None` for it.
    fn was_found_fresh(&self, key: &PackageKey) -> bool {
        self.found_fresh
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(key)
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

    /// The tree of a committed package, its recorded stat, and what the index claims of it.
    fn package_tree_and_stat(&self, key: &PackageKey) -> Result<Option<PackageRow>> {
        let index = self.index();
        // Package id, tree id, encoding, h1: memo, content stat.
        type Row = (i64, String, Vec<u8>, String, Option<String>);
        let row: Option<Row> = crate::index::query_row_cached(
                &index.conn,
                "SELECT p.id, t.id, t.encoding, t.h1, s.stat FROM packages p JOIN trees t ON t.id = p.tree
                 LEFT JOIN package_stats s ON s.package = p.id
                 WHERE p.kind = ?1 AND p.name = ?2 AND p.version = ?3 AND p.platform = ?4",
                [key.kind(), key.name(), key.version(), key.platform()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(index.err("reading a package's stat"))?;
        let Some((id, tree_id, encoding, memo_h1, stat)) = row else {
            return Ok(None);
        };
        let verified_h1 = query_vec(
            &index.conn,
            "SELECT hash FROM package_hashes WHERE package = ?1 AND verified_locally AND hash LIKE 'h1:%'",
            [id],
            |r| r.get(0),
        )
        .map_err(index.err("reading a package's hashes"))?;
        drop(index);
        let tree = match tree_id.parse::<crate::TreeId>() {
            Ok(id) => crate::decoded_trees::decoded(&id, &encoding)?,
            // Not an id: decoded as it is (re-verification finds the row's lie).
            Err(_) => std::sync::Arc::new(Tree::decode(&encoding)?),
        };
        Ok(Some(PackageRow {
            tree,
            tree_id,
            memo_h1,
            verified_h1,
            stat,
        }))
    }
}

/// What re-hashing a tree's blob files found.
#[derive(Default)]
struct Rehashed {
    /// One line per modified file or missing primary.
    problems: Vec<String>,
    /// Blobs whose primary file was modified or is gone: their bytes are lost.
    broken: std::collections::BTreeSet<BlobId>,
    /// Twin files that were modified (made again from their intact primary).
    damaged_twins: Vec<PathBuf>,
    /// The SHA-256 of each intact primary.
    sha_of: HashMap<BlobId, [u8; 32]>,
}

/// A committed package as the index describes it.
struct PackageRow {
    /// Its tree, decoded.
    tree: std::sync::Arc<Tree>,
    /// The tree row's id, as recorded.
    tree_id: String,
    /// The tree row's `h1:` memo (empty: none).
    memo_h1: String,
    /// The `h1:` hashes the package records as verified locally.
    verified_h1: Vec<String>,
    /// The content stat recorded.
    stat: Option<String>,
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
        let got = store.ingest().dir(&src).unwrap();
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
