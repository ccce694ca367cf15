//! The SQLite index: blobs, trees, packages, their hashes, source memos, roots and module
//! source memos.
//!
//! Every connection is set up in this order: `busy_timeout` (switching to WAL can
//! itself return BUSY), `journal_mode=WAL`, `foreign_keys=ON`. Every write runs in a
//! `BEGIN IMMEDIATE` transaction ([`Index::write`]): a deferred read-then-write transaction
//! would fail with BUSY at once whatever the timeout.
//!
//! The schema is versioned in code through `PRAGMA user_version`; [`MIGRATIONS`] is applied in
//! order, each in its own immediate transaction that re-reads the version (two processes may open
//! a new store at once).
//!
//! Rows only ever point at things that are already durable: blob files are fsynced before their
//! `blobs` rows, a package's view is renamed in before its `packages` row.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err::os::unix::fs::OpenOptionsExt as _;

use rusqlite::{Connection, OptionalExtension as _, Transaction, TransactionBehavior};

use crate::ids::PackageKey;
use crate::{Result, StoreError};

/// Schema migrations; `user_version` = number applied.
const MIGRATIONS: &[&str] = &[
    // v1
    "
    CREATE TABLE blobs (
        id      TEXT PRIMARY KEY,       -- BLAKE3 hex
        size    INTEGER NOT NULL,
        sha256  BLOB NOT NULL           -- 32 bytes, for h1: without re-reading
    ) WITHOUT ROWID;
    CREATE TABLE trees (
        id       TEXT PRIMARY KEY,      -- BLAKE3 hex of encoding
        encoding BLOB NOT NULL,         -- canonical tree encoding (tree.rs)
        h1       TEXT NOT NULL,         -- memoized directory-form h1:
        files    INTEGER NOT NULL,
        bytes    INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE tree_blobs (
        tree TEXT NOT NULL REFERENCES trees(id) ON DELETE CASCADE,
        blob TEXT NOT NULL REFERENCES blobs(id),
        PRIMARY KEY (tree, blob)
    ) WITHOUT ROWID;
    CREATE INDEX tree_blobs_by_blob ON tree_blobs(blob);
    CREATE TABLE packages (
        id         INTEGER PRIMARY KEY,
        kind       TEXT NOT NULL,
        name       TEXT NOT NULL,
        version    TEXT NOT NULL,
        platform   TEXT NOT NULL,
        tree       TEXT NOT NULL REFERENCES trees(id),
        created_at INTEGER NOT NULL,
        UNIQUE (kind, name, version, platform)
    );
    CREATE TABLE package_hashes (
        package              INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
        hash                 TEXT NOT NULL,
        verified_locally     INTEGER NOT NULL,
        reported_by_registry INTEGER NOT NULL,
        signed_by_key_ids    TEXT NOT NULL, -- JSON array
        PRIMARY KEY (package, hash)
    );
    CREATE TABLE sources (
        path        TEXT PRIMARY KEY,   -- canonical absolute path
        fingerprint TEXT NOT NULL,
        tree        TEXT NOT NULL REFERENCES trees(id) ON DELETE CASCADE,
        hashes      TEXT NOT NULL,      -- JSON array of HashRecord
        updated_at  INTEGER NOT NULL
    );
    ",
    // v2: the content stat of each package (freshness.rs), recorded at its first commit.
    "
    CREATE TABLE package_stats (
        package INTEGER PRIMARY KEY REFERENCES packages(id) ON DELETE CASCADE,
        stat    TEXT NOT NULL
    );
    ",
    // v3 (gc.rs / roots.rs): working-directory roots and the links that pin packages;
    // when a package was last linked; when each tree was first recorded (grace period).
    "
    CREATE TABLE roots (
        id         INTEGER PRIMARY KEY,
        path       TEXT NOT NULL UNIQUE,   -- canonical working directory
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE root_links (
        root    INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
        link    TEXT NOT NULL,             -- absolute path of the symlink
        target  TEXT NOT NULL,             -- what it pointed at when recorded
        package INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
        PRIMARY KEY (root, link)
    ) WITHOUT ROWID;
    CREATE INDEX root_links_by_package ON root_links(package);
    ALTER TABLE packages ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE tree_times (
        tree       TEXT PRIMARY KEY REFERENCES trees(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO tree_times (tree, created_at)
        SELECT id, CAST(strftime('%s', 'now') AS INTEGER) FROM trees;
    CREATE TRIGGER trees_created_at AFTER INSERT ON trees BEGIN
        INSERT OR IGNORE INTO tree_times (tree, created_at)
        VALUES (NEW.id, CAST(strftime('%s', 'now') AS INTEGER));
    END;
    ",
    // v4 (module_sources.rs): module source → package memos, so a registry
    // module version or an unchanged (304) archive URL is not downloaded again.
    "
    CREATE TABLE module_sources (
        source        TEXT PRIMARY KEY,    -- installer-chosen key (registry version, URL)
        package       INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
        location      TEXT NOT NULL,       -- resolved download location, or ''
        subdir        TEXT NOT NULL,       -- `//subdir` named while fetching, or ''
        etag          TEXT,
        last_modified TEXT,
        updated_at    INTEGER NOT NULL
    );
    CREATE INDEX module_sources_by_package ON module_sources(package);
    ",
    // v5 (ingest/zip_archive.rs): provider zips kept as they came, by their `zh:`, for
    // `tstore push`; a kept zip's blob is also a `tree_blobs` row of its tree, so gc, verify
    // and repair treat it as one of the tree's blobs and it lives exactly as long.
    "
    CREATE TABLE archives (
        zh   TEXT PRIMARY KEY,             -- zh:HEX, the SHA-256 of the zip
        tree TEXT NOT NULL REFERENCES trees(id) ON DELETE CASCADE,
        blob TEXT NOT NULL REFERENCES blobs(id)
    ) WITHOUT ROWID;
    CREATE INDEX archives_by_tree ON archives(tree);
    ",
    // v6 (read.rs): a counter of changes to the package list, so that a reader (the FUSE
    // daemon) re-lists packages only when one was added, removed or re-pointed, not on every
    // commit (each init records its root and marks packages used).
    "
    CREATE TABLE package_generation (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
    );
    INSERT INTO package_generation (id, value) VALUES (1, 0);
    CREATE TRIGGER packages_added AFTER INSERT ON packages BEGIN
        UPDATE package_generation SET value = value + 1 WHERE id = 1;
    END;
    CREATE TRIGGER packages_removed AFTER DELETE ON packages BEGIN
        UPDATE package_generation SET value = value + 1 WHERE id = 1;
    END;
    CREATE TRIGGER packages_changed AFTER UPDATE OF kind, name, version, platform, tree ON packages BEGIN
        UPDATE package_generation SET value = value + 1 WHERE id = 1;
    END;
    ",
    // v7 (read.rs): the package list's changes as a log instead of a bare counter, so that a
    // reader applies what changed instead of re-listing every package. The last 10,000
    // changes are kept; a reader further behind re-lists.
    "
    DROP TRIGGER packages_added;
    DROP TRIGGER packages_removed;
    DROP TRIGGER packages_changed;
    DROP TABLE package_generation;
    CREATE TABLE package_changes (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        kind     TEXT NOT NULL,
        name     TEXT NOT NULL,
        version  TEXT NOT NULL,
        platform TEXT NOT NULL,
        tree     TEXT                  -- NULL: the package was removed
    );
    CREATE TRIGGER packages_added AFTER INSERT ON packages BEGIN
        INSERT INTO package_changes (kind, name, version, platform, tree)
        VALUES (NEW.kind, NEW.name, NEW.version, NEW.platform, NEW.tree);
    END;
    CREATE TRIGGER packages_removed AFTER DELETE ON packages BEGIN
        INSERT INTO package_changes (kind, name, version, platform, tree)
        VALUES (OLD.kind, OLD.name, OLD.version, OLD.platform, NULL);
    END;
    CREATE TRIGGER packages_changed AFTER UPDATE OF kind, name, version, platform, tree ON packages BEGIN
        INSERT INTO package_changes (kind, name, version, platform, tree)
        VALUES (OLD.kind, OLD.name, OLD.version, OLD.platform, NULL);
        INSERT INTO package_changes (kind, name, version, platform, tree)
        VALUES (NEW.kind, NEW.name, NEW.version, NEW.platform, NEW.tree);
    END;
    CREATE TRIGGER package_changes_bounded AFTER INSERT ON package_changes BEGIN
        DELETE FROM package_changes WHERE seq <= NEW.seq - 10000;
    END;
    ",
    // v8 (gc.rs): an index on every column that references a tree or a blob. Deleting a
    // tree checks that no package names it and cascades to the source memos naming it, and
    // gc asks which trees no package names: without these, each of those was a scan of the
    // whole table per tree, and gc of 10,000 unused packages took 12 s.
    "
    CREATE INDEX packages_by_tree ON packages(tree);
    CREATE INDEX sources_by_tree ON sources(tree);
    CREATE INDEX archives_by_blob ON archives(blob);
    ",
    // v9 (gc_check.rs): a counter that moves whenever the set of unused blobs may have
    // changed — a blob row added (its tree may come later, or never) or removed, or a
    // tree's reference to a blob removed. gc's read-only check skips its scan of every blob
    // while the counter stands where its last scan left it.
    "
    CREATE TABLE blob_generation (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
    );
    INSERT INTO blob_generation (id, value) VALUES (1, 0);
    CREATE TRIGGER blob_added AFTER INSERT ON blobs BEGIN
        UPDATE blob_generation SET value = value + 1 WHERE id = 1;
    END;
    CREATE TRIGGER blob_removed AFTER DELETE ON blobs BEGIN
        UPDATE blob_generation SET value = value + 1 WHERE id = 1;
    END;
    CREATE TRIGGER blob_unreferenced AFTER DELETE ON tree_blobs BEGIN
        UPDATE blob_generation SET value = value + 1 WHERE id = 1;
    END;
    ",
    // v10 (trust.rs): the tag of the machine and index file that last vouched for this
    // index's records. An index without it, or with another one (a restored cache, a copy,
    // a store made by an older tstore), is re-verified from its bytes before any package in
    // it is used.
    "
    CREATE TABLE store_trust (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        tag        TEXT NOT NULL,
        adopted_at INTEGER NOT NULL
    );
    ",
    // v11 (trust.rs): a package kept by an adoption (or rebuilt from its view) is vouched
    // for by its recomputed h1: only, not by its name: content ingested here for the same
    // name replaces it instead of being refused as a conflict.
    "
    ALTER TABLE packages ADD COLUMN adopted INTEGER NOT NULL DEFAULT 0;
    ",
    // v12 (trees_by_hash.rs): a tree found by the h1: a lock file names.
    "
    CREATE INDEX trees_by_h1 ON trees(h1);
    ",
    // v13 (file_facts.rs): what a configuration file's bytes say, derived once per content
    // and rule set.
    "
    CREATE TABLE file_facts (
        blob  TEXT NOT NULL,
        rules TEXT NOT NULL,
        facts BLOB NOT NULL,
        PRIMARY KEY (blob, rules)
    ) WITHOUT ROWID;
    ",
    // v14 (provenance.rs): what vouches for each package's name.
    "
    ALTER TABLE packages ADD COLUMN provenance TEXT NOT NULL DEFAULT 'origin';
    ",
    // v15: the classification itself, run once on a store v14 found (a new store has no
    // packages to classify).
    crate::provenance::CLASSIFY_LEGACY_MODULE_PACKAGES,
    // v16 (durability.rs): the boot whose page cache held a blob file when it was written
    // without fsync; NULL once it is known to be on disk.
    "
    ALTER TABLE blobs ADD COLUMN written_boot TEXT;
    CREATE INDEX blobs_unsynced ON blobs(written_boot) WHERE written_boot IS NOT NULL;
    ",
];

/// The settings of every connection, after WAL mode: foreign keys, and
///
/// - `synchronous = NORMAL`: in WAL mode it may lose the last commits on power loss but
///   never corrupts; since files are made durable before the rows that point at them, a lost
///   row only means a package is ingested again;
/// - a 64 MiB page cache (allocated only as used) and in-memory temp files: a gc sweep of
///   50k blobs re-read index pages ~200k times with the default 2 MiB cache and wrote ~120k
///   pages to an on-disk statement journal (cascading deletes in one transaction).
/// - the file memory-mapped (up to 1 GiB): SQLite reads large values (a package's tree, a
///   file's facts) straight from the file, past its page cache, so without the mapping
///   every lookup of one is a `pread` per 4 KiB page, again each time (8,456 of them in one
///   `init` of 46 roots, the same pages up to 257 times); mapped, a page is faulted in once
///   per process. The index is tstore's own file, changed only through SQLite; another
///   program truncating it under a running tstore ends that process (SIGBUS) instead of
///   letting it read a half-written page.
///
/// One batch: each statement is parsed, and a warm init opens the index once.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "PRAGMA foreign_keys = ON;
         PRAGMA synchronous = NORMAL;
         PRAGMA cache_size = -65536;
         PRAGMA temp_store = MEMORY;
         PRAGMA mmap_size = 1073741824;",
    )
}

/// An open index connection.
pub(crate) struct Index {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

impl Index {
    /// Open (creating if needed) and migrate.
    ///
    /// `holds_blobs` says whether the store has blob files: an empty index file beside them is
    /// a truncated index, refused as damaged (SQLite would take it for a new database, and
    /// the store would seem to hold nothing).
    pub(crate) fn open(path: &Path, holds_blobs: impl FnOnce() -> bool) -> Result<Index> {
        if let Some(index) = Index::open_current(path) {
            return Ok(index);
        }
        if truncated(path, holds_blobs) {
            return Err(StoreError::DamagedIndex {
                path: path.to_owned(),
                context: "opening the index".to_owned(),
                reason: TRUNCATED.to_owned(),
            });
        }
        Index::open_serialized(path)
    }

    /// The common case, without the open lock: an index that exists, is in WAL mode and
    /// has every migration. Anything else (a new store, an old schema, any error while
    /// looking) is left to [`Index::open_serialized`].
    fn open_current(path: &Path) -> Option<Index> {
        // Without CREATE: a missing index is made under the lock.
        let flags = rusqlite::OpenFlags::default() - rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags(path, flags).ok()?;
        conn.busy_timeout(Duration::from_secs(30)).ok()?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .ok()?;
        let version: usize = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .ok()?;
        if !mode.eq_ignore_ascii_case("wal") || version < MIGRATIONS.len() {
            return None;
        }
        configure(&conn).ok()?;
        Some(Index {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Open, switch to WAL and migrate, serialized between processes.
    fn open_serialized(path: &Path) -> Result<Index> {
        let err = |context: &str| {
            let path = path.to_path_buf();
            let context = context.to_owned();
            move |source| StoreError::index(path, context, source)
        };
        // Switching a fresh database to WAL and migrating it can answer SQLITE_BUSY at once,
        // without consulting the busy handler, when another process does the same. So
        // opening is serialized between processes by a small lock file, held only here.
        let open_lock_path = path.with_file_name(".index-open.lock");
        let open_lock = fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&open_lock_path)
            .map_err(|source| StoreError::Io {
                path: open_lock_path.clone(),
                source,
            })?;
        open_lock.file().lock().map_err(|source| StoreError::Io {
            path: open_lock_path.clone(),
            source,
        })?;
        let conn = Connection::open(path).map_err(err("opening"))?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(err("setting busy_timeout"))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(err("reading the journal mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(err("enabling WAL"))?;
        }
        configure(&conn).map_err(err("configuring the connection"))?;
        let mut index = Index {
            conn,
            path: path.to_path_buf(),
        };
        index.migrate()?;
        drop(open_lock);
        Ok(index)
    }

    /// Turn a rusqlite error into a store error with context.
    pub(crate) fn err(&self, context: &str) -> impl FnOnce(rusqlite::Error) -> StoreError {
        let path = self.path.clone();
        let context = context.to_owned();
        move |source| StoreError::index(path, context, source)
    }

    /// Begin the `BEGIN IMMEDIATE` transaction every write runs in (a deferred one would
    /// fail with BUSY at once when it upgrades to a write), with the context its errors carry.
    pub(crate) fn write(
        &mut self,
        context: impl Into<String>,
    ) -> Result<(Transaction<'_>, IndexOp)> {
        let op = IndexOp {
            path: self.path.clone(),
            context: context.into(),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(op.err())?;
        Ok((tx, op))
    }

    fn migrate(&mut self) -> Result<()> {
        let version: usize = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(self.err("migrating the schema"))?;
        if version >= MIGRATIONS.len() {
            return Ok(());
        }
        let (tx, op) = self.write("migrating the schema")?;
        let err = op.err();
        let version: usize = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            tx.execute_batch(sql).map_err(err)?;
            tx.pragma_update(None, "user_version", i + 1).map_err(err)?;
        }
        tx.commit().map_err(err)
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("path", &self.path).finish()
    }
}

/// What one index write is doing: the context its errors carry.
pub(crate) struct IndexOp {
    path: PathBuf,
    context: String,
}

impl IndexOp {
    /// Turn a rusqlite error into a store error naming the index and this operation.
    pub(crate) fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + Copy + '_ {
        move |source| StoreError::index(self.path.clone(), self.context.clone(), source)
    }
}

/// Why an empty index file beside blob files is damaged.
pub(crate) const TRUNCATED: &str = "it is empty while the store holds blobs: a truncated index";

/// Whether the index file at `path` is empty while `holds_blobs` says the store has blobs.
pub(crate) fn truncated(path: &Path, holds_blobs: impl FnOnce() -> bool) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == 0) && holds_blobs()
}

/// Whether the blob directory `blobs` has any entry.
pub(crate) fn has_entries(blobs: &Path) -> bool {
    std::fs::read_dir(blobs).is_ok_and(|mut d| d.next().is_some())
}

/// A tree row.
#[derive(Clone, Debug)]
pub(crate) struct TreeRow {
    pub(crate) encoding: Vec<u8>,
    pub(crate) h1: String,
    pub(crate) files: u64,
    pub(crate) bytes: u64,
}

/// Run `sql` with `params` and collect every row through `map`: the prepare, query and
/// collect steps every listing of the index repeats.
pub(crate) fn query_vec<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    conn.prepare_cached(sql)?.query_map(params, map)?.collect()
}

/// `conn.query_row` through the connection's statement cache: a query run once per package
/// is parsed once per process, not once per package.
pub(crate) fn query_row_cached<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    map: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, map)
}

