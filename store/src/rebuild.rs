//! A damaged index (`index.sqlite` truncated, overwritten, with bad pages): recognized
//! ([`Store::index_health`]), moved aside and rebuilt from what the store holds on disk
//! ([`Store::rebuild_damaged_index`]).
//!
//! Rules:
//!
//! - The damaged files are kept, never deleted: `index.sqlite` (and its `-wal`, `-shm`) are
//!   renamed `index.sqlite.damaged-<UTC time>[-wal|-shm]` beside it, for inspection.
//! - The new index is built completely in `tmp/` first and renamed into place only then, so
//!   a rebuild that fails changes nothing.
//! - Only what the bytes confirm is recorded. Every blob file is re-hashed against its
//!   BLAKE3 name (SHA-256 in the same read); the intact ones get rows. Each provider view
//!   (`views/providers/HOST/NS/TYPE/VERSION/OS_ARCH`, hardlinks of blobs) becomes a package
//!   again: its files are matched to intact blobs (by inode, or by content for a copied
//!   view), its tree recorded, its directory `h1:` computed from those blobs and recorded as
//!   the one verified locally, so a lock file's `h1:` is checked against the bytes and the
//!   next init links it without downloading it. It is marked `adopted`, as after a restore:
//!   content ingested here under its name replaces it. Module views are not rebuilt: a module
//!   package's name (its source and commit) is a claim only the lost index made, which its
//!   files cannot confirm (as when a restored store is adopted, trust.rs); they are fetched
//!   again, re-using their blobs. `zh:` hashes, registry reports, source memos, kept
//!   archives and roots are lost with the old index (the next init of each working
//!   directory records its root again).
//! - The rebuilt index holds this machine's trust tag: everything in it was recomputed here.
//!
//! Everything runs under the exclusive store lock; what is left for `store verify --repair`
//! (bad blob files, views not rebuilt) is reported, not touched.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crate::blob::{hash_file, BlobId};
use crate::ids::PackageKey;
use crate::index::{now, query_vec, Index};
use crate::layout::Layout;
use crate::lock::StoreLock;
use crate::roots::package_of_view_relpath;
use crate::tree::{EntryKind, Tree, TreeEntry};
use crate::view::Linker;
use crate::{Limits, Result, Store, StoreError};

/// Whether SQLite can read a store's index.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum IndexHealth {
    /// It opens and passes `PRAGMA quick_check`.
    Sound,
    /// There is no index file.
    Missing,
    /// It is not a database, or its pages are damaged.
    Damaged {
        /// What SQLite said.
        reason: String,
    },
}

/// A package view that was not made a package again, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkippedView {
    /// The view directory.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What [`Store::rebuild_damaged_index`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RebuiltIndex {
    /// Where the damaged index files were moved (kept, not read again).
    pub damaged: Vec<PathBuf>,
    /// Intact blob files recorded.
    pub blobs: u64,
    /// Bytes read to re-hash blobs and copied view files.
    pub bytes_checked: u64,
    /// Blob files whose content does not match their name (not recorded; `store verify
    /// --repair` moves them to `quarantine/`).
    pub bad_blobs: Vec<PathBuf>,
    /// Packages made again from their views.
    pub packages: Vec<PackageKey>,
    /// Views not made packages again (left for `store verify --repair` to remove as
    /// leftovers; the next init fetches them).
    pub skipped: Vec<SkippedView>,
}

