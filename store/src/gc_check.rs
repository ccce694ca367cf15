//! gc's read-only check: whether a run would remove anything, decided in one read
//! transaction. `tstore gc` runs it under the shared store lock, beside running inits, and
//! takes its exclusive turn only when it answers that there is work. It takes no index write
//! lock: a check that held SQLite's write lock (a dry run rolled back) made every init's
//! root record wait in SQLite's busy handler, whose sleeps grow to 100 ms, so a gc loop
//! slowed inits although it removed nothing.
//!
//! The check decides as [`Store::gc`] would: a package is removable when no live link names
//! it (a link is live when its root directory exists and it still points where it was
//! recorded) and `max(created_at, used_at)` is not after the cutoff; a tree when no package
//! uses it and it was first recorded no later than the cutoff; a blob when no tree uses it
//! and its file's ctime is not after the cutoff (or the file is gone); leftovers as
//! [`Store::leftovers`] finds them. Two parts of that are remembered between checks:
//! leftover views and blob files (crash debris, found by walking the whole store) are looked
//! for only when the last walk that found none is older than the grace period or 10
//! minutes, whichever is shorter; and the scan of every blob row for unused ones is
//! replaced by the last scan's memo (`.gc-unused-blobs`: the blobs it found unused, all then
//! young) while the index's blob generation (index v9: moved by every blob row added or
//! removed and every tree reference to a blob removed, the only ways the set of unused blobs
//! changes) stands where that scan left it. Dead roots and links alone are not work for the
//! exclusive run: the check drops them itself, in a short write that spares any root an
//! init recorded again since the check began. Otherwise reading only, the check can at
//! worst answer "work" for something another process changed meanwhile; then the exclusive
//! run decides afresh.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::blob::BlobId;
use crate::gc::{ctime_and_len, GcReport};
use crate::index::{now, query_vec};
use crate::leftovers::Leftovers;
use crate::{Result, Store};

/// How long a check trusts a walk that found no leftover view or blob file, at most (and
/// never longer than the grace period). Walking a store of 100,000 blobs takes a quarter of
/// a second of CPU; gc run in a tight loop beside inits did that on every run.
const LEFTOVER_WALK_EVERY: Duration = Duration::from_secs(600);

/// The file whose modification time says when a check last walked and found no leftover.
const LEFTOVER_WALK_STAMP: &str = ".gc-leftovers-walked";

/// The file that holds the blob generation of the last scan for unused blobs and the
/// (young) unused blobs it found: a line with the generation, then one blob id per line.
const UNUSED_BLOBS_MEMO: &str = ".gc-unused-blobs";

impl Store {
    /// Whether a check with grace period `min_age` must walk the store for leftover views
    /// and blob files: the last walk that found none is older than the interval, or unknown.
    fn leftover_walk_due(&self, min_age: Duration) -> bool {
        let interval = LEFTOVER_WALK_EVERY.min(min_age);
        let stamp = self.layout.root.join(LEFTOVER_WALK_STAMP);
        match std::fs::metadata(&stamp).and_then(|m| m.modified()) {
            Ok(at) => at.elapsed().map_or(true, |age| age >= interval),
            Err(_) => true,
        }
    }

