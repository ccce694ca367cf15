//! Links from a working directory into the store's view.
//!
//! Every link is an absolute symlink whose target is a path under `TSTORE_MOUNT`
//! (default `~/.tofu-store`), never a path inside `TSTORE_HOME`: the mount path is the
//! one string that stays valid whether the store is served by FUSE or by on-disk views,
//! so switching between the two never rewrites a working directory.
//!
//! Links are replaced atomically (a new symlink under a temporary name, renamed over
//! the old entry), so a concurrent reader sees the old or the new link, never nothing.

use std::io;
use std::path::{Path, PathBuf};

use super::guard::{check_parents, UnsafePath};

/// Why a link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The link would be made through a symlinked directory, or outside the working
    /// directory.
    #[error(transparent)]
    Unsafe(#[from] UnsafePath),
    /// A filesystem operation on the link path failed.
    #[error("cannot link {link} -> {target}")]
    Io {
        /// The link being written.
        link: PathBuf,
        /// What it should point at.
        target: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// What [`ensure_symlink`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkOutcome {
    /// The link already pointed at the target.
    Unchanged,
    /// Nothing was there; the link was created.
    Created,
    /// Something else was there (another link, a copied directory); it was replaced.
    Replaced,
}

/// Make `link` (below the working directory `root`) a symlink to `target`, replacing
/// whatever is there: a link is replaced as a link, a directory tstore left is removed. No
/// directory between `root` and `link` may be a symlink.
pub fn ensure_symlink(root: &Path, link: &Path, target: &Path) -> Result<LinkOutcome, LinkError> {
    check_parents(root, link)?;
    let err = |source| LinkError::Io {
        link: link.to_owned(),
        target: target.to_owned(),
        source,
    };
    let existing = std::fs::symlink_metadata(link);
    if let Ok(meta) = &existing {
        if meta.file_type().is_symlink() && std::fs::read_link(link).map_err(err)? == target {
            return Ok(LinkOutcome::Unchanged);
        }
    }
    let parent = link.parent().expect("link paths have a parent");
    fs_err::create_dir_all(parent).map_err(err)?;
    let name = link.file_name().expect("link paths have a file name");
    let temp = parent.join(format!(
        ".{}.tstore-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&temp);
    std::os::unix::fs::symlink(target, &temp).map_err(err)?;
    let outcome = match existing {
        Err(e) if e.kind() == io::ErrorKind::NotFound => LinkOutcome::Created,
        Err(e) => return Err(err(e)),
        Ok(meta) => {
            if meta.is_dir() {
                // A real directory (e.g. left by `terraform init` from a packed
                // mirror) cannot be renamed over: move it aside first, then delete.
                let aside = parent.join(format!(
                    ".{}.tstore-{}.old",
                    name.to_string_lossy(),
                    std::process::id()
                ));
                fs_err::rename(link, &aside).map_err(err)?;
                make_writable_and_remove(&aside).map_err(err)?;
            }
            LinkOutcome::Replaced
        }
    };
    fs_err::rename(&temp, link).map_err(err)?;
    Ok(outcome)
}

/// Remove a directory tree even when parts of it are read-only.
fn make_writable_and_remove(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in walkdir::WalkDir::new(dir).contents_first(false) {
        let entry = entry.map_err(io::Error::other)?;
        if entry.file_type().is_dir() {
            let mut perms = entry.metadata().map_err(io::Error::other)?.permissions();
            perms.set_mode(perms.mode() | 0o700);
            std::fs::set_permissions(entry.path(), perms)?;
        }
    }
    std::fs::remove_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_keeps_and_replaces_links() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("a/b/link");
        let t1 = tmp.path().join("t1");
        let t2 = tmp.path().join("t2");
        assert_eq!(
            ensure_symlink(tmp.path(), &link, &t1).unwrap(),
            LinkOutcome::Created
        );
        assert_eq!(
            ensure_symlink(tmp.path(), &link, &t1).unwrap(),
            LinkOutcome::Unchanged
        );
        assert_eq!(
            ensure_symlink(tmp.path(), &link, &t2).unwrap(),
            LinkOutcome::Replaced
        );
        assert_eq!(std::fs::read_link(&link).unwrap(), t2);
    }

    #[test]
    fn replaces_a_real_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("linux_amd64");
        std::fs::create_dir_all(link.join("sub")).unwrap();
        std::fs::write(link.join("sub/file"), "x").unwrap();
        let target = tmp.path().join("target");
        assert_eq!(
            ensure_symlink(tmp.path(), &link, &target).unwrap(),
            LinkOutcome::Replaced
        );
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp entries left behind");
    }
}
