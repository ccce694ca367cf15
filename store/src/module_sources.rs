//! Module source memos (migration v4): what a module address that names an
//! immutable or revalidatable package resolved to, so a later init need not download it.
//!
//! ```text
//! module_sources(source PRIMARY KEY, package → packages ON DELETE CASCADE,
//!                location, subdir, etag, last_modified, updated_at)
//! ```
//!
//! The installer chooses the `source` keys and what may be trusted (registry
//! `(address, version)`: immutable by the registry contract; a plain http(s) archive URL:
//! only after the server answers `304 Not Modified` to a conditional GET). The store only
//! keeps the rows, naming only packages of their origin (`provenance.rs`); a memo dies with its package (gc, a damaged package removed), and a
//! caller must still check the package with [`Store::trusted_package`] before using it.

use rusqlite::OptionalExtension as _;

use crate::ids::PackageKey;
use crate::index::{now, package_id};
use crate::{Result, Store};
use std::path::Path;

use crate::ingest::source_key;
use crate::{HashRecord, SourceFingerprint, SourceMemo, StoreError};

/// What a module source resolved to when it was last fetched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleSourceMemo {
    /// The module package id ([`PackageKey::Module`]).
    pub package: String,
    /// The resolved location (a registry's download address), or empty.
    pub location: String,
    /// A `//subdir` the fetch itself named (`X-Terraform-Get` hops), or empty.
    pub subdir: String,
    /// The `ETag` the server sent with the package's bytes.
    pub etag: Option<String>,
    /// The `Last-Modified` the server sent with the package's bytes.
    pub last_modified: Option<String>,
}

impl Store {}

/// What a source gave before: a local directory's tree by its fingerprint, a module
/// source's package.
#[derive(Clone, Copy)]
pub struct Memos<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// What sources gave before ([`Memos`]).
    pub fn memos(&self) -> Memos<'_> {
        Memos { store: self }
    }
}

impl Memos<'_> {
    /// The memo recorded for `source`, if its package is still committed.
    pub fn module_source(&self, source: &str) -> Result<Option<ModuleSourceMemo>> {
        self.store.ensure_trusted()?;
        let index = self.store.index();
        crate::index::query_row_cached(
            &index.conn,
            "SELECT p.name, m.location, m.subdir, m.etag, m.last_modified
                 FROM module_sources m JOIN packages p ON p.id = m.package
                 WHERE m.source = ?1 AND p.kind = 'module' AND p.provenance = 'origin'",
            [source],
            |r| {
                Ok(ModuleSourceMemo {
                    package: r.get(0)?,
                    location: r.get(1)?,
                    subdir: r.get(2)?,
                    etag: r.get(3)?,
                    last_modified: r.get(4)?,
                })
            },
        )
        .optional()
        .map_err(index.err("reading a module source memo"))
    }

    /// Every memo's source key with the package id it names, sorted by package then source
    /// (what `store ls` shows beside a module package: the addresses it was installed for).
    pub fn module_sources(&self) -> Result<Vec<(String, String)>> {
        let index = self.store.index();
        let mut stmt = index
            .conn
            .prepare(
                "SELECT p.name, m.source FROM module_sources m JOIN packages p ON p.id = m.package
                 WHERE p.kind = 'module' ORDER BY p.name, m.source",
            )
            .map_err(index.err("listing module source memos"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(index.err("listing module source memos"))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(index.err("listing module source memos"))
    }

    /// Record (replacing) the memo for `source`. The package must be committed, of its
    /// origin (a memo is an origin's answer: `provenance.rs`); if it is not (removed
    /// meanwhile, or vouched for only by a lock or a mirror), nothing is recorded and `false`
    /// is returned.
    pub fn record_module_source(&self, source: &str, memo: &ModuleSourceMemo) -> Result<bool> {
        let mut index = self.store.index();
        let (tx, op) = index.write("recording a module source memo")?;
        let err = op.err();
        let key = PackageKey::module(memo.package.clone());
        let Some(id) = package_id(&tx, &key).map_err(err)? else {
            return Ok(false);
        };
        let provenance: String = tx
            .query_row("SELECT provenance FROM packages WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .map_err(err)?;
        if provenance != crate::Provenance::Origin.as_str() {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO module_sources (source, package, location, subdir, etag, last_modified, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (source) DO UPDATE SET package = excluded.package,
                 location = excluded.location, subdir = excluded.subdir, etag = excluded.etag,
                 last_modified = excluded.last_modified, updated_at = excluded.updated_at",
            rusqlite::params![
                source,
                id,
                memo.location,
                memo.subdir,
                memo.etag,
                memo.last_modified,
                now()
            ],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(true)
    }

    /// What `path` produced when it was last committed as a source, if its fingerprint then
    /// equals `fp` (and the tree is still in the store).
    pub fn source(&self, path: &Path, fp: &SourceFingerprint) -> Result<Option<SourceMemo>> {
        self.store.ensure_trusted()?;
        let key = source_key(path)?;
        let index = self.store.index();
        let row: Option<(String, String, String)> = index
            .conn
            .query_row(
                "SELECT fingerprint, tree, hashes FROM sources WHERE path = ?1",
                [&key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(index.err("reading a source memo"))?;
        let Some((stored_fp, tree, hashes)) = row else {
            return Ok(None);
        };
        if stored_fp != fp.as_str() {
            return Ok(None);
        }
        drop(index);
        // Never hand out a tree whose files were damaged since it was verified.
        if !self.store.tree_packages_intact(&tree)? {
            return Ok(None);
        }
        let hashes: Vec<HashRecord> =
            serde_json::from_str(&hashes).map_err(|e| StoreError::CorruptIndex {
                what: format!("source memo hashes for {key}: {e}"),
            })?;
        Ok(Some(SourceMemo {
            fingerprint: SourceFingerprint::from_stored(stored_fp),
            tree: tree.parse()?,
            hashes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::{PackageKey, Store};

    #[test]
    fn memos_follow_their_package() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        let dir = tmp.path().join("pkg");
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(dir.join("main.tf"), "output \"x\" {}\n").unwrap();
        let memo = super::ModuleSourceMemo {
            package: "http-p-0123".into(),
            location: "https://h/p.zip".into(),
            subdir: "sub".into(),
            etag: Some("\"e1\"".into()),
            last_modified: None,
        };
        // Not committed yet: nothing recorded.
        assert!(!store
            .memos()
            .record_module_source("http\0u", &memo)
            .unwrap());
        assert_eq!(store.memos().module_source("http\0u").unwrap(), None);
        let ingested = store.ingest().module_dir(&dir).unwrap();
        let key = PackageKey::module("http-p-0123");
        store
            .commit_package(&key, &ingested.tree, &[], None)
            .unwrap();
        assert!(store
            .memos()
            .record_module_source("http\0u", &memo)
            .unwrap());
        assert_eq!(
            store.memos().module_source("http\0u").unwrap(),
            Some(memo.clone())
        );
        let newer = super::ModuleSourceMemo {
            etag: Some("\"e2\"".into()),
            ..memo
        };
        assert!(store
            .memos()
            .record_module_source("http\0u", &newer)
            .unwrap());
        assert_eq!(store.memos().module_source("http\0u").unwrap(), Some(newer));
    }
}
