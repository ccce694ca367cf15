//! What vouches for a package's name: its provenance, recorded per package (migrations v14, v15).
//!
//! **Rule:** a name that claims an origin (a git repository at a commit, an archive URL's
//! bytes, a registry's answer) is vouched for only by that origin's own answer. Content that
//! a lock entry or a module mirror vouches for is vouched for by its hash alone: the
//! installer names it by that hash (never by an origin), and a lookup by an origin's name
//! sees only packages of [`Provenance::Origin`] ([`Store::package_from_origin`]). The store
//! does not parse names; it keeps the provenance the installer states at commit and answers
//! lookups by it:
//!
//! - a commit of origin content under a name held by lock- or mirror-vouched content with
//!   other files replaces it (the earlier claim was the lock's or the mirror's, not the
//!   origin's); with the same files it promotes the package to `origin`;
//! - a lock or mirror commit never lowers a package's provenance;
//! - module source memos (`module_sources.rs`) name only origin packages: a memo is an
//!   origin's answer.
//!
//! Migration v15 classifies the module packages an older tstore committed, from the records
//! only an origin's fetch left ([`CLASSIFY_LEGACY_MODULE_PACKAGES`]); what it cannot show
//! came from its origin keeps its name for the links that use it but answers no origin
//! lookup, and `store verify` reports it.

use std::fmt;

use crate::{Result, Store, StoreError};

/// What vouches for a package's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// Its origin gave this content for this name (git objects fetched from the remote, the
    /// bytes downloaded from the URL, the registry's own response), or the name is the
    /// store's own (a provider package, checked against signed hashes on every use).
    Origin,
    /// A lock entry's hash vouches for the content; the name is that hash's.
    Lock,
    /// A module mirror served it, checked against a lock entry's hash; the name is that
    /// hash's.
    Mirror,
}

impl Provenance {
    /// The index column's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Origin => "origin",
            Provenance::Lock => "lock",
            Provenance::Mirror => "mirror",
        }
    }

    pub(crate) fn from_column(s: &str) -> Result<Provenance> {
        match s {
            "origin" => Ok(Provenance::Origin),
            "lock" => Ok(Provenance::Lock),
            "mirror" => Ok(Provenance::Mirror),
            other => Err(StoreError::CorruptIndex {
                what: format!("unknown package provenance {other:?}"),
            }),
        }
    }

    /// How strongly it vouches for a name: a commit never lowers it.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Provenance::Origin => 2,
            Provenance::Mirror | Provenance::Lock => 1,
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provenance::Origin => "its origin",
            Provenance::Lock => "a lock entry's hash",
            Provenance::Mirror => "a module mirror, checked against a lock entry's hash",
        })
    }
}

/// How migration v15 classifies the module packages an older tstore committed (whose
/// names the installer chose: the one place the store reads them) (before it
/// recorded provenance), from the records only an origin's fetch left:
///
/// - `mirror-…`: named by a mirror's `h1:` (mirror);
/// - `http-…`, `oci-…`: the origin's fetch recorded the archive's or layer's own SHA-256 as
///   a `zh:` hash; a mirror's copy committed under such a name has none (lock);
/// - `git-…`: the origin's fetch recorded a `git\0REPO?ref=R\0COMMIT` source memo naming the
///   package; a lock entry's or a mirror's copy has none (lock; a package fetched before
///   tstore recorded that memo is fetched again once and, when its files agree, promoted);
/// - `…-nodot`: as the package it was made from;
/// - (a memo's key holds NUL bytes, which SQLite's text functions stop at: it is compared
///   as bytes, `git` and a NUL;)
/// - then every source memo naming a package that is not of its origin is dropped (a
///   registry resolution or URL memo a mirror wrote).
pub(crate) const CLASSIFY_LEGACY_MODULE_PACKAGES: &str = "
    UPDATE packages SET provenance = 'mirror'
        WHERE kind = 'module' AND name LIKE 'mirror-%';
    UPDATE packages SET provenance = 'lock'
        WHERE kind = 'module' AND (name LIKE 'http-%' OR name LIKE 'oci-%')
          AND name NOT LIKE '%-nodot'
          AND NOT EXISTS (SELECT 1 FROM package_hashes h
                          WHERE h.package = packages.id AND substr(h.hash, 1, 3) = 'zh:');
    UPDATE packages SET provenance = 'lock'
        WHERE kind = 'module' AND name LIKE 'git-%' AND name NOT LIKE '%-nodot'
          AND NOT EXISTS (SELECT 1 FROM module_sources m
                          WHERE m.package = packages.id
                            AND substr(CAST(m.source AS BLOB), 1, 4) = X'67697400');
    UPDATE packages SET provenance = (
            SELECT b.provenance FROM packages b
            WHERE b.kind = 'module' AND b.name || '-nodot' = packages.name)
        WHERE kind = 'module' AND name LIKE '%-nodot'
          AND EXISTS (SELECT 1 FROM packages b
                      WHERE b.kind = 'module' AND b.name || '-nodot' = packages.name);
    DELETE FROM module_sources
        WHERE package IN (SELECT id FROM packages WHERE provenance <> 'origin');
";

/// A module package whose name claims an origin its provenance does not support (one an
/// older tstore committed from a lock entry's hash or a mirror).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UnsupportedName {
    /// The package id.
    pub package: String,
    /// What vouches for its content.
    pub provenance: Provenance,
}

impl Store {}

/// What vouches for each module package's name, and the names an older tstore wrote that
/// nothing vouches for.
#[derive(Clone, Copy)]
pub struct Provenances<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Module names' provenance ([`Provenances`]).
    pub fn provenance(&self) -> Provenances<'_> {
        Provenances { store: self }
    }
}

impl Provenances<'_> {
    /// Every module package and its provenance, sorted by id: what the index records
    /// (a report, as `store verify` makes one: it does not adopt a restored store).
    pub fn modules(&self) -> Result<Vec<(String, Provenance)>> {
        let index = self.store.index();
        let mut stmt = index
            .conn
            .prepare("SELECT name, provenance FROM packages WHERE kind = 'module' ORDER BY name")
            .map_err(index.err("listing module packages' provenance"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(index.err("listing module packages' provenance"))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(index.err("listing module packages' provenance"))?;
        rows.into_iter()
            .map(|(name, p)| Ok((name, Provenance::from_column(&p)?)))
            .collect()
    }

    /// Module packages whose name claims an origin (`claims_origin`: the installer's naming)
    /// that their provenance does not support.
    pub fn unsupported_names(
        &self,
        claims_origin: impl Fn(&str) -> bool,
    ) -> Result<Vec<UnsupportedName>> {
        Ok(self
            .store
            .provenance()
            .modules()?
            .into_iter()
            .filter(|(name, p)| *p != Provenance::Origin && claims_origin(name))
            .map(|(package, provenance)| UnsupportedName {
                package,
                provenance,
            })
            .collect())
    }

    /// Drop the names [`Provenances::unsupported_names`] finds (their rows, hash records and memos;
    /// their trees stay for gc, and for a lock that finds them by hash). Returns the ids
    /// dropped.
    pub fn drop_unsupported_names(
        &self,
        claims_origin: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>> {
        let names = self.store.provenance().unsupported_names(claims_origin)?;
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut index = self.store.index();
        let (tx, op) = index.write("dropping names their provenance does not support")?;
        let err = op.err();
        for name in &names {
            tx.execute(
                "DELETE FROM packages WHERE kind = 'module' AND name = ?1 AND provenance <> 'origin'",
                [&name.package],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        Ok(names.into_iter().map(|n| n.package).collect())
    }
}
