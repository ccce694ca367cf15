//! A zip read as it arrives (a download), into blobs and a tree, with no file of the
//! archive: each entry is unpacked from its local header as its bytes come, and the central
//! directory, which comes last, must then describe exactly what was unpacked.
//!
//! **Rule: a streamed zip unpacks to what a reader of its central directory would unpack,
//! or is refused.** Readers that trust the central directory (Go's `archive/zip`, the file
//! ingest in `zip_archive`) never look at a local header's name or sizes, so an archive whose
//! two descriptions differ would give two trees. The central directory must list the
//! unpacked entries in order, each with the same name, method, CRC-32 and sizes, at the
//! offset its local header was read from; the end records must agree on the count, the size
//! and the offset of the central directory, and the stream must end with them. Where readers
//! differ among themselves the archive is refused, in the shape tstore's own zips never
//! take: an extra field other than zip64's (it can rename an entry or change its sizes for
//! one reader), a flag that changes how an entry is read (encryption, a data descriptor), an
//! end record with a comment (a reader searching from the end would find another end record
//! in it), more than one disk, zip64 records that disagree with the short ones.
//!
//! What a local header declares passes the [`rules`](super::rules) before its content is
//! read (a name inside the package, the entry count, the sizes, the ratio of the entry and of
//! the archive so far, compressed bytes no more than the content could take), and content is
//! read through a bound of one byte more than declared and must have exactly that size and
//! CRC-32. A local header has no unix mode, so an entry's kind (file, executable, symlink,
//! directory) comes from the central directory at the end, with the paths' claims and where
//! symlinks lead, as for a zip file. Sizes must be in the local header: an entry written
//! with a data descriptor is refused (tstore writes its zips with the sizes in place). The
//! unpacking stops reading at a refusal; a refused stream leaves at most unreferenced blobs,
//! and nothing is recorded in the index before the stream has ended.

use std::cell::Cell;
use std::collections::HashSet;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::Ordering;

use zip::result::ZipError;
use zip::CompressionMethod;

use super::rules::{
    check_link_target, check_sizes, check_whole_ratio, classify, normalize_name, Claims,
    DeclaredKind, MAX_LINK_TARGET,
};
use super::zip_central::{self, CentralEnd, CentralRecord};
use super::{Ingest, Ingested};
use crate::blob::{BlobBatch, BlobWriteError, WrittenBlob};
use crate::error::HostileReason;
use crate::tree::{EntryKind, Tree, TreeEntry};
use crate::{Limits, Result, Store, StoreError};

/// A reader that counts the bytes taken from it: where each local header began.
struct Counted<'r> {
    inner: &'r mut dyn Read,
    at: u64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// A reader that ends where a refusal cut it.
struct Cuttable<'r, 'c> {
    inner: &'r mut Counted<'c>,
    cut: &'r Cell<bool>,
}

impl Read for Cuttable<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cut.get() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

/// An entry unpacked from its local header, waiting for the central directory's word.
struct Unpacked {
    name: String,
    /// Its normalized path; `None` for the package root itself.
    path: Option<String>,
    offset: u64,
    method: u16,
    crc32: u32,
    compressed: u64,
    size: u64,
    /// Its content as a blob (not for a name ending in `/`, which only a directory has).
    blob: Option<WrittenBlob>,
    /// The unix mode its central-directory record declares.
    mode: Option<u32>,
}

/// The running state of one streamed archive.
struct ZipStream<'s> {
    store: &'s Store,
    shown: &'s Path,
    limits: &'s Limits,
    batch: BlobBatch<'s>,
    unpacked: Vec<Unpacked>,
    raw_names: HashSet<String>,
    total: u64,
}

impl<'s> ZipStream<'s> {
    fn hostile(&self, entry: &str, reason: HostileReason) -> StoreError {
        refused(self.shown, entry, reason)
    }

    fn bad_zip(&self, source: ZipError) -> StoreError {
        StoreError::BadZip {
            archive: self.shown.to_path_buf(),
            source,
        }
    }

    fn invalid(&self, what: &'static str) -> StoreError {
        self.bad_zip(ZipError::InvalidArchive(what.into()))
    }

