//! An origin registry's package into the store.

use tstore_store::Hash;
use tstore_tofu::flavor::Flavor;

use super::download::fetch_and_ingest;
use super::{ObtainContext, SelectedPackage, SIGNING_SKIPPED};
use crate::net::http::HttpClient;
use crate::net::signing::Signer;
use crate::providers::sources::registry::{
    check_package_size, registry_packages, RegistryError, RegistryPackages, VerifiedPackage,
};
use crate::providers::RemoteError;
use crate::providers::{record, reuse, InstallError, Obtained, Obtainment};

/// A registry package: SHA256SUMS already verified; reuse the store's copy when it holds the
/// signed archive hash, else download, check and ingest.
pub(crate) fn obtain_registry(
    cx: ObtainContext<'_>,
    http: &HttpClient,
    package: &SelectedPackage<'_>,
    verified: VerifiedPackage,
) -> Result<Obtainment, InstallError> {
    let reported = reported_packages(cx, package, &verified)?;
    let zh = Hash::Zh(verified.shasum.clone());
    let key_id = verified.key_id.as_deref();
    let mut hashes = Vec::new();
    let (tree, dir_h1, obtained) =
        match reuse(cx.store, package.key, &zh).map_err(|e| package.store_error(e))? {
            Some((tree, dir_h1)) => {
                hashes.push(record(dir_h1.clone(), true, false, None));
                (tree, dir_h1, Obtained::InStore)
            }
            None => {
                let url = &verified.download_url;
                let archive = fetch_and_ingest(cx, package, url, Some(&zh), |dest, progress| {
                    let (sha, received) = http.download(url, dest, progress)?;
                    check_package_size(reported.size, received).map_err(|message| {
                        RemoteError::Registry(RegistryError::Malformed {
                            url: verified.meta_url.clone(),
                            message,
                        })
                    })?;
                    Ok(sha)
                })?;
                hashes.push(record(archive.ingested.h1.clone(), true, false, None));
                if archive.h1_zip != archive.ingested.h1 {
                    hashes.push(record(archive.h1_zip.clone(), true, false, None));
                }
                (
                    archive.ingested.tree,
                    archive.ingested.h1,
                    Obtained::Downloaded,
                )
            }
        };
    let mut lock_extra = Vec::new();
    for (sum, _file) in &verified.signed_sums {
        let h = Hash::Zh(sum.clone());
        lock_extra.push(h.to_string());
        hashes.push(record(h.clone(), h == zh, true, key_id));
    }
    lock_extra.extend(reported.hashes);
    let auth = match (key_id, cx.opts.workdir.flavor) {
        // terraform names HashiCorp's own signature (one its release key verifies, whatever
        // ID the registry gives the key), a partner's (a trust signature by the partners key)
        // and shows a key ID for the others (internal/getproviders/package_authentication.go,
        // `signatureAuthentication`).
        (Some(key_id), Flavor::Terraform) => match verified.signer {
            Some(Signer::HashiCorp) => "signed by HashiCorp".to_owned(),
            Some(Signer::Partner) => format!("signed by a HashiCorp partner, key ID {key_id}"),
            _ => format!("self-signed, key ID {key_id}"),
        },
        (Some(key_id), Flavor::Tofu) => format!("signed, key ID {key_id}"),
        (None, _) => SIGNING_SKIPPED.to_owned(),
    };
    Ok(Obtainment {
        tree,
        hashes,
        dir_h1,
        lock_extra,
        verified_zh: None,
        local_archive: false,
        memo: None,
        source: format!(
            "registry:{}",
            crate::redact::display_url(&verified.download_url)
        ),
        auth,
        obtained,
        origin: "current",
    })
}

/// The hashes of the registry's `packages` the lock file records: under the releases that
/// read the field, it is checked for the platform installed (a bad one fails the install,
/// in tofu's words), and its `h1:`/`zh:` of every platform are locked for providers of
/// OpenTofu's registry unless `OPENTOFU_ENFORCE_GPG_VALIDATION=true` (the field is not
/// signed; tofu trusts it from that registry only: upstream:
/// internal/providercache/installer.go@v1.12.0).
fn reported_packages(
    cx: ObtainContext<'_>,
    package: &SelectedPackage<'_>,
    verified: &VerifiedPackage,
) -> Result<RegistryPackages, InstallError> {
    let rule = &tstore_tofu::tool_version::REGISTRY_PACKAGE_HASHES;
    if !cx.opts.workdir.tool.follows(rule) {
        return Ok(RegistryPackages::default());
    }
    let mut reported = registry_packages(
        verified.packages.as_ref(),
        &cx.opts.platform,
        &verified.shasum,
    )
    .map_err(|message| {
        package.remote_error(
            "origin registry".into(),
            RemoteError::Registry(RegistryError::Malformed {
                url: verified.meta_url.clone(),
                message,
            }),
        )
    })?;
    let trusted = package.addr.host == "registry.opentofu.org"
        && !cx.opts.workdir.network.enforce_gpg_validation;
    if !trusted {
        reported.hashes.clear();
    }
    Ok(reported)
}
