//! Leftovers: files the index does not know, and the git cache gc keeps for a while.
//!
//! - blob files without a blob row (a crash between rename and row), views without a package
//!   row (a crash between view rename and row, or a gc crash between its commit and its file
//!   sweep), entries of `tmp/` older than the grace period (a younger one may be an ingest in
//!   flight), and cached git repositories unused for the grace period;
//! - found under any lock, removed only under the exclusive one (a running init may be about
//!   to commit what a shared-lock look finds).

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;

use crate::blob::BlobId;
use crate::blob_files::blob_file_id;
use crate::index::{package_keys, query_vec};
use crate::layout::remove_file_if_exists;
use crate::lock::{assert_exclusive, StoreLock};
use crate::view::remove_view;
use crate::{Result, Store, StoreError};

/// Files the index does not know (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Leftovers {
    /// Entries of `tmp/`.
    pub tmp: Vec<PathBuf>,
    /// Package views without a package row.
    pub views: Vec<PathBuf>,
    /// Blob files (or twins) without a blob row.
    pub blobs: Vec<PathBuf>,
    /// Bytes of those blob files.
    pub blob_bytes: u64,
    /// Cached git repositories (`git-cache/`) not used within gc's grace period: a cache,
    /// dropped by gc only (a repair or a verify leaves it).
    pub git_caches: Vec<PathBuf>,
    /// Whether they were removed (only under the exclusive lock).
    pub removed: bool,
}

impl Leftovers {
    /// Nothing left over.
    pub fn is_empty(&self) -> bool {
        self.tmp.is_empty()
            && self.views.is_empty()
            && self.blobs.is_empty()
            && self.git_caches.is_empty()
    }
}

impl Store {
    /// Find files the index does not know: entries of `tmp/`, views without a package row,
    /// blob files without a blob row (older than `cutoff`, seconds since the epoch, if
    /// given). With the exclusive lock they are removed; otherwise (a shared lock or none)
    /// they are only reported, since a running init may be about to commit them.
    pub fn leftovers(&self, cutoff: Option<i64>, clean: Option<&StoreLock>) -> Result<Leftovers> {
        self.leftovers_keeping(cutoff, clean, false)
    }

    /// [`Store::leftovers`], the git cache left out with `keep_git_cache`.
    pub(crate) fn leftovers_keeping(
        &self,
        cutoff: Option<i64>,
        clean: Option<&StoreLock>,
        keep_git_cache: bool,
    ) -> Result<Leftovers> {
        if let Some(lock) = clean {
            assert_exclusive(lock, "cleaning leftovers");
        }
        let tmp = self.leftover_tmp(cutoff)?;
        let views = self.leftover_views()?;
        let (blobs, blob_bytes) = self.leftover_blobs(cutoff)?;
        let git_caches = match cutoff {
            Some(cutoff) if !keep_git_cache => self.stale_git_caches(cutoff)?,
            _ => Vec::new(),
        };
        let out = Leftovers {
            tmp,
            views,
            blobs,
            blob_bytes,
            git_caches,
            removed: clean.is_some(),
        };
        if clean.is_some() {
            self.remove_leftovers(&out)?;
        }
        Ok(out)
    }

    /// Every entry of `tmp/` last modified no later than `cutoff` (all of them without one),
    /// sorted: nothing there is referenced by the index. A younger entry is an ingest in
    /// flight as often as a crash's debris, so gc's check under the shared lock does not
    /// count it as work (under constant cold-init load `tmp/` is never empty, and counting
    /// it would make every gc run take the exclusive lock); it goes once it is older.
    pub(crate) fn leftover_tmp(&self, cutoff: Option<i64>) -> Result<Vec<PathBuf>> {
        let tmp = &self.layout.tmp;
        let mut found = Vec::new();
        for entry in fs_err::read_dir(tmp).map_err(|e| StoreError::io(tmp, e))? {
            let entry = entry.map_err(|e| StoreError::io(tmp, e))?;
            let path = entry.path();
            if let Some(cutoff) = cutoff {
                match fs_err::symlink_metadata(&path) {
                    Ok(m) if m.mtime() > cutoff => continue,
                    Ok(_) => {}
                    // Renamed into place or removed by its ingest meanwhile.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(StoreError::io(&path, e)),
                }
            }
            found.push(path);
        }
        found.sort();
        Ok(found)
    }

