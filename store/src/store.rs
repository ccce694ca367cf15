//! [`Store`]: the handle tying layout, index, blobs, trees, packages and views together.

use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use rusqlite::OptionalExtension as _;

use crate::fingerprint::SourceFingerprint;
use crate::hash::Hash;
use crate::ids::PackageKey;
use crate::ids::TreeId;
use crate::index::{package_keys, query_vec, Index};
use crate::ingest::Limits;
use crate::layout::Layout;
use crate::lock::{assert_exclusive, StoreLock};
use crate::package::{Disposition, HashRecord, Package};
use crate::provenance::Provenance;
use crate::view::{LinkMode, Linker};
use crate::{Result, StoreError};

/// What the store remembers about a source (a zip or directory) it ingested before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceMemo {
    /// The fingerprint the source had then.
    pub fingerprint: SourceFingerprint,
    /// The tree it produced.
    pub tree: TreeId,
    /// The hashes recorded for it (e.g. its `zh:`, `HashZip` `h1:` and directory `h1:`).
    pub hashes: Vec<HashRecord>,
}

/// Space used by the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskUsage {
    /// Packages in the index.
    pub packages: u64,
    /// Trees in the index.
    pub trees: u64,
    /// Blobs in the index.
    pub blobs: u64,
    /// Bytes actually taken by blob files (twins included).
    pub blob_bytes: u64,
    /// Sum over packages of their tree bytes: what a copy per package would cost.
    pub logical_bytes: u64,
    /// Links from working directories into the store (recorded roots).
    pub links: u64,
    /// Sum over those links of the linked package's bytes: what a private copy per link,
    /// as `tofu init` makes, would cost.
    pub linked_bytes: u64,
}

/// An open store. Cheap to share between threads (`&Store` is `Sync`); each process opens its
/// own. See the crate docs for the layout and invariants.
#[derive(Debug)]
pub struct Store {
    pub(crate) layout: Layout,
    pub(crate) limits: Limits,
    /// Whether ingested zips are kept whole beside their files ([`Store::with_kept_archives`]).
    pub(crate) keep_archives: bool,
    pub(crate) index: Mutex<Index>,
    pub(crate) bytes_hashed: AtomicU64,
    pub(crate) linker: Linker,
    /// How blob files and views reach the disk (durability.rs).
    pub(crate) durability: crate::durability::Durability,
    /// Whether the index may be believed (trust.rs).
    pub(crate) trust: crate::trust::Trust,
    /// Packages this handle found fresh ([`Store::trusted_package`]): their files are
    /// stat'ed once per process, not once per call that installs them.
    pub(crate) found_fresh: Mutex<std::collections::HashSet<crate::ids::PackageKey>>,
    /// The root directory and the index file this handle opened (device, inode of each).
    pub(crate) identity: [u64; 4],
}

