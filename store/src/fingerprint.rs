//! Source fingerprints: a cheap "has this changed?" check built from `lstat` data only.
//!
//! This is what makes a second `init` cheap: if a mirror's zip or unpacked directory still has
//! the same fingerprint as when it was ingested, the store reuses the recorded tree and hashes
//! instead of re-reading hundreds of MB. Like git's index and make, it trusts
//! size + mtime + ctime + inode; ctime cannot be set by user space, so a rewrite is noticed
//! even when mtime is restored.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use crate::{Result, StoreError};

/// A fingerprint of a file or directory built only from `lstat` data (never contents): for a
/// directory, every entry's relative path, kind, size, mtime, ctime, inode and mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFingerprint(String);

impl SourceFingerprint {
    /// Fingerprint `path` (a symlinked root is resolved first, as ingest does).
    pub fn of_path(path: &Path) -> Result<Self> {
        let root = fs_err::canonicalize(path).map_err(|e| StoreError::io(path, e))?;
        let mut listing = String::new();
        let walker = walkdir::WalkDir::new(&root)
            .follow_links(false)
            .sort_by(|a, b| a.file_name().cmp(b.file_name()));
        for entry in walker {
            let entry = entry.map_err(|e| {
                let p = e.path().unwrap_or(&root).to_path_buf();
                StoreError::io(p, e.into())
            })?;
            let meta = entry
                .metadata()
                .map_err(|e| StoreError::io(entry.path(), e.into()))?;
            let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            let ft = meta.file_type();
            let kind = if ft.is_dir() {
                'd'
            } else if ft.is_symlink() {
                'l'
            } else if ft.is_file() {
                'f'
            } else {
                'o'
            };
            let _ = writeln!(
                listing,
                "{:?}\t{kind}\t{}\t{}.{:09}\t{}.{:09}\t{}\t{}\t{:o}",
                rel,
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec(),
                meta.dev(),
                meta.ino(),
                meta.mode()
            );
        }
        Ok(SourceFingerprint(format!(
            "v1:{}",
            blake3::hash(listing.as_bytes()).to_hex()
        )))
    }

    /// The fingerprint as stored in the index.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Rebuild from the index.
    pub(crate) fn from_stored(s: String) -> Self {
        SourceFingerprint(s)
    }
}

impl std::fmt::Display for SourceFingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_on_rewrite_and_is_stable_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs_err::create_dir(d.join("sub")).unwrap();
        fs_err::write(d.join("a"), "hello\n").unwrap();
        fs_err::write(d.join("sub/b"), "world\n").unwrap();
        let fp1 = SourceFingerprint::of_path(d).unwrap();
        assert_eq!(fp1, SourceFingerprint::of_path(d).unwrap());
        let file_fp = SourceFingerprint::of_path(&d.join("a")).unwrap();
        // Coarse kernel timestamps: make sure the rewrite lands in a new tick.
        std::thread::sleep(std::time::Duration::from_millis(30));
        // Same size, different content.
        fs_err::write(d.join("sub/b"), "WORLD\n").unwrap();
        let fp2 = SourceFingerprint::of_path(d).unwrap();
        assert_ne!(fp1, fp2);
        assert_eq!(fp2, SourceFingerprint::of_path(d).unwrap());
        assert_eq!(file_fp, SourceFingerprint::of_path(&d.join("a")).unwrap());
        fs_err::write(d.join("a"), "HELLO\n").unwrap();
        assert_ne!(file_fp, SourceFingerprint::of_path(&d.join("a")).unwrap());
    }
}
