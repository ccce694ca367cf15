//! Errors of the store.
//!
//! Every variant names the thing it is about (a path, an archive entry, a package) and keeps the
//! underlying error as its `#[source]`, so that a binary printing the whole `source()` chain tells
//! the user what happened and where; what to do about it is the error's
//! [`hint`](Diagnostic::hint), never part of its message.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::ids::{PackageKey, TreeId};
use tstore_diagnostic::Diagnostic;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store belongs to another user (like git's `safe.directory`): using it would leave
    /// files its owner cannot remove, or trust files someone else can change.
    #[error(
        "the store at {} belongs to user id {owner}, not to you (user id {me})",
        path.display()
    )]
    ForeignOwner {
        /// The store directory (or a directory inside it).
        path: PathBuf,
        /// Its owner's user id.
        owner: u32,
        /// The current user id.
        me: u32,
    },
    /// Others can write into the store: they could replace packages under its users.
    #[error(
        "the store at {} can be written by other users (mode {mode:o})",
        path.display()
    )]
    OpenToOthers {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// An entry of the store's layout is not what tstore makes there: a link (a restored
    /// cache can point `tmp/` or `git-cache/` anywhere), another kind of file, or someone
    /// else's. The store is not used until it is removed: following it would delete, chmod
    /// or write outside the store.
    #[error("{} in the store is {what}, not the {expected} tstore makes there", path.display())]
    LayoutEntry {
        /// The entry.
        path: PathBuf,
        /// What it is: "a symbolic link", "a directory", "owned by user id N".
        what: String,
        /// What tstore makes there: "directory", "regular file".
        expected: &'static str,
    },
    /// A filesystem operation failed.
    #[error("filesystem operation on {} failed", path.display())]
    Io {
        /// The path the operation was about.
        path: PathBuf,
        /// The underlying error (fs-err errors repeat the operation and path).
        #[source]
        source: io::Error,
    },

    /// Linking or copying a blob into a view failed.
    #[error("could not link {} to {}", from.display(), to.display())]
    Link {
        /// The blob file.
        from: PathBuf,
        /// The path in the view being built.
        to: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The SQLite index failed.
    #[error("store index {}: {context}", path.display())]
    Index {
        /// The index database file.
        path: PathBuf,
        /// What the store was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },

    /// The index holds something the store cannot decode; the index is damaged.
    #[error("store index is damaged: {what}")]
    CorruptIndex {
        /// Description of the damaged record.
        what: String,
    },

    /// The index file cannot be read: it is not a database, its pages are damaged (a
    /// truncated copy, a disk error, garbage), or it is empty while the store holds blobs.
    /// Nothing was changed.
    #[error(
        "the store index {} is damaged: {reason} ({context}); nothing was changed",
        path.display()
    )]
    DamagedIndex {
        /// The index database file.
        path: PathBuf,
        /// What the store was doing.
        context: String,
        /// What is wrong (SQLite's `SQLITE_NOTADB` or `SQLITE_CORRUPT` message).
        reason: String,
    },

    /// A file could not be read as a zip archive.
    #[error("{} is not a readable zip archive", archive.display())]
    BadZip {
        /// The archive.
        archive: PathBuf,
        /// The zip error.
        #[source]
        source: zip::result::ZipError,
    },

    /// A file could not be read as a tar archive (or its compression is corrupt).
    #[error("{} is not a readable tar archive: {source}", archive.display())]
    BadTar {
        /// The archive.
        archive: PathBuf,
        /// What the tar reader or the decompressor said.
        #[source]
        source: std::io::Error,
    },

    /// An archive was refused before (or while) extracting it.
    #[error("refusing to unpack {}: entry {entry:?}: {reason}", archive.display())]
    HostileArchive {
        /// The archive.
        archive: PathBuf,
        /// The offending entry name, as stored in the archive (empty for whole-archive limits).
        entry: String,
        /// Why it was refused.
        reason: HostileReason,
    },

    /// A directory to ingest holds something the store refuses to take in.
    #[error("refusing to ingest {}: entry {entry:?}: {reason}", dir.display())]
    HostileDirectory {
        /// The directory being ingested.
        dir: PathBuf,
        /// The offending path, relative to `dir`.
        entry: String,
        /// Why it was refused.
        reason: HostileReason,
    },

    /// An `h1:` hash cannot be computed for a tree (a symlink that dangles or points at a directory).
    #[error("cannot compute the h1: hash of the package: entry {entry:?} {reason}")]
    Unhashable {
        /// The offending entry.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A package already exists with a different tree.
    #[error(
        "package {key} is already in the store with different content (tree {existing}, new tree {new})"
    )]
    PackageConflict {
        /// The package.
        key: PackageKey,
        /// The tree the store has.
        existing: TreeId,
        /// The tree that was offered.
        new: TreeId,
    },

    /// `commit_package` was given a tree the index does not know.
    #[error("tree {0} is not in the store index (ingest it first)")]
    UnknownTree(TreeId),

    /// A package key has a segment that cannot be a path component.
    #[error("invalid package key {key:?}: {reason}")]
    InvalidPackageKey {
        /// The key as given.
        key: String,
        /// What is wrong.
        reason: String,
    },

    /// A hash string lacks its `scheme:` prefix.
    #[error("cannot interpret {0:?} as a package hash: a hash string must start with a scheme keyword followed by a colon (h1: or zh:)")]
    InvalidHash(String),

    /// A blob or tree id is not 64 lowercase hex digits.
    #[error("invalid {what} id {input:?}: expected 64 lowercase hex digits")]
    InvalidId {
        /// "blob" or "tree".
        what: &'static str,
        /// The input.
        input: String,
    },
}

