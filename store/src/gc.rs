//! Garbage collection and leftover cleanup.
//!
//! [`Store::gc`] runs under the **exclusive** store lock (the caller took it with
//! [`Locks::try_exclusive`], without waiting). No init, import or `providers lock` is
//! running then (they hold the lock shared from before they look packages up until their
//! root is recorded), so nothing is half-ingested and every link a running init made is
//! already recorded as a root. The FUSE daemon holds no lock; it only reads rows and blobs.
//!
//! 1. **Roots.** A root whose directory is gone is dropped. Each recorded link is re-read:
//!    it stays only while `readlink(link)` is still the recorded target; a root with no link
//!    left is dropped.
//! 2. **Mark.** Live packages are those some remaining link names.
//! 3. **Sweep rows**, in one `BEGIN IMMEDIATE` transaction: packages no link names whose
//!    `max(created_at, used_at)` is older than the grace period (`min_age`); then trees no
//!    package uses and first recorded before the grace period (`tree_times`); then blobs no
//!    tree uses whose file's ctime is older than the grace period. Foreign keys (a package's
//!    tree, a tree's blobs) make a wrong delete fail instead of dangling.
//!    With a size budget, unlinked packages then go least recently used first until the
//!    store fits (`gc_budget.rs`).
//! 4. **Sweep files**, only after the rows are committed (the index never points at
//!    nothing): views of removed packages (made writable first), blob files and their
//!    `.x`/`.r` twins.
//! 5. **Leftovers** ([`Store::leftovers`], `leftovers.rs`): blob files without a row (a crash between
//!    rename and row), views without a package row (a crash between view rename and row, or
//!    a gc crash between its commit and its file sweep), entries of `tmp/` older than the
//!    grace period (a younger one may be an ingest in flight).
//!
//! A gc killed at any point leaves rows that point at files that exist (files go last), plus
//! at most files without rows, which the next gc or `store verify` removes.
//!
//! What a process holds open stays: the daemon serves reads by inode and may have to reopen
//! a blob file for any read (it answers `open` with ENOSYS, so the kernel sends no
//! `open`/`release`, and its table of open blob files is bounded), and the kernel reads a
//! mapped provider binary again whenever it evicted its pages. So a package with a file
//! some process has open or mapped through the mount (the caller finds them in `/proc`:
//! [`GcOptions::in_use`]) is not swept while it is. New opens of a swept package answer
//! ENOENT; the daemon does not crash. In the views fallback (no FUSE) links go to hardlinks
//! of blobs, and an unlinked file stays readable through every descriptor and mapping.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Transaction;

use crate::blob::{exists, BlobId};
use crate::ids::PackageKey;
use crate::index::{now, query_vec, IndexOp};
use crate::leftovers::Leftovers;
use crate::lock::{assert_exclusive, StoreLock};
use crate::view::remove_view;
use crate::{Result, Store, StoreError};

/// What [`Store::gc`] should do.
#[derive(Clone, Debug)]
pub struct GcOptions {
    /// Grace period: nothing younger is removed.
    pub min_age: Duration,
    /// Compute and report, remove nothing.
    pub dry_run: bool,
    /// Packages a process has open or mapped through the mount right now (a provider
    /// running from it): kept whatever their roots say, since the kernel may read them
    /// again at any time and the daemon serves only what the store still holds.
    pub in_use: HashSet<PackageKey>,
    /// A size the store must fit: unlinked packages go, least recently used first
    /// (`gc_budget.rs`).
    pub budget: Option<crate::SizeBudget>,
    /// Packages kept whatever their roots and age say (what a CI cache's lock files pin).
    pub pinned: HashSet<PackageKey>,
    /// Keep the git cache whatever its age (a pinned git call still needs it).
    pub keep_git_cache: bool,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            min_age: Duration::from_secs(3600),
            in_use: HashSet::new(),
            dry_run: false,
            budget: None,
            pinned: HashSet::new(),
            keep_git_cache: false,
        }
    }
}

/// What a gc run did (or, with `dry_run`, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GcReport {
    /// Nothing was removed.
    pub dry_run: bool,
    /// Roots kept.
    pub roots_live: u64,
    /// Roots dropped (directory gone or no link into the store left).
    pub roots_dropped: Vec<PathBuf>,
    /// Links dropped from roots that stay.
    pub links_dropped: u64,
    /// Packages removed.
    pub packages_removed: Vec<PackageKey>,
    /// Packages kept because a live root links them.
    pub packages_live: u64,
    /// Unreferenced packages kept because they are younger than the grace period.
    pub packages_young: u64,
    /// Unreferenced packages kept because a process has one of their files open or mapped
    /// through the mount.
    pub packages_in_use: u64,
    /// Unreferenced packages kept because they are pinned ([`GcOptions::pinned`]).
    pub packages_pinned: u64,
    /// Trees removed.
    pub trees_removed: u64,
    /// Blobs removed.
    pub blobs_removed: u64,
    /// Bytes of blob files (twins included) removed.
    pub bytes_freed: u64,
    /// Leftovers found and removed.
    pub leftovers: Leftovers,
    /// What the size budget made gc drop, when one was given.
    pub budget: Option<crate::BudgetReport>,
    /// Wall time in milliseconds.
    pub millis: u64,
}

