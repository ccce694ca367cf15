//! Tar archives (plain, gzip, bzip2, xz) into blobs and a tree, streamed: a tar has no
//! central directory to check first, so each entry passes the [`rules`](super::rules) as
//! its header is read, before its content is, and the content goes straight from the
//! decompressor into a blob. Nothing is extracted to a directory; a refused archive leaves
//! at most unreferenced blobs (gc removes them).
//!
//! What a header declares is what the limits are checked against (entries, bytes of one
//! entry, bytes in all, and the whole archive's ratio to its compressed size), so a
//! decompression bomb is refused at its header, not after its bytes; the content is then
//! read through a bound of one byte more than declared and refused unless it had exactly
//! that size. Where a symlink leads is decided over the whole tree at the end, as for zips
//! and directories.

use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::Ordering;

use super::rules::{check_link_target, check_sizes, check_whole_ratio, normalize_name, Claims};
use super::Ingest;
use super::IngestedModule;
use crate::blob::{BlobBatch, BlobWriteError, WrittenBlob};
use crate::error::HostileReason;
use crate::tree::{EntryKind, Tree, TreeEntry};
use crate::{Limits, Result, Store, StoreError};

/// The name of the thread that decodes an xz stream: a panic there is contained (the ingest
/// fails with [`StoreError::BadTar`]), which a fuzz harness's panic hook needs to know.
pub const XZ_DECODER_THREAD: &str = "tstore-xz-decoder";

/// How a tar archive is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarCompression {
    /// A plain `.tar`.
    None,
    /// `.tar.gz`, `.tgz`.
    Gzip,
    /// `.tar.bz2`, `.tbz2`.
    Bzip2,
    /// `.tar.xz`, `.txz`.
    Xz,
}

/// The file type bits a tar entry type stands for, in a unix mode (for the refusal of a
/// device or FIFO, which names the mode as a zip's refusal does).
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;
const S_IFIFO: u32 = 0o010000;

/// The checks made on one archive, with its path for error messages.
struct TarCheck<'a> {
    path: &'a Path,
    limits: &'a Limits,
    /// The archive's size on disk, for the whole-archive compression ratio.
    size: u64,
}

impl TarCheck<'_> {
    /// The archive refused because of `entry` (empty: the archive as a whole).
    fn hostile(&self, entry: &str, reason: HostileReason) -> StoreError {
        StoreError::HostileArchive {
            archive: self.path.to_path_buf(),
            entry: entry.to_owned(),
            reason,
        }
    }

    /// The archive (or its compression) cannot be read.
    fn bad_tar(&self, source: io::Error) -> StoreError {
        StoreError::BadTar {
            archive: self.path.to_path_buf(),
            source,
        }
    }
}

/// What one header declares, once it passed the rules.
enum Declared {
    /// Metadata (pax headers), the package root, a directory (implied by the paths under
    /// it), or a `.git` entry a module package leaves out: nothing to keep, content skipped.
    Nothing,
    /// A regular file of `size` bytes.
    File { path: String, exec: bool, size: u64 },
    /// A symlink with its checked target.
    Symlink { path: String, target: String },
}

/// The running state of one archive's ingest: what the rules count, and what it produced.
struct TarIngest<'s, 'c> {
    store: &'s Store,
    check: &'c TarCheck<'c>,
    batch: BlobBatch<'s>,
    claims: Claims,
    count: u64,
    total: u64,
    entries: Vec<TreeEntry>,
    blobs: Vec<WrittenBlob>,
}

impl Store {}