impl Store {
    /// Open or create the store at `root`: create the layout, open the SQLite index (WAL) and
    /// run its migrations.
    ///
    /// Modes are explicit, never the umask's: the store's directories are `0700` and its index
    /// files `0600` (packages inside keep their read-only modes, reachable by the owner only).
    /// A store owned by another user, or writable by others, is refused before anything in it
    /// is touched.
    pub fn open(root: &Path) -> Result<Store> {
        if !root.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root)
                .map_err(|e| StoreError::io(root, e))?;
        }
        let root = fs_err::canonicalize(root).map_err(|e| StoreError::io(root, e))?;
        let layout = Layout::new(&root);
        check_owned_and_private(&layout.root)?;
        layout.check_entries(nix::unistd::geteuid().as_raw())?;
        for dir in [&layout.blobs, &layout.tmp, &layout.views] {
            // Several processes may open a new store at once: whoever made the directory,
            // it must then be ours and private.
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    check_owned_and_private(dir)?
                }
                Err(e) => return Err(StoreError::io(dir, e)),
            }
        }
        for dir in [&layout.root, &layout.blobs, &layout.tmp, &layout.views] {
            ensure_mode(dir, 0o700)?;
        }
        let index = Index::open(&layout.index, || crate::index::has_entries(&layout.blobs))?;
        for suffix in ["", "-wal", "-shm"] {
            let mut name = layout.index.clone().into_os_string();
            name.push(suffix);
            ensure_mode(&PathBuf::from(name), 0o600)?;
        }
        let identity = identity(&layout)?
            .ok_or_else(|| StoreError::io(&layout.index, std::io::ErrorKind::NotFound.into()))?;
        Ok(Store {
            layout,
            limits: Limits::default(),
            keep_archives: false,
            index: Mutex::new(index),
            bytes_hashed: AtomicU64::new(0),
            linker: Linker::new(),
            durability: crate::durability::Durability::current(),
            trust: Default::default(),
            found_fresh: Mutex::default(),
            identity,
        })
    }

    /// Make this handle what a new [`Store::open`] of its root would be, for another command
    /// in the same process (the init server's next request), keeping its index connection:
    /// the root's ownership, privacy and layout are checked again, and what the handle
    /// found is forgotten (the index's trust, the packages found fresh, the link mode, the
    /// bytes hashed). `Ok(false)`: the root or the index is not the one this handle opened
    /// (removed, replaced by a restored cache, the index rebuilt), or a directory of the
    /// layout is gone: open the store again.
    pub fn reuse(&mut self) -> Result<bool> {
        if identity(&self.layout)? != Some(self.identity) {
            return Ok(false);
        }
        check_owned_and_private(&self.layout.root)?;
        self.layout.check_entries(nix::unistd::geteuid().as_raw())?;
        for dir in [&self.layout.blobs, &self.layout.tmp, &self.layout.views] {
            match std::fs::symlink_metadata(dir) {
                Ok(meta) if meta.is_dir() => check_owned_and_private(dir)?,
                Ok(_) => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(StoreError::io(dir, e)),
            }
        }
        self.trust.forget();
        self.found_fresh
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self.bytes_hashed.get_mut() = 0;
        self.linker = Linker::new();
        Ok(true)
    }

    /// Use these archive limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Keep every zip ingested from now on as it came (a blob, found by its `zh:` with
    /// [`Store::kept_archive`]) beside its extracted files, for as long as its tree lives.
    /// Costs the zip's size on disk; gives `tstore push` the origin's own archive, whose
    /// digest is the `zh:` lock files already hold.
    pub fn with_kept_archives(mut self, keep: bool) -> Self {
        self.keep_archives = keep;
        self
    }

    /// Whether provider zips are kept whole ([`Store::with_kept_archives`]).
    pub fn keeps_archives(&self) -> bool {
        self.keep_archives
    }

    /// The archive limits in use.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The store root (canonical).
    pub fn root(&self) -> &Path {
        &self.layout.root
    }

    /// `<root>/git-cache`: the module installer's cached git repositories, one per remote
    /// URL. Not packages: nothing links into it, and gc drops what was not used lately.
    /// Handed out only by a trusted store: adopting a restored one removes the cache first
    /// (its repositories' configuration would be git's instructions).
    pub fn git_cache_dir(&self) -> Result<PathBuf> {
        self.ensure_trusted()?;
        Ok(self.layout.git_cache.clone())
    }

    /// `<root>/views`: materialized read-only packages.
    pub fn views_dir(&self) -> PathBuf {
        self.layout.views.clone()
    }

    /// Where the view of `key` is: `views/` + [`PackageKey::view_relpath`].
    pub fn view_dir(&self, key: &PackageKey) -> Result<PathBuf> {
        Ok(self.layout.views.join(key.view_relpath()?))
    }

    /// How views are linked to blobs by this handle (hardlinks unless they failed).
    pub fn link_mode(&self) -> LinkMode {
        self.linker.mode()
    }

    /// Content bytes this handle has read and hashed (ingest and verify). Tests use it to prove
    /// that a second init neither re-reads a zip nor re-hashes a tree.
    pub fn bytes_hashed(&self) -> u64 {
        self.bytes_hashed.load(Ordering::Relaxed)
    }

    pub(crate) fn index(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remove everything under `tmp/`: leftovers of processes that crashed mid-ingest.
    ///
    /// Only safe while no other process is ingesting, hence the exclusive lock it demands
    /// (gc removes them itself, with [`Store::leftovers`]). Returns the number of entries
    /// removed.
    pub fn clean_tmp(&self, lock: &StoreLock) -> Result<u64> {
        assert_exclusive(lock, "clean_tmp");
        let tmp = &self.layout.tmp;
        let mut removed = 0;
        for entry in fs_err::read_dir(tmp).map_err(|e| StoreError::io(tmp, e))? {
            let entry = entry.map_err(|e| StoreError::io(tmp, e))?;
            let path = entry.path();
            crate::layout::remove_tree(&path).map_err(|e| StoreError::io(&path, e))?;
            removed += 1;
        }
        Ok(removed)
    }

    /// The package `key`, if committed.
    pub fn package(&self, key: &PackageKey) -> Result<Option<Package>> {
        self.ensure_trusted()?;
        let index = self.index();
        read_package(&index.conn, key)
            .map_err(index.err("reading a package"))?
            .transpose()
    }

    /// The tree of package `key` as the index says now: [`Store::package`]'s `tree` alone,
    /// one lookup by the package's key (no hashes, no tree sizes).
    pub fn package_tree(&self, key: &PackageKey) -> Result<Option<TreeId>> {
        self.ensure_trusted()?;
        let index = self.index();
        let tree: Option<String> = crate::index::query_row_cached(
            &index.conn,
            "SELECT tree FROM packages
             WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
            [key.kind(), key.name(), key.version(), key.platform()],
            |r| r.get(0),
        )
        .optional()
        .map_err(index.err("reading a package's tree"))?;
        tree.map(|t| t.parse::<TreeId>()).transpose()
    }

    /// All packages, sorted by key.
    pub fn packages(&self) -> Result<Vec<Package>> {
        let index = self.index();
        let err = || index.err("listing packages");
        let mut keys = package_keys(
            &index,
            "listing packages",
            "SELECT kind, name, version, platform FROM packages",
            [],
        )?;
        keys.sort();
        keys.iter()
            .map(|k| {
                read_package(&index.conn, k)
                    .map_err(err())?
                    .transpose()?
                    .ok_or_else(|| StoreError::CorruptIndex {
                        what: format!("package {k} vanished while listing"),
                    })
            })
            .collect()
    }
}

