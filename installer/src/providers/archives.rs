//! The source's own zip of a provider package the store holds without it, fetched again
//! and kept whole, for `tstore push`: plain tofu checks an OCI layer's digest against the
//! lock file's `zh:` hashes before downloading it, so the layer must be the very zip the
//! lock files were written from, not one rebuilt from the stored files.
//!
//! The zip is found and authenticated exactly as `tstore providers lock` finds one (the
//! installation methods in order; signed `SHA256SUMS` from an origin registry, reported
//! hashes of a network mirror), and committed to the package it belongs to: a zip whose
//! files differ from the stored package is refused by the store (a package conflict), so
//! keeping it never changes what any working directory links.

use std::collections::BTreeSet;

use tstore_store::{Hash, Store};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::lockfile::LockedProvider;
use tstore_tofu::version::{Version, VersionConstraints};

use crate::net::LazyHttpClient;
use crate::options::WorkdirOptions;
use crate::providers::{
    obtain, InstallError, ObtainContext, ObtainMode, ProviderOptions, ProviderRequest, Reporter,
};

/// Fetch the zip of `addr` `version` for `platform` from `opts.methods` into `store`, which
/// must keep archives ([`Store::with_kept_archives`]), and commit it to its package. Returns
/// the `zh:` of the zip now kept, or `None` when the source that has the package serves no
/// zip (an unpacked filesystem mirror).
pub fn keep_source_archive(
    store: &Store,
    opts: &ProviderOptions,
    addr: &ProviderAddr,
    version: &Version,
    platform: &Platform,
    reporter: &dyn Reporter,
) -> Result<Option<Hash>, InstallError> {
    assert!(
        store.keeps_archives(),
        "keep_source_archive needs a store that keeps archives"
    );
    let opts = ProviderOptions {
        workdir: WorkdirOptions {
            upgrade: false,
            ..opts.workdir.clone()
        },
        platform: platform.clone(),
        ..opts.clone()
    };
    let http = LazyHttpClient::new(&opts.workdir.network);
    let exact = VersionConstraints::parse(&format!("= {version}")).map_err(|e| {
        InstallError::NoMatchingVersion {
            provider: addr.to_string(),
            constraints: format!("= {version} ({e})"),
        }
    })?;
    let pinned = LockedProvider {
        version: version.clone(),
        constraints: None,
        hashes: BTreeSet::new(),
    };
    let cx = ObtainContext {
        store,
        opts: &opts,
        http: &http,
        reporter,
    };
    let provider = ProviderRequest {
        addr,
        constraints: &exact,
        locked: Some(&pinned),
    };
    let planned = obtain(cx, provider, ObtainMode::Lock)?;
    let package = planned.commit(store)?;
    let kept = store
        .kept_archive_of(&package.hashes)
        .map_err(|source| InstallError::Store {
            provider: addr.to_string(),
            version: version.clone(),
            source,
        })?;
    Ok(kept.map(|(zh, _)| zh))
}
