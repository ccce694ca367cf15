//! Zip archives into blobs and a tree. An archive is untrusted: [`ZipCheck`] validates its
//! whole central directory before anything is extracted, then [`Store::extract_zip`] reads
//! every entry through a bounded reader.

use std::collections::HashSet;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::Ordering;

use sha2::{Digest, Sha256};

use super::{IngestedArchive, Limits, RATIO_FLOOR};
use crate::blob::{write_blob, BlobId, BlobWriteError, WrittenBlob};
use crate::error::HostileReason;
use crate::hash::{h1_of_zip_names, sha256_empty, Hash};
use crate::tree::{check_rel_path, EntryKind, Tree, TreeEntry};
use crate::{Result, Store, StoreError};

/// The longest symlink target read from an archive.
const MAX_LINK_TARGET: u64 = 4096;

/// Archives below this many uncompressed bytes are exempt from the whole-archive ratio:
/// small packages of repetitive text legitimately compress very well.
const WHOLE_ARCHIVE_RATIO_FLOOR: u64 = 64 << 20;

type Archive = zip::ZipArchive<BufReader<fs_err::File>>;

#[derive(Clone, Debug)]
enum ZipKind {
    File { exec: bool },
    Dir,
    Symlink { target: String },
}

#[derive(Clone, Debug)]
struct ZipEntry {
    index: usize,
    name: String,
    path: String,
    kind: ZipKind,
    declared: u64,
}

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// Read the raw names of the central directory, in order (at most `max + 1` of them).
fn central_directory_names(path: &Path, start: u64, max: u64) -> Result<Vec<Vec<u8>>> {
    let io_err = |e| StoreError::io(path, e);
    let mut r = BufReader::new(fs_err::File::open(path).map_err(io_err)?);
    r.seek(SeekFrom::Start(start)).map_err(io_err)?;
    let mut names = Vec::new();
    let mut header = [0u8; 46];
    while (names.len() as u64) <= max {
        match r.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(io_err(e)),
        }
        if header[..4] != [0x50, 0x4b, 0x01, 0x02] {
            break;
        }
        let u16_at = |i: usize| u64::from(u16::from_le_bytes([header[i], header[i + 1]]));
        let mut name = vec![0u8; u16_at(28) as usize];
        r.read_exact(&mut name).map_err(io_err)?;
        let skip = u16_at(30) + u16_at(32);
        r.seek_relative(skip as i64).map_err(io_err)?;
        names.push(name);
    }
    Ok(names)
}