impl StoreError {
    /// Wrap an I/O error with the path it is about.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// Wrap an index error with its context: [`StoreError::DamagedIndex`] when SQLite says
    /// the file is not a database or is corrupt (so every command names the repair), else
    /// [`StoreError::Index`].
    pub(crate) fn index(
        path: impl Into<PathBuf>,
        context: impl Into<String>,
        source: rusqlite::Error,
    ) -> Self {
        let (path, context) = (path.into(), context.into());
        if is_damage(&source) {
            StoreError::DamagedIndex {
                path,
                context,
                reason: source.to_string(),
            }
        } else {
            StoreError::Index {
                path,
                context,
                source,
            }
        }
    }

    /// Whether this error says the index file itself is damaged.
    pub fn is_damaged_index(&self) -> bool {
        matches!(self, StoreError::DamagedIndex { .. })
    }
}

impl Diagnostic for StoreError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            StoreError::ForeignOwner { path, me, .. } => format!(
                "use your own store (set TSTORE_HOME), or, if it is yours, take it back with \
                 `chown -R {me} {}`; running tstore with sudo against your store causes this",
                path.display()
            ),
            StoreError::LayoutEntry { path, .. } => format!(
                "tstore never follows or removes what it did not make; if it is yours, move \
                 it out of the store (`mv {} SOMEWHERE`), or remove it (`rm {}`: a link's \
                 target is not touched); tstore makes the entry again",
                path.display(),
                path.display()
            ),
            StoreError::OpenToOthers { path, .. } => format!(
                "`chmod 700 {}`; a store is private to its owner",
                path.display()
            ),
            StoreError::CorruptIndex { .. } => "run `tstore store verify --repair`: it \
                 quarantines what it cannot trust, or moves a damaged index aside and rebuilds \
                 it from the blobs and views the store holds"
                .into(),
            StoreError::DamagedIndex { .. } => "run `tstore store verify --repair`: it moves \
                 the damaged index aside (kept, named with the time) and rebuilds the index from \
                 the blobs and views the store holds, so the next `tstore init` downloads \
                 nothing they still hold"
                .into(),
            StoreError::HostileArchive { .. } => "the archive is corrupt or malicious; nothing \
                 from it was installed. Obtain the package from a trusted source (or raise the \
                 store limits if the package is legitimately that large)"
                .into(),
            StoreError::HostileDirectory { .. } => {
                "nothing from this directory was installed; remove or fix the entry".into()
            }
            StoreError::PackageConflict { .. } => "a package of the same name, version and \
                 platform must not change; check where it came from"
                .into(),
            StoreError::Io { .. }
            | StoreError::Link { .. }
            | StoreError::Index { .. }
            | StoreError::BadZip { .. }
            | StoreError::BadTar { .. }
            | StoreError::Unhashable { .. }
            | StoreError::UnknownTree(_)
            | StoreError::InvalidPackageKey { .. }
            | StoreError::InvalidHash(_)
            | StoreError::InvalidId { .. } => return None,
        })
    }
}

