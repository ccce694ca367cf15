//! Reading a directory to ingest (a filesystem mirror's package, a module's files) through
//! descriptors, never through a path that could be swapped.
//!
//! Whoever owns the directory may change it while it is read: replace a file by a link to
//! the importing user's private key, or a subdirectory by a link to `/home`. So the root
//! is opened once (`O_DIRECTORY`), and every entry below it is reached from its parent's
//! descriptor with `openat(O_NOFOLLOW)`: a file is read from the descriptor its open gave,
//! after `fstat` of that descriptor said it is a regular file; a directory is entered the
//! same way; a symlink is read with `readlinkat` and recorded, never followed. An entry
//! swapped for a link between listing and opening fails its open (`ELOOP`), and the ingest
//! fails instead of reading what the link names.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, Mode, SFlag};

/// One entry met by [`walk`], relative to the root (`/`-separated).
pub(crate) enum Found {
    /// A regular file, open for reading, with its mode and size from `fstat` of the open
    /// descriptor.
    File {
        rel: String,
        file: std::fs::File,
        mode: u32,
        size: u64,
        /// Bytes allocated on disk (`st_blocks` × 512): far fewer than `size` for a sparse
        /// file.
        allocated: u64,
    },
    /// A symbolic link and its target as written.
    Symlink {
        rel: String,
        target: std::ffi::OsString,
    },
    /// A name that is not UTF-8 (its lossy form).
    InvalidName { rel: String },
    /// A device, FIFO or socket, with its mode.
    Special { rel: String, mode: u32 },
}

/// Walk the directory `root` (opened following links: the caller resolved it) depth first,
/// entries sorted by name, calling `visit` for everything but directories; `skip(name)`
/// leaves an entry (and what is under it) out.
pub(crate) fn walk(
    root: &Path,
    skip: &dyn Fn(&OsStr) -> bool,
    visit: &mut dyn FnMut(Found) -> crate::Result<()>,
) -> crate::Result<()> {
    let io = |path: &Path, e: nix::Error| crate::StoreError::io(path, std::io::Error::from(e));
    let fd = nix::fcntl::open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(root, e))?;
    walk_dir(root, fd, "", skip, visit)
}

fn walk_dir(
    root: &Path,
    fd: OwnedFd,
    prefix: &str,
    skip: &dyn Fn(&OsStr) -> bool,
    visit: &mut dyn FnMut(Found) -> crate::Result<()>,
) -> crate::Result<()> {
    let shown = |rel: &str| root.join(rel);
    let io = |rel: &str, e: nix::Error| crate::StoreError::io(shown(rel), std::io::Error::from(e));
    let listing = openat(
        &fd,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(prefix, e))?;
    let mut dir = nix::dir::Dir::from_fd(listing).map_err(|e| io(prefix, e))?;
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    for entry in dir.iter() {
        let entry = entry.map_err(|e| io(prefix, e))?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name != "." && name != ".." && !skip(name) {
            names.push(name.to_owned());
        }
    }
    names.sort();
    for name in names {
        let rel_lossy = format!("{prefix}{}", name.to_string_lossy());
        let Some(text) = name.to_str() else {
            visit(Found::InvalidName { rel: rel_lossy })?;
            continue;
        };
        let rel = format!("{prefix}{text}");
        let st = fstatat(&fd, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| io(&rel, e))?;
        let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        if kind == SFlag::S_IFDIR {
            let sub = openat(
                &fd,
                name.as_os_str(),
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io(&rel, e))?;
            walk_dir(root, sub, &format!("{rel}/"), skip, visit)?;
        } else if kind == SFlag::S_IFREG {
            let opened = openat(
                &fd,
                name.as_os_str(),
                OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io(&rel, e))?;
            // What was opened, not what was listed, must be a regular file.
            let st = fstat(opened.as_fd()).map_err(|e| io(&rel, e))?;
            let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
            if kind != SFlag::S_IFREG {
                visit(Found::Special {
                    rel,
                    mode: st.st_mode,
                })?;
                continue;
            }
            visit(Found::File {
                rel,
                file: std::fs::File::from(opened),
                mode: st.st_mode,
                size: st.st_size as u64,
                allocated: (st.st_blocks as u64).saturating_mul(512),
            })?;
        } else if kind == SFlag::S_IFLNK {
            let target = nix::fcntl::readlinkat(&fd, name.as_os_str()).map_err(|e| io(&rel, e))?;
            visit(Found::Symlink { rel, target })?;
        } else {
            visit(Found::Special {
                rel,
                mode: st.st_mode,
            })?;
        }
    }
    Ok(())
}
