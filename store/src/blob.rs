//! Blobs: file contents addressed by their BLAKE3 hash, written once and never modified.
//!
//! Writing blobs atomically ([`BlobBatch`]):
//! 1. stream each content into a temp file in `tmp/`, hashing BLAKE3 (the address) and SHA-256
//!    (for `h1:`) in the same read pass;
//! 2. if `blobs-v1/ab/<rest>` already exists, drop the temp file: success (idempotent), unless
//!    a deferred batch is told the file in place may have been lost in a machine crash: then
//!    the temp file replaces it;
//! 3. otherwise chmod (0444, or 0555 if executable) and move it into place without
//!    overwriting (another process may have won: that is success too). Where writes are
//!    synced (`durability.rs`), the content is made durable first (`sync_all`) and the name
//!    after (fsync of the parent directory).
//!
//! The executable bit is not part of a blob's address. Views hardlink blob files, and a hardlink
//! shares its mode, so the primary file keeps the mode it was first written with and a "twin"
//! with the other mode is made on demand (see [`crate::view`]).

use std::collections::HashSet;
use std::fmt;
use std::io::{self, Read, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

use crate::hashing_copy::{copy_hashing, CopyError};
use crate::layout::Layout;
use crate::{Result, StoreError};

/// BLAKE3 of a blob's content; `Display`/`FromStr` use 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobId(pub(crate) [u8; 32]);

impl BlobId {
    /// The id of the content whose BLAKE3 is `digest`.
    pub fn from_bytes(digest: [u8; 32]) -> BlobId {
        BlobId(digest)
    }

    /// The id the store gives `content`: its BLAKE3.
    pub fn of(content: &[u8]) -> BlobId {
        BlobId(*blake3::hash(content).as_bytes())
    }

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

impl Layout {
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
    /// Whether this batch put the file in place (else it kept the one there).
    pub(crate) written_now: bool,
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

/// Stream `reader` into the blob store as a batch of one (see the module docs).
#[cfg(test)]
pub(crate) fn write_blob(
    layout: &Layout,
    reader: &mut dyn Read,
    exec: bool,
) -> std::result::Result<WrittenBlob, BlobWriteError> {
    let mut batch = BlobBatch::new(layout);
    let written = batch.write(reader, exec, 0)?;
    batch.finish()?;
    Ok(written)
}

/// A batch of at most this many blobs is made durable one blob after the other; a larger one
/// in parallel (see [`BlobBatch`]).
const PER_FILE_SYNC_MAX: usize = 4;

/// Content announced (and found) no larger than this is read into memory and hashed before
/// a temp file is made for it ([`BlobBatch::write`]).
const IN_MEMORY_MAX: u64 = 1 << 20;

/// A blob written to `tmp/` whose content is not yet known to be durable.
struct PendingBlob {
    tmp: tempfile::TempPath,
    dest: PathBuf,
    /// The file in place is not to be reused: the temp file replaces it.
    replace: bool,
}

/// Blobs written together (the files of one package), made durable together.
///
/// The rule it keeps: a blob file appears under `blobs-v1/` only once its content is durable,
/// and [`BlobBatch::finish`] returns only once every blob of the batch is durable under its
/// name, so the index rows written after it never name a blob a crash could lose or truncate.
///
/// [`BlobBatch::write`] streams content into a temp file, hashing it; nothing is synced yet.
/// [`BlobBatch::finish`] then, for a small batch, syncs each temp file, moves it into place and
/// syncs its directory, one blob after the other (the protocol of the module docs). A larger
/// batch syncs all its temp files at once on [`SYNC_THREADS`] threads, moves them all into
/// place, then syncs each directory that gained a name once, again on threads: one directory
/// sync per shard instead of one per file, and fsyncs in flight together instead of one
/// device round trip after the other. Directories of blobs the batch found already in place
/// are synced too, since the writer that placed them may not have done so yet.
///
/// Where the kernel names the boot, the store's batches are deferred instead
/// (`durability.rs`); this synced protocol remains where it cannot. (No `syncfs` per batch:
/// it flushes every other process's dirty data too, so one init would wait for a
/// neighbouring job's gigabytes on a busy CI host; gc's one `syncfs` runs from cron.)
///
/// A deferred batch ([`BlobBatch::deferred`], `durability.rs`) syncs nothing: its files are
/// moved into place as they are, and a blob file already in place is reused only where the
/// store says it is sound, else replaced by the content in hand.
///
/// Dropping a batch without finishing it removes its temp files.
pub(crate) struct BlobBatch<'a> {
    layout: &'a Layout,
    /// Deferred: whether a blob file in place may be reused.
    reuse: Option<BlobReuse<'a>>,
    pending: Vec<PendingBlob>,
    /// Blobs of this batch already pending: the same content twice is written once.
    seen: HashSet<BlobId>,
    /// Shard directories this batch has made sure exist.
    shards: HashSet<PathBuf>,
    /// Directories of blobs this batch found already in place, whose names another writer
    /// may not have made durable yet.
    existing: Vec<PathBuf>,
}

/// Whether a blob file already in place may be reused (else it is replaced).
pub(crate) type BlobReuse<'a> = Box<dyn Fn(&BlobId) -> Result<bool> + 'a>;

impl<'a> BlobBatch<'a> {
    /// A batch that makes every blob durable before [`BlobBatch::finish`] returns.
    pub(crate) fn new(layout: &'a Layout) -> Self {
        BlobBatch {
            layout,
            reuse: None,
            pending: Vec::new(),
            seen: HashSet::new(),
            shards: HashSet::new(),
            existing: Vec::new(),
        }
    }

    /// A batch that leaves its files to the page cache, reusing a blob file in place only
    /// where `reuse` says so.
    pub(crate) fn deferred(layout: &'a Layout, reuse: BlobReuse<'a>) -> Self {
        BlobBatch {
            reuse: Some(reuse),
            ..BlobBatch::new(layout)
        }
    }

    /// Stream `reader` into a temp file, hashing BLAKE3 (the address) and SHA-256 (for
    /// `h1:`) in the same pass, and keep it for [`BlobBatch::finish`] unless the store or this
    /// batch already has that content. `size_hint` is the size the caller expects (a zip
    /// entry's declared size, a file's length): large content is copied on a pipeline
    /// ([`crate::hashing_copy`]).
    pub(crate) fn write(
        &mut self,
        reader: &mut dyn Read,
        exec: bool,
        size_hint: u64,
    ) -> std::result::Result<WrittenBlob, BlobWriteError> {
        // Small content is read and hashed before any file is made: content the store or
        // this batch already has costs no temp file (an inode made and freed, which ext4
        // makes the next allocations pay for).
        let mut head = Vec::new();
        if size_hint <= IN_MEMORY_MAX {
            reader
                .take(IN_MEMORY_MAX + 1)
                .read_to_end(&mut head)
                .map_err(BlobWriteError::Read)?;
            if head.len() as u64 <= IN_MEMORY_MAX {
                let mut written = WrittenBlob {
                    id: BlobId::of(&head),
                    size: head.len() as u64,
                    sha256: Sha256::digest(&head).into(),
                    written_now: true,
                };
                let Some((dest, replace)) = self.placement(&mut written)? else {
                    return Ok(written);
                };
                let tmp = self.temp_file()?;
                tmp.as_file()
                    .write_all(&head)
                    .map_err(|e| StoreError::io(tmp.path(), e))?;
                return self.keep(tmp, dest, replace, exec, written);
            }
        }
        // Large content (or more than announced): copied as it is read.
        let tmp = self.temp_file()?;
        let mut rest = (&head[..]).chain(reader);
        let copied = copy_hashing(&mut rest, tmp.as_file(), size_hint).map_err(|e| match e {
            CopyError::Read(e) => BlobWriteError::Read(e),
            CopyError::Write(e) => StoreError::io(tmp.path(), e).into(),
        })?;
        let mut written = WrittenBlob {
            id: BlobId(copied.blake3),
            size: copied.size,
            sha256: copied.sha256,
            written_now: true,
        };
        let Some((dest, replace)) = self.placement(&mut written)? else {
            return Ok(written);
        };
        self.keep(tmp, dest, replace, exec, written)
    }

    /// A temp file for a blob, in the store's temp directory.
    fn temp_file(&self) -> Result<tempfile::NamedTempFile> {
        tempfile::Builder::new()
            .prefix(&crate::temp::temp_prefix("blob"))
            .tempfile_in(&self.layout.tmp)
            .map_err(|e| StoreError::io(&self.layout.tmp, e))
    }

    /// Where `written` goes and whether it replaces a file there; `None` when this batch
    /// or the store already has it (`written_now` then says whether this batch wrote it).
    fn placement(&mut self, written: &mut WrittenBlob) -> Result<Option<(PathBuf, bool)>> {
        if self.seen.contains(&written.id) {
            return Ok(None);
        }
        let dest = self.layout.blob_path(&written.id);
        let replace = exists(&dest)?;
        if replace {
            match &self.reuse {
                None => {
                    self.existing
                        .push(dest.parent().expect("blob path has a parent").to_path_buf());
                    written.written_now = false;
                    return Ok(None);
                }
                Some(reuse) if reuse(&written.id)? => {
                    written.written_now = false;
                    return Ok(None);
                }
                Some(_) => {}
            }
        }
        Ok(Some((dest, replace)))
    }

    /// Keep `tmp`, holding `written`, to be placed at `dest` by [`BlobBatch::finish`].
    fn keep(
        &mut self,
        tmp: tempfile::NamedTempFile,
        dest: PathBuf,
        replace: bool,
        exec: bool,
        written: WrittenBlob,
    ) -> std::result::Result<WrittenBlob, BlobWriteError> {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(blob_mode(exec)))
            .map_err(|e| StoreError::io(tmp.path(), e))?;
        self.seen.insert(written.id);
        self.pending.push(PendingBlob {
            tmp: tmp.into_temp_path(),
            dest,
            replace,
        });
        Ok(written)
    }

    /// Make every blob of the batch durable under its name (see [`BlobBatch`]).
    pub(crate) fn finish(mut self) -> Result<()> {
        if self.reuse.is_some() {
            for blob in std::mem::take(&mut self.pending) {
                let parent = blob.dest.parent().expect("blob path has a parent");
                ensure_dir(self.layout, &mut self.shards, parent)?;
                if blob.replace {
                    // A rename over the file in place: readers see the old file or the new.
                    blob.tmp
                        .persist(&blob.dest)
                        .map_err(|e| StoreError::io(&blob.dest, e.error))?;
                } else {
                    place(blob.tmp, &blob.dest)?;
                }
            }
            return Ok(());
        }
        if self.pending.len() + self.existing.len() <= PER_FILE_SYNC_MAX {
            for dir in &self.existing {
                sync_dir(dir)?;
            }
            for blob in self.pending {
                fs_err::File::open(&blob.tmp)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| StoreError::io(&blob.tmp, e))?;
                let parent = blob.dest.parent().expect("blob path has a parent");
                ensure_dir(self.layout, &mut self.shards, parent)?;
                if place(blob.tmp, &blob.dest)? {
                    sync_dir(parent)?;
                }
            }
            return Ok(());
        }
        // Contents first, in parallel: fsyncs in flight together share the device's queue
        // (and, with a journal, its commits).
        let tmps: Vec<&Path> = self.pending.iter().map(|b| b.tmp.as_ref()).collect();
        in_parallel(&tmps, |p| {
            fs_err::File::open(p)
                .and_then(|f| f.sync_all())
                .map_err(|e| StoreError::io(p, e))
        })?;
        let mut dirs: Vec<PathBuf> = std::mem::take(&mut self.existing);
        for blob in std::mem::take(&mut self.pending) {
            let parent = blob.dest.parent().expect("blob path has a parent");
            ensure_dir(self.layout, &mut self.shards, parent)?;
            place(blob.tmp, &blob.dest)?;
            dirs.push(parent.to_path_buf());
        }
        dirs.sort();
        dirs.dedup();
        let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        in_parallel(&dirs, sync_dir)
    }
}

