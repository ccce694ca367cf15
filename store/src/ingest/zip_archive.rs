//! Zip archives into blobs and a tree. An archive is untrusted: [`ZipCheck`] validates its
//! whole central directory against the [`rules`](super::rules) before anything is extracted,
//! then [`Store::extract_zip`] reads every entry through a bounded reader.

use std::collections::HashSet;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::Ordering;

use sha2::{Digest, Sha256};

use super::rules::{
    check_link_target, check_sizes, check_whole_ratio, classify, normalize_name, Claims,
    DeclaredKind, MAX_LINK_TARGET,
};
use super::zip_central;
use super::Ingest;
use super::IngestedArchive;
use crate::blob::{read_file_chunks, BlobBatch, BlobId, BlobWriteError, WrittenBlob};
use crate::error::HostileReason;
use crate::hash::{h1_of_zip_names, sha256_empty, Hash};
use crate::hashing_copy::PIPELINE_MIN;
use crate::ids::TreeId;
use crate::tree::{EntryKind, Tree, TreeEntry};
use crate::{Limits, Result, Store, StoreError};
use rusqlite::OptionalExtension as _;

type Archive = zip::ZipArchive<BufReader<fs_err::File>>;

/// What a checked entry is.
#[derive(Clone, Debug)]
enum ZipKind {
    /// A regular file, executable if any x bit of its mode is set.
    File { exec: bool },
    /// A directory: implied by the paths under it, but a line of the archive's `h1:`.
    Dir,
    /// A symlink with its (checked) target.
    Symlink { target: String },
}

/// An entry that passed the checks, ready to extract.
#[derive(Clone, Debug)]
struct ZipEntry {
    /// Its index in the central directory.
    index: usize,
    /// Its name as stored (what errors and the archive's `h1:` name).
    name: String,
    /// Its normalized tree path (empty for the package root itself).
    path: String,
    kind: ZipKind,
    /// The uncompressed size the central directory declares.
    declared: u64,
}

/// Read the raw names of the central directory, in order (at most `max + 1` of them).
fn central_directory_names(path: &Path, start: u64, max: u64) -> Result<Vec<Vec<u8>>> {
    let io_err = |e| StoreError::io(path, e);
    let mut r = BufReader::new(fs_err::File::open(path).map_err(io_err)?);
    r.seek(SeekFrom::Start(start)).map_err(io_err)?;
    let mut names = Vec::new();
    while (names.len() as u64) <= max {
        match zip_central::signature(&mut r) {
            Ok(Some(zip_central::CENTRAL_RECORD)) => {}
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(io_err(e)),
        }
        names.push(zip_central::record(&mut r).map_err(io_err)?.name);
    }
    Ok(names)
}

/// The checks made on one archive, with its path for error messages.
struct ZipCheck<'a> {
    path: &'a Path,
    limits: &'a Limits,
    /// The archive's size on disk, for the whole-archive compression ratio.
    size: u64,
}

