//! Committing a package: its tree under its name, its view materialized first and renamed
//! in before the row that makes it visible, its hashes merged, and the source memo of the
//! path it came from, in one `BEGIN IMMEDIATE` transaction ([`Store::commit_package`]).

use std::path::Path;

use rusqlite::OptionalExtension as _;

use crate::blob::exists;
use crate::fingerprint::SourceFingerprint;
use crate::ids::{PackageKey, TreeId};
use crate::index::{now, tree_row};
use crate::ingest::source_key;
use crate::package::{merge_hash_records, HashRecord, Package};
use crate::provenance::Provenance;
use crate::store::{read_hashes, read_package};
use crate::tree::Tree;
use crate::view::{check_view, remove_view};
use crate::{Result, Store, StoreError};

impl Store {
    /// Make a package visible.
    ///
    /// Materializes its read-only view (if absent), then records the package row and its hashes
    /// (merged with any already recorded: one record per hash, dispositions OR-ed), and, given a
    /// `source`, remembers `path -> (fingerprint, tree, hashes)` for [`crate::Memos::source`].
    /// Idempotent. If the package exists with the same tree, the hashes are merged; with a
    /// different tree the result is [`StoreError::PackageConflict`].
    ///
    /// The whole commit runs in one `BEGIN IMMEDIATE` transaction, which serializes commits
    /// between processes: the view is renamed in before the row that makes it visible, and a
    /// leftover view from a crashed commit is checked against the tree (and replaced if wrong).
    pub fn commit_package(
        &self,
        key: &PackageKey,
        tree: &TreeId,
        hashes: &[HashRecord],
        source: Option<(&Path, &SourceFingerprint)>,
    ) -> Result<Package> {
        self.commit_package_as(key, tree, hashes, source, Provenance::Origin)
    }

