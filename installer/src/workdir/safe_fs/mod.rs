//! Changing a working directory without ever following a symlink the checkout planted.
//!
//! A checkout is input from whoever prepared it, `.terraform/` included, and tstore runs as
//! root in CI on untrusted pull requests. Every change tstore makes under a data directory
//! goes through a [`SafeDir`]: a directory opened once, then walked component by component
//! with `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)`, so what is changed is what was
//! checked, even if the checkout is swapped around while tstore runs.
//!
//! Rules enforced here:
//!
//! - **Plain relative paths only**: every path below a [`SafeDir`] is a [`RelPath`] of
//!   plain components (no `..`, no `.`, no empty component, no NUL, not absolute), so no
//!   key or name read from state can leave the directory it is resolved in.
//! - **No symlinked parent**: a symlink in place of a directory between the [`SafeDir`] and
//!   the entry is refused ([`SafeFsError::SymlinkedDir`], naming it and saying to remove it)
//!   for reads and changes alike; nothing is written through it.
//! - **The last component is never followed**: a symlink there is replaced, renamed or
//!   removed as a link; files are created with `O_EXCL | O_NOFOLLOW` and replaced by
//!   `renameat` over the old name, never written in place.
//! - **Removal removes only the entry**: a directory tree is removed without following
//!   links inside it (they are unlinked), without crossing into another filesystem (a
//!   mount point is refused), at any depth (directories deeper than [`remove::MAX_DEPTH`] are
//!   moved up and removed in a later pass, so no more descriptors are open); unreadable directories
//!   of the tree are made accessible through the descriptor tstore opened, never by path.
//!
//! Which entries may be removed at all (what tstore created) is the callers' rule: see
//! `modules::apply` (module keys tstore recorded) and [`super::link`] (the entry a link is
//! installed at).
//!
//! The anchor itself is opened following symlinks ([`SafeDir::open_trusted`]): it is the
//! working directory, or a data directory the user named (`TF_DATA_DIR`), never a name read
//! from the checkout. `.terraform` inside a working directory is walked to like any other
//! component, so a symlinked `.terraform` is refused.

mod remove;
mod write;
pub(crate) use write::Durability;

#[cfg(test)]
mod tests;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{openat, renameat, AtFlags, OFlag};
use nix::sys::stat::{fchmod, fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::symlinkat;

/// Why a change under a working directory was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SafeFsError {
    /// A path read from state or built from names is not plain.
    #[error("{path:?} is not a plain relative path ({why}); tstore does not use it")]
    NotPlain {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A directory on the way is a symlink.
    #[error(
        "{} is a symlink; tstore does not write or delete through a symlink inside a working \
         directory's data directory. Remove {} (tstore did not create it) and run init again",
        .path.display(),
        .path.display()
    )]
    SymlinkedDir {
        /// The symlink.
        path: PathBuf,
    },
    /// A file tstore reads back (its own state) is a symlink.
    #[error("{} is a symlink, not a file tstore wrote; it is not read through", .path.display())]
    SymlinkedFile {
        /// The symlink.
        path: PathBuf,
    },
    /// A directory on the way is a file (or another non-directory).
    #[error("{} is not a directory; remove it and run init again", .path.display())]
    NotADirectory {
        /// The entry.
        path: PathBuf,
    },
    /// A directory to remove is a mount point.
    #[error(
        "{} is on another filesystem (a mount point); tstore does not remove across \
         filesystems. Unmount and remove it, then run init again",
        .path.display()
    )]
    OtherFilesystem {
        /// The mount point.
        path: PathBuf,
    },
    /// A filesystem operation failed.
    #[error("cannot {op} {}", .path.display())]
    Io {
        /// What was being done (`open`, `remove`, `rename`, …).
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl SafeFsError {
    fn io(op: &'static str, path: &Path, errno: Errno) -> SafeFsError {
        SafeFsError::Io {
            op,
            path: path.to_owned(),
            source: errno.into(),
        }
    }

    /// Whether tstore refused the change (the checkout must be fixed), rather than the
    /// filesystem failing it.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, SafeFsError::Io { .. })
    }

    /// Whether the filesystem said the entry to create exists already.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, SafeFsError::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists)
    }
}

