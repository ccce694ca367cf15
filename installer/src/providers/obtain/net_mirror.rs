//! A network mirror's package into the store.

use tstore_store::{Hash, PackageKey, Store};
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::version::Version;

use crate::net::http::HttpClient;
use crate::providers::{
    display_name, download_and_ingest, join_hashes, reuse, InstallError, Obtainment, Reporter,
};

/// A network mirror package: the archive must match one of the mirror's hashes, if it
/// gives any. The lock gets the directory `h1:` and the zip's `zh:` (the lock rule of
/// OpenTofu's hash-disposition RFC; terraform 1.0.3 records only the `h1:`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn obtain_net(
    store: &Store,
    http: &HttpClient,
    reporter: &dyn Reporter,
    flavor: Flavor,
    key: &PackageKey,
    addr: &ProviderAddr,
    version: &Version,
    archive: crate::providers::sources::net_mirror::MirrorArchive,
) -> Result<Obtainment, InstallError> {
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let reported: Vec<Hash> = archive
        .hashes
        .iter()
        .filter_map(|h| h.parse::<Hash>().ok())
        .collect();
    let auth = if reported.is_empty() {
        "unauthenticated"
    } else {
        "verified checksum"
    };
    // A reported zh: already verified into the store means nothing to download.
    for zh in reported.iter().filter(|h| matches!(h, Hash::Zh(_))) {
        if let Some((tree, dir_h1)) = reuse(store, key, zh).map_err(store_err)? {
            return Ok(Obtainment::reused_by_zh(
                tree,
                dir_h1,
                zh.clone(),
                format!("network_mirror:{}", archive.url),
                auth.into(),
            ));
        }
    }
    let ingested = download_and_ingest(
        store,
        http,
        reporter,
        &display_name(addr, flavor),
        addr,
        version,
        &archive.url,
        None,
    )?;
    let computed = [&ingested.ingested.h1, &ingested.h1_zip, &ingested.zh];
    if !reported.is_empty() && !computed.iter().any(|h| reported.contains(h)) {
        return Err(InstallError::ArchiveChecksum {
            provider: addr.to_string(),
            version: version.clone(),
            url: archive.url.clone(),
            computed: join_hashes(computed.iter().map(|h| h.to_string())),
            expected: join_hashes(reported.iter().map(|h| h.to_string())),
        });
    }
    Ok(Obtainment::downloaded(
        ingested,
        format!("network_mirror:{}", archive.url),
        auth.into(),
    ))
}