impl Store {
    /// Whether SQLite can read the index of the store at `root`: it opens, and `PRAGMA
    /// quick_check` (every page read once) says `ok`. Reads only.
    pub fn index_health(root: &Path) -> Result<IndexHealth> {
        let layout = Layout::new(root);
        let path = layout.index;
        if !crate::blob::exists(&path)? {
            return Ok(IndexHealth::Missing);
        }
        if crate::index::truncated(&path, || crate::index::has_entries(&layout.blobs)) {
            return Ok(IndexHealth::Damaged {
                reason: crate::index::TRUNCATED.to_owned(),
            });
        }
        let damaged = |e: rusqlite::Error| -> Result<IndexHealth> {
            if crate::error::is_damage(&e) {
                Ok(IndexHealth::Damaged {
                    reason: e.to_string(),
                })
            } else {
                Err(StoreError::index(&path, "checking the index", e))
            }
        };
        // Without CREATE, and nothing written: a check of a damaged index changes nothing.
        let flags = rusqlite::OpenFlags::default() - rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let conn = match rusqlite::Connection::open_with_flags(&path, flags) {
            Ok(conn) => conn,
            Err(e) => return damaged(e),
        };
        if let Err(e) = conn.busy_timeout(std::time::Duration::from_secs(30)) {
            return damaged(e);
        }
        match query_vec(&conn, "PRAGMA quick_check", [], |r| r.get::<_, String>(0)) {
            Ok(lines) if lines == ["ok"] => Ok(IndexHealth::Sound),
            Ok(lines) => Ok(IndexHealth::Damaged {
                reason: lines.into_iter().take(5).collect::<Vec<_>>().join("; "),
            }),
            Err(e) => damaged(e),
        }
    }

    /// Move the damaged index of the store at `root` aside and rebuild one from the blob
    /// files and provider views on disk (see the module docs), under the exclusive store
    /// lock (`on_wait` runs once if it must wait). `machine_key` is the file
    /// [`Store::with_machine_key`] names. `None` when the index was found sound (another
    /// process repaired it meanwhile) or missing.
    pub fn rebuild_damaged_index(
        root: &Path,
        machine_key: Option<&Path>,
        on_wait: impl FnOnce(),
    ) -> Result<Option<RebuiltIndex>> {
        let root = fs_err::canonicalize(root).map_err(|e| StoreError::io(root, e))?;
        let layout = Layout::new(&root);
        crate::store::check_owned_and_private(&layout.root)?;
        layout.check_entries(nix::unistd::geteuid().as_raw())?;
        for dir in [&layout.blobs, &layout.tmp, &layout.views] {
            crate::layout::create_store_dir_all(&layout.root, dir)?;
        }
        let lock = StoreLock::exclusive(&layout.lock, on_wait)?;
        if !matches!(Self::index_health(&root)?, IndexHealth::Damaged { .. }) {
            return Ok(None);
        }
        let work = tempfile::Builder::new()
            .prefix(&crate::temp::temp_prefix("index-rebuild"))
            .tempdir_in(&layout.tmp)
            .map_err(|e| StoreError::io(&layout.tmp, e))?;
        let new_index = work.path().join("index.sqlite");
        let builder = Store {
            layout: Layout {
                index: new_index.clone(),
                ..layout.clone()
            },
            limits: Limits::default(),
            keep_archives: false,
            index: Mutex::new(Index::open(&new_index, || false)?),
            bytes_hashed: AtomicU64::new(0),
            linker: Linker::new(),
            durability: crate::durability::Durability::current(),
            trust: crate::trust::Trust::with_key_file(machine_key.map(Path::to_path_buf)),
            found_fresh: Mutex::default(),
            // A builder is never reused ([`Store::reuse`]).
            identity: [0; 4],
        };
        let mut rebuilt = builder.record_what_disk_holds()?;
        // The tag binds the new file's inode and birth time, which the rename keeps.
        builder.record_tag(&builder.trust_tag()?)?;
        builder.checkpoint()?;
        drop(builder);
        rebuilt.damaged = move_aside(&layout.index)?;
        fs_err::rename(&new_index, &layout.index).map_err(|e| StoreError::io(&new_index, e))?;
        crate::blob::sync_dir(&layout.root)?;
        drop(work);
        drop(lock);
        Ok(Some(rebuilt))
    }

    /// Fold the WAL into the index file, so that the file alone holds every row.
    fn checkpoint(&self) -> Result<()> {
        let index = self.index();
        index
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(index.err("checkpointing the rebuilt index"))
    }

