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

/// Whether FUSE mounts can be made here: `/dev/fuse` opens and `fusermount3` is found in
/// `search_path` (the value of `PATH`; `None` when it is unset) as the process runner finds
/// the program it starts (`tstore_process::find_on_path`: absolute directories only, and
/// for root none another user can change).
pub fn availability(search_path: Option<&OsStr>) -> Result<(), Unavailable> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map_err(|e| Unavailable::NoDevice(e.to_string()))?;
    let found = search_path
        .is_some_and(|paths| tstore_process::find_on_path("fusermount3", paths).is_some());
    if found {
        Ok(())
    } else {
        Err(Unavailable::NoFusermount)
    }
}
