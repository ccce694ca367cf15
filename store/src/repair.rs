//! [`Store::repair`]: act on what [`Store::verify`] found.
//!
//! - A blob is content-addressed, so a blob whose file is damaged or missing is bad for
//!   every package whose tree references it: all those packages are quarantined. Their
//!   rows go (with the source memos and rows of their trees, every other tree that holds a
//!   bad blob, and the bad blobs' rows), so
//!   the next `tstore init` fetches them again and commits good blobs, and the mount stops
//!   serving them; then their views go, so a checkout's symlink into a view dangles
//!   instead of reaching bad bytes.
//! - A package whose view does not match its tree is quarantined the same way.
//! - An index record the bytes contradict ([`crate::BadClaim`]) is not believed: a tree row
//!   that does not hash to its id or records another `h1:` than its files have goes with
//!   every package of it; a package recording as verified an `h1:` its files do not have,
//!   or a kept archive filed under another `zh:` than its bytes have, quarantines the
//!   packages concerned; a blob row's wrong SHA-256 is corrected.
//! - A store whose index this machine did not write (see trust.rs) is adopted as well:
//!   module packages are forgotten, every other hash record but the recomputed directory
//!   `h1:` is dropped, source memos and kept-archive records go, and the trust tag is
//!   written.
//! - The files of a bad blob (primary and twins) are moved to `quarantine/`, out of
//!   `blobs-v1/`, so no new link and no lookup can reach them; they are kept, not deleted,
//!   so the damage can be inspected (bit rot or tampering). Nothing reads `quarantine/`.
//! - Leftovers are removed as gc removes them.
//!
//! Rows change before files (one transaction), so the index never vouches for a file that
//! is gone. Everything runs under the exclusive store lock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::blob::{exists, BlobId};
use crate::hash::Hash;
use crate::ids::PackageKey;
use crate::index::query_vec;
use crate::lock::{assert_exclusive, StoreLock};
use crate::tree::{EntryKind, Tree};
use crate::verify::BadClaim;
use crate::view::remove_view;
use crate::{Leftovers, Result, Store, StoreError, VerifyReport};

/// A package taken out of the store because some of its content is bad.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QuarantinedPackage {
    /// The package.
    pub package: PackageKey,
    /// Its tree.
    pub tree: String,
    /// Why, one line each (the bad blob, the bad view).
    pub reasons: Vec<String>,
}

/// A bad blob file moved out of `blobs-v1/`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QuarantinedBlob {
    /// The blob.
    pub blob: BlobId,
    /// Where it was.
    pub from: PathBuf,
    /// Where it is now (`None` in a dry run).
    pub to: Option<PathBuf>,
}

/// Result of [`Store::repair`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairReport {
    /// Nothing was changed; the report says what would be.
    pub dry_run: bool,
    /// Packages quarantined (or that would be).
    pub packages: Vec<QuarantinedPackage>,
    /// Blob files moved to `quarantine/` (or that would be).
    pub blobs: Vec<QuarantinedBlob>,
    /// Leftovers removed (or that would be).
    pub leftovers: Leftovers,
    /// The index was not written on this machine and is adopted (or would be): see
    /// trust.rs.
    pub adopted: bool,
    /// Packages an adoption takes out because their files cannot confirm their name
    /// (module packages), or would.
    pub forgotten: Vec<PackageKey>,
    /// Packages the index held.
    #[serde(skip)]
    pub(crate) checked_packages: u64,
}

/// What [`Store::repair_inner`] may change.
#[derive(Clone, Copy)]
pub(crate) enum RepairMode<'a> {
    /// Nothing: report what would be done.
    Plan,
    /// Everything, leftovers included (the exclusive lock is held).
    Repair(&'a StoreLock),
    /// Everything but leftovers: adoption under a shared lock, beside inits whose temp
    /// files are not leftovers.
    Adopt,
}

impl Store {
    /// What [`Store::repair`] would do for `report`; reads only, needs no lock.
    pub fn repair_plan(&self, report: &VerifyReport) -> Result<RepairReport> {
        self.repair_inner(RepairMode::Plan, report, !report.trusted)
    }