impl ZipCheck<'_> {
    /// The archive refused because of `entry` (empty: the archive as a whole).
    fn hostile(&self, entry: &str, reason: HostileReason) -> StoreError {
        StoreError::HostileArchive {
            archive: self.path.to_path_buf(),
            entry: entry.to_owned(),
            reason,
        }
    }

    /// The archive cannot be read as a zip.
    fn bad_zip(&self, source: zip::result::ZipError) -> StoreError {
        StoreError::BadZip {
            archive: self.path.to_path_buf(),
            source,
        }
    }

    /// The raw names of the central directory: no more entries than the limit, no name twice
    /// (read ourselves: the `zip` crate keeps only the last of two equal names).
    fn names(&self, zip: &Archive) -> Result<Vec<Vec<u8>>> {
        let raw_names = central_directory_names(
            self.path,
            zip.central_directory_start(),
            self.limits.max_entries,
        )?;
        let count = raw_names.len().max(zip.len()) as u64;
        if count > self.limits.max_entries {
            return Err(self.hostile(
                "",
                HostileReason::TooManyEntries {
                    count,
                    limit: self.limits.max_entries,
                },
            ));
        }
        let mut seen_raw = HashSet::new();
        for raw in &raw_names {
            if !seen_raw.insert(raw.as_slice()) {
                return Err(self.hostile(&String::from_utf8_lossy(raw), HostileReason::Duplicate));
            }
        }
        if raw_names.len() != zip.len() {
            return Err(self.hostile("", HostileReason::Duplicate));
        }
        Ok(raw_names)
    }

    /// Every entry checked against the rules, in archive order: each entry alone (see
    /// [`ZipCheck::entry`]), no normalized path twice, and the whole-archive compression
    /// ratio.
    fn entries(&self, zip: &mut Archive, raw_names: &[Vec<u8>]) -> Result<Vec<ZipEntry>> {
        let mut entries = Vec::with_capacity(raw_names.len());
        let mut claims = Claims::default();
        let mut total = 0u64;
        for (index, raw) in raw_names.iter().enumerate() {
            let entry = self.entry(zip, index, raw, &mut total)?;
            // The root itself ("./") claims nothing.
            let is_dir = matches!(entry.kind, ZipKind::Dir);
            if !entry.path.is_empty() && !claims.claim(&entry.path, is_dir) {
                return Err(self.hostile(&entry.name, HostileReason::Duplicate));
            }
            entries.push(entry);
        }
        check_whole_ratio(self.limits, self.size, total).map_err(|r| self.hostile("", r))?;
        Ok(entries)
    }

    /// Entry `index`, whose central-directory name is `raw`, checked alone: its name is
    /// UTF-8 and the one the `zip` crate finds at that index (else two entries share it),
    /// normalizes to a tree path (or, for a directory, to the root), and declares a kind and
    /// sizes the rules allow (`total` adds its declared size); a symlink's target is read
    /// and checked.
    fn entry(
        &self,
        zip: &mut Archive,
        index: usize,
        raw: &[u8],
        total: &mut u64,
    ) -> Result<ZipEntry> {
        let Ok(name) = std::str::from_utf8(raw) else {
            return Err(self.hostile(&String::from_utf8_lossy(raw), HostileReason::InvalidName));
        };
        let hostile = |reason| self.hostile(name, reason);
        let (mode, declared, compressed) = {
            let f = zip.by_index_raw(index).map_err(|e| self.bad_zip(e))?;
            if f.name_raw() != raw {
                return Err(hostile(HostileReason::Duplicate));
            }
            (f.unix_mode(), f.size(), f.compressed_size())
        };
        let path = normalize_name(name).map_err(hostile)?;
        let kind = classify(name, mode).map_err(hostile)?;
        *total = total.saturating_add(declared);
        check_sizes(self.limits, declared, compressed, *total).map_err(hostile)?;
        let kind = match kind {
            DeclaredKind::Dir => ZipKind::Dir,
            DeclaredKind::File { exec } => ZipKind::File { exec },
            DeclaredKind::Symlink => ZipKind::Symlink {
                target: self.link_target(zip, index, name, declared)?,
            },
        };
        let path = match path {
            Some(path) => path,
            // "./" or similar: the package root itself.
            None if matches!(kind, ZipKind::Dir) => String::new(),
            None => return Err(hostile(HostileReason::InvalidName)),
        };
        Ok(ZipEntry {
            index,
            name: name.to_owned(),
            path,
            kind,
            declared,
        })
    }

    /// The target of symlink entry `index`: exactly its declared size (at most
    /// [`MAX_LINK_TARGET`] bytes are read) and a usable relative target.
    fn link_target(
        &self,
        zip: &mut Archive,
        index: usize,
        name: &str,
        declared: u64,
    ) -> Result<String> {
        let mut f = zip.by_index(index).map_err(|e| self.bad_zip(e))?;
        let mut target = Vec::new();
        (&mut f)
            .take(MAX_LINK_TARGET + 1)
            .read_to_end(&mut target)
            .map_err(|e| self.bad_zip(e.into()))?;
        self.exact_size(name, declared, target.len() as u64)?;
        check_link_target(target).map_err(|r| self.hostile(name, r))
    }

    /// Content must have exactly the size the central directory declares: declared sizes
    /// are what the limits were checked against.
    fn exact_size(&self, name: &str, declared: u64, actual: u64) -> Result<()> {
        if actual != declared {
            return Err(self.hostile(name, HostileReason::SizeMismatch { declared, actual }));
        }
        Ok(())
    }

    /// The SHA-256 of directory entry `index`'s content, read through a bound of one byte
    /// more than `declared` and refused unless it had exactly that size. A directory entry
    /// normally holds nothing, but Go's `dirhash.HashZip`, which tofu uses for a zip's `h1:`,
    /// hashes whatever it holds
    /// (<https://github.com/golang/mod/blob/master/sumdb/dirhash/hash.go>).
    fn dir_content_sha256(
        &self,
        zip: &mut Archive,
        index: usize,
        name: &str,
        declared: u64,
    ) -> Result<[u8; 32]> {
        let mut f = zip.by_index(index).map_err(|e| self.bad_zip(e))?;
        let mut sha = Sha256::new();
        let n = io::copy(&mut (&mut f).take(declared + 1), &mut sha)
            .map_err(|err| self.bad_zip(err.into()))?;
        self.exact_size(name, declared, n)?;
        Ok(sha.finalize().into())
    }

    /// Symlinks resolved through the archive's own tree must stay inside the package: a chain
    /// of individually harmless links can still lead outside.
    fn symlinks_stay_inside(&self, entries: &[ZipEntry]) -> Result<()> {
        let hostile = |entry: &str, reason| self.hostile(entry, reason);
        let skeleton: Vec<TreeEntry> = entries
            .iter()
            .filter_map(|e| {
                let kind = match &e.kind {
                    ZipKind::File { exec } => EntryKind::File {
                        blob: BlobId([0; 32]),
                        exec: *exec,
                    },
                    ZipKind::Symlink { target } => EntryKind::Symlink {
                        target: target.clone(),
                    },
                    ZipKind::Dir => return None,
                };
                Some(TreeEntry {
                    path: e.path.clone(),
                    kind,
                })
            })
            .collect();
        let skeleton = Tree::new(skeleton).map_err(|e| {
            let name = entries
                .iter()
                .find(|z| z.path == e.entry)
                .map_or(e.entry.clone(), |z| z.name.clone());
            hostile(&name, e.reason)
        })?;
        if let Some((path, target)) = skeleton.escaping_symlink() {
            let name = entries
                .iter()
                .find(|z| z.path == path)
                .map_or(path, |z| z.name.as_str());
            return Err(hostile(
                name,
                HostileReason::EscapingSymlink {
                    target: target.to_owned(),
                },
            ));
        }
        Ok(())
    }
}

