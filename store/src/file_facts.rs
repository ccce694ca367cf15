//! Facts derived from a configuration file's bytes (migration v13): what
//! `tstore_tofu::config` reads from a file, kept so that a file is parsed once per content
//! and rule set, not once per process. The store knows no HCL: a fact is opaque bytes,
//! named by the BLAKE3 of the file's content (the id the store gives that content as a
//! blob) and by the rule set that derived it (the installer's string: flavor, facts format,
//! tstore build).
//!
//! ```text
//! file_facts(blob, rules, facts, PRIMARY KEY (blob, rules))
//! ```
//!
//! Rules:
//! - facts are data about bytes, and a restored index's rows are not believed: adoption
//!   drops them all (`repair.rs`), and they are derived again as files are read;
//! - they live as long as the store holds their content: gc drops the facts of every
//!   content no blob holds (a working directory's own files, which are never blobs, are
//!   derived again after a gc);
//! - a row is written once (a second write of the same key keeps the first: both are
//!   derived from the same bytes by the same rules);
//! - reads and writes need no store lock: a row is never wrong for its key, and one that gc
//!   drops as another process writes it is derived again.

use rusqlite::OptionalExtension as _;

use crate::blob::BlobId;
use crate::{Result, Store};

impl Store {}

/// Facts derived from configuration files, keyed by the content's BLAKE3 and the rules
/// that derived them.
#[derive(Clone, Copy)]
pub struct FileFacts<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// Configuration files' facts ([`FileFacts`]).
    pub fn file_facts(&self) -> FileFacts<'_> {
        FileFacts { store: self }
    }
}

impl FileFacts<'_> {
    /// The facts recorded for the content `blob` under `rules`.
    pub fn get(&self, blob: &BlobId, rules: &str) -> Result<Option<Vec<u8>>> {
        self.store.ensure_trusted()?;
        let index = self.store.index();
        crate::index::query_row_cached(
            &index.conn,
            "SELECT facts FROM file_facts WHERE blob = ?1 AND rules = ?2",
            rusqlite::params![blob.to_string(), rules],
            |r| r.get(0),
        )
        .optional()
        .map_err(index.err("reading a file's facts"))
    }

    /// Record `facts` for the content `blob` under `rules` (the first record stays).
    pub fn record(&self, blob: &BlobId, rules: &str, facts: &[u8]) -> Result<()> {
        self.store.ensure_trusted()?;
        let mut index = self.store.index();
        let (tx, op) = index.write("recording a file's facts")?;
        let err = op.err();
        tx.execute(
            "INSERT INTO file_facts (blob, rules, facts) VALUES (?1, ?2, ?3)
             ON CONFLICT (blob, rules) DO NOTHING",
            rusqlite::params![blob.to_string(), rules, facts],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Every recorded fact: content, rules, facts (for `store verify --facts`).
    pub fn all(&self) -> Result<Vec<(BlobId, String, Vec<u8>)>> {
        self.store.ensure_trusted()?;
        let index = self.store.index();
        let err = index.err("listing file facts");
        let mut stmt = index
            .conn
            .prepare("SELECT blob, rules, facts FROM file_facts ORDER BY blob, rules")
            .map_err(err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })
            .map_err(index.err("listing file facts"))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(index.err("listing file facts"))?;
        rows.into_iter()
            .map(|(blob, rules, facts)| Ok((blob.parse()?, rules, facts)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_kept_by_content_and_rules_and_the_first_record_stays() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s")).unwrap();
        let blob = BlobId::of(b"variable \"x\" {}\n");
        assert_eq!(store.file_facts().get(&blob, "tofu/1").unwrap(), None);
        store.file_facts().record(&blob, "tofu/1", b"one").unwrap();
        store.file_facts().record(&blob, "tofu/1", b"two").unwrap();
        store
            .file_facts()
            .record(&blob, "terraform/1", b"three")
            .unwrap();
        assert_eq!(
            store.file_facts().get(&blob, "tofu/1").unwrap().as_deref(),
            Some(&b"one"[..])
        );
        assert_eq!(
            store
                .file_facts()
                .get(&blob, "terraform/1")
                .unwrap()
                .as_deref(),
            Some(&b"three"[..])
        );
        assert_eq!(store.file_facts().all().unwrap().len(), 2);
    }
}
