//! Trust in the index: were its records written by this machine's tstore, into this very
//! index file?
//!
//! The index vouches for packages: which tree a package name resolves to, which `h1:`/`zh:`
//! were verified for it, which source produced which tree. A store restored from a CI cache
//! (or copied, or made by an older tstore) carries an index anyone who could write the
//! cache may have written: rows that claim a lock file's `h1:` for other files. Such an
//! index must not be believed until its packages are re-hashed.
//!
//! **Rule:** the index is trusted only while its `store_trust` row holds the *tag* of this
//! machine and this index file: a keyed BLAKE3, under a random key kept outside the store
//! (the machine key, `$XDG_STATE_HOME/tstore/machine-key` as the binary sets it), of the
//! index file's inode number and birth time (its device too where the filesystem has no
//! birth time). A cache copy cannot carry it: a restore makes a new file (new birth time,
//! which no program can set), and another machine's tag was made with another key (a fresh
//! CI runner has no key at all until tstore makes one). When the tag does not match, the
//! store is *adopted* before its first package is used ([`Store::ensure_trusted`]):
//!
//! - every blob file is re-hashed against its BLAKE3 name, every tree row against its id,
//!   every `h1:` recomputed from the bytes ([`Store::verify`]); what the bytes contradict is
//!   quarantined, as `store verify --repair` does;
//! - what only the writer of the index could vouch for is dropped: every hash record but the
//!   recomputed directory `h1:` (a zip's `zh:` or archive-form `h1:`, registry reports and
//!   signatures cannot be recomputed from the files), source memos, kept-archive records,
//!   and module packages (a module package's name is its source and commit, which its bytes
//!   cannot confirm; the next init fetches them again, re-using their verified blobs);
//! - the git cache (`git-cache/`) is removed: a bare repository's `config` and hooks are
//!   instructions to git, not content, and the cache is rebuilt from the remotes (the cache
//!   is handed out only by a trusted store, [`Store::git_cache_dir`]);
//! - a provider package that stays is marked `adopted`: its name is still the restored
//!   index's claim, vouched for only by its recomputed `h1:` (which the installer compares
//!   with the lock), so content ingested here under the same name replaces it
//!   ([`Store::commit_package`]) instead of being refused as a conflict, and content equal
//!   to it clears the mark;
//! - the tag is written last, so an interrupted adoption is done again.
//!
//! Every path that hands out a committed package or writes one calls
//! [`Store::ensure_trusted`] first (`trusted_package`, `package`, `source_memo`,
//! `module_source`, `kept_archive`, `commit_package`, ingest), so provider and module
//! installs both get the decision, and an ingest never reuses a blob file no one re-hashed.
//! Callers hold the store lock (shared or exclusive) as for every other write; adopters are
//! serialized by `<root>/.trust.lock`.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use fs_err::os::unix::fs::OpenOptionsExt as _;
use rusqlite::OptionalExtension as _;

use crate::ids::PackageKey;
use crate::index::now;
use crate::repair::{QuarantinedBlob, QuarantinedPackage};
use crate::{Result, Store, StoreError};

/// Per-handle trust state.
#[derive(Debug, Default)]
pub(crate) struct Trust {
    /// The machine key's file, if the caller named one.
    pub(crate) key_file: Option<PathBuf>,
    /// The index was found (or made) trusted by this handle.
    trusted: AtomicBool,
    /// Serializes adoption between the threads of this process.
    adopting: Mutex<()>,
}

/// What adopting a store did ([`Store::ensure_trusted`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AdoptReport {
    /// Packages the index held.
    pub packages: u64,
    /// Blob files re-hashed.
    pub blobs_checked: u64,
    /// Bytes read to re-hash them and check views.
    pub bytes_checked: u64,
    /// Packages whose bytes contradicted the index, taken out (fetched again when needed).
    pub quarantined: Vec<QuarantinedPackage>,
    /// Packages whose name their bytes cannot confirm (module packages), taken out; their
    /// blobs stay, so fetching them again writes nothing new.
    pub forgotten: Vec<PackageKey>,
    /// Bad blob files moved to `quarantine/`.
    pub blobs: Vec<QuarantinedBlob>,
}