    /// The whole stream: local entries until the central directory, then its records and
    /// end records, held against what was unpacked; then the tree.
    fn run(mut self, reader: &mut dyn Read) -> Result<(Tree, Vec<WrittenBlob>)> {
        let mut r = Counted {
            inner: reader,
            at: 0,
        };
        let (start, sig) = loop {
            let offset = r.at;
            match zip_central::signature(&mut r).map_err(|e| self.bad_zip(e.into()))? {
                Some(zip_central::LOCAL_HEADER) => self.local_entry(&mut r, offset)?,
                Some(
                    sig @ (zip_central::CENTRAL_RECORD | zip_central::ZIP64_END | zip_central::END),
                ) => break (offset, sig),
                _ => {
                    return Err(
                        self.invalid("no local header or central directory where one belongs")
                    )
                }
            }
        };
        self.central_directory(&mut r, start, sig)?;
        self.tree()
    }

    /// One local entry, its signature read at `offset`: the header checked, then its
    /// content unpacked.
    fn local_entry(&mut self, r: &mut Counted<'_>, offset: u64) -> Result<()> {
        let cut = Cell::new(false);
        let mut chained = io::Cursor::new(zip_central::LOCAL_HEADER).chain(Cuttable {
            inner: &mut *r,
            cut: &cut,
        });
        let mut file = zip::read::read_zipfile_from_stream(&mut chained)
            .map_err(|e| self.bad_zip(e))?
            .ok_or_else(|| self.invalid("a local header that is not one"))?;
        let unpacked = self.unpack(&mut file, offset);
        // A refused entry's bytes are not read on (the `zip` crate reads a dropped entry to
        // its end): the unpacking stops where the refusal is.
        cut.set(unpacked.is_err());
        drop(file);
        self.unpacked.push(unpacked?);
        Ok(())
    }

    /// The entry `file`, whose local header began at `offset`, checked and unpacked.
    fn unpack<R: Read>(
        &mut self,
        file: &mut zip::read::ZipFile<'_, R>,
        offset: u64,
    ) -> Result<Unpacked> {
        let Ok(name) = std::str::from_utf8(file.name_raw()).map(str::to_owned) else {
            let lossy = String::from_utf8_lossy(file.name_raw()).into_owned();
            return Err(self.hostile(&lossy, HostileReason::InvalidName));
        };
        let shown = self.shown;
        let hostile = |reason| refused(shown, &name, reason);
        if !self.raw_names.insert(name.clone()) {
            return Err(hostile(HostileReason::Duplicate));
        }
        let count = self.unpacked.len() as u64 + 1;
        if count > self.limits.max_entries {
            return Err(hostile(HostileReason::TooManyEntries {
                count,
                limit: self.limits.max_entries,
            }));
        }
        let path = normalize_name(&name).map_err(hostile)?;
        let (size, compressed, crc32) = (file.size(), file.compressed_size(), file.crc32());
        let method = match file.compression() {
            CompressionMethod::Stored => 0,
            CompressionMethod::Deflated => 8,
            _ => return Err(self.bad_zip(ZipError::UnsupportedArchive("compression method"))),
        };
        if !zip_central::plain_local_extra(file.extra_data().unwrap_or_default()) {
            return Err(self.bad_zip(ZipError::UnsupportedArchive(
                "an extra field other than zip64's in a local header",
            )));
        }
        // The compressed bytes are read (and a refused entry's skipped) by their declared
        // size: no more than the content could take, stored or deflated.
        let most = match method {
            0 => size,
            _ => size.saturating_add(size / 8).saturating_add(64),
        };
        if compressed > most {
            return Err(self.bad_zip(ZipError::InvalidArchive(
                "an entry's compressed size is more than its content could take".into(),
            )));
        }
        self.total = self.total.saturating_add(size);
        check_sizes(self.limits, size, compressed, self.total).map_err(hostile)?;
        // The archive so far, through this entry's compressed bytes.
        let header = 30 + name.len() as u64 + file.extra_data().map_or(0, |e| e.len() as u64);
        let so_far = offset.saturating_add(header).saturating_add(compressed);
        check_whole_ratio(self.limits, so_far, self.total).map_err(|r| self.hostile("", r))?;
        let mut bounded = file.take(size + 1);
        let (blob, actual) = if name.ends_with('/') {
            let n = io::copy(&mut bounded, &mut io::sink()).map_err(|e| self.bad_zip(e.into()))?;
            (None, n)
        } else {
            let written = self.write_blob(&mut bounded, size)?;
            (Some(written), written.size)
        };
        if actual != size {
            return Err(self.hostile(
                &name,
                HostileReason::SizeMismatch {
                    declared: size,
                    actual,
                },
            ));
        }
        Ok(Unpacked {
            name,
            path,
            offset,
            method,
            crc32,
            compressed,
            size,
            blob,
            mode: None,
        })
    }

