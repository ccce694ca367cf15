//! Blobs: file contents addressed by their BLAKE3 hash, written once and never modified.
//!
//! Writing a blob, durably and atomically:
//! 1. stream the content into a temp file in `tmp/`, hashing BLAKE3 (the address) and SHA-256
//!    (for `h1:`) in the same read pass;
//! 2. if `blobs-v1/ab/<rest>` already exists, drop the temp file: success (idempotent);
//! 3. otherwise chmod (0444, or 0555 if executable), `sync_all`, move it into place without
//!    overwriting (another process may have won: that is success too), fsync the parent directory.
//!
//! The executable bit is not part of a blob's address. Views hardlink blob files, and a hardlink
//! shares its mode, so the primary file keeps the mode it was first written with and a "twin"
//! with the other mode is made on demand (see [`crate::view`]).

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::layout::Layout;
use crate::{Result, StoreError};

/// BLAKE3 of a blob's content; `Display`/`FromStr` use 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobId(pub(crate) [u8; 32]);

impl BlobId {
    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobId({self})")
    }
}

impl FromStr for BlobId {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self> {
        parse_hex32(s)
            .map(BlobId)
            .ok_or_else(|| StoreError::InvalidId {
                what: "blob",
                input: s.to_owned(),
            })
    }
}

impl serde::Serialize for BlobId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Parse exactly 64 lowercase hex digits.
pub(crate) fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    hex::decode(s).ok()?.try_into().ok()
}

/// Mode of a blob file.
pub(crate) fn blob_mode(exec: bool) -> u32 {
    if exec {
        0o555
    } else {
        0o444
    }
}

/// What writing a blob produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WrittenBlob {
    pub(crate) id: BlobId,
    pub(crate) size: u64,
    pub(crate) sha256: [u8; 32],
}

/// Why writing a blob failed: reading the source (the caller knows what it was) or the store.
#[derive(Debug)]
pub(crate) enum BlobWriteError {
    Read(io::Error),
    Store(StoreError),
}

impl From<StoreError> for BlobWriteError {
    fn from(e: StoreError) -> Self {
        BlobWriteError::Store(e)
    }
}

/// Stream `reader` into the blob store (see the module docs for the protocol).
pub(crate) fn write_blob(
    layout: &Layout,
    reader: &mut dyn Read,
    exec: bool,
) -> std::result::Result<WrittenBlob, BlobWriteError> {
    let mut tmp = tempfile::Builder::new()
        .prefix(&crate::temp::temp_prefix("blob"))
        .tempfile_in(&layout.tmp)
        .map_err(|e| StoreError::io(&layout.tmp, e))?;
    let mut blake = blake3::Hasher::new();
    let mut sha = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(BlobWriteError::Read(e)),
        };
        blake.update(&buf[..n]);
        sha.update(&buf[..n]);
        tmp.write_all(&buf[..n])
            .map_err(|e| StoreError::io(tmp.path(), e))?;
        size += n as u64;
    }
    let written = WrittenBlob {
        id: BlobId(*blake.finalize().as_bytes()),
        size,
        sha256: sha.finalize().into(),
    };
    let dest = layout.blob_path(&written.id);
    if exists(&dest)? {
        return Ok(written);
    }
    let file = tmp.as_file();
    file.set_permissions(std::fs::Permissions::from_mode(blob_mode(exec)))
        .map_err(|e| StoreError::io(tmp.path(), e))?;
    file.sync_all().map_err(|e| StoreError::io(tmp.path(), e))?;
    let parent = dest.parent().expect("blob path has a parent");
    crate::layout::create_private_dir_all(parent)?;
    match tmp.persist_noclobber(&dest) {
        Ok(_) => {}
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => return Ok(written),
        Err(e) => return Err(StoreError::io(&dest, e.error).into()),
    }
    sync_dir(parent)?;
    Ok(written)
}

/// Feed the content of the file at `path` to `consume`, chunk by chunk, adding the bytes read
/// to `bytes_read` (the store's [`crate::Store::bytes_hashed`] counter).
pub(crate) fn read_file_chunks(
    path: &Path,
    bytes_read: &AtomicU64,
    mut consume: impl FnMut(&[u8]),
) -> Result<()> {
    let mut file = fs_err::File::open(path).map_err(|e| StoreError::io(path, e))?;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StoreError::io(path, e)),
        };
        consume(&buf[..n]);
        bytes_read.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// BLAKE3 of a file's content (a blob file's name, when intact), counting the bytes read.