    /// Package views (`views/providers/H/N/T/V/P`, `views/modules/ID`) that no package row
    /// names, sorted within each kind.
    fn leftover_views(&self) -> Result<Vec<PathBuf>> {
        let keys = package_keys(
            &self.index(),
            "listing rows",
            "SELECT kind, name, version, platform FROM packages",
            [],
        )?;
        let known: HashSet<PathBuf> = keys.iter().filter_map(|k| k.view_relpath().ok()).collect();
        let mut found = Vec::new();
        for view in self.layout.view_dirs()? {
            let rel = view.strip_prefix(&self.layout.views).expect("under views");
            if !known.contains(rel) {
                found.push(view);
            }
        }
        Ok(found)
    }

    /// Blob files (`blobs-v1/ab/<rest>[.x|.r]`) whose id has no blob row and whose ctime is
    /// not after `cutoff`, sorted, with their total size. Files that are not named like a
    /// blob are not the store's and are left alone.
    fn leftover_blobs(&self, cutoff: Option<i64>) -> Result<(Vec<PathBuf>, u64)> {
        let known: HashSet<String> = {
            let index = self.index();
            query_vec(&index.conn, "SELECT id FROM blobs", [], |r| r.get(0))
                .map_err(index.err("listing rows"))?
                .into_iter()
                .collect()
        };
        let mut found = Vec::new();
        let mut bytes = 0;
        let blobs_dir = &self.layout.blobs;
        for fan in fs_err::read_dir(blobs_dir).map_err(|e| StoreError::io(blobs_dir, e))? {
            let fan = fan.map_err(|e| StoreError::io(blobs_dir, e))?;
            let fan_name = fan.file_name().to_string_lossy().into_owned();
            if !fan.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let fan_path = fan.path();
            for entry in fs_err::read_dir(&fan_path).map_err(|e| StoreError::io(&fan_path, e))? {
                let entry = entry.map_err(|e| StoreError::io(&fan_path, e))?;
                let id = blob_file_id(&fan_name, &entry.file_name().to_string_lossy());
                if id.parse::<BlobId>().is_err() || known.contains(&id) {
                    continue;
                }
                let path = entry.path();
                let meta = fs_err::symlink_metadata(&path).map_err(|e| StoreError::io(&path, e))?;
                if cutoff.is_some_and(|c| meta.ctime() > c) {
                    continue;
                }
                bytes += meta.len();
                found.push(path);
            }
        }
        found.sort();
        Ok((found, bytes))
    }

    /// Remove what [`Store::leftovers`] found (under the exclusive lock): `tmp/` entries,
    /// views (and the directories above them left empty), blob files.
    fn remove_leftovers(&self, found: &Leftovers) -> Result<()> {
        for path in &found.tmp {
            crate::layout::remove_tree(path).map_err(|e| StoreError::io(path, e))?;
        }
        for path in &found.views {
            remove_view(&self.layout, path)?;
            self.prune_view_parents(path);
        }
        for path in &found.blobs {
            remove_file_if_exists(path)?;
        }
        for path in &found.git_caches {
            crate::layout::remove_tree(path).map_err(|e| StoreError::io(path, e))?;
            remove_file_if_exists(&path.with_extension("lock"))?;
        }
        Ok(())
    }

    /// The cached git repositories (`git-cache/NAME.git`) whose last use (the mtime of
    /// their `tstore-used` stamp, or of the repository without one) is not after `cutoff`,
    /// sorted.
    pub(crate) fn stale_git_caches(&self, cutoff: i64) -> Result<Vec<PathBuf>> {
        let dir = &self.layout.git_cache;
        let entries = match fs_err::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(dir, e)),
        };
        let mut found = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| StoreError::io(dir, e))?.path();
            let is_repo = path.extension().is_some_and(|e| e == "git")
                && fs_err::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
            if !is_repo {
                continue;
            }
            let used = fs_err::metadata(path.join("tstore-used"))
                .or_else(|_| fs_err::metadata(&path))
                .map_err(|e| StoreError::io(&path, e))?;
            if used.mtime() <= cutoff {
                found.push(path);
            }
        }
        found.sort();
        Ok(found)
    }
}