    /// Record in this (new, empty) index every intact blob file and a package for every
    /// provider view whose files are intact blobs (see the module docs).
    fn record_what_disk_holds(&self) -> Result<RebuiltIndex> {
        let mut out = RebuiltIndex::default();
        // Intact blobs: SHA-256 and size by id, and the id of every intact file's inode.
        let mut sha_of: HashMap<BlobId, [u8; 32]> = HashMap::new();
        let mut size_of: HashMap<BlobId, u64> = HashMap::new();
        let mut by_inode: HashMap<(u64, u64), BlobId> = HashMap::new();
        for file in self.layout.blob_files() {
            let file = file?;
            let (actual, sha) = file.hash(&self.bytes_hashed)?;
            if !file.holds(&actual) {
                out.bad_blobs.push(file.entry.into_path());
                continue;
            }
            let (blob, entry) = (file.blob, file.entry);
            let meta = entry
                .metadata()
                .map_err(|e| StoreError::io(entry.path(), e.into()))?;
            by_inode.insert((meta.dev(), meta.ino()), blob);
            if let Some(sha) = sha {
                sha_of.insert(blob, sha);
                size_of.insert(blob, meta.len());
            }
        }
        out.blobs = sha_of.len() as u64;
        let mut packages = Vec::new();
        for view in self.layout.view_dirs()? {
            let skip = |reason: &str| SkippedView {
                path: view.clone(),
                reason: reason.to_owned(),
            };
            let rel = view.strip_prefix(&self.layout.views).expect("under views");
            let key = match package_of_view_relpath(rel) {
                Some(key) if key.view_relpath().ok().as_deref() == Some(rel) => key,
                _ => {
                    out.skipped.push(skip("not a package view"));
                    continue;
                }
            };
            if matches!(key, PackageKey::Module { .. }) {
                out.skipped.push(skip(
                    "a module package's name (its source) cannot be confirmed from its files; it is fetched again",
                ));
                continue;
            }
            match self.tree_of_view(&view, &sha_of, &by_inode)? {
                Ok(tree) => packages.push((key, tree)),
                Err(reason) => out.skipped.push(skip(&reason)),
            }
        }
        let mut index = self.index();
        let (tx, op) = index.write("rebuilding the index")?;
        let err = op.err();
        let at = now();
        let result: rusqlite::Result<()> = (|| {
            // What the disk holds was read through this boot's page cache: marked as this
            // boot's (durability.rs).
            let boot = self.durability.boot();
            let mut put_blob = tx.prepare(
                "INSERT OR IGNORE INTO blobs (id, size, sha256, written_boot) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (blob, sha) in &sha_of {
                put_blob.execute(rusqlite::params![
                    blob.to_string(),
                    size_of[blob],
                    &sha[..],
                    boot
                ])?;
            }
            drop(put_blob);
            for (key, (tree, h1)) in &packages {
                let id = tree.id().to_string();
                let (files, bytes) = tree
                    .entries()
                    .iter()
                    .fold((0u64, 0u64), |(f, b), e| match &e.kind {
                        EntryKind::File { blob, .. } => (f + 1, b + size_of[blob]),
                        EntryKind::Symlink { .. } => (f, b),
                    });
                tx.execute(
                    "INSERT OR IGNORE INTO trees (id, encoding, h1, files, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
                    rusqlite::params![id, tree.encode(), h1.to_string(), files, bytes],
                )?;
                for blob in tree.blobs() {
                    tx.execute(
                        "INSERT OR IGNORE INTO tree_blobs (tree, blob) VALUES (?1, ?2)",
                        [&id, &blob.to_string()],
                    )?;
                }
                tx.execute(
                    "INSERT INTO packages (kind, name, version, platform, tree, created_at, used_at, adopted)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)",
                    rusqlite::params![key.kind(), key.name(), key.version(), key.platform(), id, at],
                )?;
                let package = tx.last_insert_rowid();
                tx.execute(
                    "INSERT INTO package_hashes (package, hash, verified_locally, reported_by_registry, signed_by_key_ids)
                     VALUES (?1, ?2, 1, 0, '[]')",
                    rusqlite::params![package, h1.to_string()],
                )?;
                let view = self
                    .layout
                    .views
                    .join(key.view_relpath().expect("checked above"));
                tx.execute(
                    "INSERT INTO package_stats (package, stat) VALUES (?1, ?2)",
                    rusqlite::params![
                        package,
                        crate::durability::recorded_stat(
                            crate::freshness::content_stat(&self.layout, tree, &view),
                            boot
                        )
                    ],
                )?;
            }
            Ok(())
        })();
        result.map_err(err)?;
        tx.commit().map_err(err)?;
        drop(index);
        out.packages = packages.into_iter().map(|(key, _)| key).collect();
        out.bytes_checked = self.bytes_hashed();
        Ok(out)
    }

