//! The mount path that every link into the store points into.
//!
//! It is one of two things, serving the same paths (`providers/HOST/NS/TYPE/VERSION/OS_ARCH`):
//!
//! - **FUSE**: a directory with the tstore FUSE filesystem mounted on it
//!   ([`prepare_mount_dir`] turns the fallback symlink, if any, into that directory);
//! - **fallback** (no FUSE, or `--no-fuse`): a symlink to the store's materialized views
//!   (`$TSTORE_HOME/views`, [`ensure_views_link`]).
//!
//! Links in working directories name the mount path, never the views, so switching between
//! the two changes nothing in any working directory.

use std::io;
use std::path::{Path, PathBuf};

/// Why the mount path could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum MountPathError {
    /// Something that is not ours occupies the mount path.
    #[error("the tstore mount path {mount} is in use by something else ({what})")]
    Occupied {
        /// The mount path.
        mount: PathBuf,
        /// What was found there.
        what: String,
    },
    /// A filesystem operation failed.
    #[error("cannot prepare the tstore mount path {mount}")]
    Io {
        /// The mount path.
        mount: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// Make sure `mount` resolves to `views`: create the symlink if nothing is there.
pub fn ensure_views_link(mount: &Path, views: &Path) -> Result<(), MountPathError> {
    let io_err = |source| MountPathError::Io {
        mount: mount.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(mount) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let current = std::fs::read_link(mount).map_err(io_err)?;
            if current == views {
                return Ok(());
            }
            Err(MountPathError::Occupied {
                mount: mount.to_owned(),
                what: format!("a symlink to {}", current.display()),
            })
        }
        Ok(meta) if meta.is_dir() && is_empty_dir(mount).map_err(io_err)? => {
            // An empty directory (e.g. made for a future FUSE mount) is replaced.
            fs_err::remove_dir(mount).map_err(io_err)?;
            symlink(mount, views).map_err(io_err)
        }
        Ok(_) => Err(MountPathError::Occupied {
            mount: mount.to_owned(),
            what: "a file or non-empty directory".into(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => symlink(mount, views).map_err(io_err),
        Err(e) => Err(io_err(e)),
    }
}

/// Make `mount` an empty directory for a FUSE mount: create it, or replace our fallback
/// symlink (to `views`) by it. The caller has made sure nothing is mounted there.
pub fn prepare_mount_dir(mount: &Path, views: &Path) -> Result<(), MountPathError> {
    let io_err = |source| MountPathError::Io {
        mount: mount.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(mount) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let current = std::fs::read_link(mount).map_err(io_err)?;
            if current != views {
                return Err(MountPathError::Occupied {
                    mount: mount.to_owned(),
                    what: format!("a symlink to {}", current.display()),
                });
            }
            // rename(2) cannot put a directory over a symlink: remove, then create. Links
            // dangle only until the mount is up, a moment later.
            fs_err::remove_file(mount).map_err(io_err)?;
            match fs_err::create_dir(mount) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(io_err(e)),
                _ => Ok(()),
            }
        }
        Ok(meta) if meta.is_dir() && is_empty_dir(mount).map_err(io_err)? => Ok(()),
        Ok(_) => Err(MountPathError::Occupied {
            mount: mount.to_owned(),
            what: "a file or non-empty directory".into(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs_err::create_dir_all(mount).map_err(io_err)
        }
        Err(e) => Err(io_err(e)),
    }
}

fn is_empty_dir(dir: &Path) -> io::Result<bool> {
    Ok(std::fs::read_dir(dir)?.next().is_none())
}

fn symlink(mount: &Path, views: &Path) -> io::Result<()> {
    if let Some(parent) = mount.parent() {
        fs_err::create_dir_all(parent)?;
    }
    match std::os::unix::fs::symlink(views, mount) {
        // Another init created it at the same moment: fine if it is the same link.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::read_link(mount)? == views {
                Ok(())
            } else {
                Err(e)
            }
        }
        other => other,
    }
}
