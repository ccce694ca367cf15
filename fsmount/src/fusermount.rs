//! `fusermount3`, the setuid helper that mounts and unmounts FUSE filesystems for an
//! unprivileged user: unmounting with it, and whether FUSE can be used at all.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use tstore_process::Command;

/// Unmount the FUSE mount at `path` with `fusermount3 -u` (`-z`, lazily, if `lazy`: for a
/// stale mount or one still in use).
pub fn unmount(path: &Path, lazy: bool) -> io::Result<()> {
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd.arg("--").arg(path).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "fusermount3 -u{} {} failed: {}",
            if lazy { " -z" } else { "" },
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Why FUSE cannot be used on this machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// `/dev/fuse` is missing or cannot be opened.
    #[error("/dev/fuse is not available ({0})")]
    NoDevice(String),
    /// `fusermount3` is not on `PATH`.
    #[error("fusermount3 is not installed (install the fuse3 package)")]
    NoFusermount,
}

/// Whether FUSE mounts can be made here: `/dev/fuse` opens and `fusermount3` is in one of
/// the directories of `search_path` (the value of `PATH`; `None` when it is unset).
pub fn availability(search_path: Option<&OsStr>) -> Result<(), Unavailable> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map_err(|e| Unavailable::NoDevice(e.to_string()))?;
    let found = search_path.is_some_and(|paths| {
        tstore_process::absolute_dirs(paths).any(|dir| dir.join("fusermount3").is_file())
    });
    if found {
        Ok(())
    } else {
        Err(Unavailable::NoFusermount)
    }
}