/// Create `dir` (private, never through a link) unless `made` says it was already made.
fn ensure_dir(layout: &Layout, made: &mut HashSet<PathBuf>, dir: &Path) -> Result<()> {
    if !made.contains(dir) {
        crate::layout::create_store_dir_all(&layout.root, dir)?;
        made.insert(dir.to_path_buf());
    }
    Ok(())
}

/// Threads that fsync a batch together.
const SYNC_THREADS: usize = 16;

/// Run `f` on every item, on up to [`SYNC_THREADS`] threads; the first error wins.
fn in_parallel(items: &[&Path], f: impl Fn(&Path) -> Result<()> + Sync) -> Result<()> {
    let chunk = items.len().div_ceil(SYNC_THREADS).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().try_for_each(|p| f(p))))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("an fsync thread panicked"))
    })
}

/// Move a temp file to `dest` unless `dest` exists (another writer won: success too); whether
/// it was moved.
fn place(tmp: tempfile::TempPath, dest: &Path) -> Result<bool> {
    match tmp.persist_noclobber(dest) {
        Ok(()) => Ok(true),
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(StoreError::io(dest, e.error)),
    }
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

/// BLAKE3 (the blob's name, when intact) and SHA-256 (what `h1:` is made of) of a file's
/// content, in one read, counting the bytes read. Re-verification computes both from the
/// bytes rather than trusting the SHA-256 the index recorded.
pub(crate) fn hash_file_both(path: &Path, bytes_read: &AtomicU64) -> Result<([u8; 32], [u8; 32])> {
    use sha2::Digest as _;
    let mut blake = blake3::Hasher::new();
    let mut sha = sha2::Sha256::new();
    read_file_chunks(path, bytes_read, |chunk| {
        blake.update(chunk);
        sha.update(chunk);
    })?;
    Ok((*blake.finalize().as_bytes(), sha.finalize().into()))
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
mod tests;
