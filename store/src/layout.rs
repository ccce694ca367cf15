//! Where things live under the store root: the paths of the on-disk layout drawn in the
//! crate docs (`lib.rs`), and how blob files are named.
//!
//! The layout is versioned in directory names (`blobs-v1`), so a future format can live next to
//! this one and be migrated or pruned.

use std::path::{Path, PathBuf};

use crate::blob::BlobId;

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

    /// `blobs-v1/ab/<rest>`: the primary file of a blob.
    pub(crate) fn blob_path(&self, id: &BlobId) -> PathBuf {
        let hex = id.to_string();
        self.blobs.join(&hex[..2]).join(&hex[2..])
    }

    /// The twin of a blob with the other mode: `<rest>.x` (0555) or `<rest>.r` (0444).
    pub(crate) fn blob_twin_path(&self, id: &BlobId, exec: bool) -> PathBuf {
        let hex = id.to_string();
        let suffix = if exec { "x" } else { "r" };
        self.blobs
            .join(&hex[..2])
            .join(format!("{}.{suffix}", &hex[2..]))
    }
}

/// One file of `blobs-v1/` named like a blob: the blob its name says it holds, and whether it
/// is the primary file (not a `.x`/`.r` twin).
pub(crate) struct BlobFile {
    pub(crate) blob: BlobId,
    pub(crate) primary: bool,
    pub(crate) entry: walkdir::DirEntry,
}

impl BlobFile {
    /// The file's BLAKE3, and for a primary file its SHA-256 from the same read (a twin holds
    /// the primary's content: its BLAKE3 against its name is all there is to check).
    pub(crate) fn hash(
        &self,
        bytes_read: &std::sync::atomic::AtomicU64,
    ) -> crate::Result<([u8; 32], Option<[u8; 32]>)> {
        if self.primary {
            let (blake, sha) = crate::blob::hash_file_both(self.entry.path(), bytes_read)?;
            Ok((blake, Some(sha)))
        } else {
            Ok((crate::blob::hash_file(self.entry.path(), bytes_read)?, None))
        }
    }

    /// Whether the bytes hashed to `blake3` are the blob the name says.
    pub(crate) fn holds(&self, blake3: &[u8; 32]) -> bool {
        blake3 == self.blob.as_bytes()
    }
}

impl Layout {
    /// Every regular file of `blobs-v1/AB/` named like a blob, sorted by name; a file named
    /// otherwise is not the store's and is skipped.
    pub(crate) fn blob_files(&self) -> impl Iterator<Item = crate::Result<BlobFile>> + '_ {
        walkdir::WalkDir::new(&self.blobs)
            .min_depth(2)
            .max_depth(2)
            .sort_by_file_name()
            .into_iter()
            .filter_map(move |entry| {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => return Some(Err(crate::StoreError::io(&self.blobs, e.into()))),
                };
                if !entry.file_type().is_file() {
                    return None;
                }
                let fan = entry
                    .path()
                    .parent()
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                let name = entry.file_name().to_str().unwrap_or_default();
                let Ok(blob) = blob_file_id(fan, name).parse::<BlobId>() else {
                    tracing::debug!("ignoring stray file {}", entry.path().display());
                    return None;
                };
                let primary = blob.to_string().ends_with(name);
                Some(Ok(BlobFile {
                    blob,
                    primary,
                    entry,
                }))
            })
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

/// The id a file named `name` in the blob fan directory `fan` (`blobs-v1/<fan>/<name>`)
/// holds: the primary `<rest>` and its twins `<rest>.x` and `<rest>.r` all hold
/// `<fan><rest>`. Not necessarily a valid id: the caller parses it.
pub(crate) fn blob_file_id(fan: &str, name: &str) -> String {
    let rest = name
        .strip_suffix(".x")
        .or_else(|| name.strip_suffix(".r"))
        .unwrap_or(name);
    format!("{fan}{rest}")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_file_names_map_to_their_blob() {
        let id = BlobId([0xab; 32]);
        let layout = Layout::new(Path::new("/s"));
        for path in [
            layout.blob_path(&id),
            layout.blob_twin_path(&id, true),
            layout.blob_twin_path(&id, false),
        ] {
            let fan = path
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap();
            let name = path.file_name().unwrap().to_str().unwrap();
            assert_eq!(
                blob_file_id(fan, name),
                id.to_string(),
                "{}",
                path.display()
            );
        }
        for (fan, name, want) in [
            ("ab", "cd", "abcd"),
            ("ab", "cd.x", "abcd"),
            ("ab", "cd.r", "abcd"),
            ("ab", "cd.x.r", "abcd.x"),
            ("ab", "cd.tmp", "abcd.tmp"),
            ("ab", ".x", "ab"),
        ] {
            assert_eq!(blob_file_id(fan, name), want, "{fan}/{name}");
        }
    }
}
