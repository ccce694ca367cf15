//! A locked git call's package from content the store holds under its lock entry's `h1:`:
//! how a restored store, whose adoption forgot module packages' names but kept their
//! re-verified trees, installs a locked call with its source unreachable.
//!
//! **Rule:** the entry vouches for the bytes, never for a name: the content is committed
//! under the hash's own name (`lock_id`, provenance `lock`), which no lookup by an origin's
//! name (a commit, a URL, a registry version) sees; only a call pinned by an entry with that
//! `h1:` finds it.

use tstore_store::Provenance;
use tstore_tofu::module_source::{Getter, RemotePackage};

use super::{lock_id, FetchError, FetchLog, Fetched, Fetcher};

impl Fetcher<'_> {
    /// A pinned call's package from content the store holds under the lock entry's `h1:`
    /// (`Store::tree_with_h1`), committed under the hash's name (module docs). Git only: a
    /// commit names its content for good, and the walk has checked the ref's reach to it; an
    /// archive URL or an OCI tag can be published again, and a lock must fail on that
    /// wherever it runs, whatever the store holds.
    pub(super) fn stored_by_lock_hash(
        &self,
        package: &RemotePackage,
        entry: &tstore_tofu::module_lock::ModuleLockEntry,
        log: &mut FetchLog,
    ) -> Result<Option<Fetched>, FetchError> {
        let (Getter::Git, Some(commit)) = (&package.getter, &entry.commit) else {
            return Ok(None);
        };
        for h1 in entry.hashes.iter().filter(|h| h.starts_with("h1:")) {
            let Ok(hash) = h1.parse::<tstore_store::Hash>() else {
                continue;
            };
            let id = lock_id(&package.url, &hash);
            let made = if self.known(&id, Provenance::Lock)? {
                self.fetched(&id, Provenance::Lock)?
            } else {
                let Some(tree) = self.store.tree_with_h1(&hash).map_err(FetchError::from)? else {
                    continue;
                };
                self.commit(&id, &tree, vec![hash], Provenance::Lock)?
            };
            log.reused.push(id);
            return Ok(Some(Fetched {
                commit: Some(commit.to_ascii_lowercase()),
                ..made
            }));
        }
        Ok(None)
    }
}