    /// Remember that a walk found no leftover now. Best effort: without the stamp the next
    /// check walks again.
    fn mark_leftover_walk(&self) {
        use std::os::unix::fs::OpenOptionsExt as _;
        let stamp = self.layout.root.join(LEFTOVER_WALK_STAMP);
        let touched = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&stamp)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        if let Err(e) = touched {
            tracing::debug!("cannot write {}: {e}", stamp.display());
        }
    }

    /// The last scan's blob generation and unused blobs, if a readable memo holds them.
    /// A damaged memo is no memo: the check scans again.
    fn unused_blobs_memo(&self) -> Option<(i64, Vec<BlobId>)> {
        let text = std::fs::read_to_string(self.layout.root.join(UNUSED_BLOBS_MEMO)).ok()?;
        let mut lines = text.lines();
        let generation = lines.next()?.parse().ok()?;
        let blobs = lines.map(|l| l.parse().ok()).collect::<Option<Vec<_>>>()?;
        Some((generation, blobs))
    }

    /// Write the memo of a scan for unused blobs (atomically, best effort: without it the
    /// next check scans again).
    fn remember_unused_blobs(&self, generation: i64, blobs: &[BlobId]) {
        use std::fmt::Write as _;
        let mut text = format!("{generation}\n");
        for blob in blobs {
            let _ = writeln!(text, "{blob}");
        }
        let path = self.layout.root.join(UNUSED_BLOBS_MEMO);
        let written = tempfile::NamedTempFile::new_in(&self.layout.tmp).and_then(|mut f| {
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            f.persist(&path).map_err(|e| e.error)?;
            Ok(())
        });
        if let Err(e) = written {
            tracing::debug!("cannot write {}: {e}", path.display());
        }
    }

    /// The report of a gc run with grace period `min_age` that would remove nothing — roots,
    /// packages and leftovers counted as that run counts them — or `None` when it would
    /// remove a package, tree, blob or leftover. Reads only, but for dropping the roots and links
    /// it finds dead (a short write, only when there are any).
    pub fn gc_idle_report(
        &self,
        min_age: Duration,
        in_use: &HashSet<crate::PackageKey>,
    ) -> Result<Option<GcReport>> {
        let started = Instant::now();
        let cutoff = now() - i64::try_from(min_age.as_secs()).unwrap_or(i64::MAX);
        let mut report = GcReport::default();
        let (dead_link_list, dead_root_list) = self.gc_roots(&mut report)?;
        let dead_links: HashSet<(i64, String)> = dead_link_list.iter().cloned().collect();
        let dead_roots: HashSet<i64> = dead_root_list.iter().copied().collect();
        {
            let index = self.index();
            let err = || index.err("checking what gc would remove");
            // One read transaction: every query below sees the same snapshot.
            let tx = index.conn.unchecked_transaction().map_err(err())?;
            let rows = query_vec(
                &tx,
                "SELECT p.id, MAX(p.created_at, p.used_at), l.root, l.link,
                        p.kind, p.name, p.version, p.platform FROM packages p
                     LEFT JOIN root_links l ON l.package = p.id",
                [],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        (
                            r.get::<_, String>(4)?,
                            r.get::<_, String>(5)?,
                            r.get::<_, String>(6)?,
                            r.get::<_, String>(7)?,
                        ),
                    ))
                },
            )
            .map_err(err())?;
            // Package id -> (max(created_at, used_at), some live link names it, key columns).
            type Columns = (String, String, String, String);
            let mut packages: HashMap<i64, (i64, bool, Columns)> = HashMap::new();
            for (id, at, root, link, columns) in rows {
                let live = match (root, link) {
                    (Some(root), Some(link)) => {
                        !dead_roots.contains(&root) && !dead_links.contains(&(root, link))
                    }
                    _ => false,
                };
                packages.entry(id).or_insert((at, false, columns)).1 |= live;
            }
            for (at, live, (kind, name, version, platform)) in packages.into_values() {
                if live {
                    report.packages_live += 1;
                } else if at > cutoff {
                    report.packages_young += 1;
                } else if in_use.contains(&crate::PackageKey::from_columns(
                    &kind, name, version, platform,
                )?) {
                    report.packages_in_use += 1;
                } else {
                    return Ok(None);
                }
            }
            let old_unused_tree: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM trees t LEFT JOIN tree_times tt ON tt.tree = t.id
                       WHERE NOT EXISTS (SELECT 1 FROM packages p WHERE p.tree = t.id)
                         AND COALESCE(tt.created_at, 0) <= ?1)",
                    [cutoff],
                    |r| r.get(0),
                )
                .map_err(err())?;
            if old_unused_tree {
                return Ok(None);
            }
            // Finding the unused blobs reads every blob row (a quarter of the index); while
            // no blob was added and no tree let go of one since the last scan, the blobs that
            // scan found unused are still the only ones.
            let generation: i64 = tx
                .query_row("SELECT value FROM blob_generation", [], |r| r.get(0))
                .map_err(err())?;
            let memo = self.unused_blobs_memo();
            let (unused_blobs, scanned) = match memo {
                Some((at, blobs)) if at == generation => (blobs, false),
                _ => {
                    let ids = query_vec(
                        &tx,
                        "SELECT id FROM blobs b
                           WHERE NOT EXISTS (SELECT 1 FROM tree_blobs tb WHERE tb.blob = b.id)",
                        [],
                        |r| r.get::<_, String>(0),
                    )
                    .map_err(err())?;
                    let blobs = ids
                        .iter()
                        .map(|id| id.parse())
                        .collect::<std::result::Result<Vec<BlobId>, _>>()?;
                    (blobs, true)
                }
            };
            for blob in &unused_blobs {
                let stat = ctime_and_len(&self.layout.blob_path(blob))?;
                if stat.is_none_or(|(t, _)| t <= cutoff) {
                    return Ok(None);
                }
            }
            if scanned {
                self.remember_unused_blobs(generation, &unused_blobs);
            }
        }
        // Leftover views and blob files are crash debris, and finding them walks the whole
        // store: a check trusts the last walk that found none for a while.
        let walk = self.leftover_walk_due(min_age);
        let leftovers = if walk {
            self.leftovers(Some(cutoff), None)?
        } else {
            // Stale cached git repositories are found with one listing: checked every time.
            Leftovers {
                tmp: self.leftover_tmp(Some(cutoff))?,
                git_caches: self.stale_git_caches(cutoff)?,
                ..Leftovers::default()
            }
        };
        if !leftovers.is_empty() {
            return Ok(None);
        }
        if walk {
            self.mark_leftover_walk();
        }
        report.leftovers = leftovers;
        // Nothing else to collect, but dead roots and links are dropped now: a report that
        // names them dropped must be true, and the next check must not find them again.
        if !dead_root_list.is_empty() || !dead_link_list.is_empty() {
            self.drop_roots_found_dead(&dead_link_list, &dead_root_list, &mut report)?;
        }
        report.millis = started.elapsed().as_millis() as u64;
        Ok(Some(report))
    }

    /// Drop the roots and links a check found dead, beside running inits (under the shared
    /// store lock). Each is judged again inside the write transaction, which no root record
    /// can interleave with: a root or link an init recorded again since the check stays for
    /// the next run. `report.roots_dropped` and `links_dropped` are narrowed to what was
    /// dropped.
    fn drop_roots_found_dead(
        &self,
        dead_links: &[crate::gc::DeadLink],
        dead_roots: &[i64],
        report: &mut GcReport,
    ) -> Result<()> {
        let mut index = self.index();
        let (tx, op) = index.write("dropping roots whose directories are gone")?;
        let err = op.err();
        // (root path, link, recorded target) of every link of `root`; a root with none
        // yields one row with an empty link.
        let live_links =
            |tx: &rusqlite::Transaction<'_>, root: i64| -> rusqlite::Result<Vec<String>> {
                let rows = query_vec(
                    tx,
                    "SELECT r.path, l.link, l.target FROM roots r
                     LEFT JOIN root_links l ON l.root = r.id WHERE r.id = ?1",
                    [root],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                            r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                        ))
                    },
                )?;
                Ok(rows
                    .into_iter()
                    .filter(|(path, link, target)| {
                        !link.is_empty() && crate::gc::link_is_live(path, link, target)
                    })
                    .map(|(_, link, _)| link)
                    .collect())
            };
        let mut links_dropped = 0;
        for (root, link) in dead_links {
            if dead_roots.contains(root) || live_links(&tx, *root).map_err(err)?.contains(link) {
                continue;
            }
            links_dropped += tx
                .execute(
                    "DELETE FROM root_links WHERE root = ?1 AND link = ?2",
                    rusqlite::params![root, link],
                )
                .map_err(err)? as u64;
        }
        let mut kept_paths = Vec::new();
        for (root, path) in dead_roots
            .iter()
            .zip(std::mem::take(&mut report.roots_dropped))
        {
            if live_links(&tx, *root).map_err(err)?.is_empty() {
                tx.execute("DELETE FROM roots WHERE id = ?1", [root])
                    .map_err(err)?;
                kept_paths.push(path);
            } else {
                report.roots_live += 1;
            }
        }
        tx.commit().map_err(err)?;
        report.roots_dropped = kept_paths;
        report.links_dropped = links_dropped;
        Ok(())
    }
}
