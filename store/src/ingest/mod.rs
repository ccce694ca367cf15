//! Ingest: turning a directory, a zip or a tar archive into blobs and a tree.
//!
//! Ingested content is *not* a package yet: it becomes visible only through
//! [`Store::commit_package`]. A failed ingest may leave unreferenced blobs behind (gc removes
//! them) but never a visible package.
//!
//! Zip archives are untrusted. Before anything is extracted, the whole central directory is
//! validated ([`rules`] holds the per-entry rules): names (no `..`, no absolute or backslash
//! paths, no duplicates after normalization), entry kinds (no devices, FIFOs or sockets),
//! symlinks (resolved through the archive's own tree, they must stay inside the package), and
//! the declared sizes against [`Limits`] (per entry, in total, and the compression ratio of
//! each large entry and of a large archive as a whole). Declared sizes may lie, so extraction
//! then reads every entry through a bounded reader and refuses any entry whose content is not
//! exactly its declared size. Exact duplicate names are detected by reading the central
//! directory ourselves, because the `zip` crate silently keeps only the last one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::blob::{BlobId, BlobWriteError, WrittenBlob};
use crate::error::HostileReason;
use crate::hash::Hash;
use crate::ids::TreeId;
use crate::index::tree_row;
use crate::tree::{EntryKind, Tree, TreeEntry, TreeError};
use crate::{Result, Store, StoreError};

mod dir_walk;
mod rules;
mod tar_archive;
mod zip_archive;
mod zip_central;
mod zip_stream;

pub use tar_archive::{TarCompression, XZ_DECODER_THREAD};

/// Limits applied to archives before anything is extracted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Total uncompressed bytes of an archive (default 4 GiB).
    pub max_total_bytes: u64,
    /// Uncompressed bytes of one entry (default 2 GiB).
    pub max_entry_bytes: u64,
    /// Number of entries (default 100 000).
    pub max_entries: u64,
    /// Uncompressed/compressed ratio (default 200), of one entry larger than 1 MiB and of a
    /// whole archive that unpacks to more than 64 MiB (against its size on disk): small files
    /// of repetitive text legitimately compress very well.
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

/// Result of ingesting content: its tree, not yet a package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ingested {
    /// The tree (recorded in the index).
    pub tree: TreeId,
    /// Directory-form `h1:` over the extracted files ([`crate::h1_of_files`]).
    pub h1: Hash,
    /// Number of regular files.
    pub files: u64,
    /// Total bytes of the regular files.
    pub bytes: u64,
}

/// Result of ingesting a module package directory ([`Ingest::module_dir`]).
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
    /// included ([`crate::h1_of_zip_names`]). Equal to `ingested.h1` when the zip has no
    /// directory entries.
    pub h1_zip: Hash,
}

impl Store {
    /// Record a module package's tree: its `h1:` only where every symlink resolves to a file.
    fn record_module_tree(&self, tree: &Tree, blobs: &[WrittenBlob]) -> Result<IngestedModule> {
        let (tree, h1, files, bytes) = self.record_tree_with(tree, blobs, false)?;
        Ok(IngestedModule {
            tree,
            h1,
            files,
            bytes,
        })
    }