/// The package keys `sql` selects: its first four columns are `kind, name, version,
/// platform`. A kind the store does not know is a damaged index.
pub(crate) fn package_keys<P: rusqlite::Params>(
    index: &Index,
    context: &str,
    sql: &str,
    params: P,
) -> Result<Vec<PackageKey>> {
    let rows: Vec<(String, String, String, String)> = query_vec(&index.conn, sql, params, |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .map_err(index.err(context))?;
    rows.into_iter()
        .map(|(kind, name, version, platform)| {
            PackageKey::from_columns(&kind, name, version, platform)
        })
        .collect()
}

/// The row id of package `key`, if committed.
pub(crate) fn package_id(conn: &Connection, key: &PackageKey) -> rusqlite::Result<Option<i64>> {
    query_row_cached(
        conn,
        "SELECT id FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
        [key.kind(), key.name(), key.version(), key.platform()],
        |r| r.get(0),
    )
    .optional()
}

/// Fetch a tree row.
pub(crate) fn tree_row(conn: &Connection, id: &str) -> rusqlite::Result<Option<TreeRow>> {
    query_row_cached(
        conn,
        "SELECT encoding, h1, files, bytes FROM trees WHERE id = ?1",
        [id],
        |r| {
            Ok(TreeRow {
                encoding: r.get(0)?,
                h1: r.get(1)?,
                files: r.get(2)?,
                bytes: r.get(3)?,
            })
        },
    )
    .optional()
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Put the index at `root` back to how an older tstore left its module packages (every one
/// of "origin") and run the upgrade's classification again, as migration v15 does.
#[cfg(test)]
pub(crate) fn rerun_legacy_classification(root: &Path) {
    let conn = Connection::open(root.join("index.sqlite")).unwrap();
    conn.execute_batch("UPDATE packages SET provenance = 'origin'")
        .unwrap();
    conn.execute_batch(crate::provenance::CLASSIFY_LEGACY_MODULE_PACKAGES)
        .unwrap();
}