    /// The tree of the provider view at `view`, each file an intact blob (matched by inode,
    /// or for a copied view by content), with its directory `h1:`; or why it cannot be one.
    #[allow(clippy::type_complexity)]
    fn tree_of_view(
        &self,
        view: &Path,
        sha_of: &HashMap<BlobId, [u8; 32]>,
        by_inode: &HashMap<(u64, u64), BlobId>,
    ) -> Result<std::result::Result<(Tree, crate::Hash), String>> {
        let mut entries = Vec::new();
        for entry in walkdir::WalkDir::new(view).follow_links(false).min_depth(1) {
            let entry = entry.map_err(|e| StoreError::io(view, e.into()))?;
            let ft = entry.file_type();
            if ft.is_dir() {
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(view)
                .expect("walk stays under root");
            let Some(rel) = rel.to_str() else {
                return Ok(Err(format!("{} is not a UTF-8 name", rel.display())));
            };
            let kind = if ft.is_file() {
                let meta = entry
                    .metadata()
                    .map_err(|e| StoreError::io(entry.path(), e.into()))?;
                let blob = match by_inode.get(&(meta.dev(), meta.ino())) {
                    Some(blob) => *blob,
                    None => BlobId(hash_file(entry.path(), &self.bytes_hashed)?),
                };
                if !sha_of.contains_key(&blob) {
                    return Ok(Err(format!("{rel}: its content is not an intact blob")));
                }
                EntryKind::File {
                    blob,
                    exec: meta.permissions().mode() & 0o111 != 0,
                }
            } else if ft.is_symlink() {
                let target =
                    fs_err::read_link(entry.path()).map_err(|e| StoreError::io(entry.path(), e))?;
                let Some(target) = target.to_str() else {
                    return Ok(Err(format!("{rel}: its link target is not UTF-8")));
                };
                EntryKind::Symlink {
                    target: target.to_owned(),
                }
            } else {
                return Ok(Err(format!("{rel} is not a file, directory or symlink")));
            };
            entries.push(TreeEntry {
                path: rel.to_owned(),
                kind,
            });
        }
        if entries.is_empty() {
            return Ok(Err("the view is empty".to_owned()));
        }
        let tree = match Tree::new(entries) {
            Ok(tree) => tree,
            Err(e) => return Ok(Err(format!("{}: {}", e.entry, e.reason))),
        };
        if let Some((path, target)) = tree.escaping_symlink() {
            return Ok(Err(format!(
                "{path}: symlink to {target:?} leads out of the package"
            )));
        }
        Ok(match tree.h1(sha_of) {
            Ok(h1) => Ok((tree, h1)),
            Err(e) => Err(format!("its h1: cannot be computed ({e})")),
        })
    }
}

/// Rename `index` and its `-wal` and `-shm` files to `<index>.damaged-<UTC time>[-wal|-shm]`
/// (a suffix `.N` when taken); the new names.
fn move_aside(index: &Path) -> Result<Vec<PathBuf>> {
    let stamp = utc_stamp(now());
    let mut base = index.as_os_str().to_owned();
    base.push(format!(".damaged-{stamp}"));
    let mut n = 0;
    let base = loop {
        let mut candidate = base.clone();
        if n > 0 {
            candidate.push(format!(".{n}"));
        }
        let candidate = PathBuf::from(candidate);
        if !crate::blob::exists(&candidate)? {
            break candidate;
        }
        n += 1;
    };
    let mut moved = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut from = index.as_os_str().to_owned();
        from.push(suffix);
        let from = PathBuf::from(from);
        if !crate::blob::exists(&from)? {
            continue;
        }
        let mut to = base.as_os_str().to_owned();
        to.push(suffix);
        let to = PathBuf::from(to);
        fs_err::rename(&from, &to).map_err(|e| StoreError::io(&from, e))?;
        moved.push(to);
    }
    Ok(moved)
}

/// `YYYYMMDDTHHMMSSZ` of `secs` since the epoch (UTC).
fn utc_stamp(secs: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    humantime::format_rfc3339_seconds(at)
        .to_string()
        .replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_795_600_890), "20261125T100130Z");
    }
}