/// Run `ingest` on the decompressed stream of `file`. Decompression streams: the tar reader
/// takes only what it needs, so a bomb stops where the rules stop it.
fn decompressed<T>(
    check: &TarCheck<'_>,
    file: fs_err::File,
    compression: TarCompression,
    ingest: impl FnOnce(&mut dyn Read) -> Result<T>,
) -> Result<T> {
    let file = io::BufReader::new(file);
    match compression {
        TarCompression::None => ingest(&mut { file }),
        TarCompression::Gzip => ingest(&mut flate2::bufread::GzDecoder::new(file)),
        TarCompression::Bzip2 => ingest(&mut bzip2::bufread::MultiBzDecoder::new(file)),
        TarCompression::Xz => {
            // lzma-rs decodes into a writer: it runs on a thread writing into a pipe the tar
            // reader drains. When the ingest stops early (a refusal, the end of the tar) the
            // reader is dropped and the decoder fails with a broken pipe. A panic in the
            // decoder (lzma-rs 0.3.0 overflows an addition on some hostile headers when
            // overflow checks are on) stays in its thread and becomes an error.
            let (mut reader, mut writer) = io::pipe().map_err(|e| check.bad_tar(e))?;
            let decoder = std::thread::Builder::new()
                .name(XZ_DECODER_THREAD.to_owned())
                .spawn(move || lzma_rs::xz_decompress(&mut { file }, &mut writer))
                .map_err(|e| check.bad_tar(e))?;
            let ingested = ingest(&mut reader);
            drop(reader);
            let decoded = decoder.join().map_err(|_| {
                check.bad_tar(io::Error::other("the xz decoder failed on this stream"))
            })?;
            match (ingested, decoded) {
                // The tar ended (two zero blocks) before the xz stream: trailing data.
                (Ok(t), Ok(()) | Err(lzma_rs::error::Error::IoError(_))) => Ok(t),
                (Ok(_), Err(e)) => Err(check.bad_tar(io::Error::other(format!("xz: {e}")))),
                // The tar reader saw the stream end early because the decoder gave up: its
                // reason is the one worth showing.
                (Err(StoreError::BadTar { .. }), Err(e))
                    if !matches!(&e, lzma_rs::error::Error::IoError(io)
                        if io.kind() == io::ErrorKind::BrokenPipe) =>
                {
                    Err(check.bad_tar(io::Error::other(format!("xz: {e}"))))
                }
                (Err(e), _) => Err(e),
            }
        }
    }
}

impl<'s, 'c> TarIngest<'s, 'c> {
    fn new(store: &'s Store, check: &'c TarCheck<'c>) -> Self {
        TarIngest {
            store,
            check,
            batch: store.blob_batch(),
            claims: Claims::default(),
            count: 0,
            total: 0,
            entries: Vec::new(),
            blobs: Vec::new(),
        }
    }

    /// Every entry in archive order: its header checked, then its content kept; then the
    /// tree (no path twice, no file under a file or a symlink, no symlink leading out) and
    /// the blobs made durable.
    fn run(mut self, reader: &mut dyn Read) -> Result<(Tree, Vec<WrittenBlob>)> {
        let check = self.check;
        let mut archive = tar::Archive::new(reader);
        for entry in archive.entries().map_err(|e| check.bad_tar(e))? {
            let mut entry = entry.map_err(|e| check.bad_tar(e))?;
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            match self.declared(&mut entry, &name)? {
                Declared::Nothing => {}
                Declared::Symlink { path, target } => self.entries.push(TreeEntry {
                    path,
                    kind: EntryKind::Symlink { target },
                }),
                Declared::File { path, exec, size } => {
                    let written = self.content(&mut entry, &name, exec, size)?;
                    self.entries.push(TreeEntry {
                        path,
                        kind: EntryKind::File {
                            blob: written.id,
                            exec,
                        },
                    });
                    self.blobs.push(written);
                }
            }
        }
        let tree = Tree::new(self.entries).map_err(|e| check.hostile(&e.entry, e.reason))?;
        if let Some((path, target)) = tree.escaping_symlink() {
            return Err(check.hostile(
                path,
                HostileReason::EscapingSymlink {
                    target: target.to_owned(),
                },
            ));
        }
        self.batch.finish()?;
        Ok((tree, self.blobs))
    }

