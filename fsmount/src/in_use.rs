//! Which files under a mount some process has open or mapped right now.
//!
//! gc asks before it sweeps: a provider binary running from the mount is mapped, and the
//! kernel may read its pages again at any time (after evicting them under memory
//! pressure). Once its package's rows and blob files are gone, the daemon can no longer
//! serve those reads, the read answers EIO and the provider dies of SIGBUS. So a package one
//! of whose files is open or mapped is not swept while it is.
//!
//! Read from `/proc/PID/maps` (mapped files) and `/proc/PID/fd/*` (open descriptors) of
//! every process this user may inspect; processes of other users are invisible to a
//! non-root gc, but they cannot read the owner-only mount either.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The paths under `root` (as the kernel names them: `root` itself resolved) that a process
/// has open or mapped. Best effort: a process that exits meanwhile is skipped.
pub fn files_in_use_under(root: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let pid = entry.path();
        if let Ok(maps) = std::fs::read_to_string(pid.join("maps")) {
            for line in maps.lines() {
                // `ADDR PERMS OFFSET DEV INODE   PATH`: the path is the sixth field and may
                // hold spaces; " (deleted)" marks a file unlinked since.
                let Some(path) = line.splitn(6, ' ').nth(5).map(str::trim_start) else {
                    continue;
                };
                let path = Path::new(path);
                if path.starts_with(root) {
                    found.insert(path.to_owned());
                }
            }
        }
        if let Ok(fds) = std::fs::read_dir(pid.join("fd")) {
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    if target.starts_with(root) {
                        found.insert(target);
                    }
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_an_open_file_and_a_mapped_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let open = root.join("open.bin");
        std::fs::write(&open, b"x").unwrap();
        let _held = std::fs::File::open(&open).unwrap();
        let closed = root.join("closed.bin");
        std::fs::write(&closed, b"x").unwrap();
        let found = files_in_use_under(&root);
        assert!(found.contains(&open), "{found:?}");
        assert!(!found.contains(&closed), "{found:?}");
        assert!(files_in_use_under(&root.join("elsewhere")).is_empty());
    }
}