pub(crate) fn hash_file(path: &Path, bytes_read: &AtomicU64) -> Result<[u8; 32]> {
    let mut hasher = blake3::Hasher::new();
    read_file_chunks(path, bytes_read, |chunk| {
        hasher.update(chunk);
    })?;
    Ok(*hasher.finalize().as_bytes())
}

/// The blob file with the requested exec bit: the primary file if its mode fits, else its twin,
/// created (by reflink or copy) if needed.
pub(crate) fn blob_file_with_mode(layout: &Layout, id: &BlobId, exec: bool) -> Result<PathBuf> {
    let primary = layout.blob_path(id);
    let meta = fs_err::metadata(&primary).map_err(|e| StoreError::io(&primary, e))?;
    if (meta.permissions().mode() & 0o111 != 0) == exec {
        return Ok(primary);
    }
    let twin = layout.blob_twin_path(id, exec);
    if exists(&twin)? {
        return Ok(twin);
    }
    let dir = tempfile::Builder::new()
        .prefix(&crate::temp::temp_prefix("twin"))
        .tempdir_in(&layout.tmp)
        .map_err(|e| StoreError::io(&layout.tmp, e))?;
    let tmp = dir.path().join("blob");
    reflink_copy::reflink_or_copy(&primary, &tmp).map_err(|source| StoreError::Link {
        from: primary.clone(),
        to: tmp.clone(),
        source,
    })?;
    fs_err::set_permissions(&tmp, std::fs::Permissions::from_mode(blob_mode(exec)))
        .map_err(|e| StoreError::io(&tmp, e))?;
    fs_err::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| StoreError::io(&tmp, e))?;
    persist_noclobber(&tmp, &twin)?;
    sync_dir(twin.parent().expect("blob path has a parent"))?;
    Ok(twin)
}

/// Move `tmp` to `dest` unless `dest` exists (which counts as success): hard link, then unlink.
pub(crate) fn persist_noclobber(tmp: &Path, dest: &Path) -> Result<()> {
    match fs_err::hard_link(tmp, dest) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(StoreError::io(dest, e)),
    }
    fs_err::remove_file(tmp).map_err(|e| StoreError::io(tmp, e))
}

/// Whether `path` exists (without following a final symlink).
pub(crate) fn exists(path: &Path) -> Result<bool> {
    match fs_err::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// fsync a directory, making renames and links in it durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    fs_err::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn layout() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        fs_err::create_dir_all(&layout.tmp).unwrap();
        (dir, layout)
    }

    #[test]
    fn write_is_idempotent_and_read_only() {
        let (_d, layout) = layout();
        let a = write_blob(&layout, &mut &b"hello\n"[..], false).unwrap();
        let b = write_blob(&layout, &mut &b"hello\n"[..], true).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.size, 6);
        assert_eq!(a.id.0, *blake3::hash(b"hello\n").as_bytes());
        assert_eq!(
            hex::encode(a.sha256),
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        let path = layout.blob_path(&a.id);
        let meta = fs_err::metadata(&path).unwrap();
        // The first writer decided the mode; the second write changed nothing.
        assert_eq!(meta.mode() & 0o777, 0o444);
        assert_eq!(fs_err::read(&path).unwrap(), b"hello\n");
        // No temp files left behind.
        assert_eq!(fs_err::read_dir(&layout.tmp).unwrap().count(), 0);
        let id_str = a.id.to_string();
        assert_eq!(
            &path
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy(),
            &id_str[..2]
        );
        assert_eq!(id_str.parse::<BlobId>().unwrap(), a.id);
        assert!("XYZ".parse::<BlobId>().is_err());
    }

    #[test]
    fn twin_has_other_mode() {
        let (_d, layout) = layout();
        let a = write_blob(&layout, &mut &b"#!/bin/sh\n"[..], false).unwrap();
        let plain = blob_file_with_mode(&layout, &a.id, false).unwrap();
        assert_eq!(plain, layout.blob_path(&a.id));
        let exec = blob_file_with_mode(&layout, &a.id, true).unwrap();
        assert_eq!(exec, layout.blob_twin_path(&a.id, true));
        assert_eq!(fs_err::metadata(&exec).unwrap().mode() & 0o777, 0o555);
        assert_eq!(fs_err::read(&exec).unwrap(), b"#!/bin/sh\n");
        assert_eq!(blob_file_with_mode(&layout, &a.id, true).unwrap(), exec);
    }
}
