//! gc's size budget (`tstore gc --max-size`, `--min-free`): after the grace-period sweep,
//! drop packages no live checkout links, least recently used first, until the store fits.
//!
//! Rules:
//! - The store's size is the bytes of its blobs as the index records them (a view is hard
//!   links of blobs and costs nothing more). `--max-size` bounds it; `--min-free` asks for
//!   free space on the store's filesystem, counting what this gc frees.
//! - Recency is a package's `max(created_at, used_at)`: `used_at` is stamped when a root
//!   records its links (at most every ten minutes, roots.rs), so no warm init writes for it,
//!   and it lives in the index, so it survives a restored cache.
//! - Only packages no live root links are candidates, and none a process has open through
//!   the mount or the caller pins. The grace period does not protect a candidate: gc holds the exclusive lock,
//!   so no init is between committing a package and recording its root.
//! - Trees no package uses (kept by the grace period) go first; then a package's bytes are
//!   freed when its tree and blobs are used by nothing else; the next candidate is taken
//!   until the store fits or none is left. What could not be freed is
//!   said with why (linked by live checkouts, open by a process).

use std::path::PathBuf;

use rusqlite::Transaction;

use crate::blob::BlobId;
use crate::ids::PackageKey;
use crate::index::{query_vec, IndexOp};
use crate::{DiskUsage, StoreError};
use crate::{Result, Store};

/// The size the store must fit after gc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeBudget {
    /// The most bytes the store's blobs may hold.
    pub max_size: Option<u64>,
    /// The least free bytes its filesystem must have.
    pub min_free: Option<u64>,
}

/// What the budget made gc do.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BudgetReport {
    /// The size the store had to come down to (bytes).
    pub target: u64,
    /// Its size after the grace-period sweep, before the budget (bytes).
    pub size_before: u64,
    /// Its size after gc (bytes).
    pub size_after: u64,
    /// Packages dropped for the budget, least recently used first.
    pub packages_dropped: Vec<PackageKey>,
    /// Whether the store fits.
    pub met: bool,
    /// Bytes of packages live checkouts link (never dropped).
    pub linked_bytes: u64,
    /// Packages kept because a process has files of them open through the mount.
    pub in_use: u64,
}

/// What the budget sweep adds to gc's doomed files: views, and blobs with their sizes.
pub(crate) type Freed = (Vec<PathBuf>, Vec<(BlobId, u64)>);

impl Store {
    /// Drop unlinked packages (see the module docs), least recently used first, until the
    /// store's blobs fit `budget`, in gc's transaction `tx`. `freeing`: bytes the sweep
    /// before it frees.
    pub(crate) fn sweep_to_budget(
        &self,
        tx: &Transaction<'_>,
        op: &IndexOp,
        budget: &SizeBudget,
        freeing: u64,
        opts: &crate::GcOptions,
    ) -> Result<(BudgetReport, Freed)> {
        let err = op.err();
        let size: u64 = tx
            .query_row("SELECT COALESCE(SUM(size), 0) FROM blobs", [], |r| r.get(0))
            .map_err(&err)?;
        let linked_bytes: u64 = tx
            .query_row(
                "SELECT COALESCE(SUM(b.size), 0) FROM blobs b WHERE EXISTS (
                   SELECT 1 FROM tree_blobs tb JOIN packages p ON p.tree = tb.tree
                   JOIN root_links l ON l.package = p.id WHERE tb.blob = b.id)",
                [],
                |r| r.get(0),
            )
            .map_err(&err)?;
        let mut report = BudgetReport {
            size_before: size,
            size_after: size,
            linked_bytes,
            ..BudgetReport::default()
        };
        let mut freed: Freed = Default::default();
        let Some(target) = self.space().budget_target(budget, size, freeing)? else {
            report.target = size;
            report.met = true;
            return Ok((report, freed));
        };
        report.target = target;
        // First what no package uses any more (trees the grace period kept): nothing is
        // between ingest and commit while gc holds the store alone.
        let orphans = query_vec(
            tx,
            "SELECT id FROM trees t WHERE NOT EXISTS (SELECT 1 FROM packages p WHERE p.tree = t.id)",
            [],
            |r| r.get::<_, String>(0),
        )
        .map_err(&err)?;
        for tree in orphans {
            self.drop_tree(tx, op, &tree, &mut report, &mut freed)?;
        }
        for crate::gc::Unlinked { id, key, tree, .. } in crate::gc::unlinked_packages(tx, op)? {
            if report.size_after <= target {
                break;
            }
            if opts.in_use.contains(&key) {
                report.in_use += 1;
                continue;
            }
            if opts.pinned.contains(&key) {
                continue;
            }
            tx.execute("DELETE FROM packages WHERE id = ?1", [id])
                .map_err(&err)?;
            freed.0.push(self.view_dir(&key)?);
            report.packages_dropped.push(key);
            let tree_unused: bool = tx
                .query_row(
                    "SELECT NOT EXISTS (SELECT 1 FROM packages WHERE tree = ?1)",
                    [&tree],
                    |r| r.get(0),
                )
                .map_err(&err)?;
            if tree_unused {
                self.drop_tree(tx, op, &tree, &mut report, &mut freed)?;
            }
        }
        report.met = report.size_after <= target;
        Ok((report, freed))
    }

    /// Delete the tree `tree` (no package uses it) and every blob only it used, counting
    /// their bytes off `report.size_after`.
    fn drop_tree(
        &self,
        tx: &Transaction<'_>,
        op: &IndexOp,
        tree: &str,
        report: &mut BudgetReport,
        freed: &mut Freed,
    ) -> Result<()> {
        let err = op.err();
        let blobs = query_vec(
            tx,
            "SELECT tb.blob, b.size FROM tree_blobs tb JOIN blobs b ON b.id = tb.blob
             WHERE tb.tree = ?1",
            [tree],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?)),
        )
        .map_err(&err)?;
        tx.execute("DELETE FROM trees WHERE id = ?1", [tree])
            .map_err(&err)?;
        for (blob, bytes) in blobs {
            let gone = tx
                .execute(
                    "DELETE FROM blobs WHERE id = ?1
                     AND NOT EXISTS (SELECT 1 FROM tree_blobs WHERE blob = ?1)
                     AND NOT EXISTS (SELECT 1 FROM archives WHERE blob = ?1)",
                    [&blob],
                )
                .map_err(&err)?;
            if gone == 1 {
                report.size_after = report.size_after.saturating_sub(bytes);
                freed.1.push((blob.parse()?, bytes));
            }
        }
        Ok(())
    }
}

