//! Decoded trees kept for the life of the process, by id. A tree's id is the BLAKE3 of its
//! encoding, so a tree is kept only when the row it was read from hashes to the row's id;
//! then the id names these very files in every store and every request, and a served init
//! (`tstore serve`) or `init --recursive` decodes each package's tree once. A row that does
//! not hash to its id is decoded every time and never kept (re-verification removes it).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::ids::TreeId;
use crate::tree::Tree;
use crate::Result;

/// Trees kept at most; past it the map starts again (a working set is far smaller).
const KEPT_MAX: usize = 4096;

static DECODED: LazyLock<Mutex<HashMap<TreeId, Arc<Tree>>>> = LazyLock::new(Mutex::default);

/// The tree whose row says id `id` and holds `encoding`, decoded once per process when the
/// encoding hashes to `id`.
pub(crate) fn decoded(id: &TreeId, encoding: &[u8]) -> Result<Arc<Tree>> {
    if let Some(tree) = DECODED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(id)
    {
        return Ok(Arc::clone(tree));
    }
    let tree = Arc::new(Tree::decode(encoding)?);
    if blake3::hash(encoding).as_bytes() == &id.0 {
        let mut kept = DECODED.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= KEPT_MAX {
            kept.clear();
        }
        kept.insert(*id, Arc::clone(&tree));
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{EntryKind, TreeEntry};
    use crate::BlobId;

    fn tree(name: &str) -> Tree {
        Tree::new(vec![TreeEntry {
            path: name.to_owned(),
            kind: EntryKind::File {
                blob: BlobId::of(name.as_bytes()),
                exec: false,
            },
        }])
        .unwrap()
    }

    #[test]
    fn only_a_row_that_hashes_to_its_id_is_kept() {
        let honest = tree("kept-honest");
        let id = honest.id();
        assert_eq!(*decoded(&id, &honest.encode()).unwrap(), honest);
        // Kept: a later read of the id gives it whatever bytes come with it.
        assert_eq!(*decoded(&id, b"not read").unwrap(), honest);

        // A row that lies about its id is decoded as it is, every time, never kept.
        let other = tree("kept-other");
        let claimed = tree("kept-claimed").id();
        assert_eq!(*decoded(&claimed, &other.encode()).unwrap(), other);
        let third = tree("kept-third");
        assert_eq!(*decoded(&claimed, &third.encode()).unwrap(), third);
    }
}
