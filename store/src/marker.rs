//! Whether a directory is a tstore store: what `store rm` requires before deleting one, so
//! that a mistaken `TSTORE_HOME=.` (a home, a checkout holding some `index.sqlite`) is never
//! emptied.
//!
//! The marks, all required: the directory is a real directory (not a link) owned by the
//! user; every entry in it is one the store's layout names (`layout::LAYOUT_DIRS`,
//! `layout::LAYOUT_FILES`, and the names tstore gives what it sets aside); and its index is
//! tstore's: an SQLite file whose tables include the store's own (`blobs`, `trees`,
//! `packages`, `store_trust`) with a schema version tstore wrote. A store whose index cannot
//! be read (damaged) still counts when its layout holds `blobs-v1/`: `store rm` is the way
//! out of such a store.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use crate::layout::{LAYOUT_DIRS, LAYOUT_FILES};

/// Why a directory is not taken for a tstore store.
#[derive(Debug, thiserror::Error)]
pub enum NotAStore {
    /// It is a link, or not a directory.
    #[error("{0} is not a directory (a link is never taken for a store)")]
    NotADirectory(String),
    /// Someone else owns it.
    #[error("{path} belongs to user id {owner}, not to you (user id {me})")]
    Owner {
        /// The directory.
        path: String,
        /// Its owner.
        owner: u32,
        /// The current user.
        me: u32,
    },
    /// It holds an entry the store's layout does not name.
    #[error("{path} holds {entry:?}, which tstore does not make in a store")]
    ForeignEntry {
        /// The directory.
        path: String,
        /// The entry's name.
        entry: String,
    },
    /// Its index is missing or not tstore's, and it has no blob directory.
    #[error("{path} has no tstore index (index.sqlite with the store's tables) and no blobs-v1/")]
    NoIndex {
        /// The directory.
        path: String,
    },
    /// It cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Check the marks of a store (module docs) on `root`.
pub fn identify_store(root: &Path) -> Result<(), NotAStore> {
    let shown = root.display().to_string();
    let io = |source| NotAStore::Io {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::symlink_metadata(root).map_err(io)?;
    if !meta.is_dir() {
        return Err(NotAStore::NotADirectory(shown));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(NotAStore::Owner {
            path: shown,
            owner: meta.uid(),
            me,
        });
    }
    for entry in std::fs::read_dir(root).map_err(io)? {
        let name = entry.map_err(io)?.file_name();
        let name = name.to_string_lossy();
        if !is_layout_name(&name) {
            return Err(NotAStore::ForeignEntry {
                path: shown,
                entry: name.into_owned(),
            });
        }
    }
    if has_store_schema(&root.join("index.sqlite")) || root.join(crate::layout::BLOBS_DIR).is_dir()
    {
        Ok(())
    } else {
        Err(NotAStore::NoIndex { path: shown })
    }
}

/// A name the store's layout gives an entry of its root.
fn is_layout_name(name: &str) -> bool {
    LAYOUT_DIRS
        .iter()
        .any(|d| !d.contains('/') && *d == name)
        || LAYOUT_FILES.contains(&name)
        // A damaged index set aside by `store verify --repair`, and the registry of
        // `cli-config --out` files older releases kept here.
        || name.starts_with("index.sqlite.damaged-")
        || name == "cli-config-outputs.json"
}

/// Whether `path` is an SQLite file holding the store's tables at a version tstore wrote.
fn has_store_schema(path: &Path) -> bool {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(conn) = rusqlite::Connection::open_with_flags(path, flags) else {
        return false;
    };
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap_or(0);
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'
             AND name IN ('blobs', 'trees', 'packages', 'store_trust')",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    version > 0 && tables == 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_known_by_its_layout_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let store = crate::Store::open(&root).unwrap();
        drop(store);
        identify_store(&root).unwrap();
        // An index.sqlite alone, among other files, is not a store.
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::copy(root.join("index.sqlite"), home.join("index.sqlite")).unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        let err = identify_store(&home).unwrap_err().to_string();
        assert!(err.contains(".bashrc"), "{err}");
        // Layout names only, but an index of another program: not a store.
        std::fs::remove_file(home.join(".bashrc")).unwrap();
        std::fs::remove_file(home.join("index.sqlite")).unwrap();
        rusqlite::Connection::open(home.join("index.sqlite"))
            .unwrap()
            .execute_batch("CREATE TABLE notes (x); PRAGMA user_version = 3;")
            .unwrap();
        let err = identify_store(&home).unwrap_err().to_string();
        assert!(err.contains("no tstore index"), "{err}");
        // A link to a store is not taken for one.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        assert!(identify_store(&link).is_err());
    }
}