/// The `(name, sha256)` lines of an archive's own `h1:`, in archive order.
type ZipLines = Vec<(String, [u8; 32])>;

/// What extraction produced: the tree's entries, the blobs written, and the `(name,
/// sha256)` lines of the archive's own `h1:`.
struct Extracted {
    tree_entries: Vec<TreeEntry>,
    blobs: Vec<WrittenBlob>,
    zip_lines: Vec<(String, [u8; 32])>,
}

impl Store {
    /// The zip as a whole (its `zh:`, and the zip kept as a blob with `keep`) and its
    /// entries are two reads of the file: for a large zip they run at once, on two threads.
    fn ingest_zip_with(&self, zip_path: &Path, keep: bool) -> Result<IngestedArchive> {
        self.ensure_trusted()?;
        let file = fs_err::File::open(zip_path).map_err(|e| StoreError::io(zip_path, e))?;
        let size = file
            .metadata()
            .map_err(|e| StoreError::io(zip_path, e))?
            .len();
        let whole = || -> Result<(Hash, Option<WrittenBlob>)> {
            if keep {
                let blob = self.keep_zip(zip_path, size)?;
                Ok((Hash::zh_from_sha256(&blob.sha256), Some(blob)))
            } else {
                Ok((self.zh_of(zip_path)?, None))
            }
        };
        let check = ZipCheck {
            path: zip_path,
            limits: &self.limits,
            size,
        };
        let (whole, extracted) = if size >= PIPELINE_MIN {
            std::thread::scope(|scope| {
                let whole = scope.spawn(whole);
                let extracted = self.check_and_extract(&check, file);
                (
                    whole.join().expect("the zip hashing thread panicked"),
                    extracted,
                )
            })
        } else {
            (whole(), self.check_and_extract(&check, file))
        };
        // A refused archive says why before anything about the whole file.
        let (tree, blobs, zip_lines) = extracted?;
        let (zh, kept) = whole?;
        let h1_zip = h1_of_zip_names(&zip_lines)
            .map_err(|e| check.hostile(&e.0, HostileReason::InvalidName))?;
        let ingested = self.record_tree(&tree, &blobs)?;
        if let Some(blob) = &kept {
            self.record_archive(&ingested.tree, blob, &zh)?;
        }
        Ok(IngestedArchive {
            ingested,
            zh,
            h1_zip,
        })
    }