    /// Content as a blob, not executable: the central directory says which files are, and a
    /// blob's address does not hold the bit (the view gives an executable file its twin).
    fn write_blob(&mut self, content: &mut dyn Read, size: u64) -> Result<WrittenBlob> {
        let shown = self.shown;
        let written = self
            .batch
            .write(content, false, size)
            .map_err(|e| match e {
                BlobWriteError::Read(e) => StoreError::BadZip {
                    archive: shown.to_path_buf(),
                    source: e.into(),
                },
                BlobWriteError::Store(e) => e,
            })?;
        self.store
            .bytes_hashed
            .fetch_add(written.size, Ordering::Relaxed);
        Ok(written)
    }

    /// The central directory from what follows the last local entry (`sig`, read at
    /// `start`) to the end of the stream: its records, each the unpacked entry at its place,
    /// and the end records (see the module's rule).
    fn central_directory(&mut self, r: &mut Counted<'_>, start: u64, sig: [u8; 4]) -> Result<()> {
        let shown = self.shown;
        let io = |e: io::Error| StoreError::BadZip {
            archive: shown.to_path_buf(),
            source: e.into(),
        };
        let mut records = 0usize;
        let (mut sig, mut sig_at) = (sig, start);
        while sig == zip_central::CENTRAL_RECORD {
            let record = zip_central::record(r).map_err(io)?;
            let Some(unpacked) = self.unpacked.get_mut(records) else {
                let name = String::from_utf8_lossy(&record.name).into_owned();
                return Err(self.hostile(&name, HostileReason::DirectoryMismatch));
            };
            if !describes(&record, unpacked) {
                let name = unpacked.name.clone();
                return Err(self.hostile(&name, HostileReason::DirectoryMismatch));
            }
            unpacked.mode = record.unix_mode();
            records += 1;
            sig_at = r.at;
            sig = zip_central::signature(r)
                .map_err(io)?
                .ok_or_else(|| self.invalid("no end of central directory record"))?;
        }
        if let Some(missing) = self.unpacked.get(records) {
            return Err(self.hostile(&missing.name, HostileReason::DirectoryMismatch));
        }
        let end = zip_central::end_records(r, sig, sig_at).map_err(io)?;
        let expected = CentralEnd {
            entries: records as u64,
            size: sig_at - start,
            offset: start,
        };
        if end != Some(expected) {
            return Err(self.hostile("", HostileReason::DirectoryMismatch));
        }
        Ok(())
    }