    /// Quarantine every package that `report` (from [`Store::verify`]) shows to have a bad
    /// or missing blob, a bad view or a record its bytes contradict, move bad blob files to
    /// `quarantine/`, correct blob rows, and remove leftovers. A store this machine did not
    /// write is adopted too (see trust.rs).
    pub fn repair(&self, lock: &StoreLock, report: &VerifyReport) -> Result<RepairReport> {
        assert_exclusive(lock, "repairing the store");
        let adopt = !report.trusted;
        let done = self.repair_inner(RepairMode::Repair(lock), report, adopt)?;
        if adopt {
            self.record_tag(&self.trust_tag()?)?;
        }
        Ok(done)
    }

    /// [`Store::repair`] or [`Store::repair_plan`] as `mode` says; with `adopt`, the
    /// adoption steps of trust.rs as well (the tag is left to the caller).
    pub(crate) fn repair_inner(
        &self,
        mode: RepairMode<'_>,
        report: &VerifyReport,
        adopt: bool,
    ) -> Result<RepairReport> {
        let bad_blobs: BTreeSet<BlobId> = report
            .corrupt
            .iter()
            .map(|c| c.blob)
            .chain(report.missing.iter().map(|m| m.blob))
            .collect();
        let bad_trees: BTreeSet<String> = report
            .claims_bad
            .iter()
            .filter_map(|c| match c {
                BadClaim::Tree { tree, .. } => Some(tree.clone()),
                _ => None,
            })
            .collect();
        let packages = self.packages_to_quarantine(report, &bad_blobs)?;
        let blobs = self.bad_blob_files(report, &bad_blobs)?;
        let all = self.package_rows()?;
        let forgotten: Vec<PackageKey> = if adopt {
            all.iter()
                .filter(|(key, _, tree)| {
                    !packages.iter().any(|p| p.package == *key)
                        && (matches!(key, PackageKey::Module { .. })
                            || !matches!(report.tree_h1.get(tree), Some(Some(_))))
                })
                .map(|(key, _, _)| key.clone())
                .collect()
        } else {
            Vec::new()
        };
        let lock = match mode {
            RepairMode::Plan => {
                return Ok(RepairReport {
                    dry_run: true,
                    packages,
                    blobs,
                    leftovers: self.leftovers(None, None)?,
                    adopted: adopt,
                    forgotten,
                    checked_packages: all.len() as u64,
                });
            }
            RepairMode::Repair(lock) => Some(lock),
            RepairMode::Adopt => None,
        };
        let kept: Vec<(i64, String, Hash)> = if adopt {
            all.iter()
                .filter(|(key, _, _)| {
                    !forgotten.contains(key) && !packages.iter().any(|p| p.package == *key)
                })
                .filter_map(|(_, id, tree)| match report.tree_h1.get(tree) {
                    Some(Some(h1)) => Some((*id, tree.clone(), h1.clone())),
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let stats = kept
            .iter()
            .map(|(id, tree, _)| Ok((*id, self.stat_of_package_row(*id, tree)?)))
            .collect::<Result<Vec<_>>>()?;
        self.drop_quarantined_rows(
            &packages,
            &forgotten,
            &bad_blobs,
            &bad_trees,
            &report.claims_bad,
            |tx| {
                if !adopt {
                    return Ok(());
                }
                // Adoption: only what the bytes confirm stays vouched for.
                for (id, _, h1) in &kept {
                    tx.execute("UPDATE packages SET adopted = 1 WHERE id = ?1", [id])?;
                    tx.execute("DELETE FROM package_hashes WHERE package = ?1", [id])?;
                    tx.execute(
                        "INSERT INTO package_hashes (package, hash, verified_locally, reported_by_registry, signed_by_key_ids)
                         VALUES (?1, ?2, 1, 0, '[]')",
                        rusqlite::params![id, h1.to_string()],
                    )?;
                }
                // What was adopted was read through this boot's page cache (a restored
                // cache may not be on disk yet): marked as this boot's (durability.rs).
                let boot = self.durability.boot();
                if let Some(boot) = boot {
                    tx.execute("UPDATE blobs SET written_boot = ?1", [boot])?;
                }
                for (id, stat) in &stats {
                    tx.execute(
                        "INSERT INTO package_stats (package, stat) VALUES (?1, ?2)
                         ON CONFLICT (package) DO UPDATE SET stat = excluded.stat",
                        rusqlite::params![id, crate::durability::recorded_stat(stat.clone(), boot)],
                    )?;
                }
                tx.execute("DELETE FROM sources", [])?;
                tx.execute("DELETE FROM archives", [])?;
                // Facts about files are derived again from the bytes, never believed.
                tx.execute("DELETE FROM file_facts", [])?;
                Ok(())
            },
        )?;
        for key in packages.iter().map(|p| &p.package).chain(&forgotten) {
            let view = self.view_dir(key)?;
            if exists(&view)? {
                remove_view(&self.layout, &view)?;
            }
        }
        let blobs = blobs
            .into_iter()
            .map(|b| self.move_to_quarantine(b))
            .collect::<Result<Vec<_>>>()?;
        let leftovers = match lock {
            Some(lock) => self.leftovers(None, Some(lock))?,
            None => Leftovers::default(),
        };
        Ok(RepairReport {
            dry_run: false,
            packages,
            blobs,
            leftovers,
            adopted: adopt,
            forgotten,
            checked_packages: all.len() as u64,
        })
    }

    /// `(key, row id, tree)` of every package.
    fn package_rows(&self) -> Result<Vec<(PackageKey, i64, String)>> {
        let index = self.index();
        let rows = query_vec(
            &index.conn,
            "SELECT kind, name, version, platform, id, tree FROM packages ORDER BY id",
            [],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                ))
            },
        )
        .map_err(index.err("listing packages"))?;
        drop(index);
        rows.into_iter()
            .map(|(kind, name, version, platform, id, tree)| {
                Ok((
                    PackageKey::from_columns(&kind, name, version, platform)?,
                    id,
                    tree,
                ))
            })
            .collect()
    }