/// Unlink `path`; whether it existed. No `stat` first: a sweep unlinks 50k blobs and
/// tries two twin names each, most of which do not exist.
fn unlink_if_exists(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Run `f` over `items` on a few threads; the sum of its results, or the first error.
fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Result<u64> + Sync) -> Result<u64> {
    const THREADS: usize = 8;
    if items.is_empty() {
        return Ok(0);
    }
    let chunk = items.len().div_ceil(THREADS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&f).sum::<Result<u64>>()))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a gc worker thread panicked"))
            .sum()
    })
}

/// ctime in seconds and size, or `None` if the file is gone.
pub(crate) fn ctime_and_len(path: &Path) -> Result<Option<(i64, u64)>> {
    match fs_err::symlink_metadata(path) {
        Ok(m) => Ok(Some((m.ctime(), m.len()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Delete the links that no longer point where they were recorded, then the roots with no
/// live link left (their remaining links go with them: `ON DELETE CASCADE`).
fn drop_dead_roots(
    tx: &Transaction<'_>,
    dead_links: &[DeadLink],
    dead_roots: &[i64],
) -> rusqlite::Result<()> {
    for (root, link) in dead_links {
        tx.execute(
            "DELETE FROM root_links WHERE root = ?1 AND link = ?2",
            rusqlite::params![root, link],
        )?;
    }
    for root in dead_roots {
        tx.execute("DELETE FROM roots WHERE id = ?1", [root])?;
    }
    Ok(())
}

/// Delete every tree no package uses that was first recorded no later than `cutoff` (a
/// tree without a `tree_times` row counts as old); the number deleted. Their
/// `tree_blobs` rows go with them (`ON DELETE CASCADE`).
fn sweep_trees(tx: &Transaction<'_>, cutoff: i64) -> rusqlite::Result<u64> {
    let removed = tx.execute(
        "DELETE FROM trees WHERE id IN (
           SELECT t.id FROM trees t LEFT JOIN tree_times tt ON tt.tree = t.id
           WHERE NOT EXISTS (SELECT 1 FROM packages p WHERE p.tree = t.id)
             AND COALESCE(tt.created_at, 0) <= ?1)",
        [cutoff],
    )?;
    Ok(removed as u64)
}

/// Whether a root's recorded link is live: its root directory exists and the link still
/// points where it was recorded.
pub(crate) fn link_is_live(root: &str, link: &str, target: &str) -> bool {
    Path::new(root).is_dir() && std::fs::read_link(link).is_ok_and(|t| t == Path::new(target))
}

/// A package no root links.
pub(crate) struct Unlinked {
    /// Its row id.
    pub(crate) id: i64,
    pub(crate) key: PackageKey,
    /// Its tree's id.
    pub(crate) tree: String,
    /// Its last use: `max(created_at, used_at)`.
    pub(crate) used: i64,
}

/// Every package no root links, least recently used first.
pub(crate) fn unlinked_packages(tx: &Transaction<'_>, op: &IndexOp) -> Result<Vec<Unlinked>> {
    type Row = (i64, String, String, String, String, String, i64);
    let rows: Vec<Row> = query_vec(
        tx,
        "SELECT id, kind, name, version, platform, tree, MAX(created_at, used_at) AS used
         FROM packages p WHERE NOT EXISTS (SELECT 1 FROM root_links l WHERE l.package = p.id)
         ORDER BY used, id",
        [],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        },
    )
    .map_err(op.err())?;
    rows.into_iter()
        .map(|(id, kind, name, version, platform, tree, used)| {
            Ok(Unlinked {
                id,
                key: PackageKey::from_columns(&kind, name, version, platform)?,
                tree,
                used,
            })
        })
        .collect()
}

/// A root's link that no longer points where it was recorded: (root id, link path).
pub(crate) type DeadLink = (i64, String);

/// What step 3 removed from the index and step 4 removes from disk: view directories, and
/// blobs with their sizes.
type Doomed = (Vec<PathBuf>, Vec<(BlobId, u64)>);

impl Store {
    /// Collect garbage (see the module docs). Needs the exclusive store lock; a dry run,
    /// which changes nothing (its transaction rolls back), may run under the shared lock
    /// beside inits, as a preview (`tstore gc --dry-run`; the read-only check that decides
    /// whether a run has work is [`Store::gc_idle_report`]).
    pub fn gc(&self, lock: &StoreLock, opts: &GcOptions) -> Result<GcReport> {
        if !opts.dry_run {
            assert_exclusive(lock, "gc");
        }
        let started = Instant::now();
        let cutoff = now() - i64::try_from(opts.min_age.as_secs()).unwrap_or(i64::MAX);
        let mut report = GcReport {
            dry_run: opts.dry_run,
            ..GcReport::default()
        };
        let (dead_links, dead_roots) = self.gc_roots(&mut report)?;
        let (views, blobs) = self.gc_rows(&dead_links, &dead_roots, cutoff, opts, &mut report)?;
        self.gc_files(&views, &blobs, opts, &mut report)?;
        // Leftovers last: files the index no longer knows.
        report.leftovers = self.leftovers_keeping(
            Some(cutoff),
            (!opts.dry_run).then_some(lock),
            opts.keep_git_cache,
        )?;
        report.bytes_freed += report.leftovers.blob_bytes;
        // What inits of this boot left to the page cache is made durable here, once, with
        // no writer running (durability.rs).
        if !opts.dry_run {
            self.make_durable()?;
        }
        report.millis = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    /// Step 1: re-read every recorded link (filesystem reads, outside any transaction). A
    /// link is live when its root directory exists and the link still points where it was
    /// recorded; a root with no live link is dead. Returns the dead links and dead roots.
    pub(crate) fn gc_roots(&self, report: &mut GcReport) -> Result<(Vec<DeadLink>, Vec<i64>)> {
        let links: Vec<(i64, String, String, String)> = {
            let index = self.index();
            let err = || index.err("reading roots");
            query_vec(
                &index.conn,
                "SELECT r.id, r.path, l.link, l.target FROM roots r
                     LEFT JOIN root_links l ON l.root = r.id ORDER BY r.id",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                        r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                    ))
                },
            )
            .map_err(err())?
        };
        let mut dead_links: Vec<(i64, String)> = Vec::new();
        let mut roots: std::collections::BTreeMap<i64, (String, u64)> = Default::default();
        for (root, path, link, target) in links {
            let entry = roots.entry(root).or_insert((path.clone(), 0));
            if link.is_empty() {
                continue;
            }
            let live = link_is_live(&path, &link, &target);
            if live {
                entry.1 += 1;
            } else {
                dead_links.push((root, link));
            }
        }
        let dead_roots: Vec<i64> = roots
            .iter()
            .filter(|(_, (_, live))| *live == 0)
            .map(|(id, _)| *id)
            .collect();
        report.roots_live = (roots.len() - dead_roots.len()) as u64;
        report.roots_dropped = dead_roots
            .iter()
            .map(|id| PathBuf::from(&roots[id].0))
            .collect();
        report.links_dropped = dead_links
            .iter()
            .filter(|(root, _)| !dead_roots.contains(root))
            .count() as u64;

        Ok((dead_links, dead_roots))
    }

    /// Steps 2 and 3, in one transaction: drop dead links and roots, then every package no
    /// root links that is older than the cutoff, trees no package uses and blobs no tree
    /// uses (a blob younger than the cutoff stays: an ingest may be about to use it). A
    /// dry run rolls back. Returns the views and blobs whose files go next.
    fn gc_rows(
        &self,
        dead_links: &[DeadLink],
        dead_roots: &[i64],
        cutoff: i64,
        opts: &GcOptions,
        report: &mut GcReport,
    ) -> Result<Doomed> {
        let mut index = self.index();
        let (tx, op) = index.write("collecting garbage")?;
        let err = op.err();
        drop_dead_roots(&tx, dead_links, dead_roots).map_err(err)?;
        let mut views = self.sweep_packages(&tx, &op, cutoff, opts, report)?;
        report.trees_removed = sweep_trees(&tx, cutoff).map_err(err)?;
        let mut blobs = self.sweep_blobs(&tx, &op, cutoff)?;
        if let Some(budget) = &opts.budget {
            let freeing = blobs.iter().map(|(_, bytes)| bytes).sum();
            let (done, (more_views, more_blobs)) =
                self.sweep_to_budget(&tx, &op, budget, freeing, opts)?;
            report
                .packages_removed
                .extend(done.packages_dropped.iter().cloned());
            views.extend(more_views);
            blobs.extend(more_blobs);
            report.budget = Some(done);
        }
        report.blobs_removed = blobs.len() as u64;
        // Facts live as long as the store holds their content (file_facts.rs).
        tx.execute(
            "DELETE FROM file_facts WHERE blob NOT IN (SELECT id FROM blobs)",
            [],
        )
        .map_err(err)?;
        if opts.dry_run {
            tx.rollback().map_err(err)?;
        } else {
            tx.commit().map_err(err)?;
        }
        Ok((views, blobs))
    }

    /// Count the packages a live root links, and delete every other package whose
    /// `max(created_at, used_at)` is not after `cutoff` (younger ones are counted as
    /// young). Returns the views of the deleted packages.
    fn sweep_packages(
        &self,
        tx: &Transaction<'_>,
        op: &IndexOp,
        cutoff: i64,
        opts: &GcOptions,
        report: &mut GcReport,
    ) -> Result<Vec<PathBuf>> {
        let err = op.err();
        report.packages_live = tx
            .query_row(
                "SELECT COUNT(*) FROM packages p WHERE EXISTS (SELECT 1 FROM root_links l WHERE l.package = p.id)",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        let unreferenced = unlinked_packages(tx, op)?;
        let mut views = Vec::new();
        for Unlinked { id, key, used, .. } in unreferenced {
            if used > cutoff {
                report.packages_young += 1;
                continue;
            }
            if opts.in_use.contains(&key) {
                report.packages_in_use += 1;
                continue;
            }
            if opts.pinned.contains(&key) {
                report.packages_pinned += 1;
                continue;
            }
            tx.execute("DELETE FROM packages WHERE id = ?1", [id])
                .map_err(err)?;
            views.push(self.view_dir(&key)?);
            report.packages_removed.push(key);
        }
        Ok(views)
    }

    /// Delete every blob row no tree uses whose primary file's ctime is not after `cutoff`
    /// (or whose file is gone). Returns the blobs with the size of their primary file.
    fn sweep_blobs(
        &self,
        tx: &Transaction<'_>,
        op: &IndexOp,
        cutoff: i64,
    ) -> Result<Vec<(BlobId, u64)>> {
        let err = op.err();
        let candidates = query_vec(
            tx,
            "SELECT id FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM tree_blobs tb WHERE tb.blob = b.id)",
            [],
            |r| r.get::<_, String>(0),
        )
        .map_err(err)?;
        let mut blobs = Vec::new();
        let mut delete = tx.prepare("DELETE FROM blobs WHERE id = ?1").map_err(err)?;
        for id in candidates {
            let blob: BlobId = id.parse()?;
            let stat = ctime_and_len(&self.layout.blob_path(&blob))?;
            if stat.is_some_and(|(t, _)| t > cutoff) {
                continue;
            }
            delete.execute([&id]).map_err(err)?;
            blobs.push((blob, stat.map_or(0, |(_, len)| len)));
        }
        Ok(blobs)
    }

    /// Step 4: the files, after their rows are gone. A twin has the primary's content,
    /// hence its size. Unlinking is latency-bound (tens of µs each on a virtual disk; a big
    /// sweep unlinks 100k files), so blobs and views are removed by a few threads at once.
    fn gc_files(
        &self,
        views: &[PathBuf],
        blobs: &[(BlobId, u64)],
        opts: &GcOptions,
        report: &mut GcReport,
    ) -> Result<()> {
        let remove_blob = |(blob, len): &(BlobId, u64)| -> Result<u64> {
            let mut freed = 0;
            for path in [
                self.layout.blob_path(blob),
                self.layout.blob_twin_path(blob, true),
                self.layout.blob_twin_path(blob, false),
            ] {
                let present = if opts.dry_run {
                    fs_err::symlink_metadata(&path).is_ok()
                } else {
                    unlink_if_exists(&path)?
                };
                if present {
                    freed += len;
                }
            }
            Ok(freed)
        };
        let remove_view_dir = |view: &PathBuf| -> Result<u64> {
            if !opts.dry_run && exists(view)? {
                remove_view(&self.layout, view)?;
            }
            Ok(0)
        };
        report.bytes_freed += in_parallel(blobs, remove_blob)?;
        in_parallel(views, remove_view_dir)?;
        if !opts.dry_run {
            for view in views {
                self.prune_view_parents(view);
            }
        }

        Ok(())
    }

    /// Remove the directories above a removed view that became empty, up to (not
    /// including) `views/providers` or `views/modules`. Best effort: only under the
    /// exclusive lock, so no commit is creating a view beside it.
    pub(crate) fn prune_view_parents(&self, view: &Path) {
        let stops = [
            self.layout.views.join("providers"),
            self.layout.views.join("modules"),
        ];
        let mut dir = view.parent();
        while let Some(d) = dir {
            if !d.starts_with(&self.layout.views)
                || stops.iter().any(|s| s == d)
                || d == self.layout.views
            {
                break;
            }
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}
