//! A locked git call's package from content the store holds under its lock entry's `h1:`:
//! how a restored store, whose adoption forgot module packages' names but kept their
//! re-verified trees, installs a locked call with its source unreachable.

use tstore_tofu::module_source::{Getter, RemotePackage};

use super::{git_id, FetchError, FetchLog, Fetched, Fetcher};
use crate::modules::getters::git;

impl Fetcher<'_> {
    /// A pinned call's package from content the store holds under the lock entry's `h1:`
    /// (`Store::tree_with_h1`), committed under the name the entry gives it: the entry
    /// vouches for the bytes. This is how a restored store, whose adoption forgot the module
    /// packages' names but kept their verified trees, installs a locked git call with its
    /// source unreachable. The package is named by the entry's commit.
    pub(super) fn stored_by_lock_hash(
        &self,
        package: &RemotePackage,
        entry: &tstore_tofu::module_lock::ModuleLockEntry,
        log: &mut FetchLog,
    ) -> Result<Option<Fetched>, FetchError> {
        for h1 in entry.hashes.iter().filter(|h| h.starts_with("h1:")) {
            let Ok(hash) = h1.parse::<tstore_store::Hash>() else {
                continue;
            };
            let Some(tree) = self.store.tree_with_h1(&hash).map_err(FetchError::from)? else {
                continue;
            };
            // Git only: a commit names its content for good (and the walk has checked the
            // ref's reach to it). An archive URL or an OCI tag can be published again, and a
            // lock must fail on that wherever it runs, whatever the store holds.
            let (Getter::Git, Some(commit)) = (&package.getter, &entry.commit) else {
                return Ok(None);
            };
            let addr = git::GitAddress::parse(&package.url)?;
            let (id, commit) = (
                git_id(&addr.repo, commit),
                Some(commit.to_ascii_lowercase()),
            );
            log.reused.push(id.clone());
            let made = if self.known(&id)? {
                self.fetched(&id)?
            } else {
                self.commit(&id, &tree, vec![hash])?
            };
            return Ok(Some(Fetched { commit, ..made }));
        }
        Ok(None)
    }
}