type Result<T> = std::result::Result<T, SafeFsError>;

/// A relative path of plain components: each non-empty, not `.` or `..`, without `/` or
/// NUL. The only kind of path a [`SafeDir`] resolves.
#[derive(Clone, PartialEq, Eq)]
pub struct RelPath {
    parts: Vec<OsString>,
}

impl RelPath {
    /// Validate `path` (split on `/`; `a//b`, `a/`, `./a` and `/a` are refused rather than
    /// normalized).
    pub fn new(path: impl AsRef<OsStr>) -> Result<RelPath> {
        let raw = path.as_ref();
        let refuse = |why| SafeFsError::NotPlain {
            path: raw.to_string_lossy().into_owned(),
            why,
        };
        let bytes = raw.as_bytes();
        if bytes.is_empty() {
            return Err(refuse("empty"));
        }
        if bytes.starts_with(b"/") {
            return Err(refuse("absolute"));
        }
        if bytes.contains(&0) {
            return Err(refuse("contains NUL"));
        }
        let mut parts = Vec::new();
        for part in bytes.split(|&b| b == b'/') {
            match part {
                b"" => return Err(refuse("empty component")),
                b"." | b".." => return Err(refuse("`.` or `..` component")),
                p => parts.push(OsStr::from_bytes(p).to_owned()),
            }
        }
        Ok(RelPath { parts })
    }

    /// The path without its last component (`None` for a single name).
    pub fn parent(&self) -> Option<RelPath> {
        (self.parts.len() > 1).then(|| RelPath {
            parts: self.parts[..self.parts.len() - 1].to_vec(),
        })
    }

    /// The last component.
    pub fn file_name(&self) -> &OsStr {
        self.parts.last().expect("a RelPath is never empty")
    }

    /// `self/name`, `name` validated as one plain component.
    pub fn join(&self, name: impl AsRef<OsStr>) -> Result<RelPath> {
        let name = RelPath::new(name)?;
        let mut parts = self.parts.clone();
        parts.extend(name.parts);
        Ok(RelPath { parts })
    }

    /// The components.
    pub fn components(&self) -> impl Iterator<Item = &OsStr> {
        self.parts.iter().map(OsString::as_os_str)
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(&p.to_string_lossy())?;
        }
        Ok(())
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RelPath({self})")
    }
}

/// What an entry is, not following symlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (never followed).
    Symlink,
    /// A fifo, socket or device.
    Other,
}

impl Kind {
    fn of(st: &FileStat) -> Kind {
        match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => Kind::File,
            SFlag::S_IFDIR => Kind::Dir,
            SFlag::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// A directory opened once; every path below it is resolved from its descriptor without
/// following symlinks (see the module documentation for the rules).
#[derive(Debug)]
pub struct SafeDir {
    /// An `O_PATH` descriptor: usable for every `*at` call, needs no read permission.
    fd: OwnedFd,
    /// The directory's path, for messages only (never used to reach it).
    path: PathBuf,
}

const WALK: OFlag = OFlag::O_PATH
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

impl SafeDir {
    /// Open a directory the caller trusts: the working directory, or a data directory the
    /// user named. Symlinks in `path` are followed (the user chose it); nothing read from a
    /// checkout may be opened this way.
    pub fn open_trusted(path: &Path) -> Result<SafeDir> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, Mode::empty())
            .map_err(|e| SafeFsError::io("open", path, e))?;
        Ok(SafeDir {
            fd,
            path: path.to_owned(),
        })
    }

    /// The directory's path (for messages and reports).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `rel` below this directory (for messages and reports).
    pub fn display_path(&self, rel: &RelPath) -> PathBuf {
        rel.components().fold(self.path.clone(), |p, c| p.join(c))
    }

