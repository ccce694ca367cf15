//! An OCI mirror's package into the store.

use tstore_store::Hash;

use super::download::fetch_and_ingest;
use super::{ObtainContext, SelectedPackage};
use crate::net::oci::OciClient;
use crate::providers::sources::oci_mirror::{OciArchive, OciMirrorError};
use crate::providers::{reuse, InstallError, Obtainment, RemoteError};

/// An OCI mirror package: the zip is the layer blob, addressed by its SHA-256, which is the
/// package's `zh:` hash. A zip the store already verified under that hash is not
/// downloaded; a downloaded one must match the digest before anything is extracted. The
/// lock gets the directory `h1:` and the zip's `zh:`, both verified locally.
pub(crate) fn obtain_oci(
    cx: ObtainContext<'_>,
    client: &OciClient,
    package: &SelectedPackage<'_>,
    archive: OciArchive,
) -> Result<Obtainment, InstallError> {
    let url = OciClient::blob_url(&archive.repository, &archive.digest);
    let source = format!("oci_mirror:{}@{}", archive.repository, archive.digest);
    let hex = archive.digest.trim_start_matches("sha256:");
    let zh: Hash = format!("zh:{hex}").parse().map_err(|_| {
        package.remote_error(
            format!("OCI mirror {}", archive.repository),
            RemoteError::OciMirror(OciMirrorError::NotAProvider {
                repository: archive.repository.to_string(),
                tag: package.version.to_string(),
                message: format!("the zip's digest {} is not SHA-256", archive.digest),
            }),
        )
    })?;
    let auth = "verified checksum";
    if let Some((tree, dir_h1)) =
        reuse(cx.store, package.key, &zh).map_err(|e| package.store_error(e))?
    {
        return Ok(Obtainment::reused_by_zh(
            tree,
            dir_h1,
            zh,
            source,
            auth.into(),
        ));
    }
    let ingested = fetch_and_ingest(cx, package, &url, Some(&zh), |dest, progress| {
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
    })?;
    Ok(Obtainment::downloaded(ingested, source, auth.into()))
}
