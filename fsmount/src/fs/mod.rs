//! [`StoreFs`]: the `fuser` filesystem.
//!
//! # Inodes
//!
//! Every node gets an inode number the first time it is seen and keeps it for the life of the
//! mount; numbers are never reused. Inode 1 is the root. There are two kinds of directories:
//!
//! - **index directories**: the root, `providers/`, `modules/` and every level above a package
//!   (`providers/HOST/NS/TYPE/VERSION`). Their children come from the package list in the
//!   index: the changes to it are applied (see [`index_dirs`]) when
//!   [`Store::index_generation`] and then [`Store::package_generation`] changed (a root
//!   recorded is a commit, not a new package), on `lookup`, `opendir`, `readdir` and
//!   `getattr` of an index directory. So a package committed while mounted is visible at once; index directories get a 1 s TTL and no `FOPEN_CACHE_DIR`. A refresh
//!   keeps the inode of every name it still lists (a package root only if its tree is the
//!   same).
//! - **package contents**: the package root (`providers/…/OS_ARCH` or `modules/<id>`) and
//!   everything below it, built from the package's tree the first time the package root is
//!   looked into (until then the root has the index TTL). Immutable: 24 h TTLs,
//!   `FOPEN_CACHE_DIR` on directories, fixed times (1 s after the epoch), files 0444 or 0555
//!   by their exec bit, directories 0555.
//!
//! # Reads
//!
//! A file is read from its blob's primary file ([`Store::blob_path`]: `blobs-v1/ab/<rest>`,
//! whose content is the same whatever the mode). `init` picks one of three ways, the first
//! the kernel offers:
//!
//! - **Passthrough** (opt-in, [`MountOptions::passthrough`](crate::MountOptions), Linux
//!   6.9+ and root): as with
//!   handles below, but the blob file is registered as the backing file (one backing id per
//!   inode, shared by its handles), so the kernel reads it without asking this process. If
//!   the kernel refuses a backing file, passthrough is switched off and reads are served.
//! - **No open** (`FUSE_NO_OPEN_SUPPORT`, the usual case): the first `open` of a file answers
//!   ENOSYS and the kernel then sends no `open`/`release` for files at all; reads arrive with
//!   file handle 0 and are served by inode from a table of opened blob files (at most
//!   `MAX_FILES_BY_INODE`, cleared when full). Writable opens never get here: the mount is
//!   `ro`, so the kernel answers them with EROFS itself.
//! - **Handles** (otherwise): `open` opens the blob file and keeps it under a new handle
//!   number until `release`; the reply asks for `FOPEN_KEEP_CACHE`.
//!
//! A served `read` is a `pread` loop on the blob file, outside the state lock (the handle or
//! inode table is locked only to clone the file's `Arc`), so one large read never blocks
//! lookups or other readers (the session runs several threads). `flush` answers ENOSYS, so the
//! kernel stops sending it on every close. An open blob file keeps working after gc unlinks
//! it.
//!
//! # Writes
//!
//! Every mutating operation answers EROFS, and `access` with `W_OK` too; the mount is `ro` as
//! well, so the kernel refuses most of them before asking.

mod index_dirs;
mod ops;
mod revalidate;

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    BackingId, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};
use tstore_store::{BlobId, EntryKind, Store, TreeId};

/// TTL of package contents: immutable, so as long as the kernel likes.
const CONTENT_TTL: Duration = Duration::from_secs(24 * 3600);
/// TTL of index directories, whose listings change when packages are committed.
const INDEX_TTL: Duration = Duration::from_secs(1);
/// Every node's mtime/ctime/atime: fixed (as the Nix store does), content never changes.
const FIXED_TIME: Duration = Duration::from_secs(1);
const ROOT: u64 = 1;

#[derive(Debug)]
enum Node {
    /// An index directory: children recomputed from the package list.
    IndexDir { children: BTreeMap<OsString, u64> },
    /// A package root whose tree is not loaded yet.
    Package { tree: TreeId },
    /// A directory inside a package (the package root once loaded).
    Dir { children: BTreeMap<OsString, u64> },
    /// A regular file.
    File { blob: BlobId, exec: bool, size: u64 },
    /// A symbolic link inside a package.
    Symlink { target: OsString },
}

#[derive(Debug)]
struct State {
    /// `nodes[ino - 1]`.
    nodes: Vec<Node>,
    /// `(parent, name) → ino` of every index-level node ever made, so a refresh keeps numbers.
    known: HashMap<(u64, OsString), u64>,
    /// The tree of every package root ever made (also once loaded into a `Dir`).
    known_trees: HashMap<u64, TreeId>,
    /// Index generation last looked at (`None`: never).
    generation: Option<u64>,
    /// Package generation the index directories were built from (`None`: never built).
    package_generation: Option<u64>,
}

impl State {
    fn node(&self, ino: u64) -> Option<&Node> {
        ino.checked_sub(1).and_then(|i| self.nodes.get(i as usize))
    }

    fn push(&mut self, node: Node) -> u64 {
        self.nodes.push(node);
        self.nodes.len() as u64
    }
}