    /// Walk `dir` (a symlinked root resolved first) into blobs and a tree: regular files
    /// become blobs, symlinks are recorded, directories are implied; a name that is not UTF-8,
    /// a device, FIFO or socket, or a symlink leading out of `dir` is refused. With
    /// `skip_git`, every entry named `.git` is left out.
    ///
    /// The directory is read through descriptors (`dir_walk`): nothing under the root is
    /// reached through a link, even one swapped in while it is read. The archive limits
    /// apply as to an archive: entries, bytes of one file, bytes in all, and the ratio of a
    /// file's size to what it takes on disk (a sparse file of 5 GiB in 20 MB is the
    /// directory's decompression bomb); a file is read up to the size it had when opened.
    fn dir_tree(&self, dir: &Path, skip_git: bool) -> Result<(Tree, Vec<WrittenBlob>)> {
        let root = fs_err::canonicalize(dir).map_err(|e| StoreError::io(dir, e))?;
        let hostile = |entry: String, reason| StoreError::HostileDirectory {
            dir: dir.to_path_buf(),
            entry,
            reason,
        };
        let limits = &self.limits;
        let mut entries = Vec::new();
        let mut blobs = Vec::new();
        let mut batch = self.blob_batch();
        let (mut count, mut total) = (0u64, 0u64);
        let skip = |name: &std::ffi::OsStr| skip_git && name == ".git";
        dir_walk::walk(&root, &skip, &mut |found| {
            count += 1;
            if count > limits.max_entries {
                return Err(hostile(
                    String::new(),
                    HostileReason::TooManyEntries {
                        count,
                        limit: limits.max_entries,
                    },
                ));
            }
            match found {
                dir_walk::Found::File {
                    rel,
                    file,
                    mode,
                    size,
                    allocated,
                } => {
                    if size > limits.max_entry_bytes {
                        return Err(hostile(
                            rel,
                            HostileReason::EntryTooLarge {
                                size,
                                limit: limits.max_entry_bytes,
                            },
                        ));
                    }
                    total += size;
                    if total > limits.max_total_bytes {
                        return Err(hostile(
                            rel,
                            HostileReason::TotalTooLarge {
                                size: total,
                                limit: limits.max_total_bytes,
                            },
                        ));
                    }
                    if size > 1 << 20 && size / allocated.max(1) > limits.max_ratio {
                        return Err(hostile(
                            rel,
                            HostileReason::CompressionRatio {
                                size,
                                compressed: allocated,
                                limit: limits.max_ratio,
                            },
                        ));
                    }
                    let exec = mode & 0o111 != 0;
                    let path = root.join(&rel);
                    let mut reader = std::io::Read::take(file, size);
                    let written = batch.write(&mut reader, exec, size).map_err(|e| match e {
                        BlobWriteError::Read(e) => StoreError::io(&path, e),
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
                }
                dir_walk::Found::Symlink { rel, target } => {
                    let Some(target) = target.to_str() else {
                        return Err(hostile(rel, HostileReason::InvalidName));
                    };
                    entries.push(TreeEntry {
                        path: rel,
                        kind: EntryKind::Symlink {
                            target: target.to_owned(),
                        },
                    });
                }
                dir_walk::Found::InvalidName { rel } => {
                    return Err(hostile(rel, HostileReason::InvalidName));
                }
                dir_walk::Found::Special { rel, mode } => {
                    return Err(hostile(rel, HostileReason::SpecialFile { mode }));
                }
            }
            Ok(())
        })?;
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
        batch.finish()?;
        Ok((tree, blobs))
    }

    /// Record blobs (durable: their batch finished) and the tree in the index; compute its `h1:` unless the
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
            // Files this ingest put in place (replacing ones another boot left) are this
            // boot's now, whatever the tree's row (durability.rs).
            if let Some(boot) = self
                .durability
                .boot()
                .filter(|_| blobs.iter().any(|b| b.written_now))
            {
                let (tx, op) = index.write(format!("marking the files of tree {id}"))?;
                let err = op.err();
                for b in blobs.iter().filter(|b| b.written_now) {
                    tx.execute(
                        crate::durability::PUT_BLOB,
                        rusqlite::params![b.id.to_string(), b.size, &b.sha256[..], boot],
                    )
                    .map_err(err)?;
                }
                tx.commit().map_err(err)?;
            }
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
        let boot = self.durability.boot();
        let (tx, op) = index.write(format!("recording tree {id}"))?;
        let err = op.err();
        let result: rusqlite::Result<()> = (|| {
            let mut put_blob = tx.prepare(crate::durability::PUT_BLOB)?;
            for b in blobs {
                put_blob.execute(rusqlite::params![
                    b.id.to_string(),
                    b.size,
                    &b.sha256[..],
                    b.written_now.then_some(boot).flatten()
                ])?;
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

/// Content into blobs and a tree: directories, zips, tar archives; not a package until
/// [`Store::commit_package`].
#[derive(Clone, Copy)]
pub struct Ingest<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Ingest into blobs and a tree ([`Ingest`]).
    pub fn ingest(&self) -> Ingest<'_> {
        Ingest { store: self }
    }
}

impl Ingest<'_> {
    /// Ingest a directory: regular files become blobs (executable if any x bit is set),
    /// symlinks are recorded as symlinks (they must stay inside the directory), directories are
    /// implied, anything else is refused. A symlinked `dir` is resolved first (like Terraform's
    /// `EvalSymlinks` on the root).
    pub fn dir(&self, dir: &Path) -> Result<Ingested> {
        // An ingest reuses blob files already in place: only once someone re-hashed them.
        self.store.ensure_trusted()?;
        let (tree, blobs) = self.store.dir_tree(dir, false)?;
        self.store.record_tree(&tree, &blobs)
    }

    /// Ingest a module package directory: like [`Ingest::dir`], but every
    /// entry named `.git` (directory or file, at any depth) is left out, and symlinks to
    /// directories or to nothing are kept (only escaping ones are refused), so the `h1:` may be
    /// absent.
    pub fn module_dir(&self, dir: &Path) -> Result<IngestedModule> {
        self.store.ensure_trusted()?;
        let (tree, blobs) = self.store.dir_tree(dir, true)?;
        self.store.record_module_tree(&tree, &blobs)
    }

    /// The module tree `tree` without the entries `leave_out` names, recorded as a tree of
    /// its own: its files are `tree`'s blobs, and its `h1:` is computed from the SHA-256s
    /// recorded when those blobs were written; nothing is read or copied. For a package
    /// derived from one the caller has just found fresh (`Store::trusted_package`), whose
    /// blobs are then the bytes their rows describe.
    pub fn module_tree_without(
        &self,
        tree: &TreeId,
        leave_out: impl Fn(&str) -> bool,
    ) -> Result<IngestedModule> {
        self.store.ensure_trusted()?;
        let whole = self.store.tree(tree)?;
        let kept: Vec<TreeEntry> = whole
            .entries()
            .iter()
            .filter(|e| !leave_out(&e.path))
            .cloned()
            .collect();
        let mut blobs = Vec::new();
        {
            let index = self.store.index();
            for e in &kept {
                let EntryKind::File { blob, .. } = &e.kind else {
                    continue;
                };
                let (size, sha256): (u64, Vec<u8>) = crate::index::query_row_cached(
                    &index.conn,
                    "SELECT size, sha256 FROM blobs WHERE id = ?1",
                    [blob.to_string()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(index.err("reading a blob's row"))?;
                let sha256 = sha256.try_into().map_err(|_| StoreError::CorruptIndex {
                    what: format!("blob {blob} has no SHA-256"),
                })?;
                blobs.push(WrittenBlob {
                    id: *blob,
                    size,
                    sha256,
                    written_now: false,
                });
            }
        }
        let part = Tree::new(kept).map_err(|e| StoreError::CorruptIndex {
            what: format!("tree {tree}: {} {:?}", e.entry, e.reason),
        })?;
        self.store.record_module_tree(&part, &blobs)
    }
}
