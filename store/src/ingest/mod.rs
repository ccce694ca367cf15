//! Ingest: turning a directory or a zip archive into blobs and a tree.
//!
//! Ingested content is *not* a package yet: it becomes visible only through
//! [`Store::commit_package`]. A failed ingest may leave unreferenced blobs behind (gc removes
//! them) but never a visible package.
//!
//! Zip archives are untrusted. Before anything is extracted, the whole central directory is
//! validated: names (no `..`, no absolute or backslash paths, no duplicates after normalization),
//! entry kinds (no devices, FIFOs or sockets), symlinks (resolved through the archive's own tree,
//! they must stay inside the package), and the declared sizes against [`Limits`]. Declared sizes
//! may lie, so extraction then reads every entry through a bounded reader and refuses any entry
//! whose content is not exactly its declared size. Exact duplicate names are detected by reading
//! the central directory ourselves, because the `zip` crate silently keeps only the last one.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use rusqlite::TransactionBehavior;
use sha2::{Digest, Sha256};

use crate::blob::{write_blob, BlobId, BlobWriteError, WrittenBlob};
use crate::error::HostileReason;
use crate::hash::{h1_of_zip_names, sha256_empty, Hash};
use crate::index::tree_row;
use crate::tree::{check_rel_path, EntryKind, Tree, TreeEntry, TreeError, TreeId};
use crate::{Result, Store, StoreError};

/// Limits applied to archives before anything is extracted.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Total uncompressed bytes of an archive (default 4 GiB).
    pub max_total_bytes: u64,
    /// Uncompressed bytes of one entry (default 2 GiB).
    pub max_entry_bytes: u64,
    /// Number of entries (default 100 000).
    pub max_entries: u64,
    /// Uncompressed/compressed ratio of one entry (default 200). Only applied to entries larger
    /// than 1 MiB: small files of repetitive text legitimately compress very well.
    pub max_ratio: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_bytes: 4 << 30,
            max_entry_bytes: 2 << 30,
            max_entries: 100_000,
            max_ratio: 200,
        }
    }
}

/// Entries at most this large are exempt from the compression ratio limit.
const RATIO_FLOOR: u64 = 1 << 20;

/// Longest symlink target accepted from an archive.
const MAX_LINK_TARGET: u64 = 4096;

/// Result of ingesting content: its tree, not yet a package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ingested {
    /// The tree (recorded in the index).
    pub tree: TreeId,
    /// Directory-form `h1:` over the extracted files (spec 1.2).
    pub h1: Hash,
    /// Number of regular files.
    pub files: u64,
    /// Total bytes of the regular files.
    pub bytes: u64,
}

/// Result of ingesting a module package directory ([`Store::ingest_module_dir`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestedModule {
    /// The tree (recorded in the index).
    pub tree: TreeId,
    /// Directory-form `h1:`, unless the tree has symlinks that cannot be hashed as files
    /// (to directories, dangling): `h1:` is a provider notion, modules do not need it.
    pub h1: Option<Hash>,
    /// Number of regular files.
    pub files: u64,
    /// Total bytes of the regular files.
    pub bytes: u64,
}

/// Result of ingesting a zip archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestedArchive {
    /// The extracted tree and its directory-form `h1:`.
    pub ingested: Ingested,
    /// `zh:` — sha256 of the zip file.
    pub zh: Hash,
    /// `h1:` in the `HashZip` form: over central-directory names as stored, directory entries
    /// included (spec 1.3 V3). Equal to `ingested.h1` when the zip has no directory entries.
    pub h1_zip: Hash,
}

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

impl Store {
    /// Ingest a directory: regular files become blobs (executable if any x bit is set),
    /// symlinks are recorded as symlinks (they must stay inside the directory), directories are
    /// implied, anything else is refused. A symlinked `dir` is resolved first (like Terraform's
    /// `EvalSymlinks` on the root).
    pub fn ingest_dir(&self, dir: &Path) -> Result<Ingested> {
        let (tree, blobs) = self.dir_tree(dir, false)?;
        self.record_tree(&tree, &blobs)
    }

    /// Ingest a module package directory (issue 5): like [`Store::ingest_dir`], but every
    /// entry named `.git` (directory or file, at any depth) is left out, and symlinks to
    /// directories or to nothing are kept (only escaping ones are refused), so the `h1:` may be
    /// absent.
    pub fn ingest_module_dir(&self, dir: &Path) -> Result<IngestedModule> {
        let (tree, blobs) = self.dir_tree(dir, true)?;
        let (tree, h1, files, bytes) = self.record_tree_with(&tree, &blobs, false)?;
        Ok(IngestedModule {
            tree,
            h1,
            files,
            bytes,
        })
    }