/// An open file.
#[derive(Debug)]
struct Handle {
    file: Arc<std::fs::File>,
    _backing: Option<Arc<BackingId>>,
}

/// The read-only filesystem over one store. See the module docs.
#[derive(Debug)]
pub struct StoreFs {
    store: Store,
    state: Mutex<State>,
    handles: Mutex<HashMap<u64, Handle>>,
    /// Passthrough backing ids by inode, shared by that inode's open handles (the kernel wants
    /// one per inode); dropped (closed) with the last handle.
    backing: Mutex<HashMap<u64, Weak<BackingId>>>,
    /// Whether to ask the kernel for `FUSE_PASSTHROUGH` ([`StoreFs::with_passthrough`]).
    passthrough_wanted: bool,
    /// The kernel accepted `FUSE_PASSTHROUGH`: reads of opened files go straight to the blob
    /// file in the kernel, without a round trip to this process.
    passthrough: AtomicBool,
    /// The kernel accepted `FUSE_NO_OPEN_SUPPORT`: `open` answers ENOSYS once and the kernel
    /// stops sending `open`/`release` for files, saving two round trips per file (the
    /// cost that dominated warm reads of many small module files). Reads then arrive with
    /// file handle 0 and are served by inode from `by_inode`.
    no_open: AtomicBool,
    /// Blob files opened for handle-less reads, by inode. Bounded: cleared when full.
    by_inode: revalidate::OpenFiles,
    /// The blob file each file inode was served from, to notice replaced blobs.
    served: Arc<revalidate::Served>,
    next_handle: AtomicU64,
    uid: u32,
    gid: u32,
}

impl StoreFs {
    /// A filesystem serving `store`. Files are owned by the owner of the store root.
    pub fn new(store: Store) -> StoreFs {
        let (uid, gid) = std::fs::metadata(store.root())
            .map(|m| (m.uid(), m.gid()))
            .unwrap_or((0, 0));
        let mut state = State {
            nodes: Vec::new(),
            known: HashMap::new(),
            known_trees: HashMap::new(),
            generation: None,
            package_generation: None,
        };
        state.push(Node::IndexDir {
            children: BTreeMap::new(),
        });
        StoreFs {
            store,
            state: Mutex::new(state),
            handles: Mutex::new(HashMap::new()),
            backing: Mutex::new(HashMap::new()),
            passthrough_wanted: false,
            passthrough: AtomicBool::new(false),
            no_open: AtomicBool::new(false),
            by_inode: Arc::default(),
            served: Arc::default(),
            next_handle: AtomicU64::new(1),
            uid,
            gid,
        }
    }