    /// Check the archive's entries, then extract them into durable blobs and a tree; with
    /// the archive's own `h1:` lines.
    fn check_and_extract(
        &self,
        check: &ZipCheck<'_>,
        file: fs_err::File,
    ) -> Result<(Tree, Vec<WrittenBlob>, ZipLines)> {
        let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| check.bad_zip(e))?;
        let raw_names = check.names(&zip)?;
        let entries = check.entries(&mut zip, &raw_names)?;
        check.symlinks_stay_inside(&entries)?;
        let Extracted {
            tree_entries,
            blobs,
            zip_lines,
        } = self.extract_zip(check, &mut zip, entries)?;
        let tree = Tree::new(tree_entries).map_err(|e| check.hostile(&e.entry, e.reason))?;
        Ok((tree, blobs, zip_lines))
    }

    /// Write the zip at `zip_path` as a durable blob, hashing it in the same pass.
    fn keep_zip(&self, zip_path: &Path, size: u64) -> Result<WrittenBlob> {
        let mut file = fs_err::File::open(zip_path).map_err(|e| StoreError::io(zip_path, e))?;
        let mut batch = self.blob_batch();
        let written = batch
            .write(&mut file, false, size)
            .map_err(|err| match err {
                BlobWriteError::Read(e) => StoreError::io(zip_path, e),
                BlobWriteError::Store(e) => e,
            })?;
        batch.finish()?;
        self.bytes_hashed.fetch_add(written.size, Ordering::Relaxed);
        Ok(written)
    }

    /// Record `blob` as the archive `zh` of `tree`: its `archives` row, and a `tree_blobs`
    /// row so that the tree keeps it alive (gc) and checked (verify, repair).
    fn record_archive(&self, tree: &TreeId, blob: &WrittenBlob, zh: &Hash) -> Result<()> {
        let mut index = self.index();
        let boot = self.durability.boot();
        let (tx, op) = index.write(format!("recording the archive {zh} of tree {tree}"))?;
        let err = op.err();
        let (tree, id) = (tree.to_string(), blob.id.to_string());
        let result: rusqlite::Result<()> = (|| {
            tx.execute(
                crate::durability::PUT_BLOB,
                rusqlite::params![
                    id,
                    blob.size,
                    &blob.sha256[..],
                    blob.written_now.then_some(boot).flatten()
                ],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO tree_blobs (tree, blob) VALUES (?1, ?2)",
                [&tree, &id],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO archives (zh, tree, blob) VALUES (?1, ?2, ?3)",
                [&zh.to_string(), &tree, &id],
            )?;
            Ok(())
        })();
        result.map_err(err)?;
        tx.commit().map_err(err)
    }

    /// The zip kept whole whose SHA-256 is `zh` ([`Store::with_kept_archives`]): the path
    /// of its blob file (read-only; its content was hashed when written, `store verify`
    /// checks it like every blob), or `None` when the store does not hold that archive.
    pub fn kept_archive(&self, zh: &Hash) -> Result<Option<std::path::PathBuf>> {
        self.ensure_trusted()?;
        let index = self.index();
        let blob: Option<String> = index
            .conn
            .query_row(
                "SELECT blob FROM archives WHERE zh = ?1",
                [zh.to_string()],
                |r| r.get(0),
            )
            .optional()
            .map_err(index.err("reading a kept archive"))?;
        drop(index);
        let Some(blob) = blob else {
            return Ok(None);
        };
        Ok(Some(self.layout.blob_path(&blob.parse::<BlobId>()?)))
    }

    /// The first of `hashes`' `zh:` hashes whose zip the store kept, with its blob file
    /// ([`Store::kept_archive`]): whether, and which, source zip of a package is kept.
    pub fn kept_archive_of(
        &self,
        hashes: &[crate::HashRecord],
    ) -> Result<Option<(Hash, std::path::PathBuf)>> {
        for record in hashes.iter().filter(|r| matches!(r.hash, Hash::Zh(_))) {
            if let Some(path) = self.kept_archive(&record.hash)? {
                return Ok(Some((record.hash.clone(), path)));
            }
        }
        Ok(None)
    }

    /// The archive's `zh:` (SHA-256 of its bytes), in one pass.
    fn zh_of(&self, zip_path: &Path) -> Result<Hash> {
        let mut sha = Sha256::new();
        read_file_chunks(zip_path, &self.bytes_hashed, |chunk| sha.update(chunk))?;
        Ok(Hash::zh_from_sha256(&sha.finalize().into()))
    }

    /// Extract the checked entries, each through a reader bounded by its declared size: an
    /// entry whose content is not exactly that size is refused. Symlinks become tree entries
    /// and directories are implied by paths; every entry, directories included, gives its
    /// line of the archive's own `h1:`.
    fn extract_zip(
        &self,
        check: &ZipCheck<'_>,
        zip: &mut Archive,
        entries: Vec<ZipEntry>,
    ) -> Result<Extracted> {
        let mut tree_entries = Vec::new();
        let mut blobs = Vec::new();
        let mut zip_lines: Vec<(String, [u8; 32])> = Vec::with_capacity(entries.len());
        let mut batch = self.blob_batch();
        for e in entries {
            let sha256 = match e.kind {
                ZipKind::Symlink { target } => {
                    let sha = Sha256::digest(target.as_bytes()).into();
                    tree_entries.push(TreeEntry {
                        path: e.path,
                        kind: EntryKind::Symlink { target },
                    });
                    sha
                }
                ZipKind::Dir if e.declared == 0 => sha256_empty(),
                ZipKind::Dir => check.dir_content_sha256(zip, e.index, &e.name, e.declared)?,
                ZipKind::File { exec } => {
                    let written = self.extract_file(check, zip, &mut batch, &e, exec)?;
                    tree_entries.push(TreeEntry {
                        path: e.path,
                        kind: EntryKind::File {
                            blob: written.id,
                            exec,
                        },
                    });
                    blobs.push(written);
                    written.sha256
                }
            };
            zip_lines.push((e.name, sha256));
        }
        batch.finish()?;
        Ok(Extracted {
            tree_entries,
            blobs,
            zip_lines,
        })
    }

    /// Write file `entry` as a blob (to `batch`), reading at most one byte more than its declared size,
    /// and refuse it unless it had exactly that size.
    fn extract_file(
        &self,
        check: &ZipCheck<'_>,
        zip: &mut Archive,
        batch: &mut BlobBatch<'_>,
        entry: &ZipEntry,
        exec: bool,
    ) -> Result<WrittenBlob> {
        let (name, declared) = (entry.name.as_str(), entry.declared);
        let mut f = zip.by_index(entry.index).map_err(|e| check.bad_zip(e))?;
        let mut bounded = (&mut f).take(declared + 1);
        let written = batch
            .write(&mut bounded, exec, declared)
            .map_err(|err| match err {
                BlobWriteError::Read(err) => check.bad_zip(err.into()),
                BlobWriteError::Store(err) => err,
            })?;
        self.bytes_hashed.fetch_add(written.size, Ordering::Relaxed);
        check.exact_size(name, declared, written.size)?;
        Ok(written)
    }
}

impl Ingest<'_> {
    /// Ingest an untrusted zip archive. Its whole central directory is checked before anything
    /// is extracted (no `..`, absolute paths, escaping symlinks, devices or duplicates; entry
    /// count, sizes and compression ratios within [`Limits`]), and every entry must then have
    /// exactly its declared size. A refused archive leaves at most unreferenced blobs.
    pub fn zip(&self, zip_path: &Path) -> Result<IngestedArchive> {
        self.store.ingest_zip_with(zip_path, false)
    }

    /// [`Ingest::zip`], and, when the store keeps archives
    /// ([`Store::with_kept_archives`]), the zip itself written as a blob (its SHA-256, the
    /// `zh:`, computed in that same pass) and recorded as the tree's archive. For archives
    /// worth publishing as they came (a provider's, whose `zh:` lock files hold).
    pub fn zip_keeping_it(&self, zip_path: &Path) -> Result<IngestedArchive> {
        self.store
            .ingest_zip_with(zip_path, self.store.keep_archives)
    }
}