impl Trust {
    /// Trust state keyed by the machine key in `key_file`.
    pub(crate) fn with_key_file(key_file: Option<PathBuf>) -> Trust {
        Trust {
            key_file,
            ..Default::default()
        }
    }

    /// Forget that the index was found trusted: the next use checks its tag again.
    pub(crate) fn forget(&mut self) {
        *self.trusted.get_mut() = false;
    }
}

impl Store {
    /// Key the trust tag (see the module docs) with the machine key kept in `path`, made
    /// (random, 0600) on first use. The binary always names one, outside the store; without
    /// one the tag binds the index file only.
    pub fn with_machine_key(mut self, path: impl Into<PathBuf>) -> Self {
        self.trust.key_file = Some(path.into());
        self
    }

    /// Whether the index holds this machine's tag for this index file: its records were
    /// written (or re-verified) here. Reads only.
    pub fn is_trusted(&self) -> Result<bool> {
        if self.trust.trusted.load(Ordering::Acquire) {
            return Ok(true);
        }
        Ok(self.recorded_tag()? == Some(self.trust_tag()?))
    }

    /// Make sure the index may be believed before a package in it is used: when it does not
    /// hold this machine's tag (a restored cache, a copy, a store of an older tstore), adopt
    /// the store — re-hash every blob and package, quarantine what the bytes contradict,
    /// drop what cannot be recomputed — then write the tag (see the module docs). `None`
    /// when the store was trusted already. Cheap once per handle. The caller holds the store
    /// lock.
    pub fn ensure_trusted(&self) -> Result<Option<AdoptReport>> {
        if self.trust.trusted.load(Ordering::Acquire) {
            return Ok(None);
        }
        let _threads = self
            .trust
            .adopting
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if self.trust.trusted.load(Ordering::Acquire) {
            return Ok(None);
        }
        let tag = self.trust_tag()?;
        if self.recorded_tag()? == Some(tag.clone()) {
            self.trust.trusted.store(true, Ordering::Release);
            return Ok(None);
        }
        let lock_path = self.layout.root.join(".trust.lock");
        let lock = fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| StoreError::io(&lock_path, e))?;
        lock.file()
            .lock()
            .map_err(|e| StoreError::io(&lock_path, e))?;
        // Another process may have adopted the store while this one waited.
        if self.recorded_tag()? == Some(tag.clone()) {
            self.trust.trusted.store(true, Ordering::Release);
            return Ok(None);
        }
        let report = self.verify()?;
        let repaired = self.repair_inner(crate::repair::RepairMode::Adopt, &report, true)?;
        let adopted = AdoptReport {
            packages: repaired.checked_packages,
            blobs_checked: report.blobs_checked,
            bytes_checked: report.bytes_checked,
            quarantined: repaired.packages,
            forgotten: repaired.forgotten,
            blobs: repaired.blobs,
        };
        // The git cache is not content a restored store can vouch for: a repository's
        // `config` and hooks are instructions to git. It is rebuilt from the remotes.
        let git_cache = &self.layout.git_cache;
        crate::layout::remove_tree(git_cache).map_err(|e| StoreError::io(git_cache, e))?;
        self.record_tag(&tag)?;
        self.trust.trusted.store(true, Ordering::Release);
        if adopted.packages > 0 {
            tracing::warn!(
                "the store at {} was not written on this machine (a restored cache, a copy, or a store of an older tstore): \
                 re-hashed {} packages ({} blob files, {} bytes) before trusting it{}{}",
                self.layout.root.display(),
                adopted.packages,
                adopted.blobs_checked,
                adopted.bytes_checked,
                if adopted.quarantined.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; quarantined, its files contradict its index: {}",
                        adopted
                            .quarantined
                            .iter()
                            .map(|p| format!("{} ({})", p.package, p.reasons.join("; ")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
                if adopted.forgotten.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} module packages' names forgotten (their files cannot confirm their source): a call a lock file pins by their h1: still installs from the store, any other asks its origin",
                        adopted.forgotten.len()
                    )
                },
            );
        }
        drop(lock);
        Ok(Some(adopted))
    }

    /// Record `tag` as the one that vouches for the index (adoption's last step).
    pub(crate) fn record_tag(&self, tag: &str) -> Result<()> {
        let mut index = self.index();
        let (tx, op) = index.write("recording the store's trust tag")?;
        let err = op.err();
        tx.execute(
            "INSERT INTO store_trust (id, tag, adopted_at) VALUES (1, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET tag = excluded.tag, adopted_at = excluded.adopted_at",
            rusqlite::params![tag, now()],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// The tag the index holds, if any.
    fn recorded_tag(&self) -> Result<Option<String>> {
        let index = self.index();
        index
            .conn
            .query_row("SELECT tag FROM store_trust WHERE id = 1", [], |r| r.get(0))
            .optional()
            .map_err(index.err("reading the store's trust tag"))
    }

    /// The tag of this machine and this index file (see the module docs).
    pub(crate) fn trust_tag(&self) -> Result<String> {
        let key = machine_key(self.trust.key_file.as_deref());
        let identity = file_identity(&self.layout.index)?;
        Ok(blake3::keyed_hash(
            &key,
            format!("tstore store trust v1\n{identity}\n").as_bytes(),
        )
        .to_hex()
        .to_string())
    }
}

/// What a copy of the file at `path` cannot have: its inode number and birth time (which
/// no program can set, and which a new file gets anew even when it reuses an inode
/// number), or, where the filesystem keeps no birth time, its inode and device numbers.
fn file_identity(path: &Path) -> Result<String> {
    let meta = fs_err::metadata(path).map_err(|e| StoreError::io(path, e))?;
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    Ok(match born {
        Some(born) => format!(
            "inode {} born {}.{:09}",
            meta.ino(),
            born.as_secs(),
            born.subsec_nanos()
        ),
        None => format!("inode {} device {}", meta.ino(), meta.dev()),
    })
}

/// The machine key in `path` (made on first use), or the all-zero key when none was named
/// or it cannot be read or made (said once as a warning: the tag then binds the index file
/// alone).
fn machine_key(path: Option<&Path>) -> [u8; 32] {
    let Some(path) = path else {
        return [0; 32];
    };
    match read_or_make_key(path) {
        Ok(key) => key,
        Err(e) => {
            tracing::warn!(
                "cannot use the machine key {} ({e}); the store's trust tag binds its index file only",
                path.display()
            );
            [0; 32]
        }
    }
}

/// Read the key (64 hex digits), or make a random one: written to a temp file (0600) in a
/// private directory and linked into place without replacing one another process made
/// meanwhile, which is then read.
fn read_or_make_key(path: &Path) -> std::io::Result<[u8; 32]> {
    let parse = |text: &str| -> std::io::Result<[u8; 32]> {
        crate::blob::parse_hex32(text.trim()).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not 64 lowercase hex digits",
            )
        })
    };
    // Every process that uses the store reads it once: open, one read, close.
    match std::fs::File::open(path) {
        Ok(mut file) => {
            let mut buf = [0u8; 80];
            let n = std::io::Read::read(&mut file, &mut buf)?;
            return parse(std::str::from_utf8(&buf[..n]).unwrap_or_default());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the machine key path has no parent"))?;
    crate::layout::create_private_dir_all(dir).map_err(std::io::Error::other)?;
    let mut key = [0u8; 32];
    std::io::Read::read_exact(&mut fs_err::File::open("/dev/urandom")?, &mut key)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".machine-key.")
        .tempfile_in(dir)?;
    writeln!(tmp, "{}", hex::encode(key))?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(key),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            parse(&fs_err::read_to_string(path)?)
        }
        Err(e) => Err(e.error),
    }
}