/// What the store takes on disk, what the disk has free, and what a size budget asks gc
/// to reach.
#[derive(Clone, Copy)]
pub struct Space<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Disk space ([`Space`]).
    pub fn space(&self) -> Space<'_> {
        Space { store: self }
    }
}

impl Space<'_> {
    /// The bytes of the store's blobs as the index records them.
    pub fn content_bytes(&self) -> Result<u64> {
        let index = self.store.index();
        index
            .conn
            .query_row("SELECT COALESCE(SUM(size), 0) FROM blobs", [], |r| r.get(0))
            .map_err(index.err("measuring the store"))
    }

    /// Free bytes on the store's filesystem (for an unprivileged user).
    pub fn free_bytes(&self) -> Result<u64> {
        let stat = nix::sys::statvfs::statvfs(&self.store.layout.root)
            .map_err(|e| crate::StoreError::io(&self.store.layout.root, std::io::Error::from(e)))?;
        Ok(stat.blocks_available() as u64 * stat.fragment_size() as u64)
    }

    /// The size the store must come down to under `budget`, given that `freeing` bytes are
    /// about to be freed; `None` when it fits already.
    pub fn budget_target(
        &self,
        budget: &SizeBudget,
        size: u64,
        freeing: u64,
    ) -> Result<Option<u64>> {
        let mut target = budget.max_size.unwrap_or(u64::MAX);
        if let Some(min_free) = budget.min_free {
            let free = self.store.space().free_bytes()?.saturating_add(freeing);
            target = target.min(size.saturating_sub(min_free.saturating_sub(free)));
        }
        Ok((size > target).then_some(target))
    }

    /// Counts and sizes of what the store holds.
    pub fn usage(&self) -> Result<DiskUsage> {
        let mut usage = {
            let index = self.store.index();
            let count = |sql: &str| -> Result<u64> {
                index
                    .conn
                    .query_row(sql, [], |r| r.get(0))
                    .map_err(index.err("measuring disk usage"))
            };
            DiskUsage {
                packages: count("SELECT COUNT(*) FROM packages")?,
                trees: count("SELECT COUNT(*) FROM trees")?,
                blobs: count("SELECT COUNT(*) FROM blobs")?,
                blob_bytes: 0,
                logical_bytes: count(
                    "SELECT COALESCE(SUM(t.bytes), 0) FROM packages p JOIN trees t ON t.id = p.tree",
                )?,
                links: count("SELECT COUNT(*) FROM root_links")?,
                linked_bytes: count(
                    "SELECT COALESCE(SUM(t.bytes), 0) FROM root_links l
                     JOIN packages p ON p.id = l.package JOIN trees t ON t.id = p.tree",
                )?,
            }
        };
        for entry in walkdir::WalkDir::new(&self.store.layout.blobs) {
            let entry = entry.map_err(|e| StoreError::io(&self.store.layout.blobs, e.into()))?;
            if entry.file_type().is_file() {
                let meta = entry
                    .metadata()
                    .map_err(|e| StoreError::io(entry.path(), e.into()))?;
                usage.blob_bytes += meta.len();
            }
        }
        Ok(usage)
    }
}
