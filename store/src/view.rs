//! Views: packages materialized on disk, read-only, at `views/<kind>/…` (used until, or where,
//! the FUSE mount is not available; the paths are the same either way).
//!
//! A view is built in a temp directory under `tmp/` (same filesystem), then renamed into place,
//! then its directories are made 0555. (They are made read-only only after the rename because
//! renaming a directory to a new parent needs write permission on it, to update `..`.) If the
//! final path already exists another process won: the temp copy is dropped and that is success.
//!
//! Files are *hardlinked* to blob files, so a view costs no disk space. A hardlink shares the
//! blob's mode, and the mode carries the exec bit, so a view needing the other mode links the
//! blob's twin (`<blob>.x` 0555 or `<blob>.r` 0444, see [`crate::blob`]).
//!
//! If hardlinking fails on the first file (the store spans filesystems: EXDEV, or the filesystem
//! has no hardlinks), the linker steps down to reflink-or-copy for the rest of this store handle
//! and remembers it, as uv's wheel linker does (`Attempt` in
//! <https://github.com/astral-sh/uv/blob/main/crates/uv-install-wheel/src/linker.rs>). Once
//! hardlinks have worked, a failure is a real error, except EMLINK (a popular blob reached the
//! filesystem's link limit), which copies that one file.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crate::blob::{blob_file_with_mode, blob_mode, exists, hash_file, sync_dir};
use crate::layout::Layout;
use crate::tree::{EntryKind, Tree};
use crate::{Result, StoreError};

/// How view files are made from blob files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkMode {
    /// Hardlink (free; same inode as the blob).
    Hardlink,
    /// Reflink where the filesystem can, else a full copy.
    ReflinkOrCopy,
}

#[derive(Debug)]
struct LinkState {
    mode: LinkMode,
    worked: bool,
}

/// Links blob files into views, stepping down from hardlinks once if they do not work.
#[derive(Debug)]
pub(crate) struct Linker {
    state: Mutex<LinkState>,
}

impl Linker {
    pub(crate) fn new() -> Linker {
        Linker {
            state: Mutex::new(LinkState {
                mode: LinkMode::Hardlink,
                worked: false,
            }),
        }
    }

    /// The mode currently in use.
    pub(crate) fn mode(&self) -> LinkMode {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).mode
    }

    fn link(&self, src: &Path, dest: &Path, exec: bool) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.mode == LinkMode::Hardlink {
            match fs_err::hard_link(src, dest) {
                Ok(()) => {
                    state.worked = true;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::TooManyLinks => {
                    tracing::debug!("{} has too many links, copying it", src.display());
                }
                Err(e) if !state.worked => {
                    tracing::warn!(
                        "cannot hardlink store blobs into views ({e}); falling back to reflink-or-copy"
                    );
                    state.mode = LinkMode::ReflinkOrCopy;
                }
                Err(source) => {
                    return Err(StoreError::Link {
                        from: src.to_path_buf(),
                        to: dest.to_path_buf(),
                        source,
                    })
                }
            }
        }
        drop(state);
        reflink_copy::reflink_or_copy(src, dest).map_err(|source| StoreError::Link {
            from: src.to_path_buf(),
            to: dest.to_path_buf(),
            source,
        })?;
        fs_err::set_permissions(dest, std::fs::Permissions::from_mode(blob_mode(exec)))
            .map_err(|e| StoreError::io(dest, e))
    }
}

/// Outcome of [`materialize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Materialized {
    /// This call renamed the view into place.
    Created,
    /// The view already existed (another process won the race).
    AlreadyThere,
}

