//! Removing one entry of a directory held open: the entry itself, never what it points at.
//!
//! - A file, symlink, fifo or socket is unlinked: a symlink's target and a hard link's
//!   other names are untouched.
//! - A directory is removed depth first through descriptors (`openat(O_NOFOLLOW)`,
//!   `unlinkat`), so a symlink inside is unlinked as a link, and a directory swapped for a
//!   symlink while tstore works is never entered.
//! - A directory on another filesystem than the directory holding the entry (a mount point
//!   anywhere in the tree) is refused: tstore never removes across filesystems.
//! - Any depth, with at most [`MAX_DEPTH`] descriptors open: a directory that deep is
//!   moved up (renamed, same filesystem) beside the entry being removed under a fresh
//!   `.tstore-deep-…` name and removed from there in turn. A tree a module package brought
//!   in, however deep, can always be removed, so a new release can always replace it.
//! - A directory tstore cannot list or change (a private copy a module made read-only) gets
//!   owner `rwx` through the descriptor tstore opened, never by path.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fchmod, fstat, fstatat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

use super::{Kind, Result, SafeFsError, WALK};

/// How many directory levels one removal pass descends, one open descriptor each; deeper
/// directories are moved up and removed by a later pass.
pub(super) const MAX_DEPTH: usize = 256;

/// Remove the entry `name` of the directory `dir` (shown as `dir_path`); whether it existed.
pub(super) fn remove_entry(dir: &OwnedFd, name: &OsStr, dir_path: &Path) -> Result<bool> {
    let dev = fstat(dir)
        .map_err(|e| SafeFsError::io("inspect", dir_path, e))?
        .st_dev;
    let mut pass = Pass {
        top: dir.as_fd(),
        dev,
        hoisted: Vec::new(),
    };
    let existed = remove_at(&mut pass, dir.as_fd(), name, &dir_path.join(name), 0)?;
    while let Some(deep) = pass.hoisted.pop() {
        let path = dir_path.join(&deep);
        remove_at(&mut pass, dir.as_fd(), &deep, &path, 0)?;
    }
    Ok(existed)
}

/// One removal: the directory it started in, its filesystem, and the directories moved up
/// beside the entry because they lay deeper than one pass descends.
struct Pass<'a> {
    top: BorrowedFd<'a>,
    dev: u64,
    hoisted: Vec<OsString>,
}

impl Pass<'_> {
    /// Move the directory `name` of `dir` beside the entry being removed, under a fresh
    /// name (never replacing anything there).
    fn hoist(&mut self, dir: BorrowedFd<'_>, name: &OsStr, path: &Path) -> Result<()> {
        use nix::fcntl::{renameat2, RenameFlags};
        for n in 0u32.. {
            let fresh = OsString::from(format!(
                ".tstore-deep-{}-{}-{n}",
                std::process::id(),
                self.hoisted.len()
            ));
            match renameat2(
                dir,
                name,
                self.top,
                fresh.as_os_str(),
                RenameFlags::RENAME_NOREPLACE,
            ) {
                Ok(()) => {
                    self.hoisted.push(fresh);
                    return Ok(());
                }
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(SafeFsError::io("move up", path, e)),
            }
        }
        unreachable!("a fresh name is found")
    }
}

fn remove_at(
    pass: &mut Pass<'_>,
    dir: BorrowedFd<'_>,
    name: &OsStr,
    path: &Path,
    depth: usize,
) -> Result<bool> {
    let dev = pass.dev;
    let st = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(SafeFsError::io("inspect", path, e)),
    };
    if Kind::of(&st) != Kind::Dir {
        return match unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => Ok(true),
            Err(e) => Err(SafeFsError::io("remove", path, e)),
        };
    }
    if st.st_dev != dev {
        return Err(SafeFsError::OtherFilesystem {
            path: path.to_owned(),
        });
    }
    if depth >= MAX_DEPTH {
        pass.hoist(dir, name, path)?;
        return Ok(true);
    }
    let fd = open_for_removal(dir, name, path)?;
    // What was opened is what is emptied: check it again (it may have been swapped).
    let st = fstat(&fd).map_err(|e| SafeFsError::io("inspect", path, e))?;
    if st.st_dev != dev {
        return Err(SafeFsError::OtherFilesystem {
            path: path.to_owned(),
        });
    }
    let mode = st.st_mode & 0o7777;
    if mode & 0o700 != 0o700 {
        fchmod(&fd, Mode::from_bits_truncate(mode | 0o700))
            .map_err(|e| SafeFsError::io("make writable", path, e))?;
    }
    let mut listing = nix::dir::Dir::from_fd(fd).map_err(|e| SafeFsError::io("list", path, e))?;
    let mut names: Vec<OsString> = Vec::new();
    for entry in listing.iter() {
        let entry = entry.map_err(|e| SafeFsError::io("list", path, e))?;
        let child = OsStr::from_bytes(entry.file_name().to_bytes());
        if child != "." && child != ".." {
            names.push(child.to_owned());
        }
    }
    for child in names {
        remove_at(pass, listing.as_fd(), &child, &path.join(&child), depth + 1)?;
    }
    drop(listing);
    match unlinkat(dir, name, UnlinkatFlags::RemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(true),
        Err(e) => Err(SafeFsError::io("remove", path, e)),
    }
}

/// Open the directory `name` of `dir` readable, without following a symlink. A directory
/// this process may not read or search (its owner took the bits away) first gets owner
/// `rwx`: through an `O_PATH` descriptor of that very directory, since `chmod` of
/// `/proc/self/fd/N` acts on the opened inode, not on a name that could be swapped.
fn open_for_removal(dir: BorrowedFd<'_>, name: &OsStr, path: &Path) -> Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(Errno::EACCES) => {
            let handle = openat(dir, name, WALK, Mode::empty())
                .map_err(|e| SafeFsError::io("open", path, e))?;
            let mode = fstat(&handle)
                .map_err(|e| SafeFsError::io("inspect", path, e))?
                .st_mode
                & 0o7777;
            let by_fd = format!("/proc/self/fd/{}", handle.as_raw_fd());
            std::fs::set_permissions(&by_fd, std::fs::Permissions::from_mode(mode | 0o700))
                .map_err(|source| SafeFsError::Io {
                    op: "make writable",
                    path: path.to_owned(),
                    source,
                })?;
            openat(dir, name, flags, Mode::empty()).map_err(|e| SafeFsError::io("open", path, e))
        }
        Err(e) => Err(SafeFsError::io("open", path, e)),
    }
}
