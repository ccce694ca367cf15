//! The files of `blobs-v1/` as gc, verify and rebuild walk them: each file named like a
//! blob (the primary `<rest>` or a `.x`/`.r` twin of `blobs-v1/<fan>/`), the blob its name
//! says it holds, and its hashes read from the bytes.

use crate::blob::BlobId;
use crate::layout::Layout;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
