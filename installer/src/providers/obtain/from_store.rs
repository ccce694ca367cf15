//! Using a package the store already holds, without asking any source.

use std::collections::BTreeSet;
use std::path::Path;

use tstore_store::{Hash, HashRecord, PackageKey, Store, StoreError, TreeId};

use super::{ObtainContext, ProviderRequest};
use crate::providers::{auth_summary, Event, InstallError, Obtained, Planned, ProviderOptions};

/// When the lock pins a version (no `-upgrade`, still allowed by the
/// constraints) and the store holds that package for this platform with a hash the lock
/// records, computed by the store itself (the memoized `h1:` of the tree, or the `zh:` of
/// the archive it was ingested from), use it without consulting any source: no version
/// listing, no download, no re-hash. The package's files are first checked against their
/// stat at commit ([`Store::package_freshness`]); a stale package is re-verified, and if
/// damaged removed from the store, in which case the normal path fetches it again.
pub(crate) fn from_store_by_lock(
    cx: ObtainContext<'_>,
    provider: ProviderRequest<'_>,
    display: &str,
) -> Result<Option<Planned>, InstallError> {
    let ObtainContext {
        store,
        opts,
        reporter,
        ..
    } = cx;
    let ProviderRequest {
        addr,
        constraints,
        locked,
    } = provider;
    let Some(locked) = locked else {
        return Ok(None);
    };
    if opts.workdir.upgrade
        || locked.hashes.is_empty()
        || !constraints.matches(&locked.version)
        || !opts.methods.iter().any(|m| m.matches(addr))
    {
        return Ok(None);
    }
    let version = locked.version.clone();
    let key = PackageKey::Provider {
        addr: addr.to_string(),
        version: version.to_string(),
        platform: opts.platform.to_string(),
    };
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let Some(package) = store.package(&key).map_err(store_err)? else {
        return Ok(None);
    };
    let matches_lock = package
        .hashes
        .iter()
        .any(|r| r.disposition.verified_locally && locked.hashes.contains(&r.hash.to_string()));
    if !matches_lock {
        return Ok(None);
    }
    if store.trusted_package(&key).map_err(store_err)?.is_none() {
        return Ok(None);
    }
    let Some(dir_h1) = stored_dir_h1(&package.hashes) else {
        return Ok(None);
    };
    // Said when linked (phase 3): "Using … from the store" for a new link, as the tools say
    // "from the shared cache directory", or "Using previously-installed" for one in place.
    reporter.event(Event::ReusingLocked {
        provider: display,
        version: &version,
    });
    // A package from the store is a cache hit: the lock gets its directory h1: beside what
    // it already records, and nothing an earlier run verified or a source once reported, as
    // the tools lock a package from their plugin cache (the same lock on every runner,
    // whatever the store's history).
    let lock_hashes: BTreeSet<String> = BTreeSet::from([dir_h1.to_string()]);
    let auth = auth_summary(&package.hashes, opts.workdir.flavor);
    let relpath = key.view_relpath().map_err(store_err)?;
    Ok(Some(Planned {
        link: opts.workdir.data_dir.path.join(&relpath),
        target: opts.workdir.mount.join(&relpath),
        addr: addr.clone(),
        display: display.to_owned(),
        version,
        constraints: constraints.clone(),
        source: format!("store:{}", relpath.display()),
        tree: package.tree,
        hashes: package.hashes,
        key,
        lock_hashes,
        memo: None,
        auth,
        obtained: Obtained::StoreByLock,
    }))
}

/// Whether `path` is the store's provider view on the mount path (as `tstore cli-config`
/// writes it), compared after resolving symlinks.
pub(crate) fn is_store_view(opts: &ProviderOptions, path: &Path) -> bool {
    let view = opts.workdir.mount.join("providers");
    path == view
        || matches!(
            (fs_err::canonicalize(path), fs_err::canonicalize(&view)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// The directory `h1:` of a committed package: the `h1:` recorded as verified locally that
/// is not the archive form (the store records the directory form first).
pub(crate) fn stored_dir_h1(hashes: &[HashRecord]) -> Option<Hash> {
    hashes
        .iter()
        .find(|r| matches!(r.hash, Hash::H1(_)) && r.disposition.verified_locally)
        .map(|r| r.hash.clone())
}

/// The committed package `key` if it records `zh` (its archive was verified before): its
/// tree and directory `h1:`. A store that keeps archives does not reuse a package whose zip
/// `zh` it lacks: the source's zip is fetched again, to be kept.
pub(crate) fn reuse(
    store: &Store,
    key: &PackageKey,
    zh: &Hash,
) -> Result<Option<(TreeId, Hash)>, StoreError> {
    if store.keeps_archives() && store.kept_archive(zh)?.is_none() {
        return Ok(None);
    }
    let Some(package) = store.trusted_package(key)? else {
        return Ok(None);
    };
    if !package
        .hashes
        .iter()
        .any(|r| r.hash == *zh && r.disposition.verified_locally)
    {
        return Ok(None);
    }
    Ok(stored_dir_h1(&package.hashes).map(|h1| (package.tree, h1)))
}