/// Build the view of `tree` at `dest` (see the module docs); with `sync`, its directories
/// are made durable before and after it is renamed into place (else a machine crash may
/// lose them: the package's marked stat has it re-checked, `durability.rs`).
pub(crate) fn materialize(
    layout: &Layout,
    linker: &Linker,
    tree: &Tree,
    dest: &Path,
    sync: bool,
) -> Result<Materialized> {
    if exists(dest)? {
        // A view another process just made links the blobs. One left by a store deleted
        // half way (`git clean`, `rm -rf` stopped by read-only directories, a partial cache
        // restore) holds copies of the files the blobs no longer share, or misses some: it is
        // replaced, so the store never keeps a package twice or serves a view that is not
        // its tree.
        if linker.mode() != LinkMode::Hardlink || view_links_blobs(layout, tree, dest)? {
            return Ok(Materialized::AlreadyThere);
        }
        tracing::info!("replacing the stale view {}", dest.display());
        match remove_view(layout, dest) {
            Ok(()) => {}
            // Another process replaced it meanwhile.
            Err(_) if !exists(dest)? => {}
            Err(e) => return Err(e),
        }
    }
    let tmp = tempfile::Builder::new()
        .prefix(&crate::temp::temp_prefix("view"))
        .tempdir_in(&layout.tmp)
        .map_err(|e| StoreError::io(&layout.tmp, e))?;
    let build = tmp.path().join("v");
    fs_err::create_dir(&build).map_err(|e| StoreError::io(&build, e))?;
    // Entries come sorted, so the files of one directory follow each other: make each
    // directory once. `build` is this process's fresh private directory: what is made in
    // it needs no check of the components above (`layout::create_store_dir_all`'s).
    let mut made = std::collections::HashSet::from([build.clone()]);
    for entry in tree.entries() {
        let path = build.join(&entry.path);
        let parent = path.parent().expect("entry has a parent");
        make_dir_in(&mut made, parent)?;
        match &entry.kind {
            EntryKind::File { blob, exec } => {
                let src = blob_file_with_mode(layout, blob, *exec)?;
                linker.link(&src, &path, *exec)?;
            }
            EntryKind::Symlink { target } => {
                fs_err::os::unix::fs::symlink(target, &path)
                    .map_err(|e| StoreError::io(&path, e))?;
            }
        }
    }
    // Make the directory entries durable before the view becomes visible.
    if sync {
        for dir in dirs_of(&build)? {
            sync_dir(&dir)?;
        }
    }
    let parent = dest.parent().expect("view path has a parent");
    crate::layout::create_store_dir_all(&layout.root, parent)?;
    match std::fs::rename(&build, dest) {
        Ok(()) => {}
        Err(e) if exists(dest)? => {
            tracing::debug!(
                "view {} appeared meanwhile ({e}); keeping it",
                dest.display()
            );
            return Ok(Materialized::AlreadyThere);
        }
        Err(e) => return Err(StoreError::io(dest, e)),
    }
    if sync {
        sync_dir(parent)?;
    }
    set_dirs_read_only(dest)?;
    Ok(Materialized::Created)
}

/// Make `dir` and its parents up to one in `made` (private, 0700), remembering each.
fn make_dir_in(made: &mut std::collections::HashSet<PathBuf>, dir: &Path) -> Result<()> {
    if made.contains(dir) {
        return Ok(());
    }
    make_dir_in(
        made,
        dir.parent().expect("a directory under the build root"),
    )?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|e| StoreError::io(dir, e))?;
    made.insert(dir.to_path_buf());
    Ok(())
}

/// Whether every entry of `tree` is in the view at `view` as the blob's own file (same
/// inode as its primary file or its twin) or the same symlink. Stats only, no reads.
fn view_links_blobs(layout: &Layout, tree: &Tree, view: &Path) -> Result<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let inode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    for entry in tree.entries() {
        let path = view.join(&entry.path);
        let ok = match &entry.kind {
            EntryKind::File { blob, exec } => {
                let here = inode(&path);
                here.is_some()
                    && [layout.blob_path(blob), layout.blob_twin_path(blob, *exec)]
                        .iter()
                        .any(|p| inode(p) == here)
            }
            EntryKind::Symlink { target } => {
                std::fs::read_link(&path).is_ok_and(|t| t.as_os_str() == target.as_str())
            }
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// All directories under (and including) `root`, parents before children.
fn dirs_of(root: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.map_err(|e| StoreError::io(root, e.into()))?;
        if entry.file_type().is_dir() {
            dirs.push(entry.into_path());
        }
    }
    Ok(dirs)
}

/// chmod every directory of a view 0555.
pub(crate) fn set_dirs_read_only(root: &Path) -> Result<()> {
    for dir in dirs_of(root)? {
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o555))
            .map_err(|e| StoreError::io(&dir, e))?;
    }
    Ok(())
}

/// Remove a view (stale, from a crashed process): make it writable, move it into `tmp/`
/// (so it disappears at once), then delete it.
pub(crate) fn remove_view(layout: &Layout, view: &Path) -> Result<()> {
    let meta = fs_err::symlink_metadata(view).map_err(|e| StoreError::io(view, e))?;
    if meta.is_dir() {
        // Renaming a directory needs its own write permission (its `..` changes).
        fs_err::set_permissions(view, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| StoreError::io(view, e))?;
    }
    let trash = tempfile::Builder::new()
        .prefix(&crate::temp::temp_prefix("trash"))
        .tempdir_in(&layout.tmp)
        .map_err(|e| StoreError::io(&layout.tmp, e))?;
    let moved = trash.path().join("v");
    fs_err::rename(view, &moved).map_err(|e| StoreError::io(view, e))?;
    crate::layout::remove_tree(&moved).map_err(|e| StoreError::io(&moved, e))?;
    Ok(())
}

