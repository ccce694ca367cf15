//! A module package pushed as one tag naming a manifest whose one layer is the package as a
//! deterministic zip.

use serde_json::json;
use tstore_store::{PackageKey, Store};

use super::existing_tag::{ExistingTag, PublishedTag};
use super::{package_zip, PushError, EMPTY_CONFIG_MEDIA_TYPE};
use crate::net::oci::{OciClient, OciRepository, MANIFEST_MEDIA_TYPE, ZIP_LAYER_MEDIA_TYPE};

/// `artifactType` of a module package's manifest (what `oci://` module sources read).
pub(crate) use crate::modules::getters::oci::MODULE_ARTIFACT_TYPE;

/// What a push did for one module package.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PushedModule {
    /// The store's package id.
    pub package: String,
    /// `registry/repository:tag`.
    pub reference: String,
    /// The manifest's digest (for `?digest=` sources).
    pub digest: String,
    /// Blobs uploaded now.
    pub blobs_uploaded: usize,
    /// Blobs the registry already had.
    pub blobs_present: usize,
}

/// Push the module package `id` (as `tstore store ls` names it) to `repo` under `tag`: a
/// manifest whose one layer is the package as a deterministic zip. A tag naming this very
/// manifest already is left as it is and nothing is uploaded (not even asked about); a tag
/// naming another manifest is left alone unless `existing` is [`ExistingTag::Replace`].
pub fn push_module(
    store: &Store,
    client: &OciClient,
    repo: &OciRepository,
    tag: &str,
    id: &str,
    existing: ExistingTag,
) -> Result<PushedModule, PushError> {
    let key = PackageKey::module(id);
    if store.package(&key)?.is_none() {
        return Err(PushError::NothingSelected {
            selection: id.to_owned(),
        });
    }
    let zip = package_zip(&store.view_dir(&key)?).map_err(|source| PushError::Zip {
        package: id.to_owned(),
        source,
    })?;
    let config = crate::net::oci::sha256_digest(b"{}");
    let layer = crate::net::oci::sha256_digest(&zip);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": MODULE_ARTIFACT_TYPE,
        "config": {"mediaType": EMPTY_CONFIG_MEDIA_TYPE, "digest": config, "size": 2},
        "layers": [{"mediaType": ZIP_LAYER_MEDIA_TYPE, "digest": layer, "size": zip.len()}],
    }))
    .expect("JSON");
    let digest = crate::net::oci::sha256_digest(&manifest);
    let reference = format!("{repo}:{tag}");
    let published = PublishedTag::read(client, repo, tag)?;
    if published.as_ref().is_some_and(|p| p.digest == digest) {
        return Ok(PushedModule {
            package: id.to_owned(),
            reference,
            digest,
            blobs_uploaded: 0,
            blobs_present: 2,
        });
    }
    if let (Some(published), ExistingTag::Refuse) = (&published, existing) {
        return Err(PushError::TagTaken {
            reference,
            what: "another manifest".into(),
            existing: published.digest.clone(),
            ours: digest,
        });
    }
    let (_, config_new) = client.push_blob(repo, b"{}")?;
    let (_, layer_new) = client.push_blob(repo, &zip)?;
    client.push_manifest(repo, tag, MANIFEST_MEDIA_TYPE, &manifest)?;
    let uploaded = usize::from(config_new) + usize::from(layer_new);
    Ok(PushedModule {
        package: id.to_owned(),
        reference,
        digest,
        blobs_uploaded: uploaded,
        blobs_present: 2 - uploaded,
    })
}
