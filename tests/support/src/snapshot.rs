//! [`snapshot`]: a directory tree as a comparable map.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Snapshot a directory tree for before/after comparisons.
///
/// Maps each path below `dir` (relative, `dir` itself excluded) to `"<kind> <mode>"` plus
/// `" <sha256>"` of a file's content or `" -> <target>"` for a symlink, where kind is `file`,
/// `dir`, `symlink`, `fifo`, `socket`, `char`, `block`, and mode is the octal permission bits.
/// Symlinks are not followed. A missing `dir` gives an empty map.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a"), "x").unwrap();
/// let before = tstore_test_support::snapshot(dir.path());
/// assert_eq!(before, tstore_test_support::snapshot(dir.path()));
/// ```
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut map = BTreeMap::new();
    if fs_err::symlink_metadata(dir).is_err() {
        return map;
    }
    for entry in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name() {
        let entry = entry.unwrap_or_else(|err| panic!("snapshot of {}: {err}", dir.display()));
        let path = entry.path();
        let meta = fs_err::symlink_metadata(path).expect("stat during snapshot");
        let mode = meta.permissions().mode() & 0o7777;
        let kind = meta.file_type();
        let value = if kind.is_symlink() {
            let target = fs_err::read_link(path).expect("readlink during snapshot");
            format!("symlink {mode:o} -> {}", target.display())
        } else if kind.is_file() {
            let bytes = fs_err::read(path).expect("read during snapshot");
            format!("file {mode:o} {}", hex::encode(Sha256::digest(&bytes)))
        } else {
            let kind = if kind.is_dir() {
                "dir"
            } else if kind.is_fifo() {
                "fifo"
            } else if kind.is_socket() {
                "socket"
            } else if kind.is_char_device() {
                "char"
            } else {
                "block"
            };
            format!("{kind} {mode:o}")
        };
        let rel = path.strip_prefix(dir).expect("walk stays under dir");
        map.insert(rel.to_path_buf(), value);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_kinds_modes_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs_err::create_dir(d.join("sub")).unwrap();
        fs_err::write(d.join("sub/f"), "hello").unwrap();
        fs_err::set_permissions(d.join("sub/f"), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink("../nowhere", d.join("link")).unwrap();
        let snap = snapshot(d);
        assert_eq!(snap.len(), 3);
        assert!(snap[Path::new("sub")].starts_with("dir "));
        assert_eq!(
            snap[Path::new("sub/f")],
            "file 644 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(snap[Path::new("link")], "symlink 777 -> ../nowhere");

        fs_err::write(d.join("sub/f"), "hellO").unwrap();
        assert_ne!(snap, snapshot(d));
    }

    #[test]
    fn missing_dir_is_empty() {
        assert!(snapshot(Path::new("/nonexistent/tstore-snapshot")).is_empty());
    }
}