/// chmod every directory under `root` 0755 (so its contents can be removed).
#[cfg(test)]
pub(crate) fn make_dirs_writable(root: &Path) -> Result<()> {
    fs_err::set_permissions(root, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| StoreError::io(root, e))?;
    for dir in dirs_of(root)? {
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| StoreError::io(&dir, e))?;
    }
    Ok(())
}

/// Compare a view on disk with its tree; return what is wrong (empty: the view is good).
///
/// A file is good if it is read-only with the right exec bit and either is one of the blob's
/// files (same inode: no read needed) or has the blob's content (read and hashed, counted in
/// `bytes_read`).
pub(crate) fn check_view(
    layout: &Layout,
    tree: &Tree,
    view: &Path,
    bytes_read: &AtomicU64,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let meta = match fs_err::symlink_metadata(view) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(vec!["view is missing".to_owned()])
        }
        Err(e) => return Err(StoreError::io(view, e)),
    };
    if !meta.is_dir() {
        return Ok(vec!["view is not a directory".to_owned()]);
    }
    let mut on_disk: BTreeMap<String, std::fs::Metadata> = BTreeMap::new();
    for entry in walkdir::WalkDir::new(view).follow_links(false).min_depth(1) {
        let entry = entry.map_err(|e| StoreError::io(view, e.into()))?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(view)
            .expect("walk stays under root")
            .to_string_lossy()
            .into_owned();
        let m = entry
            .metadata()
            .map_err(|e| StoreError::io(entry.path(), e.into()))?;
        on_disk.insert(rel, m);
    }
    for entry in tree.entries() {
        let Some(m) = on_disk.remove(&entry.path) else {
            problems.push(format!("{}: missing", entry.path));
            continue;
        };
        let path = view.join(&entry.path);
        match &entry.kind {
            EntryKind::File { blob, exec } => {
                if !m.is_file() {
                    problems.push(format!("{}: not a regular file", entry.path));
                    continue;
                }
                if m.mode() & 0o222 != 0 {
                    problems.push(format!("{}: writable", entry.path));
                }
                if (m.mode() & 0o111 != 0) != *exec {
                    problems.push(format!("{}: wrong executable bit", entry.path));
                }
                let same_inode = [layout.blob_path(blob), layout.blob_twin_path(blob, *exec)]
                    .iter()
                    .any(|p| {
                        fs_err::metadata(p).is_ok_and(|b| b.ino() == m.ino() && b.dev() == m.dev())
                    });
                if !same_inode {
                    let actual = hash_file(&path, bytes_read)?;
                    if actual != *blob.as_bytes() {
                        problems.push(format!("{}: content differs from blob {blob}", entry.path));
                    }
                }
            }
            EntryKind::Symlink { target } => {
                let actual = fs_err::read_link(&path).map_err(|e| StoreError::io(&path, e))?;
                if actual.as_os_str() != target.as_str() {
                    problems.push(format!("{}: symlink target differs", entry.path));
                }
            }
        }
    }
    for extra in on_disk.keys() {
        problems.push(format!("{extra}: not part of the package"));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Across filesystems hardlinks fail with EXDEV: the linker steps down to reflink-or-copy
    /// once and stays there. (Skipped when no second filesystem is at hand.)
    #[test]
    fn linker_falls_back_to_copy_across_filesystems() {
        let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
            return;
        };
        let dest = tempfile::tempdir().unwrap();
        let src_dev = fs_err::metadata(shm.path()).unwrap().dev();
        if src_dev == fs_err::metadata(dest.path()).unwrap().dev() {
            return;
        }
        let src = shm.path().join("blob");
        fs_err::write(&src, b"content").unwrap();
        let linker = Linker::new();
        linker.link(&src, &dest.path().join("a"), true).unwrap();
        assert_eq!(linker.mode(), LinkMode::ReflinkOrCopy);
        linker.link(&src, &dest.path().join("b"), false).unwrap();
        let a = fs_err::metadata(dest.path().join("a")).unwrap();
        let b = fs_err::metadata(dest.path().join("b")).unwrap();
        assert_eq!((a.mode() & 0o777, b.mode() & 0o777), (0o555, 0o444));
        assert_eq!(fs_err::read(dest.path().join("b")).unwrap(), b"content");
    }
}
