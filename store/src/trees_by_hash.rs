//! Content a lock file names by hash: a tree the store holds whose directory `h1:` is the
//! one asked for, whatever package names it (or none: a restored store's adoption forgets the
//! module packages, whose names their bytes cannot confirm, and keeps their trees, whose
//! `h1:` it recomputed from the bytes).
//!
//! A tree found this way is the content the lock pins, so the installer may commit it under
//! the name the lock gives it (the call's source and commit) without asking any source: the
//! lock vouches for the bytes, the bytes for the hash.

use rusqlite::OptionalExtension as _;

use crate::hash::Hash;
use crate::ids::TreeId;
use crate::{Result, Store};

impl Store {
    /// A tree whose directory `h1:` is `h1`, if the store holds one (on a store whose index
    /// was adopted, only trees re-verified from their bytes remain).
    pub fn tree_with_h1(&self, h1: &Hash) -> Result<Option<TreeId>> {
        if !matches!(h1, Hash::H1(_)) {
            return Ok(None);
        }
        self.ensure_trusted()?;
        let index = self.index();
        let id: Option<String> = index
            .conn
            .query_row(
                "SELECT id FROM trees WHERE h1 = ?1 ORDER BY id LIMIT 1",
                [h1.to_string()],
                |row| row.get(0),
            )
            .optional()
            .map_err(index.err("finding a tree by its h1"))?;
        id.map(|id| id.parse::<TreeId>()).transpose()
    }
}
