//! What each of the store's writes survives, and what a crash costs.
//!
//! The rule: a crash of a process loses nothing its writes reached (the kernel's page cache
//! outlives the process); a crash of the machine may lose or zero whatever was not yet on
//! disk. So the store makes durable only what cannot be rebuilt, and marks what it left to
//! the page cache with the boot that wrote it (`/proc/sys/kernel/random/boot_id`):
//!
//! - **The index** is SQLite's (WAL, `synchronous = NORMAL`): a machine crash may lose the
//!   last commits, never corrupt it. A lost row only means a package is ingested again.
//! - **Blob files and views** are written, renamed into place and linked without `fsync`
//!   (that was one `fsync` per file and per directory: most of a cold init on a busy disk).
//!   A blob written so has `blobs.written_boot` set to this boot; a package committed from
//!   such blobs records its content stat marked with that boot (`unsynced BOOT`).
//! - **In the same boot** those marks change nothing: every reader sees the page cache, so
//!   the bytes are the ones hashed.
//! - **In a later boot** a mark means "maybe lost": a package so marked is stale
//!   (`freshness.rs`) and re-hashed from the disk before it is linked again (then its blobs
//!   are unmarked: what was read after the boot that wrote it came from the disk); a blob file
//!   in place that is so marked (or has no row at all) is not reused by an ingest, which
//!   replaces it with the content in hand.
//! - **`gc`** (cron), whether it finds anything to collect or not, calls one `syncfs` for
//!   the store's filesystem and then unmarks the blobs and packages this boot had marked
//!   before it ([`Store::make_durable`]).
//!
//! Where no boot id can be read (no `/proc`), every blob and view is made durable before
//! the row naming it, as before ([`Durability::Synced`]).
//!
//! Left open: between a machine crash and the next init that installs a marked package,
//! the FUSE mount serves the package's files as the disk has them.

use std::sync::OnceLock;

use rusqlite::OptionalExtension as _;

use crate::blob::{BlobBatch, BlobId};
use crate::{Result, Store, StoreError};

/// Where the kernel names the current boot.
const BOOT_ID_FILE: &str = "/proc/sys/kernel/random/boot_id";

/// For tests: the boot id to use instead of the kernel's, to show what a store written in
/// another boot (before a machine crash) is worth. It can only make tstore verify more:
/// naming the boot that wrote a store makes tstore believe what that boot's page cache held,
/// which is what the same boot believes anyway.
pub const TEST_BOOT_ID_VAR: &str = "TSTORE_TEST_BOOT_ID";

/// The prefix of a content stat recorded for a package whose files were left to the page
/// cache of the boot it names.
const UNSYNCED: &str = "unsynced ";

/// Record a blob: `?4` is the boot whose page cache holds the file this process just wrote
/// (NULL when it wrote none, or synced it); a file written again marks its row again.
pub(crate) const PUT_BLOB: &str =
    "INSERT INTO blobs (id, size, sha256, written_boot) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (id) DO UPDATE SET written_boot = excluded.written_boot
     WHERE excluded.written_boot IS NOT NULL";

/// How the store's blob files and views reach the disk (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Every file and directory fsynced before the index row naming it.
    Synced,
    /// Left to the page cache of this boot, marked with its id.
    Deferred {
        /// The current boot's id.
        boot: String,
    },
}

impl Durability {
    /// The current boot's durability: deferred where the kernel names the boot.
    pub(crate) fn current() -> Durability {
        static CURRENT: OnceLock<Durability> = OnceLock::new();
        CURRENT
            .get_or_init(|| {
                let boot = std::env::var(TEST_BOOT_ID_VAR)
                    .ok()
                    .or_else(|| std::fs::read_to_string(BOOT_ID_FILE).ok())
                    .map(|b| b.trim().to_owned())
                    .filter(|b| !b.is_empty() && b.bytes().all(|c| c.is_ascii_graphic()));
                match boot {
                    Some(boot) => Durability::Deferred { boot },
                    None => Durability::Synced,
                }
            })
            .clone()
    }

    /// The boot whose page cache holds what is written now, if writes are deferred.
    pub(crate) fn boot(&self) -> Option<&str> {
        match self {
            Durability::Synced => None,
            Durability::Deferred { boot } => Some(boot),
        }
    }

    /// Whether writes are fsynced before the rows naming them.
    pub(crate) fn syncs(&self) -> bool {
        matches!(self, Durability::Synced)
    }
}

/// A package's content stat as recorded: marked with `boot` when its files were left to
/// that boot's page cache.
pub(crate) fn recorded_stat(stat: String, boot: Option<&str>) -> String {
    match boot {
        Some(boot) => format!("{UNSYNCED}{boot}\n{stat}"),
        None => stat,
    }
}

/// A recorded content stat split into the boot that marked it (if any) and the stat.
pub(crate) fn split_recorded(recorded: &str) -> (Option<&str>, &str) {
    match recorded
        .strip_prefix(UNSYNCED)
        .and_then(|rest| rest.split_once('\n'))
    {
        Some((boot, stat)) => (Some(boot), stat),
        None => (None, recorded),
    }
}

