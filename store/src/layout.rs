//! Where things live under the store root: the paths of the on-disk layout drawn in the
//! crate docs (`lib.rs`), and how blob files are named.
//!
//! The layout is versioned in directory names (`blobs-v1`), so a future format can live next to
//! this one and be migrated or pruned.

use std::path::{Path, PathBuf};

/// Name of the blob directory (versioned).
pub(crate) const BLOBS_DIR: &str = "blobs-v1";

/// The paths of one store.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) root: PathBuf,
    pub(crate) blobs: PathBuf,
    pub(crate) tmp: PathBuf,
    /// Blob files `store verify --repair` took out of `blobs-v1/` (kept for inspection).
    pub(crate) quarantine: PathBuf,
    pub(crate) views: PathBuf,
    /// `git-cache/`: one bare repository per remote git URL (the module installer's; gc
    /// drops the ones unused for its grace period).
    pub(crate) git_cache: PathBuf,
    pub(crate) index: PathBuf,
    pub(crate) lock: PathBuf,
}

/// The directories of the layout, relative to the root: each is a real directory of the
/// store's owner, never a link ([`Layout::check_entries`]).
pub(crate) const LAYOUT_DIRS: &[&str] = &[
    BLOBS_DIR,
    "tmp",
    "quarantine",
    "views",
    "views/providers",
    "views/modules",
    "git-cache",
    "roots.lock.d",
];

/// The files of the layout (the index, locks, the mount daemon's files), relative to the
/// root: each is a regular file of the store's owner, never a link.
pub(crate) const LAYOUT_FILES: &[&str] = &[
    "index.sqlite",
    "index.sqlite-wal",
    "index.sqlite-shm",
    "index.sqlite-journal",
    ".index-open.lock",
    ".lock",
    ".gc-intent.lock",
    ".trust.lock",
    "mount.pid",
    "mount.log",
    ".mount.lock",
];

impl Layout {
    pub(crate) fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            blobs: root.join(BLOBS_DIR),
            tmp: root.join("tmp"),
            quarantine: root.join("quarantine"),
            views: root.join("views"),
            git_cache: root.join("git-cache"),
            index: root.join("index.sqlite"),
            lock: root.join(".lock"),
        }
    }

    /// Refuse a store whose layout entries are not what tstore makes there: every directory
    /// and file of [`LAYOUT_DIRS`] and [`LAYOUT_FILES`] that exists must be a real directory
    /// (or regular file) owned by the store's owner, never a link. The root is private to
    /// its owner (checked before), so nobody else can swap an entry after this check: every
    /// later path under the root reaches what was checked here.
    pub(crate) fn check_entries(&self, owner: u32) -> crate::Result<()> {
        let entries = LAYOUT_DIRS
            .iter()
            .map(|n| (n, true))
            .chain(LAYOUT_FILES.iter().map(|n| (n, false)));
        for (name, dir) in entries {
            check_entry(&self.root.join(name), dir, owner)?;
        }
        Ok(())
    }

    /// Every package view directory on disk (`views/providers/H/N/T/V/OS_ARCH`,
    /// `views/modules/ID`), sorted by path.
    pub(crate) fn view_dirs(&self) -> crate::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for (top, depth) in [("providers", 5), ("modules", 1)] {
            let base = self.views.join(top);
            if !base.is_dir() {
                continue;
            }
            for entry in walkdir::WalkDir::new(&base)
                .min_depth(depth)
                .max_depth(depth)
                .sort_by_file_name()
            {
                let entry = entry.map_err(|e| crate::StoreError::io(&base, e.into()))?;
                out.push(entry.into_path());
            }
        }
        Ok(out)
    }
}

/// Check that `path`, if it exists, is a real directory (`dir`) or regular file owned by
/// `owner`: not a link, not someone else's.
pub(crate) fn check_entry(path: &Path, dir: bool, owner: u32) -> crate::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(crate::StoreError::io(path, e)),
    };
    let ft = meta.file_type();
    let what = if ft.is_symlink() {
        Some("a symbolic link".to_owned())
    } else if dir && !ft.is_dir() {
        Some("not a directory".to_owned())
    } else if !dir && !ft.is_file() {
        Some(
            if ft.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            }
            .to_owned(),
        )
    } else if meta.uid() != owner {
        Some(format!("owned by user id {}", meta.uid()))
    } else {
        None
    };
    match what {
        None => Ok(()),
        Some(what) => Err(crate::StoreError::LayoutEntry {
            path: path.to_owned(),
            what,
            expected: if dir { "directory" } else { "regular file" },
        }),
    }
}