/// Normalize an archive entry name to a tree path (`None` for the root itself), or say why not.
fn normalize_name(name: &str) -> std::result::Result<Option<String>, HostileReason> {
    let b = name.as_bytes();
    if name.starts_with('/')
        || name.contains('\\')
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
    {
        return Err(HostileReason::AbsolutePath);
    }
    if name.contains('\0') || name.contains('\n') {
        return Err(HostileReason::InvalidName);
    }
    let mut parts = Vec::new();
    for c in name.split('/') {
        match c {
            ".." => return Err(HostileReason::ParentDir),
            "" | "." => {}
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let path = parts.join("/");
    check_rel_path(&path)?;
    Ok(Some(path))
}

/// The checks made on one archive, with its path for error messages.
struct ZipCheck<'a> {
    path: &'a Path,
    limits: &'a Limits,
    /// The archive's size on disk, for the whole-archive compression ratio.
    size: u64,
}

impl ZipCheck<'_> {
    fn hostile(&self, entry: &str, reason: HostileReason) -> StoreError {
        StoreError::HostileArchive {
            archive: self.path.to_path_buf(),
            entry: entry.to_owned(),
            reason,
        }
    }

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

    /// Every entry checked against the rules (names, kinds, declared sizes, per-entry and
    /// whole-archive compression ratios, symlink targets), in archive order.
    fn entries(&self, zip: &mut Archive, raw_names: &[Vec<u8>]) -> Result<Vec<ZipEntry>> {
        let limits = self.limits;
        let hostile = |entry: &str, reason| self.hostile(entry, reason);
        let bad_zip = |source| self.bad_zip(source);
        let mut entries = Vec::with_capacity(raw_names.len());
        let mut files_seen: HashSet<String> = HashSet::new();
        let mut dirs_seen: HashSet<String> = HashSet::new();
        let mut total = 0u64;
        for (index, raw) in raw_names.iter().enumerate() {
            let Ok(name) = std::str::from_utf8(raw) else {
                return Err(hostile(
                    &String::from_utf8_lossy(raw),
                    HostileReason::InvalidName,
                ));
            };
            let (mode, declared, compressed) = {
                let f = zip.by_index_raw(index).map_err(bad_zip)?;
                if f.name_raw() != raw.as_slice() {
                    return Err(hostile(name, HostileReason::Duplicate));
                }
                (f.unix_mode(), f.size(), f.compressed_size())
            };
            let path = normalize_name(name).map_err(|r| hostile(name, r))?;
            let file_type = mode.map_or(S_IFREG, |m| m & S_IFMT);
            let is_dir = name.ends_with('/') || file_type == S_IFDIR;
            if !is_dir && !matches!(file_type, 0 | S_IFREG | S_IFLNK) {
                return Err(hostile(
                    name,
                    HostileReason::SpecialFile {
                        mode: mode.unwrap_or(0),
                    },
                ));
            }
            if declared > limits.max_entry_bytes {
                return Err(hostile(
                    name,
                    HostileReason::EntryTooLarge {
                        size: declared,
                        limit: limits.max_entry_bytes,
                    },
                ));
            }
            total = total.saturating_add(declared);
            if total > limits.max_total_bytes {
                return Err(hostile(
                    name,
                    HostileReason::TotalTooLarge {
                        size: total,
                        limit: limits.max_total_bytes,
                    },
                ));
            }
            if declared > RATIO_FLOOR && declared / compressed.max(1) > limits.max_ratio {
                return Err(hostile(
                    name,
                    HostileReason::CompressionRatio {
                        size: declared,
                        compressed,
                        limit: limits.max_ratio,
                    },
                ));
            }
            let kind = if is_dir {
                ZipKind::Dir
            } else if file_type == S_IFLNK {
                let mut f = zip.by_index(index).map_err(bad_zip)?;
                let mut target = Vec::new();
                (&mut f)
                    .take(MAX_LINK_TARGET + 1)
                    .read_to_end(&mut target)
                    .map_err(|e| bad_zip(e.into()))?;
                if target.len() as u64 != declared {
                    return Err(hostile(
                        name,
                        HostileReason::SizeMismatch {
                            declared,
                            actual: target.len() as u64,
                        },
                    ));
                }
                let target = String::from_utf8(target)
                    .ok()
                    .filter(|t| !t.contains('\0') && !t.is_empty())
                    .ok_or_else(|| hostile(name, HostileReason::InvalidName))?;
                let tb = target.as_bytes();
                if target.starts_with('/')
                    || target.contains('\\')
                    || (tb.len() >= 2 && tb[0].is_ascii_alphabetic() && tb[1] == b':')
                {
                    return Err(hostile(name, HostileReason::EscapingSymlink { target }));
                }
                ZipKind::Symlink { target }
            } else {
                ZipKind::File {
                    exec: mode.is_some_and(|m| m & 0o111 != 0),
                }
            };
            let Some(path) = path else {
                if is_dir {
                    // "./" or similar: the package root itself.
                    entries.push(ZipEntry {
                        index,
                        name: name.to_owned(),
                        path: String::new(),
                        kind,
                        declared,
                    });
                    continue;
                }
                return Err(hostile(name, HostileReason::InvalidName));
            };
            let clash = if is_dir {
                files_seen.contains(&path) || !dirs_seen.insert(path.clone())
            } else {
                dirs_seen.contains(&path) || !files_seen.insert(path.clone())
            };
            if clash {
                return Err(hostile(name, HostileReason::Duplicate));
            }
            entries.push(ZipEntry {
                index,
                name: name.to_owned(),
                path,
                kind,
                declared,
            });
        }
        // Many entries each below the per-entry ratio floor can still make a bomb together.
        let whole_limit = self
            .size
            .saturating_mul(limits.max_ratio)
            .max(WHOLE_ARCHIVE_RATIO_FLOOR);
        if total > whole_limit {
            return Err(hostile(
                "",
                HostileReason::CompressionRatio {
                    size: total,
                    compressed: self.size,
                    limit: limits.max_ratio,
                },
            ));
        }
        Ok(entries)
    }

    /// Symlinks resolved through the archive's own tree must stay inside the package: a chain
    /// of individually harmless links can still lead outside.
    fn symlinks_stay_inside(&self, entries: &[ZipEntry]) -> Result<()> {
        let hostile = |entry: &str, reason| self.hostile(entry, reason);
        // Resolve symlinks through the archive's own tree before extracting anything: a chain of
        // individually harmless links can still lead outside.
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

/// What extraction produced: the tree's entries, the blobs written, and the `(name,
/// sha256)` lines of the archive's own `h1:`.
struct Extracted {
    tree_entries: Vec<TreeEntry>,
    blobs: Vec<WrittenBlob>,
    zip_lines: Vec<(String, [u8; 32])>,
}

impl Store {
    /// Ingest a zip archive (see the module docs for the checks made before extracting).
    pub fn ingest_zip(&self, zip_path: &Path) -> Result<IngestedArchive> {
        let zh = self.zh_of(zip_path)?;
        let file = fs_err::File::open(zip_path).map_err(|e| StoreError::io(zip_path, e))?;
        let size = file
            .metadata()
            .map_err(|e| StoreError::io(zip_path, e))?
            .len();
        let check = ZipCheck {
            path: zip_path,
            limits: &self.limits,
            size,
        };
        let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| check.bad_zip(e))?;
        let raw_names = check.names(&zip)?;
        let entries = check.entries(&mut zip, &raw_names)?;
        check.symlinks_stay_inside(&entries)?;
        let Extracted {
            tree_entries,
            blobs,
            zip_lines,
        } = self.extract_zip(&check, &mut zip, entries)?;
        let tree = Tree::new(tree_entries).map_err(|e| check.hostile(&e.entry, e.reason))?;
        let h1_zip = h1_of_zip_names(&zip_lines)
            .map_err(|e| check.hostile(&e.0, HostileReason::InvalidName))?;
        let ingested = self.record_tree(&tree, &blobs)?;
        Ok(IngestedArchive {
            ingested,
            zh,
            h1_zip,
        })
    }

    /// The archive's `zh:` (SHA-256 of its bytes), in one pass.
    fn zh_of(&self, zip_path: &Path) -> Result<Hash> {
        let mut file = fs_err::File::open(zip_path).map_err(|e| StoreError::io(zip_path, e))?;
        let mut sha = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io(zip_path, e)),
            };
            sha.update(&buf[..n]);
            self.bytes_hashed.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(Hash::zh_from_sha256(&sha.finalize().into()))
    }

    /// Extract the checked entries, each through a reader bounded by its declared size: an
    /// entry whose content is not exactly that size is refused.
    fn extract_zip(
        &self,
        check: &ZipCheck<'_>,
        zip: &mut Archive,
        entries: Vec<ZipEntry>,
    ) -> Result<Extracted> {
        let hostile = |entry: &str, reason| check.hostile(entry, reason);
        let bad_zip = |source| check.bad_zip(source);
        let mut tree_entries = Vec::new();
        let mut blobs = Vec::new();
        let mut zip_lines: Vec<(String, [u8; 32])> = Vec::with_capacity(entries.len());
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
                ZipKind::Dir => {
                    // A directory entry with content: HashZip hashes what it holds.
                    let mut f = zip.by_index(e.index).map_err(bad_zip)?;
                    let mut sha = Sha256::new();
                    let n = io::copy(&mut (&mut f).take(e.declared + 1), &mut sha)
                        .map_err(|err| bad_zip(err.into()))?;
                    if n != e.declared {
                        return Err(hostile(
                            &e.name,
                            HostileReason::SizeMismatch {
                                declared: e.declared,
                                actual: n,
                            },
                        ));
                    }
                    sha.finalize().into()
                }
                ZipKind::File { exec } => {
                    let mut f = zip.by_index(e.index).map_err(bad_zip)?;
                    let mut bounded = (&mut f).take(e.declared + 1);
                    let written =
                        write_blob(&self.layout, &mut bounded, exec).map_err(|err| match err {
                            BlobWriteError::Read(err) => bad_zip(err.into()),
                            BlobWriteError::Store(err) => err,
                        })?;
                    self.bytes_hashed.fetch_add(written.size, Ordering::Relaxed);
                    if written.size != e.declared {
                        return Err(hostile(
                            &e.name,
                            HostileReason::SizeMismatch {
                                declared: e.declared,
                                actual: written.size,
                            },
                        ));
                    }
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
        Ok(Extracted {
            tree_entries,
            blobs,
            zip_lines,
        })
    }
}
