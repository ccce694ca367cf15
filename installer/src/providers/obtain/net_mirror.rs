//! A network mirror's package into the store.

use tstore_store::Hash;

use super::{ObtainContext, SelectedPackage};
use crate::net::http::HttpClient;
use crate::providers::sources::net_mirror::MirrorArchive;
use crate::providers::{download_and_ingest, join_hashes, reuse, InstallError, Obtainment};

/// A network mirror package: the archive must match one of the mirror's hashes, if it
/// gives any. The lock gets the directory `h1:` and the zip's `zh:` (the lock rule of
/// OpenTofu's hash-disposition RFC; terraform 1.0.3 records only the `h1:`).
pub(crate) fn obtain_net(
    cx: ObtainContext<'_>,
    http: &HttpClient,
    package: &SelectedPackage<'_>,
    archive: MirrorArchive,
) -> Result<Obtainment, InstallError> {
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
        if let Some((tree, dir_h1)) =
            reuse(cx.store, package.key, zh).map_err(|e| package.store_error(e))?
        {
            let mut obtained = Obtainment::reused_by_zh(
                tree,
                dir_h1,
                zh.clone(),
                format!(
                    "network_mirror:{}",
                    crate::redact::display_url(&archive.url)
                ),
                auth.into(),
            );
            obtained
                .lock_extra
                .extend(trusted_hashes(cx, package, &archive, &reported));
            return Ok(obtained);
        }
    }
    let ingested = download_and_ingest(cx, http, package, &archive.url, None)?;
    let computed = [&ingested.ingested.h1, &ingested.h1_zip, &ingested.zh];
    if !reported.is_empty() && !computed.iter().any(|h| reported.contains(h)) {
        return Err(InstallError::ArchiveChecksum {
            provider: package.addr.to_string(),
            version: package.version.clone(),
            url: archive.url.clone(),
            computed: join_hashes(computed.iter().map(|h| h.to_string())),
            expected: join_hashes(reported.iter().map(|h| h.to_string())),
        });
    }
    let mut obtained = Obtainment::downloaded(
        ingested,
        format!(
            "network_mirror:{}",
            crate::redact::display_url(&archive.url)
        ),
        auth.into(),
    );
    obtained
        .lock_extra
        .extend(trusted_hashes(cx, package, &archive, &reported));
    Ok(obtained)
}

/// The mirror's hashes the lock file records beside the package's own: every platform's
/// from a mirror whose hashes are all trusted, for providers of OpenTofu's registry unless
/// `OPENTOFU_ENFORCE_GPG_VALIDATION=true` (upstream:
/// internal/providercache/installer.go@v1.12.0, `ReportedByTrustedMirror`).
fn trusted_hashes(
    cx: ObtainContext<'_>,
    package: &SelectedPackage<'_>,
    archive: &MirrorArchive,
    reported: &[Hash],
) -> Vec<String> {
    let trusted = package.addr.host == "registry.opentofu.org"
        && !cx.opts.workdir.network.enforce_gpg_validation;
    if !trusted || !archive.trusted {
        return Vec::new();
    }
    reported.iter().map(ToString::to_string).collect()
}