/// The hash records of a package row.
pub(crate) fn read_hashes(
    conn: &rusqlite::Connection,
    package_id: i64,
) -> rusqlite::Result<Vec<HashRecord>> {
    let mut v = query_vec(
        conn,
        "SELECT hash, verified_locally, reported_by_registry, signed_by_key_ids FROM package_hashes WHERE package = ?1",
        [package_id],
        |r| {
        let hash: String = r.get(0)?;
        let key_ids: String = r.get(3)?;
        let conv = |i, e: Box<dyn std::error::Error + Send + Sync>| {
            rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e)
        };
        Ok(HashRecord {
            hash: hash.parse::<Hash>().map_err(|e| conv(0, Box::new(e)))?,
            disposition: Disposition {
                verified_locally: r.get(1)?,
                reported_by_registry: r.get(2)?,
                signed_by_key_ids: serde_json::from_str(&key_ids)
                    .map_err(|e| conv(3, Box::new(e)))?,
            },
        })
        },
    )?;
    v.sort_by(|a, b| a.hash.cmp(&b.hash));
    Ok(v)
}

/// Read one package (the inner `Result` carries decoding errors).
pub(crate) fn read_package(
    conn: &rusqlite::Connection,
    key: &PackageKey,
) -> rusqlite::Result<Option<Result<Package>>> {
    type Row = (i64, String, i64, u64, u64, String);
    let row: Option<Row> = crate::index::query_row_cached(
        conn,
        "SELECT p.id, p.tree, p.created_at, t.files, t.bytes, p.provenance
             FROM packages p JOIN trees t ON t.id = p.tree
             WHERE p.kind = ?1 AND p.name = ?2 AND p.version = ?3 AND p.platform = ?4",
        [key.kind(), key.name(), key.version(), key.platform()],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        },
    )
    .optional()?;
    let Some((id, tree, created_at, files, bytes, provenance)) = row else {
        return Ok(None);
    };
    let hashes = read_hashes(conn, id)?;
    let package = || {
        Ok(Package {
            key: key.clone(),
            tree: tree.parse::<TreeId>()?,
            hashes,
            files,
            bytes,
            created_at,
            provenance: Provenance::from_column(&provenance)?,
        })
    };
    Ok(Some(package()))
}

/// The device and inode of the store's root and of its index file; `None` when either is
/// gone.
fn identity(layout: &Layout) -> Result<Option<[u64; 4]>> {
    use std::os::unix::fs::MetadataExt as _;
    let stat = |path: &Path| match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    };
    Ok(match (stat(&layout.root)?, stat(&layout.index)?) {
        (Some(root), Some(index)) => Some([root.0, root.1, index.0, index.1]),
        _ => None,
    })
}

/// A store directory must belong to the current user and be writable by nobody else.
/// Give `path` exactly the permission bits `mode` when it exists with others (one `stat`,
/// and a `chmod` only when needed: a warm init should not write metadata).
fn ensure_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::metadata(path) {
        Ok(meta) if meta.mode() & 0o7777 == mode => Ok(()),
        Ok(_) => fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| StoreError::io(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

pub(crate) fn check_owned_and_private(dir: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = fs_err::metadata(dir).map_err(|e| StoreError::io(dir, e))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(StoreError::ForeignOwner {
            path: dir.to_owned(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(StoreError::OpenToOthers {
            path: dir.to_owned(),
            mode,
        });
    }
    Ok(())
}