    /// [`Store::commit_package`], saying what vouches for the name (`provenance.rs`): origin
    /// content replaces lock- or mirror-vouched content held under its name with other files
    /// (and promotes it when the files are the same); a commit never lowers a package's
    /// provenance.
    pub fn commit_package_as(
        &self,
        key: &PackageKey,
        tree: &TreeId,
        hashes: &[HashRecord],
        source: Option<(&Path, &SourceFingerprint)>,
        provenance: Provenance,
    ) -> Result<Package> {
        self.ensure_trusted()?;
        let view = self.view_dir(key)?;
        let source_key = source
            .map(|(p, fp)| source_key(p).map(|k| (k, fp)))
            .transpose()?;
        let tree_str = tree.to_string();
        let mut index = self.index();
        let (tx, op) = index.write(format!("committing package {key}"))?;
        let err = op.err();
        let Some(row) = tree_row(&tx, &tree_str).map_err(err)? else {
            return Err(StoreError::UnknownTree(*tree));
        };
        let mut existing: Option<(i64, String, bool)> = None;
        let held: Option<(i64, String, bool, String)> = tx
            .query_row(
                "SELECT id, tree, adopted, provenance FROM packages WHERE kind = ?1 AND name = ?2 AND version = ?3 AND platform = ?4",
                [key.kind(), key.name(), key.version(), key.platform()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(err)?;
        if let Some((id, existing_tree, adopted, held_by)) = held {
            let held_by = Provenance::from_column(&held_by)?;
            if provenance.rank() > held_by.rank() {
                // The name was vouched for by less than the content committed now: the
                // origin's answer decides what the name holds.
                if existing_tree != tree_str {
                    tracing::warn!(
                        "{key} in the store had other files (tree {existing_tree}), vouched for \
                         only by {held_by}; they are replaced by {provenance}'s"
                    );
                    tx.execute("DELETE FROM packages WHERE id = ?1", [id])
                        .map_err(err)?;
                } else {
                    tx.execute(
                        "UPDATE packages SET provenance = ?2 WHERE id = ?1",
                        rusqlite::params![id, provenance.as_str()],
                    )
                    .map_err(err)?;
                    existing = Some((id, existing_tree, adopted));
                }
            } else {
                existing = Some((id, existing_tree, adopted));
            }
        }
        match &existing {
            // A package only an adopted (restored) index vouched for gives way to content
            // this machine ingested: its name was the restored index's claim (trust.rs).
            Some((id, existing_tree, true)) if *existing_tree != tree_str => {
                tracing::warn!(
                    "{key} in the store had other files (tree {existing_tree}) than the package just verified; \
                     it came from a store restored from elsewhere and is replaced"
                );
                tx.execute("DELETE FROM packages WHERE id = ?1", [id])
                    .map_err(err)?;
                existing = None;
            }
            // The same content fetched here: the package is vouched for by this machine now.
            Some((id, _, true)) => {
                tx.execute("UPDATE packages SET adopted = 0 WHERE id = ?1", [id])
                    .map_err(err)?;
            }
            _ => {}
        }
        let decoded = Tree::decode(&row.encoding)?;
        let package_id = match existing {
            Some((_, existing_tree, _)) if existing_tree != tree_str => {
                return Err(StoreError::PackageConflict {
                    key: key.clone(),
                    existing: existing_tree.parse()?,
                    new: *tree,
                });
            }
            Some((id, _, _)) => {
                // Repair a view removed behind our back.
                if !exists(&view)? {
                    self.materialize_view(&decoded, &view)?;
                }
                id
            }
            None => {
                self.materialize_new_view(&decoded, &view)?;
                tx.execute(
                    "INSERT INTO packages (kind, name, version, platform, tree, created_at, provenance)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    rusqlite::params![key.kind(), key.name(), key.version(), key.platform(), tree_str, now(), provenance.as_str()],
                )
                .map_err(err)?;
                tx.last_insert_rowid()
            }
        };
        merge_package_hashes(&tx, package_id, hashes).map_err(err)?;
        if let Some((path_key, fp)) = source_key {
            record_source_memo(&tx, &path_key, fp, &tree_str, hashes).map_err(err)?;
        }
        // The content stat as of the first commit (freshness.rs); a later commit must not
        // bless files changed since.
        tx.execute(
            "INSERT INTO package_stats (package, stat) VALUES (?1, ?2) ON CONFLICT (package) DO NOTHING",
            rusqlite::params![
                package_id,
                crate::durability::recorded_stat(
                    crate::freshness::content_stat(&self.layout, &decoded, &view),
                    crate::durability::tree_mark(&tx, &tree_str, self.durability.boot())
                        .map_err(err)?
                        .as_deref()
                )
            ],
        )
        .map_err(err)?;
        let package = read_package(&tx, key).map_err(err)?;
        tx.commit().map_err(err)?;
        package.ok_or_else(|| StoreError::CorruptIndex {
            what: format!("package {key} vanished while committing"),
        })?
    }

    /// Materialize the view of a package that has no row yet. A view already there was left
    /// by an interrupted commit: it is kept if it matches `tree`, else replaced.
    fn materialize_new_view(&self, tree: &Tree, view: &Path) -> Result<()> {
        if exists(view)? {
            let problems = check_view(&self.layout, tree, view, &self.bytes_hashed)?;
            if !problems.is_empty() {
                tracing::warn!(
                    "replacing stale view {} left by an interrupted commit: {}",
                    view.display(),
                    problems.join("; ")
                );
                remove_view(&self.layout, view)?;
            }
        }
        self.materialize_view(tree, view)?;
        Ok(())
    }
}

/// Record `hashes` for package row `package_id`, merged with those it has: one record per
/// hash, dispositions OR-ed (see [`merge_hash_records`]).
fn merge_package_hashes(
    tx: &rusqlite::Transaction<'_>,
    package_id: i64,
    hashes: &[HashRecord],
) -> rusqlite::Result<()> {
    let merged = merge_hash_records(
        read_hashes(tx, package_id)?
            .into_iter()
            .chain(hashes.iter().cloned()),
    );
    for r in &merged {
        let key_ids =
            serde_json::to_string(&r.disposition.signed_by_key_ids).expect("strings serialize");
        tx.execute(
            "INSERT INTO package_hashes (package, hash, verified_locally, reported_by_registry, signed_by_key_ids)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (package, hash) DO UPDATE SET
               verified_locally = excluded.verified_locally,
               reported_by_registry = excluded.reported_by_registry,
               signed_by_key_ids = excluded.signed_by_key_ids",
            rusqlite::params![
                package_id,
                r.hash.to_string(),
                r.disposition.verified_locally,
                r.disposition.reported_by_registry,
                key_ids
            ],
        )?;
    }
    Ok(())
}

/// Remember (replacing) what the source at `path_key` produced: its fingerprint, the tree
/// and the hashes given with this commit, for [`crate::Memos::source`].
fn record_source_memo(
    tx: &rusqlite::Transaction<'_>,
    path_key: &str,
    fp: &SourceFingerprint,
    tree: &str,
    hashes: &[HashRecord],
) -> rusqlite::Result<()> {
    let memo = serde_json::to_string(&merge_hash_records(hashes.iter().cloned()))
        .expect("hash records serialize");
    tx.execute(
        "INSERT INTO sources (path, fingerprint, tree, hashes, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (path) DO UPDATE SET fingerprint = excluded.fingerprint, tree = excluded.tree,
           hashes = excluded.hashes, updated_at = excluded.updated_at",
        rusqlite::params![path_key, fp.as_str(), tree, memo, now()],
    )?;
    Ok(())
}