/// Remove `path` and everything under it without following a link anywhere: a link is
/// removed as a link (its target untouched), a directory is made writable (it may be a
/// read-only view) only after `lstat` says it is a directory, then emptied and removed.
/// Missing is success. Every recursive removal in the store goes through here.
pub(crate) fn remove_tree(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_dir() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
    }
    if meta.permissions().mode() & 0o700 != 0o700 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    for entry in std::fs::read_dir(path)? {
        remove_tree(&entry?.path())?;
    }
    match std::fs::remove_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Create `dir`, a directory under the store's `root`, and its missing parents (0700),
/// component by component from the root without following a link: an existing component
/// that is a link or not a directory (a restored cache's `blobs-v1/ab -> ~/.ssh`) is refused
/// ([`crate::StoreError::LayoutEntry`]), so nothing is ever written through it.
pub(crate) fn create_store_dir_all(root: &Path, dir: &Path) -> crate::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    let Ok(rel) = dir.strip_prefix(root) else {
        return create_private_dir_all(dir);
    };
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::DirBuilder::new().mode(0o700).create(&at) {
                    Ok(()) => continue,
                    // Made meanwhile by another process: judged below like any other.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(crate::StoreError::io(&at, e)),
                }
            }
            Err(e) => return Err(crate::StoreError::io(&at, e)),
        }
        let meta = std::fs::symlink_metadata(&at).map_err(|e| crate::StoreError::io(&at, e))?;
        if !meta.is_dir() {
            return Err(crate::StoreError::LayoutEntry {
                path: at,
                what: if meta.file_type().is_symlink() {
                    "a symbolic link".into()
                } else {
                    "not a directory".into()
                },
                expected: "directory",
            });
        }
    }
    Ok(())
}

/// Create `dir` and its missing parents with mode 0700, whatever the umask: every directory
/// of the store is private to its owner.
pub(crate) fn create_private_dir_all(dir: &Path) -> crate::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| crate::StoreError::io(dir, e))
}

/// Remove the file (or link, as itself) at `path` if there is one; the bytes it held (0:
/// there was none).
pub(crate) fn remove_file_if_exists(path: &Path) -> crate::Result<u64> {
    match fs_err::symlink_metadata(path) {
        Ok(m) => {
            fs_err::remove_file(path).map_err(|e| crate::StoreError::io(path, e))?;
            Ok(m.len())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(crate::StoreError::io(path, e)),
    }
}

/// The bytes of the regular files under `dir`, links not followed: what the directory takes
/// on disk without reflinks (a private copy of a package, a whole store).
pub fn regular_file_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_tree_removes_a_link_as_a_link_and_opens_read_only_directories() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o555)).unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("ro/sub")).unwrap();
        std::fs::write(tree.join("ro/sub/f"), "y").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("ro/link")).unwrap();
        std::fs::set_permissions(tree.join("ro/sub"), std::fs::Permissions::from_mode(0o555))
            .unwrap();
        std::fs::set_permissions(tree.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        remove_tree(&tree).unwrap();
        assert!(!tree.exists());
        assert!(outside.join("keep").exists());
        let mode = std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o555, "the link's target was chmod-ed");
        // A link given itself goes as a link; missing is success.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        remove_tree(&link).unwrap();
        assert!(outside.join("keep").exists() && !link.exists());
        remove_tree(&link).unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn store_directories_are_made_without_following_a_link_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("blobs-v1")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("blobs-v1/ab")).unwrap();
        let err = create_store_dir_all(&root, &root.join("blobs-v1/ab")).unwrap_err();
        assert!(err.to_string().contains("a symbolic link"), "{err}");
        let err = create_store_dir_all(&root, &root.join("blobs-v1/ab/cd")).unwrap_err();
        assert!(err.to_string().contains("a symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        create_store_dir_all(&root, &root.join("views/providers/h/n")).unwrap();
        assert!(root.join("views/providers/h/n").is_dir());
    }

    #[test]
    fn a_layout_entry_must_be_a_real_directory_or_file_of_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let me = nix::unistd::geteuid().as_raw();
        layout.check_entries(me).unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        std::fs::write(dir.path().join(".lock"), "").unwrap();
        layout.check_entries(me).unwrap();
        // Another owner (the check compares with the owner it is given).
        let err = layout.check_entries(me + 1).unwrap_err().to_string();
        assert!(err.contains("owned by user id"), "{err}");
        std::os::unix::fs::symlink("/", dir.path().join("git-cache")).unwrap();
        let err = layout.check_entries(me).unwrap_err().to_string();
        assert!(
            err.contains("git-cache in the store is a symbolic link"),
            "{err}"
        );
        std::fs::remove_file(dir.path().join("git-cache")).unwrap();
        std::fs::create_dir(dir.path().join("index.sqlite")).unwrap();
        let err = layout.check_entries(me).unwrap_err().to_string();
        assert!(err.contains("a directory, not the regular file"), "{err}");
    }
}
