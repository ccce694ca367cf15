//! Replacing files below a [`SafeDir`] atomically: a new file under a fresh temporary name,
//! renamed over the old one, never written in place; synced as far as its [`Durability`]
//! asks.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use nix::fcntl::{renameat, OFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

use super::{RelPath, Result, SafeDir, SafeFsError};

/// What a replaced file must survive ([`SafeDir::write_atomic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// A killed process: the temporary file is renamed over the old one, nothing is
    /// synced. For the working directory's own state under `.terraform` (`modules.json`,
    /// tstore's install record, `plugin_path`), which tofu and terraform write without
    /// syncing either and the next init writes again; after a power loss it may be empty,
    /// which the next init reads as no state and repairs.
    Process,
    /// A power loss too: the file is fsynced before the rename and its directory after.
    /// For files the user keeps and commits (lock files).
    PowerLoss,
}

impl SafeDir {
    /// Replace the file `rel` with `contents` atomically: a new file (0644) under a fresh
    /// temporary name beside it, `renameat` over `rel` (a symlink there is replaced, not
    /// written through). A killed process leaves the old or the new content, and at most a
    /// temporary file; with [`Durability::PowerLoss`] a power loss does too (the file is
    /// fsynced before the rename, its directory after).
    pub fn write_atomic(
        &self,
        rel: &RelPath,
        contents: &[u8],
        durability: Durability,
    ) -> Result<()> {
        self.write_atomic_all(&[(rel, contents)], durability)
    }

    /// [`SafeDir::write_atomic`] for several files: every new file written (and, durably,
    /// synced) before the first rename, and, durably, each directory synced once after the
    /// last (one directory sync for files that share it). Each file holds its old or its new
    /// content after a crash its durability covers; a failure before the renames leaves
    /// every old one in place.
    pub fn write_atomic_all(
        &self,
        files: &[(&RelPath, &[u8])],
        durability: Durability,
    ) -> Result<()> {
        let sync = durability == Durability::PowerLoss;
        struct Staged {
            parent: SafeDir,
            temp: OsString,
            path: PathBuf,
        }
        let mut staged: Vec<Staged> = Vec::with_capacity(files.len());
        let unstage = |staged: &[Staged]| {
            for s in staged {
                let _ = unlinkat(&s.parent.fd, s.temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
            }
        };
        for (rel, contents) in files {
            let parent = match self.parent_of(rel, true) {
                Ok(parent) => parent.expect("created"),
                Err(e) => {
                    unstage(&staged);
                    return Err(e);
                }
            };
            let path = self.display_path(rel);
            let (temp, mut file) = match parent
                .fresh_name(rel.file_name(), "tmp", |t| parent.create_file_at(t, 0o644))
            {
                Ok(made) => made,
                Err(e) => {
                    unstage(&staged);
                    return Err(SafeFsError::io("create a temporary file for", &path, e));
                }
            };
            let written =
                file.write_all(contents)
                    .and_then(|()| if sync { file.sync_all() } else { Ok(()) });
            staged.push(Staged { parent, temp, path });
            if let Err(source) = written {
                let path = staged.last().expect("just pushed").path.clone();
                unstage(&staged);
                return Err(SafeFsError::Io {
                    op: "write",
                    path,
                    source,
                });
            }
        }
        for (i, (rel, _)) in files.iter().enumerate() {
            let s = &staged[i];
            if let Err(e) = renameat(
                &s.parent.fd,
                s.temp.as_os_str(),
                &s.parent.fd,
                rel.file_name(),
            ) {
                unstage(&staged[i..]);
                return Err(SafeFsError::io("replace", &s.path, e));
            }
        }
        if !sync {
            return Ok(());
        }
        let mut synced: Vec<&Path> = Vec::new();
        for s in &staged {
            if synced.contains(&s.parent.path.as_path()) {
                continue;
            }
            let dir = s.parent.reopen(OFlag::O_RDONLY)?;
            nix::unistd::fsync(&dir).map_err(|e| SafeFsError::io("sync", &s.parent.path, e))?;
            synced.push(&s.parent.path);
        }
        Ok(())
    }
}