/// Whether SQLite reports the database file itself as unreadable: not a database, or
/// malformed.
pub(crate) fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// Why an archive entry (or a directory entry) was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostileReason {
    /// A `..` path component.
    ParentDir,
    /// A leading `/`, a drive letter or a backslash.
    AbsolutePath,
    /// A symlink whose target is absolute or resolves outside the package root.
    EscapingSymlink {
        /// The link target.
        target: String,
    },
    /// A device, FIFO or socket (from the unix mode).
    SpecialFile {
        /// The unix mode (file type bits included).
        mode: u32,
    },
    /// An archive entry of a kind no package holds: a hard link (two paths, one file), a
    /// sparse file, or an unknown type.
    UnsupportedKind {
        /// What it is.
        kind: String,
    },
    /// The same normalized path occurs twice (or as both a file and a directory).
    Duplicate,
    /// A name that cannot be a path: not UTF-8, contains a newline or NUL, or is empty.
    InvalidName,
    /// More entries than `Limits::max_entries`.
    TooManyEntries {
        /// Entries in the archive.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// An entry larger than `Limits::max_entry_bytes`.
    EntryTooLarge {
        /// Its (declared or actual) size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// More content than `Limits::max_total_bytes` in total.
    TotalTooLarge {
        /// The total so far.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// An entry, or a whole archive (reported with an empty entry name), that expands more
    /// than `Limits::max_ratio` times its compressed size.
    CompressionRatio {
        /// Uncompressed size.
        size: u64,
        /// Compressed size.
        compressed: u64,
        /// The limit.
        limit: u64,
    },
    /// The content does not have the size the central directory declares.
    SizeMismatch {
        /// Declared size.
        declared: u64,
        /// Bytes actually produced (possibly cut off at `declared + 1`).
        actual: u64,
    },
    /// A streamed zip whose central directory does not list exactly the entries its local
    /// headers held (names, sizes, CRC-32s, offsets), or whose end record disagrees with it:
    /// a reader of the central directory would unpack something else.
    DirectoryMismatch,
}

impl fmt::Display for HostileReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostileReason::ParentDir => {
                write!(f, "its path contains a \"..\" component and would land outside the package directory")
            }
            HostileReason::AbsolutePath => write!(
                f,
                "its path is absolute (leading \"/\", a drive letter or a backslash) and would land outside the package directory"
            ),
            HostileReason::EscapingSymlink { target } => write!(
                f,
                "it is a symbolic link to {target:?}, which is absolute or points outside the package directory"
            ),
            HostileReason::SpecialFile { mode } => write!(
                f,
                "it is a device, FIFO or socket (mode {mode:o}); packages may hold only files, directories and symlinks"
            ),
            HostileReason::UnsupportedKind { kind } => write!(
                f,
                "it is a {kind} entry; packages may hold only files, directories and symlinks"
            ),
            HostileReason::Duplicate => write!(
                f,
                "the same path occurs more than once (or as both a file and a directory)"
            ),
            HostileReason::InvalidName => write!(
                f,
                "its name is not usable as a path (not UTF-8, empty, or contains a newline or NUL)"
            ),
            HostileReason::TooManyEntries { count, limit } => {
                write!(f, "the archive has {count} entries, more than the limit of {limit}")
            }
            HostileReason::EntryTooLarge { size, limit } => write!(
                f,
                "it is at least {size} bytes uncompressed, more than the per-entry limit of {limit} bytes"
            ),
            HostileReason::TotalTooLarge { size, limit } => write!(
                f,
                "the archive unpacks to at least {size} bytes, more than the limit of {limit} bytes"
            ),
            HostileReason::CompressionRatio {
                size,
                compressed,
                limit,
            } => write!(
                f,
                "it expands from {compressed} to {size} bytes, more than {limit} times its compressed size (a decompression bomb?)"
            ),
            HostileReason::SizeMismatch { declared, actual } => write!(
                f,
                "the archive declares {declared} bytes but the entry decompresses to {actual}{}",
                if actual > declared { " or more" } else { "" }
            ),
            HostileReason::DirectoryMismatch => write!(
                f,
                "the archive's central directory does not describe the entries it holds as they were read; a reader of the central directory would unpack something else"
            ),
        }
    }
}