    /// The rules for one header, before its content is read: a UTF-8 name that normalizes
    /// to a path inside the package, a kind a package may hold, a path claimed once (a
    /// directory may be listed again: it is only implied), the entry count and the
    /// declared sizes within the limits, and a symlink's target relative.
    fn declared<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>, name: &str) -> Result<Declared> {
        let check = self.check;
        let hostile = |reason| check.hostile(name, reason);
        let header = entry.header();
        let kind = header.entry_type();
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
            || kind.is_gnu_longlink()
        {
            return Ok(Declared::Nothing);
        }
        let mode = header.mode().unwrap_or(0o644);
        let size = entry.size();
        let raw = entry.path_bytes();
        let Ok(utf8) = std::str::from_utf8(&raw) else {
            return Err(hostile(HostileReason::InvalidName));
        };
        let path = normalize_name(utf8).map_err(hostile)?;
        self.count += 1;
        if self.count > check.limits.max_entries {
            return Err(hostile(HostileReason::TooManyEntries {
                count: self.count,
                limit: check.limits.max_entries,
            }));
        }
        if kind.is_dir() {
            if let Some(path) = &path {
                if !self.claims.is_dir(path) && !self.claims.claim(path, true) {
                    return Err(hostile(HostileReason::Duplicate));
                }
            }
            return Ok(Declared::Nothing);
        }
        let Some(path) = path else {
            return Err(hostile(HostileReason::InvalidName));
        };
        if !self.claims.claim(&path, false) {
            return Err(hostile(HostileReason::Duplicate));
        }
        let left_out = path.split('/').any(|c| c == ".git");
        if kind.is_symlink() {
            let target = entry
                .link_name_bytes()
                .map(|t| t.into_owned())
                .unwrap_or_default();
            let target = check_link_target(target).map_err(hostile)?;
            return Ok(if left_out {
                Declared::Nothing
            } else {
                Declared::Symlink { path, target }
            });
        }
        if !(kind.is_file() || kind.is_contiguous()) {
            return Err(hostile(unsupported(kind, mode)));
        }
        // A tar entry has no compressed size of its own: the archive as a whole answers
        // for the ratio, counted with the bytes a left-out entry would decompress too.
        self.total = self.total.saturating_add(size);
        check_sizes(check.limits, size, size, self.total).map_err(hostile)?;
        check_whole_ratio(check.limits, check.size, self.total)
            .map_err(|r| check.hostile("", r))?;
        Ok(if left_out {
            Declared::Nothing
        } else {
            Declared::File {
                path,
                exec: mode & 0o111 != 0,
                size,
            }
        })
    }

    /// The content of file `entry` as a blob, read through a bound of one byte more than its
    /// declared `size` and refused unless it had exactly that size.
    fn content(
        &mut self,
        entry: &mut dyn Read,
        name: &str,
        exec: bool,
        size: u64,
    ) -> Result<WrittenBlob> {
        let check = self.check;
        let mut bounded = entry.take(size + 1);
        let written = self
            .batch
            .write(&mut bounded, exec, size)
            .map_err(|e| match e {
                BlobWriteError::Read(e) => check.bad_tar(e),
                BlobWriteError::Store(e) => e,
            })?;
        self.store
            .bytes_hashed
            .fetch_add(written.size, Ordering::Relaxed);
        if written.size != size {
            return Err(check.hostile(
                name,
                HostileReason::SizeMismatch {
                    declared: size,
                    actual: written.size,
                },
            ));
        }
        Ok(written)
    }
}

/// Why an entry that is not a file, directory or symlink is refused: a device or FIFO by
/// its mode, a hard link (it would make two paths one file) or anything else by its kind.
fn unsupported(kind: tar::EntryType, mode: u32) -> HostileReason {
    let permissions = mode & 0o7777;
    match kind {
        tar::EntryType::Char => HostileReason::SpecialFile {
            mode: S_IFCHR | permissions,
        },
        tar::EntryType::Block => HostileReason::SpecialFile {
            mode: S_IFBLK | permissions,
        },
        tar::EntryType::Fifo => HostileReason::SpecialFile {
            mode: S_IFIFO | permissions,
        },
        tar::EntryType::Link => HostileReason::UnsupportedKind {
            kind: "hard link".into(),
        },
        other => HostileReason::UnsupportedKind {
            kind: format!("{other:?}"),
        },
    }
}

impl Ingest<'_> {
    /// Ingest an untrusted module package tar archive at `path`, compressed as `compression`
    /// says, streamed into blobs (see the module docs). As for a module directory
    /// ([`Ingest::module_dir`]), entries named `.git` at any depth are left out and
    /// symlinks to directories or to nothing are kept (only escaping ones are refused), so
    /// the `h1:` may be absent.
    pub fn module_tar(&self, path: &Path, compression: TarCompression) -> Result<IngestedModule> {
        self.store.ensure_trusted()?;
        let file = fs_err::File::open(path).map_err(|e| StoreError::io(path, e))?;
        let size = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
        let check = TarCheck {
            path,
            limits: &self.store.limits,
            size,
        };
        let (tree, blobs) = decompressed(&check, file, compression, |reader| {
            TarIngest::new(self.store, &check).run(reader)
        })?;
        self.store.record_module_tree(&tree, &blobs)
    }
}