    /// One step down: the directory `name`, created (0755) when `create` and missing.
    /// `None` when missing and not created. A symlink or file there is refused.
    fn child(&self, name: &OsStr, create: bool) -> Result<Option<SafeDir>> {
        let path = self.path.join(name);
        for _ in 0..2 {
            match openat(&self.fd, name, WALK, Mode::empty()) {
                Ok(fd) => {
                    // O_PATH|O_NOFOLLOW|O_DIRECTORY opens only a directory; check anyway.
                    let st = fstat(&fd).map_err(|e| SafeFsError::io("inspect", &path, e))?;
                    if Kind::of(&st) != Kind::Dir {
                        return Err(SafeFsError::NotADirectory { path });
                    }
                    return Ok(Some(SafeDir { fd, path }));
                }
                Err(Errno::ENOENT) if create => {
                    match mkdirat(&self.fd, name, Mode::from_bits_truncate(0o755)) {
                        Ok(()) | Err(Errno::EEXIST) => continue,
                        Err(e) => return Err(SafeFsError::io("create", &path, e)),
                    }
                }
                Err(Errno::ENOENT) => return Ok(None),
                Err(Errno::ELOOP | Errno::ENOTDIR) => {
                    return Err(match self.kind_of(name)? {
                        Some(Kind::Symlink) => SafeFsError::SymlinkedDir { path },
                        _ => SafeFsError::NotADirectory { path },
                    })
                }
                Err(e) => return Err(SafeFsError::io("open", &path, e)),
            }
        }
        Err(SafeFsError::io("create", &path, Errno::ENOENT))
    }