    fn dir_tree(&self, dir: &Path, skip_git: bool) -> Result<(Tree, Vec<WrittenBlob>)> {
        use std::os::unix::fs::PermissionsExt as _;
        let root = fs_err::canonicalize(dir).map_err(|e| StoreError::io(dir, e))?;
        let hostile = |entry: String, reason| StoreError::HostileDirectory {
            dir: dir.to_path_buf(),
            entry,
            reason,
        };
        let mut entries = Vec::new();
        let mut blobs = Vec::new();
        for entry in walkdir::WalkDir::new(&root)
            .follow_links(false)
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| !(skip_git && e.file_name() == ".git"))
        {
            let entry = entry.map_err(|e| {
                let p = e.path().unwrap_or(&root).to_path_buf();
                StoreError::io(p, e.into())
            })?;
            let rel_os = entry
                .path()
                .strip_prefix(&root)
                .expect("walk stays under root");
            let Some(rel) = rel_os.to_str() else {
                return Err(hostile(
                    rel_os.to_string_lossy().into_owned(),
                    HostileReason::InvalidName,
                ));
            };
            let ft = entry.file_type();
            if ft.is_dir() {
                continue;
            }
            let rel = rel.to_owned();
            if ft.is_file() {
                let meta = entry
                    .metadata()
                    .map_err(|e| StoreError::io(entry.path(), e.into()))?;
                let exec = meta.permissions().mode() & 0o111 != 0;
                let mut file = fs_err::File::open(entry.path())
                    .map_err(|e| StoreError::io(entry.path(), e))?;
                let written = write_blob(&self.layout, &mut file, exec).map_err(|e| match e {
                    BlobWriteError::Read(e) => StoreError::io(entry.path(), e),
                    BlobWriteError::Store(e) => e,
                })?;
                self.bytes_hashed.fetch_add(written.size, Ordering::Relaxed);
                entries.push(TreeEntry {
                    path: rel,
                    kind: EntryKind::File {
                        blob: written.id,
                        exec,
                    },
                });
                blobs.push(written);
            } else if ft.is_symlink() {
                let target =
                    fs_err::read_link(entry.path()).map_err(|e| StoreError::io(entry.path(), e))?;
                let Some(target) = target.to_str() else {
                    return Err(hostile(rel, HostileReason::InvalidName));
                };
                entries.push(TreeEntry {
                    path: rel,
                    kind: EntryKind::Symlink {
                        target: target.to_owned(),
                    },
                });
            } else {
                let meta = entry
                    .metadata()
                    .map_err(|e| StoreError::io(entry.path(), e.into()))?;
                let mode = std::os::unix::fs::MetadataExt::mode(&meta);
                return Err(hostile(rel, HostileReason::SpecialFile { mode }));
            }
        }
        let tree =
            Tree::new(entries).map_err(|TreeError { entry, reason }| hostile(entry, reason))?;
        if let Some((path, target)) = tree.escaping_symlink() {
            return Err(hostile(
                path.to_owned(),
                HostileReason::EscapingSymlink {
                    target: target.to_owned(),
                },
            ));
        }
        Ok((tree, blobs))
    }

    /// Ingest a zip archive (see the module docs for the checks made before extracting).
    pub fn ingest_zip(&self, zip_path: &Path) -> Result<IngestedArchive> {
        let limits = &self.limits;
        let hostile = |entry: &str, reason| StoreError::HostileArchive {
            archive: zip_path.to_path_buf(),
            entry: entry.to_owned(),
            reason,
        };
        let bad_zip = |source| StoreError::BadZip {
            archive: zip_path.to_path_buf(),
            source,
        };

        // zh: one pass over the archive bytes.
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
        let zh = Hash::zh_from_sha256(&sha.finalize().into());
        file.seek(SeekFrom::Start(0))
            .map_err(|e| StoreError::io(zip_path, e))?;

        let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(bad_zip)?;

        // 1. Validate the whole central directory.
        let raw_names =
            central_directory_names(zip_path, zip.central_directory_start(), limits.max_entries)?;
        let count = raw_names.len().max(zip.len()) as u64;
        if count > limits.max_entries {
            return Err(hostile(
                "",
                HostileReason::TooManyEntries {
                    count,
                    limit: limits.max_entries,
                },
            ));
        }
        let mut seen_raw = HashSet::new();
        for raw in &raw_names {
            if !seen_raw.insert(raw.as_slice()) {
                return Err(hostile(
                    &String::from_utf8_lossy(raw),
                    HostileReason::Duplicate,
                ));
            }
        }
        if raw_names.len() != zip.len() {
            return Err(hostile("", HostileReason::Duplicate));
        }

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

        // 2. Extract, entry by entry, through bounded readers.
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
        let tree = Tree::new(tree_entries).map_err(|e| hostile(&e.entry, e.reason))?;
        let h1_zip =
            h1_of_zip_names(&zip_lines).map_err(|e| hostile(&e.0, HostileReason::InvalidName))?;
        let ingested = self.record_tree(&tree, &blobs)?;
        Ok(IngestedArchive {
            ingested,
            zh,
            h1_zip,
        })
    }

    /// Record blobs (already durable) and the tree in the index; compute its `h1:` unless the
    /// index already has it.
    fn record_tree(&self, tree: &Tree, blobs: &[WrittenBlob]) -> Result<Ingested> {
        let (tree, h1, files, bytes) = self.record_tree_with(tree, blobs, true)?;
        Ok(Ingested {
            tree,
            h1: h1.expect("required h1 is present"),
            files,
            bytes,
        })
    }

    /// Record a tree; without `require_h1` an unhashable tree is recorded with an empty `h1`
    /// column (read back as `None`).
    fn record_tree_with(
        &self,
        tree: &Tree,
        blobs: &[WrittenBlob],
        require_h1: bool,
    ) -> Result<(TreeId, Option<Hash>, u64, u64)> {
        let id = tree.id();
        let id_str = id.to_string();
        let sha_of: HashMap<BlobId, [u8; 32]> = blobs.iter().map(|b| (b.id, b.sha256)).collect();
        let size_of: HashMap<BlobId, u64> = blobs.iter().map(|b| (b.id, b.size)).collect();
        let mut index = self.index();
        if let Some(row) = tree_row(&index.conn, &id_str).map_err(index.err("reading a tree"))? {
            let h1 = if row.h1.is_empty() {
                if require_h1 {
                    // Recorded by a module ingest as unhashable: say why.
                    Some(tree.h1(&sha_of)?)
                } else {
                    None
                }
            } else {
                Some(row.h1.parse()?)
            };
            return Ok((id, h1, row.files, row.bytes));
        }
        let h1 = match tree.h1(&sha_of) {
            Ok(h1) => Some(h1),
            Err(StoreError::Unhashable { .. }) if !require_h1 => None,
            Err(e) => return Err(e),
        };
        let h1_text = h1.as_ref().map(ToString::to_string).unwrap_or_default();
        let (mut files, mut bytes) = (0u64, 0u64);
        for e in tree.entries() {
            if let EntryKind::File { blob, .. } = &e.kind {
                files += 1;
                bytes += size_of[blob];
            }
        }
        let index_path = index.path.clone();
        let err = |source| StoreError::Index {
            path: index_path.clone(),
            context: format!("recording tree {id}"),
            source,
        };
        let tx = index
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let result: rusqlite::Result<()> = (|| {
            let mut put_blob =
                tx.prepare("INSERT OR IGNORE INTO blobs (id, size, sha256) VALUES (?1, ?2, ?3)")?;
            for b in blobs {
                put_blob.execute(rusqlite::params![b.id.to_string(), b.size, &b.sha256[..]])?;
            }
            drop(put_blob);
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO trees (id, encoding, h1, files, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![id_str, tree.encode(), h1_text, files, bytes],
            )?;
            if inserted > 0 {
                let mut link =
                    tx.prepare("INSERT OR IGNORE INTO tree_blobs (tree, blob) VALUES (?1, ?2)")?;
                for blob in tree.blobs() {
                    link.execute([&id_str, &blob.to_string()])?;
                }
            }
            Ok(())
        })();
        result.map_err(err)?;
        tx.commit().map_err(err)?;
        Ok((id, h1, files, bytes))
    }
}

/// Path to use as the key of a source memo: the canonical absolute path.
pub(crate) fn source_key(path: &Path) -> Result<String> {
    let canonical: PathBuf = fs_err::canonicalize(path).map_err(|e| StoreError::io(path, e))?;
    Ok(canonical.to_string_lossy().into_owned())
}
