//! An OCI mirror's package into the store.

use tstore_store::{Hash, PackageKey, Store};
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::version::Version;

use crate::net::oci::OciClient;
use crate::providers::sources::oci_mirror::OciArchive;
use crate::providers::{display_name, reuse, InstallError, Obtainment, RemoteError, Reporter};

use super::download::fetch_and_ingest;

/// An OCI mirror package: the zip is the layer blob, addressed by its SHA-256, which is the
/// package's `zh:` hash. A zip the store already verified under that hash is not
/// downloaded; a downloaded one must match the digest before anything is extracted. The
/// lock gets the directory `h1:` and the zip's `zh:`, both verified locally.
#[allow(clippy::too_many_arguments)]
pub(crate) fn obtain_oci(
    store: &Store,
    client: &OciClient,
    reporter: &dyn Reporter,
    flavor: Flavor,
    key: &PackageKey,
    addr: &ProviderAddr,
    version: &Version,
    archive: OciArchive,
) -> Result<Obtainment, InstallError> {
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let url = OciClient::blob_url(&archive.repository, &archive.digest);
    let source = format!("oci_mirror:{}@{}", archive.repository, archive.digest);
    let hex = archive.digest.trim_start_matches("sha256:");
    let zh: Hash = format!("zh:{hex}")
        .parse()
        .map_err(|_| InstallError::Remote {
            provider: addr.to_string(),
            version: Some(version.clone()),
            what: format!("OCI mirror {}", archive.repository),
            source: RemoteError::OciMirror(
                crate::providers::sources::oci_mirror::OciMirrorError::NotAProvider {
                    repository: archive.repository.to_string(),
                    tag: version.to_string(),
                    message: format!("the zip's digest {} is not SHA-256", archive.digest),
                },
            ),
        })?;
    let auth = "verified checksum";
    if let Some((tree, dir_h1)) = reuse(store, key, &zh).map_err(store_err)? {
        return Ok(Obtainment::reused_by_zh(
            tree,
            dir_h1,
            zh,
            source,
            auth.into(),
        ));
    }
    let ingested = fetch_and_ingest(
        store,
        reporter,
        &display_name(addr, flavor),
        addr,
        version,
        &url,
        Some(&zh),
        |dest, progress| {
            // download_blob checked the bytes against the digest, so the digest is their
            // SHA-256.
            client.download_blob(&archive.repository, &archive.digest, dest, progress)?;
            let mut sha = [0u8; 32];
            hex::decode_to_slice(hex, &mut sha).map_err(|_| {
                RemoteError::Http(crate::net::http::HttpError::Malformed {
                    url: url.clone(),
                    message: format!("{} is not a SHA-256 digest", archive.digest),
                })
            })?;
            Ok(sha)
        },
    )?;
    Ok(Obtainment::downloaded(ingested, source, auth.into()))
}