    /// Walk `parts` from here.
    fn walk<'a>(
        &self,
        parts: impl IntoIterator<Item = &'a OsStr>,
        create: bool,
    ) -> Result<Option<SafeDir>> {
        let mut cur: Option<SafeDir> = None;
        for part in parts {
            let next = cur.as_ref().unwrap_or(self).child(part, create)?;
            match next {
                Some(d) => cur = Some(d),
                None => return Ok(None),
            }
        }
        match cur {
            Some(d) => Ok(Some(d)),
            None => self.try_clone().map(Some),
        }
    }

    fn try_clone(&self) -> Result<SafeDir> {
        Ok(SafeDir {
            fd: self.fd.try_clone().map_err(|source| SafeFsError::Io {
                op: "open",
                path: self.path.clone(),
                source,
            })?,
            path: self.path.clone(),
        })
    }

    /// The directory holding `rel`'s last component (created when `create`), or `None`
    /// when a directory on the way is missing.
    fn parent_of(&self, rel: &RelPath, create: bool) -> Result<Option<SafeDir>> {
        let n = rel.parts.len() - 1;
        self.walk(rel.components().take(n), create)
    }

    /// The directory at `rel`, if it exists. A symlink or file anywhere on the way (the
    /// last component included) is refused.
    pub fn open_dir(&self, rel: &RelPath) -> Result<Option<SafeDir>> {
        self.walk(rel.components(), false)
    }

    /// The directory at `rel`, created with its parents (0755) where missing.
    pub fn create_dir_all(&self, rel: &RelPath) -> Result<SafeDir> {
        Ok(self
            .walk(rel.components(), true)?
            .expect("walk with create finds every directory"))
    }

    /// Create the directory `rel` (its parents as needed); an existing entry there is an
    /// error (`AlreadyExists`), so the directory is one this process made.
    pub fn create_dir_new(&self, rel: &RelPath) -> Result<SafeDir> {
        let parent = self.parent_of(rel, true)?.expect("created");
        let name = rel.file_name();
        let path = self.display_path(rel);
        mkdirat(&parent.fd, name, Mode::from_bits_truncate(0o755))
            .map_err(|e| SafeFsError::io("create", &path, e))?;
        parent
            .child(name, false)?
            .ok_or_else(|| SafeFsError::io("open", &path, Errno::ENOENT))
    }

    fn kind_of(&self, name: &OsStr) -> Result<Option<Kind>> {
        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Kind::of(&st))),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(SafeFsError::io("inspect", &self.path.join(name), e)),
        }
    }

    /// What `rel` is (its last component not followed); `None` when it does not exist.
    pub fn kind(&self, rel: &RelPath) -> Result<Option<Kind>> {
        match self.parent_of(rel, false)? {
            Some(parent) => parent.kind_of(rel.file_name()),
            None => Ok(None),
        }
    }

    /// The target of the symlink `rel`; `None` when it does not exist or is not a link.
    pub fn read_link(&self, rel: &RelPath) -> Result<Option<PathBuf>> {
        let Some(parent) = self.parent_of(rel, false)? else {
            return Ok(None);
        };
        match nix::fcntl::readlinkat(&parent.fd, rel.file_name()) {
            Ok(t) => Ok(Some(PathBuf::from(t))),
            Err(Errno::ENOENT | Errno::EINVAL) => Ok(None),
            Err(e) => Err(SafeFsError::io("read the link", &self.display_path(rel), e)),
        }
    }

    /// The entries of this directory (`.` and `..` left out), each with its kind.
    pub fn entries(&self) -> Result<Vec<(OsString, Kind)>> {
        let readable = self.reopen(OFlag::O_RDONLY)?;
        let mut dir =
            nix::dir::Dir::from_fd(readable).map_err(|e| SafeFsError::io("list", &self.path, e))?;
        let mut names = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|e| SafeFsError::io("list", &self.path, e))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name != "." && name != ".." {
                names.push(name.to_owned());
            }
        }
        let mut out = Vec::new();
        for name in names {
            if let Some(kind) = self.kind_of(&name)? {
                out.push((name, kind));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// This directory opened again with `flags` (e.g. readable, to list or `fsync` it).
    fn reopen(&self, flags: OFlag) -> Result<OwnedFd> {
        let flags = flags | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        openat(&self.fd, ".", flags, Mode::empty())
            .map_err(|e| SafeFsError::io("open", &self.path, e))
    }

    /// Read the regular file `rel`, at most `max` bytes; `None` when it does not exist. A
    /// symlink there is refused ([`SafeFsError::SymlinkedFile`]), never read through.
    pub fn read_file(&self, rel: &RelPath, max: u64) -> Result<Option<Vec<u8>>> {
        let Some(parent) = self.parent_of(rel, false)? else {
            return Ok(None);
        };
        let path = self.display_path(rel);
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = match openat(&parent.fd, rel.file_name(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(Errno::ELOOP) => return Err(SafeFsError::SymlinkedFile { path }),
            Err(e) => return Err(SafeFsError::io("open", &path, e)),
        };
        let st = fstat(&fd).map_err(|e| SafeFsError::io("inspect", &path, e))?;
        if Kind::of(&st) != Kind::File {
            return Err(SafeFsError::io("read", &path, Errno::EINVAL));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(max)
            .read_to_end(&mut bytes)
            .map_err(|source| SafeFsError::Io {
                op: "read",
                path,
                source,
            })?;
        Ok(Some(bytes))
    }

    /// The regular file `name` of this directory, opened for reading with `O_NOFOLLOW` and
    /// `O_NONBLOCK`: `None` when nothing has that name, or when it is a symlink, FIFO,
    /// socket or device (what was opened is checked, so a name swapped meanwhile is never
    /// read through).
    pub fn open_regular_file(&self, name: &OsStr) -> Result<Option<std::fs::File>> {
        let path = self.path.join(name);
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT | Errno::ELOOP) => return Ok(None),
            Err(e) => return Err(SafeFsError::io("open", &path, e)),
        };
        let st = fstat(&fd).map_err(|e| SafeFsError::io("inspect", &path, e))?;
        if Kind::of(&st) != Kind::File {
            return Ok(None);
        }
        Ok(Some(std::fs::File::from(fd)))
    }

    /// Create the file `rel` (parents as needed) for writing, with `mode`: it must not
    /// exist (`O_EXCL`), so the file is one this process made.
    pub fn create_file(&self, rel: &RelPath, mode: u32) -> Result<std::fs::File> {
        let parent = self.parent_of(rel, true)?.expect("created");
        let path = self.display_path(rel);
        parent
            .create_file_at(rel.file_name(), mode)
            .map_err(|e| SafeFsError::io("create", &path, e))
    }

    fn create_file_at(&self, name: &OsStr, mode: u32) -> nix::Result<std::fs::File> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = Mode::from_bits_truncate(mode);
        let fd = openat(&self.fd, name, flags, mode)?;
        // The umask may have taken bits away: set exactly what was asked.
        fchmod(&fd, mode)?;
        Ok(std::fs::File::from(fd))
    }

    /// Make the symlink `rel` -> `target` (parents as needed); an existing entry is an error.
    pub fn symlink(&self, target: &Path, rel: &RelPath) -> Result<()> {
        let parent = self.parent_of(rel, true)?.expect("created");
        symlinkat(target, &parent.fd, rel.file_name())
            .map_err(|e| SafeFsError::io("create the link", &self.display_path(rel), e))
    }

    /// Rename `from` to `to` (parents of `to` created as needed), replacing what `to` names
    /// as `rename(2)` does: a file or link is replaced, never followed.
    pub fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        let err = |e| SafeFsError::io("rename", &self.display_path(from), e);
        let src = self
            .parent_of(from, false)?
            .ok_or_else(|| err(Errno::ENOENT))?;
        let dst = self.parent_of(to, true)?.expect("created");
        renameat(&src.fd, from.file_name(), &dst.fd, to.file_name()).map_err(err)
    }

    /// Remove `rel`: a file or symlink is unlinked (a link's target is never touched), a
    /// directory is removed with everything in it under the rules of [`remove`](self::remove).
    /// Whether something was there.
    pub fn remove(&self, rel: &RelPath) -> Result<bool> {
        match self.parent_of(rel, false)? {
            Some(parent) => remove::remove_entry(&parent.fd, rel.file_name(), &parent.path),
            None => Ok(false),
        }
    }

    /// Make something (with `make`) under a fresh name `.NAME.tstore-PID-N.SUFFIX` in this
    /// directory: a name taken (even by a planted entry) is skipped, never reused.
    pub(crate) fn fresh_name<T>(
        &self,
        name: &OsStr,
        suffix: &str,
        mut make: impl FnMut(&OsStr) -> nix::Result<T>,
    ) -> nix::Result<(OsString, T)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut last = Errno::EEXIST;
        for _ in 0..64 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let mut temp = OsString::from(".");
            temp.push(name);
            temp.push(format!(".tstore-{}-{n}.{suffix}", std::process::id()));
            match make(&temp) {
                Ok(v) => return Ok((temp, v)),
                Err(Errno::EEXIST) => last = Errno::EEXIST,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Make the symlink `name` -> `target` under a fresh temporary name in this directory.
    pub(crate) fn fresh_symlink(&self, name: &OsStr, target: &Path) -> Result<OsString> {
        self.fresh_name(name, "tmp", |t| symlinkat(target, &self.fd, t))
            .map(|(t, ())| t)
            .map_err(|e| SafeFsError::io("create a link in", &self.path, e))
    }

    /// Create the symlink `name -> target` where nothing is: `Ok(false)` when something
    /// already has that name (left as it is). Creating a name is atomic, so a new link needs
    /// no temporary name.
    pub(crate) fn symlink_if_absent(&self, name: &OsStr, target: &Path) -> Result<bool> {
        match symlinkat(target, &self.fd, name) {
            Ok(()) => Ok(true),
            Err(Errno::EEXIST) => Ok(false),
            Err(e) => Err(SafeFsError::io("create a link in", &self.path, e)),
        }
    }

    /// Rename the entry `name` of this directory to a fresh name, returned.
    pub(crate) fn rename_aside(&self, name: &OsStr) -> Result<OsString> {
        self.rename_to_fresh(name, "old")
    }

    /// Rename the entry `name` of this directory to a fresh name ending `.kept`, returned:
    /// what tstore did not create and will not delete, moved out of a slot it fills.
    pub(crate) fn keep_aside(&self, name: &OsStr) -> Result<OsString> {
        self.rename_to_fresh(name, "kept")
    }

    fn rename_to_fresh(&self, name: &OsStr, suffix: &str) -> Result<OsString> {
        self.fresh_name(name, suffix, |t| {
            // A name already taken is skipped. (Only directories are moved aside; a racer
            // planting an empty directory under the fresh name in between would have it
            // replaced, inside this same directory: nothing outside is at stake.)
            match fstatat(&self.fd, t, AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(_) => Err(Errno::EEXIST),
                Err(Errno::ENOENT) => renameat(&self.fd, name, &self.fd, t),
                Err(e) => Err(e),
            }
        })
        .map(|(t, ())| t)
        .map_err(|e| SafeFsError::io("move aside", &self.path.join(name), e))
    }
}