/// The mark a package of `tree` records: the boot of its blobs' page cache, if one is not
/// known to be on disk. A blob of another boot wins (the package is then stale at once and
/// re-hashed before it is trusted); else this boot; else none.
pub(crate) fn tree_mark(
    conn: &rusqlite::Connection,
    tree: &str,
    current: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    let mut marks = conn.prepare_cached(
        "SELECT DISTINCT b.written_boot FROM tree_blobs t JOIN blobs b ON b.id = t.blob
         WHERE t.tree = ?1 AND b.written_boot IS NOT NULL",
    )?;
    let boots: Vec<String> = marks
        .query_map([tree], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(boots
        .iter()
        .find(|b| Some(b.as_str()) != current)
        .or_else(|| boots.first())
        .cloned())
}

impl Store {
    /// A batch of blob writes under this store's durability: deferred, a blob file in place
    /// is reused only where [`Store::blob_in_place_is_sound`].
    pub(crate) fn blob_batch(&self) -> BlobBatch<'_> {
        if self.durability.syncs() {
            BlobBatch::new(&self.layout)
        } else {
            BlobBatch::deferred(&self.layout, Box::new(|id| self.blob_in_place_is_sound(id)))
        }
    }

    /// Build the view of `tree` at `view` under this store's durability.
    pub(crate) fn materialize_view(
        &self,
        tree: &crate::tree::Tree,
        view: &std::path::Path,
    ) -> Result<crate::view::Materialized> {
        crate::view::materialize(
            &self.layout,
            &self.linker,
            tree,
            view,
            self.durability.syncs(),
        )
    }

    /// Whether a blob file already in place may be reused by an ingest without replacing
    /// it: its row says it is on disk, or it was written in this boot. A file with no row
    /// (left by an ingest that never recorded it) or written in another boot that never
    /// made it durable is replaced with the content in hand.
    pub(crate) fn blob_in_place_is_sound(&self, id: &BlobId) -> Result<bool> {
        let Some(current) = self.durability.boot() else {
            return Ok(true);
        };
        let index = self.index();
        let row: Option<Option<String>> = index
            .conn
            .prepare_cached("SELECT written_boot FROM blobs WHERE id = ?1")
            .and_then(|mut s| {
                s.query_row([id.to_string()], |r| r.get::<_, Option<String>>(0))
                    .optional()
            })
            .map_err(index.err("reading a blob's durability"))?;
        Ok(match row {
            Some(None) => true,
            Some(Some(boot)) => boot == current,
            None => false,
        })
    }

    /// Make what this boot left to the page cache durable: the marks present now are read,
    /// the store's filesystem is synced once (`syncfs`), then exactly those marks go. Safe
    /// beside running inits: a file is written before the row that marks it, so every mark
    /// read before the sync names a file the sync covers; a mark added meanwhile, or a
    /// package stat recorded again, stays. Returns the blobs unmarked.
    pub fn make_durable(&self) -> Result<u64> {
        let Some(boot) = self.durability.boot() else {
            return Ok(0);
        };
        let prefix = recorded_stat(String::new(), Some(boot));
        let (blobs, stats) = {
            let index = self.index();
            let err = || index.err("reading what is not yet durable");
            let blobs: Vec<String> = crate::index::query_vec(
                &index.conn,
                "SELECT id FROM blobs WHERE written_boot = ?1",
                [boot],
                |r| r.get(0),
            )
            .map_err(err())?;
            let stats: Vec<(i64, String)> = crate::index::query_vec(
                &index.conn,
                "SELECT package, stat FROM package_stats WHERE substr(stat, 1, length(?1)) = ?1",
                [&prefix],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err())?;
            (blobs, stats)
        };
        if blobs.is_empty() && stats.is_empty() {
            return Ok(0);
        }
        let root = fs_err::File::open(&self.layout.root)
            .map_err(|e| StoreError::io(&self.layout.root, e))?;
        nix::unistd::syncfs(&root)
            .map_err(|e| StoreError::io(&self.layout.root, std::io::Error::from(e)))?;
        let mut index = self.index();
        let (tx, op) = index.write("recording what is durable".to_owned())?;
        let err = op.err();
        let mut unmarked = 0;
        {
            let mut unmark = tx
                .prepare("UPDATE blobs SET written_boot = NULL WHERE id = ?1 AND written_boot = ?2")
                .map_err(err)?;
            for id in &blobs {
                unmarked += unmark.execute([id.as_str(), boot]).map_err(err)?;
            }
            let mut plain = tx
                .prepare("UPDATE package_stats SET stat = ?3 WHERE package = ?1 AND stat = ?2")
                .map_err(err)?;
            for (package, stat) in &stats {
                let (_, rest) = split_recorded(stat);
                plain
                    .execute(rusqlite::params![package, stat, rest])
                    .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(unmarked as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_stat_splits_back() {
        let stat = "f 1 2 3\nv 4 5\n".to_owned();
        assert_eq!(recorded_stat(stat.clone(), None), stat);
        let marked = recorded_stat(stat.clone(), Some("b00t"));
        assert_eq!(split_recorded(&marked), (Some("b00t"), stat.as_str()));
        assert_eq!(split_recorded(&stat), (None, stat.as_str()));
    }
}