    /// This filesystem asking the kernel for FUSE passthrough if `wanted` (see
    /// [`MountOptions::passthrough`](crate::MountOptions)); off by default.
    pub fn with_passthrough(mut self, wanted: bool) -> StoreFs {
        self.passthrough_wanted = wanted;
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Re-read the package list if the index changed since the last look.
    fn refresh(&self, state: &mut State) -> Result<(), Errno> {
        let generation = self.store.index_generation().map_err(|e| {
            tracing::error!("reading the index generation: {e}");
            Errno::EIO
        })?;
        if state.generation == Some(generation) {
            return Ok(());
        }
        // Most commits (roots recorded, packages marked used) leave the package list alone.
        // Read before listing, so a package committed meanwhile is applied (again: applying
        // is idempotent) at the next look rather than missed.
        let package_generation = self.store.package_generation().map_err(|e| {
            tracing::error!("reading the package generation: {e}");
            Errno::EIO
        })?;
        if state.package_generation == Some(package_generation) {
            state.generation = Some(generation);
            return Ok(());
        }
        // Apply the changes since the last look; list everything on the first look, or when
        // the index no longer keeps the changes since then.
        let changes = match state.package_generation {
            Some(since) => self.store.package_changes_since(since).map_err(|e| {
                tracing::error!("reading package changes: {e}");
                Errno::EIO
            })?,
            None => None,
        };
        match changes {
            Some(changes) => index_dirs::apply(state, &changes),
            None => {
                let packages = self.store.package_trees().map_err(|e| {
                    tracing::error!("listing packages: {e}");
                    Errno::EIO
                })?;
                index_dirs::rebuild(state, &packages);
            }
        }
        state.generation = Some(generation);
        state.package_generation = Some(package_generation);
        Ok(())
    }

    /// Build the contents of package root `ino` from its tree, if not done yet.
    fn load_package(&self, state: &mut State, ino: u64) -> Result<(), Errno> {
        let Some(Node::Package { tree }) = state.node(ino) else {
            return Ok(());
        };
        let tree = self.store.tree(tree).map_err(|e| {
            tracing::error!("reading tree {tree}: {e}");
            Errno::EIO
        })?;
        let mut dirs: HashMap<String, u64> = HashMap::new();
        let mut children: HashMap<u64, BTreeMap<OsString, u64>> = HashMap::new();
        children.insert(ino, BTreeMap::new());
        for entry in tree.entries() {
            let mut parent = ino;
            let mut prefix = String::new();
            let mut parts = entry.path.split('/').peekable();
            while let Some(part) = parts.next() {
                if parts.peek().is_none() {
                    let node = match &entry.kind {
                        EntryKind::File { blob, exec } => {
                            let path = self.store.blob_path(blob);
                            let size = std::fs::metadata(&path)
                                .map_err(|e| {
                                    tracing::error!("blob {}: {e}", path.display());
                                    Errno::EIO
                                })?
                                .len();
                            Node::File {
                                blob: *blob,
                                exec: *exec,
                                size,
                            }
                        }
                        EntryKind::Symlink { target } => Node::Symlink {
                            target: target.into(),
                        },
                    };
                    let child = state.push(node);
                    children
                        .entry(parent)
                        .or_default()
                        .insert(part.into(), child);
                    break;
                }
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
                parent = match dirs.get(&prefix) {
                    Some(&d) => d,
                    None => {
                        let d = state.push(Node::Dir {
                            children: BTreeMap::new(),
                        });
                        children.entry(parent).or_default().insert(part.into(), d);
                        children.entry(d).or_default();
                        dirs.insert(prefix.clone(), d);
                        d
                    }
                };
            }
        }
        for (dir, kids) in children {
            state.nodes[dir as usize - 1] = Node::Dir { children: kids };
        }
        Ok(())
    }

    /// Make `ino` ready to be listed or looked into.
    fn prepare_dir(&self, state: &mut State, ino: u64) -> Result<(), Errno> {
        match state.node(ino) {
            Some(Node::IndexDir { .. }) => self.refresh(state),
            Some(Node::Package { .. }) => self.load_package(state, ino),
            Some(Node::Dir { .. }) => Ok(()),
            Some(_) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    fn attr(&self, state: &State, ino: u64) -> Option<(FileAttr, Duration)> {
        let node = state.node(ino)?;
        let time = UNIX_EPOCH + FIXED_TIME;
        let subdirs = |children: &BTreeMap<OsString, u64>| {
            children
                .values()
                .filter(|&&c| {
                    matches!(
                        state.node(c),
                        Some(Node::IndexDir { .. } | Node::Package { .. } | Node::Dir { .. })
                    )
                })
                .count() as u32
        };
        let (kind, perm, size, nlink, ttl) = match node {
            Node::IndexDir { children } => (
                FileType::Directory,
                0o555,
                0,
                2 + subdirs(children),
                INDEX_TTL,
            ),
            // Not loaded yet: the link count is a guess until then (and `find` tolerates 1).
            Node::Package { .. } => (FileType::Directory, 0o555, 0, 1, INDEX_TTL),
            Node::Dir { children } => (
                FileType::Directory,
                0o555,
                0,
                2 + subdirs(children),
                CONTENT_TTL,
            ),
            Node::File { exec, size, .. } => (
                FileType::RegularFile,
                if *exec { 0o555 } else { 0o444 },
                *size,
                1,
                CONTENT_TTL,
            ),
            Node::Symlink { target } => (
                FileType::Symlink,
                0o777,
                target.len() as u64,
                1,
                CONTENT_TTL,
            ),
        };
        Some((
            FileAttr {
                ino: INodeNo(ino),
                size,
                blocks: size.div_ceil(512),
                atime: time,
                mtime: time,
                ctime: time,
                crtime: time,
                kind,
                perm,
                nlink,
                uid: self.uid,
                gid: self.gid,
                rdev: 0,
                blksize: 128 * 1024,
                flags: 0,
            },
            ttl,
        ))
    }
}

fn erofs_entry(reply: ReplyEntry) {
    reply.error(Errno::EROFS);
}

/// How many handle-less blob files stay open at once (see `StoreFs::no_open`).
const MAX_FILES_BY_INODE: usize = 512;

impl StoreFs {
    /// The blob file behind a file inode, for reads without an open handle.
    fn file_by_inode(&self, ino: u64) -> Result<Arc<std::fs::File>, Errno> {
        if let Some(f) = self
            .by_inode
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&ino)
        {
            return Ok(f.clone());
        }
        let blob = match self.state().node(ino) {
            Some(Node::File { blob, .. }) => *blob,
            Some(_) => return Err(Errno::EISDIR),
            None => return Err(Errno::ENOENT),
        };
        let path = self.store.blob_path(&blob);
        let file = Arc::new(std::fs::File::open(&path).map_err(|e| {
            tracing::error!("opening blob {}: {e}", path.display());
            Errno::EIO
        })?);
        self.served.record(ino, &path, &file);
        let mut map = self.by_inode.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_FILES_BY_INODE {
            map.clear();
        }
        map.insert(ino, file.clone());
        Ok(file)
    }

    /// The watcher that keeps this filesystem from serving replaced blobs; run it on its
    /// own thread with the session's notifier.
    pub(crate) fn watcher(&self) -> revalidate::Watcher {
        revalidate::Watcher {
            store_root: self.store.root().to_owned(),
            served: self.served.clone(),
            open_files: self.by_inode.clone(),
        }
    }
}