    /// The tree, each entry of the kind its central-directory mode declares, its path
    /// claimed once, symlinks inside; the blobs of its files made durable first (a
    /// symlink's target is read back from its blob: the stream is gone, and keeping every
    /// small entry in memory in case it is a link would let an archive hold its whole
    /// content there).
    fn tree(self) -> Result<(Tree, Vec<WrittenBlob>)> {
        let ZipStream {
            store,
            shown,
            batch,
            unpacked,
            ..
        } = self;
        batch.finish()?;
        let mut claims = Claims::default();
        let mut entries = Vec::with_capacity(unpacked.len());
        let mut blobs = Vec::with_capacity(unpacked.len());
        for u in &unpacked {
            let hostile = |reason| refused(shown, &u.name, reason);
            let kind = classify(&u.name, u.mode).map_err(hostile)?;
            let is_dir = kind == DeclaredKind::Dir;
            let path = match &u.path {
                Some(path) => path.clone(),
                // "./" or similar: the package root itself, which claims nothing.
                None if is_dir => continue,
                None => return Err(hostile(HostileReason::InvalidName)),
            };
            if !claims.claim(&path, is_dir) {
                return Err(hostile(HostileReason::Duplicate));
            }
            // A name ending in `/` (no blob) is a directory whatever its mode says.
            let Some(blob) = u.blob else {
                continue;
            };
            let kind = match kind {
                DeclaredKind::Dir => continue,
                DeclaredKind::File { exec } => {
                    blobs.push(blob);
                    EntryKind::File {
                        blob: blob.id,
                        exec,
                    }
                }
                DeclaredKind::Symlink => {
                    let target = link_target(store, &blob).map_err(|e| match e {
                        LinkTarget::TooLong => hostile(HostileReason::SizeMismatch {
                            declared: u.size,
                            actual: MAX_LINK_TARGET + 1,
                        }),
                        LinkTarget::Store(e) => e,
                    })?;
                    EntryKind::Symlink {
                        target: check_link_target(target).map_err(hostile)?,
                    }
                }
            };
            entries.push(TreeEntry { path, kind });
        }
        let tree = Tree::new(entries).map_err(|e| {
            let name = unpacked
                .iter()
                .find(|u| u.path.as_deref() == Some(e.entry.as_str()))
                .map_or(e.entry.clone(), |u| u.name.clone());
            refused(shown, &name, e.reason)
        })?;
        if let Some((path, target)) = tree.escaping_symlink() {
            let name = unpacked
                .iter()
                .find(|u| u.path.as_deref() == Some(path))
                .map_or(path, |u| u.name.as_str());
            return Err(refused(
                shown,
                name,
                HostileReason::EscapingSymlink {
                    target: target.to_owned(),
                },
            ));
        }
        Ok((tree, blobs))
    }
}

/// Why a symlink entry's target could not be read back.
enum LinkTarget {
    /// Longer than [`MAX_LINK_TARGET`].
    TooLong,
    Store(StoreError),
}

/// The target of a symlink entry, from the blob its content was written to (at most
/// [`MAX_LINK_TARGET`] bytes).
fn link_target(store: &Store, blob: &WrittenBlob) -> std::result::Result<Vec<u8>, LinkTarget> {
    if blob.size > MAX_LINK_TARGET {
        return Err(LinkTarget::TooLong);
    }
    let path = store.layout.blob_path(&blob.id);
    let mut target = Vec::with_capacity(blob.size as usize);
    fs_err::File::open(&path)
        .and_then(|f| f.take(MAX_LINK_TARGET + 1).read_to_end(&mut target))
        .map_err(|e| LinkTarget::Store(StoreError::io(&path, e)))?;
    if target.len() as u64 != blob.size {
        return Err(LinkTarget::Store(StoreError::CorruptIndex {
            what: format!("blob {} is not the size it was written with", blob.id),
        }));
    }
    Ok(target)
}

/// The archive `shown` refused because of `entry` (empty: the archive as a whole).
fn refused(shown: &Path, entry: &str, reason: HostileReason) -> StoreError {
    StoreError::HostileArchive {
        archive: shown.to_path_buf(),
        entry: entry.to_owned(),
        reason,
    }
}

/// Whether `record` describes `unpacked` as its local header did, and in the one way every
/// reader reads alike: no flag that changes how an entry is read (encryption, a data
/// descriptor: the local header had neither, the `zip` crate refuses to stream them), no
/// extra field but zip64's.
fn describes(record: &CentralRecord, unpacked: &Unpacked) -> bool {
    record.flags & (0x0001 | 0x0008 | 0x0040 | 0x2000) == 0
        && record.plain_extra
        && record.name == unpacked.name.as_bytes()
        && record.offset == unpacked.offset
        && record.method == unpacked.method
        && record.crc32 == unpacked.crc32
        && record.compressed == unpacked.compressed
        && record.size == unpacked.size
}

impl Ingest<'_> {
    /// Ingest an untrusted zip read from `reader` as it arrives, `shown` naming it in
    /// errors (see the module docs): the same tree [`Ingest::zip`] gives the same bytes as a
    /// file, or a refusal. The stream is read to its end, which must follow the end record.
    pub fn zip_stream(&self, reader: &mut dyn Read, shown: &Path) -> Result<Ingested> {
        self.store.ensure_trusted()?;
        let stream = ZipStream {
            store: self.store,
            shown,
            limits: &self.store.limits,
            batch: self.store.blob_batch(),
            unpacked: Vec::new(),
            raw_names: HashSet::new(),
            total: 0,
        };
        let (tree, blobs) = stream.run(reader)?;
        self.store.record_tree(&tree, &blobs)
    }
}