    /// The content stat (freshness.rs) of package row `id` of `tree`, as its files are now.
    fn stat_of_package_row(&self, id: i64, tree: &str) -> Result<String> {
        let (key, encoding) = {
            let index = self.index();
            index
                .conn
                .query_row(
                    "SELECT p.kind, p.name, p.version, p.platform, t.encoding
                     FROM packages p JOIN trees t ON t.id = ?2 WHERE p.id = ?1",
                    rusqlite::params![id, tree],
                    |r| {
                        Ok((
                            (
                                r.get::<_, String>(0)?,
                                r.get::<_, String>(1)?,
                                r.get::<_, String>(2)?,
                                r.get::<_, String>(3)?,
                            ),
                            r.get::<_, Vec<u8>>(4)?,
                        ))
                    },
                )
                .map_err(index.err("reading a package"))?
        };
        let key = PackageKey::from_columns(&key.0, key.1, key.2, key.3)?;
        let tree = Tree::decode(&encoding)?;
        Ok(crate::freshness::content_stat(
            &self.layout,
            &tree,
            &self.view_dir(&key)?,
        ))
    }

    /// Every package whose tree references a bad blob, or whose view is bad, with reasons.
    fn packages_to_quarantine(
        &self,
        report: &VerifyReport,
        bad_blobs: &BTreeSet<BlobId>,
    ) -> Result<Vec<QuarantinedPackage>> {
        let mut found: BTreeMap<PackageKey, QuarantinedPackage> = BTreeMap::new();
        {
            let index = self.index();
            for blob in bad_blobs {
                let rows = query_vec(
                    &index.conn,
                    "SELECT p.kind, p.name, p.version, p.platform, p.tree, t.encoding
                     FROM packages p JOIN tree_blobs tb ON tb.tree = p.tree
                     JOIN trees t ON t.id = p.tree WHERE tb.blob = ?1",
                    [blob.to_string()],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, String>(3)?,
                            r.get::<_, String>(4)?,
                            r.get::<_, Vec<u8>>(5)?,
                        ))
                    },
                )
                .map_err(index.err("finding packages of a bad blob"))?;
                for (kind, name, version, platform, tree, encoding) in rows {
                    let key = PackageKey::from_columns(&kind, name, version, platform)?;
                    let what = if report.missing.iter().any(|m| m.blob == *blob) {
                        "is missing"
                    } else {
                        "does not match its hash"
                    };
                    found
                        .entry(key.clone())
                        .or_insert_with(|| QuarantinedPackage {
                            package: key,
                            tree,
                            reasons: Vec::new(),
                        })
                        .reasons
                        .extend(
                            files_of(&Tree::decode(&encoding)?, blob)
                                .into_iter()
                                .map(|file| format!("{file}: blob {blob} {what}")),
                        );
                }
            }
        }
        for claim in &report.claims_bad {
            let (keys, reason) = match claim {
                BadClaim::Tree { tree, problem } => (
                    self.packages_of_tree(tree)?,
                    format!("tree {tree}: {problem}"),
                ),
                BadClaim::Archive { zh, tree, problem } => (
                    self.packages_of_tree(tree)?,
                    format!("kept archive {zh}: {problem}"),
                ),
                BadClaim::Package { package, problem } => (
                    vec![(
                        package.clone(),
                        self.package_tree_id(package)?.unwrap_or_default(),
                    )],
                    problem.clone(),
                ),
                BadClaim::Blob { .. } => continue,
            };
            for (key, tree) in keys {
                found
                    .entry(key.clone())
                    .or_insert_with(|| QuarantinedPackage {
                        package: key,
                        tree,
                        reasons: Vec::new(),
                    })
                    .reasons
                    .push(reason.clone());
            }
        }
        for bad in &report.views_bad {
            let tree = self
                .package_tree_id(&bad.package)?
                .unwrap_or_else(String::new);
            let entry = found
                .entry(bad.package.clone())
                .or_insert_with(|| QuarantinedPackage {
                    package: bad.package.clone(),
                    tree,
                    reasons: Vec::new(),
                });
            entry
                .reasons
                .extend(bad.problems.iter().map(|p| format!("view: {p}")));
        }
        for p in found.values_mut() {
            p.reasons.sort();
            p.reasons.dedup();
        }
        Ok(found.into_values().collect())
    }

    /// Every package of tree `tree`, with the tree.
    fn packages_of_tree(&self, tree: &str) -> Result<Vec<(PackageKey, String)>> {
        let keys = crate::index::package_keys(
            &self.index(),
            "reading packages of a tree",
            "SELECT kind, name, version, platform FROM packages WHERE tree = ?1",
            [tree],
        )?;
        Ok(keys.into_iter().map(|k| (k, tree.to_owned())).collect())
    }

    /// The tree of package `key`, if it has a row.
    fn package_tree_id(&self, key: &PackageKey) -> Result<Option<String>> {
        let index = self.index();
        let rows = query_vec(
            &index.conn,
            "SELECT tree FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
            [key.kind(), key.name(), key.version(), key.platform()],
            |r| r.get::<_, String>(0),
        )
        .map_err(index.err("reading a package's tree"))?;
        Ok(rows.into_iter().next())
    }

    /// The files of the bad blobs still in `blobs-v1/`: the damaged files verify found,
    /// and the primary and twins of every bad blob (a twin of a bad blob must not serve
    /// a later link either; the blob's row goes, so it would be a leftover anyway).
    fn bad_blob_files(
        &self,
        report: &VerifyReport,
        bad_blobs: &BTreeSet<BlobId>,
    ) -> Result<Vec<QuarantinedBlob>> {
        let mut files: BTreeMap<PathBuf, BlobId> = report
            .corrupt
            .iter()
            .map(|c| (c.path.clone(), c.blob))
            .collect();
        for blob in bad_blobs {
            for path in [
                self.layout.blob_path(blob),
                self.layout.blob_twin_path(blob, true),
                self.layout.blob_twin_path(blob, false),
            ] {
                if exists(&path)? {
                    files.entry(path).or_insert(*blob);
                }
            }
        }
        Ok(files
            .into_iter()
            .map(|(from, blob)| QuarantinedBlob {
                blob,
                from,
                to: None,
            })
            .collect())
    }

    /// One transaction: the quarantined and forgotten packages' rows (their hashes, stats,
    /// links and module memos cascade), the source memos and rows of their trees, the rows of
    /// trees the bytes contradict, the bad blobs' rows, corrected blob rows, and what `more`
    /// does.
    fn drop_quarantined_rows(
        &self,
        packages: &[QuarantinedPackage],
        forgotten: &[PackageKey],
        bad_blobs: &BTreeSet<BlobId>,
        bad_trees: &BTreeSet<String>,
        claims: &[BadClaim],
        more: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
    ) -> Result<()> {
        let mut index = self.index();
        let (tx, op) = index.write("quarantining damaged packages")?;
        let err = op.err();
        for key in packages.iter().map(|p| &p.package).chain(forgotten) {
            tx.execute(
                "DELETE FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
                [key.kind(), key.name(), key.version(), key.platform()],
            )
            .map_err(&err)?;
        }
        for p in packages {
            tx.execute("DELETE FROM sources WHERE tree = ?1", [&p.tree])
                .map_err(&err)?;
            tx.execute(
                "DELETE FROM trees WHERE id = ?1
                 AND NOT EXISTS (SELECT 1 FROM packages WHERE tree = ?1)",
                [&p.tree],
            )
            .map_err(&err)?;
        }
        // A later ingest of the same content would believe a lying tree row: it goes.
        for tree in bad_trees {
            tx.execute("DELETE FROM trees WHERE id = ?1", [tree])
                .map_err(&err)?;
        }
        for blob in bad_blobs {
            // A tree that holds a bad blob cannot be materialized: it goes even when no
            // package names it any more (a later ingest, or an install by a lock's `h1:`,
            // would believe it), and the blob's rows with it.
            tx.execute(
                "DELETE FROM trees WHERE id IN (SELECT tree FROM tree_blobs WHERE blob = ?1)
                 AND NOT EXISTS (SELECT 1 FROM packages p WHERE p.tree = trees.id)",
                [blob.to_string()],
            )
            .map_err(&err)?;
            tx.execute("DELETE FROM archives WHERE blob = ?1", [blob.to_string()])
                .map_err(&err)?;
            tx.execute(
                "DELETE FROM blobs WHERE id = ?1
                 AND NOT EXISTS (SELECT 1 FROM tree_blobs WHERE blob = ?1)",
                [blob.to_string()],
            )
            .map_err(&err)?;
        }
        for claim in claims {
            if let BadClaim::Blob { blob, actual, .. } = claim {
                let sha = hex::decode(actual).expect("verify wrote hex");
                tx.execute(
                    "UPDATE blobs SET sha256 = ?2 WHERE id = ?1",
                    rusqlite::params![blob.to_string(), sha],
                )
                .map_err(&err)?;
            }
        }
        more(&tx).map_err(&err)?;
        tx.commit().map_err(err)
    }

    /// Move one bad blob file to `quarantine/<file name>.<n>` (a new name each time, so
    /// a second repair keeps the first one's evidence).
    fn move_to_quarantine(&self, blob: QuarantinedBlob) -> Result<QuarantinedBlob> {
        let dir = &self.layout.quarantine;
        crate::layout::create_store_dir_all(&self.layout.root, dir)?;
        let name = quarantine_name(&blob.from);
        let mut n = 0u32;
        let to = loop {
            let candidate = dir.join(format!("{name}.{n}"));
            if !exists(&candidate)? {
                break candidate;
            }
            n += 1;
        };
        match fs_err::rename(&blob.from, &to) {
            Ok(()) => Ok(QuarantinedBlob {
                to: Some(to),
                ..blob
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(blob),
            Err(e) => Err(StoreError::io(&blob.from, e)),
        }
    }
}

/// The paths of `tree` whose content is `blob`.
fn files_of(tree: &Tree, blob: &BlobId) -> Vec<String> {
    tree.entries()
        .iter()
        .filter(|e| matches!(&e.kind, EntryKind::File { blob: b, .. } if b == blob))
        .map(|e| e.path.to_string())
        .collect()
}

/// `ab` + `<rest>` of `blobs-v1/ab/<rest>`: the file's name in `quarantine/`.
fn quarantine_name(path: &Path) -> String {
    let part = |p: Option<&Path>| {
        p.and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned()
    };
    format!("{}{}", part(path.parent()), part(Some(path)))
}
