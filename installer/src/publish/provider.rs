//! A provider version pushed as one tag naming an image index, with one image manifest per
//! platform whose one layer is the package's zip (the source's kept zip, or one built from
//! the stored files).

use std::collections::BTreeMap;

use serde_json::json;
use sha2::Digest as _;
use tstore_store::{Hash, Package, Store};
use tstore_tofu::addr::ProviderAddr;

use super::existing_tag::{ExistingTag, PublishedTag};
use super::selection::{check_push_target, selected_versions, ProviderSelection};
use super::{package_zip, PushError, EMPTY_CONFIG_MEDIA_TYPE};
use crate::net::oci::{
    OciClient, OciRepository, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, ZIP_LAYER_MEDIA_TYPE,
};
use crate::providers::sources::oci_mirror::{
    version_to_tag, OciMirror, PROVIDER_ARTIFACT_TYPE, PROVIDER_TARGET_ARTIFACT_TYPE,
};

/// What a push did for one provider version.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PushedVersion {
    /// `host/namespace/type`.
    pub provider: String,
    /// The version.
    pub version: String,
    /// `registry/repository:tag`.
    pub reference: String,
    /// The index's digest.
    pub digest: String,
    /// The platforms pushed.
    pub platforms: Vec<String>,
    /// The platforms whose layer was built from the stored files, because the store did not
    /// keep the origin's zip: a lock from the origin lacks that layer's `zh:`.
    pub rebuilt: Vec<String>,
    /// Blobs uploaded now.
    pub blobs_uploaded: usize,
    /// Blobs the registry already had.
    pub blobs_present: usize,
}

/// Push every provider version the selections match (all provider packages of the store
/// when there is none) to the repositories `template` gives
/// (`REGISTRY/PATH/${namespace}/${type}`, as an `oci_mirror`'s `repository_template`).
/// The target is checked first ([`check_push_target`]); a tag that names another package
/// is left alone unless `existing` is [`ExistingTag::Replace`].
pub fn push_providers(
    store: &Store,
    client: &OciClient,
    template: &str,
    selections: &[ProviderSelection],
    existing: ExistingTag,
    on_version: &dyn Fn(&PushedVersion),
) -> Result<Vec<PushedVersion>, PushError> {
    check_push_target(template, selections)?;
    let mirror = OciMirror {
        template: template.to_owned(),
    };
    let mut pushed = Vec::new();
    for ((addr, version), platforms) in selected_versions(store, selections)? {
        let parsed = ProviderAddr::parse_source(&addr, "")
            .expect("the store records normalized provider addresses");
        let repo = mirror.repository(&parsed)?;
        let target = VersionTarget {
            repo: &repo,
            addr: &addr,
            version: &version,
            existing,
        };
        let done = push_provider_version(store, client, &target, &platforms)?;
        on_version(&done);
        pushed.push(done);
    }
    Ok(pushed)
}

/// Where one provider version goes, and what to do with a tag already there.
struct VersionTarget<'a> {
    repo: &'a OciRepository,
    addr: &'a str,
    version: &'a str,
    existing: ExistingTag,
}

fn push_provider_version(
    store: &Store,
    client: &OciClient,
    target: &VersionTarget<'_>,
    platforms: &BTreeMap<String, Package>,
) -> Result<PushedVersion, PushError> {
    let VersionTarget {
        repo,
        addr,
        version,
        existing,
    } = *target;
    let tag = version_to_tag(version);
    let reference = format!("{repo}:{tag}");
    let published = PublishedTag::read(client, repo, &tag)?;
    if let (Some(published), ExistingTag::Refuse) = (&published, existing) {
        if published.platforms.is_none() {
            return Err(PushError::TagTaken {
                reference,
                what: "something else than an OpenTofu provider index".into(),
                existing: published.digest.clone(),
                ours: "an OpenTofu provider index".into(),
            });
        }
    }
    let mut rebuilt = Vec::new();
    let mut uploaded = 0;
    let mut present = 0;
    let mut count = |fresh: bool| {
        if fresh {
            uploaded += 1
        } else {
            present += 1
        }
    };
    let config = crate::net::oci::sha256_digest(b"{}");
    let mut config_pushed = false;
    // Whether the tag is to name something new: written only then.
    let mut changed = published.is_none();
    // By `OS_ARCH`: the index lists its platforms in that order.
    let mut descriptors = BTreeMap::new();
    for (platform, package) in platforms {
        let zip = match kept_zip(store, package)? {
            Some(zip) => zip,
            None => {
                rebuilt.push(platform.clone());
                package_zip(&store.view_dir(&package.key)?).map_err(|source| PushError::Zip {
                    package: format!("{addr} {version} {platform}"),
                    source,
                })?
            }
        };
        let layer = crate::net::oci::sha256_digest(&zip);
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "artifactType": PROVIDER_TARGET_ARTIFACT_TYPE,
            "config": {"mediaType": EMPTY_CONFIG_MEDIA_TYPE, "digest": config, "size": 2},
            "layers": [{
                "mediaType": ZIP_LAYER_MEDIA_TYPE,
                "digest": layer,
                "size": zip.len(),
                "annotations": {
                    "org.opencontainers.image.title":
                        format!("terraform-provider-{}_{version}_{platform}.zip",
                            addr.rsplit('/').next().unwrap_or_default()),
                },
            }],
        }))
        .expect("JSON");
        let digest = crate::net::oci::sha256_digest(&manifest);
        // A platform the tag already names with another manifest: the same zip is the same
        // package, and its manifest stays; another zip is another package, not replaced,
        // and nothing of this one uploaded, unless told to.
        let theirs = published.as_ref().and_then(|p| p.manifest_of(platform));
        if let Some(theirs) = theirs {
            if theirs != digest {
                let their_zip = zip_layer_of(client, repo, theirs)?;
                if their_zip.as_deref() == Some(layer.as_str()) {
                    count(false);
                    continue;
                }
                if existing == ExistingTag::Refuse {
                    return Err(PushError::TagTaken {
                        reference,
                        what: format!("another package for {platform}"),
                        existing: format!(
                            "its zip {}",
                            their_zip.unwrap_or_else(|| format!("in manifest {theirs}"))
                        ),
                        ours: layer,
                    });
                }
            }
        }
        changed |= theirs != Some(digest.as_str());
        if !config_pushed {
            let (_, fresh) = client.push_blob(repo, b"{}")?;
            count(fresh);
            config_pushed = true;
        }
        let (_, fresh) = client.push_blob(repo, &zip)?;
        count(fresh);
        client.push_manifest(repo, &digest, MANIFEST_MEDIA_TYPE, &manifest)?;
        let (os, arch) = platform.split_once('_').unwrap_or((platform.as_str(), ""));
        descriptors.insert(
            platform.clone(),
            json!({
                "mediaType": MANIFEST_MEDIA_TYPE,
                "artifactType": PROVIDER_TARGET_ARTIFACT_TYPE,
                "digest": digest,
                "size": manifest.len(),
                "platform": {"os": os, "architecture": arch},
            }),
        );
    }
    // The platforms the tag names and this store lacks stay: each runner pushes its own.
    if let Some(theirs) = published.as_ref().and_then(|p| p.platforms.as_ref()) {
        for (platform, descriptor) in theirs {
            descriptors
                .entry(platform.clone())
                .or_insert_with(|| descriptor.clone());
        }
    }
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "artifactType": PROVIDER_ARTIFACT_TYPE,
        "manifests": descriptors.into_values().collect::<Vec<_>>(),
    }))
    .expect("JSON");
    // A tag that already names each of this store's packages stays as it is (its index may
    // be written differently, by another tool).
    let digest = match (&published, changed) {
        (Some(published), false) => published.digest.clone(),
        _ => client.push_manifest(repo, &tag, INDEX_MEDIA_TYPE, &index)?,
    };
    Ok(PushedVersion {
        provider: addr.to_owned(),
        version: version.to_owned(),
        reference,
        digest,
        platforms: platforms.keys().cloned().collect(),
        rebuilt,
        blobs_uploaded: uploaded,
        blobs_present: present,
    })
}

/// The digest of the one zip layer of `repo`'s manifest `digest`; `None` when the manifest
/// has no single zip layer (then it is not the same package as any).
fn zip_layer_of(
    client: &OciClient,
    repo: &OciRepository,
    digest: &str,
) -> Result<Option<String>, PushError> {
    let fetched = client.manifest(repo, digest)?;
    Ok(OciClient::parse_manifest(&fetched, digest)
        .ok()
        .and_then(|m| crate::net::oci::single_zip_layer(&m).ok()))
}

/// The origin's zip of `package`, if the store kept it: the kept archive of one of its
/// `zh:` hashes, checked against that hash.
fn kept_zip(store: &Store, package: &Package) -> Result<Option<Vec<u8>>, PushError> {
    let Some((zh, path)) = store.kept_archive_of(&package.hashes)? else {
        return Ok(None);
    };
    let bytes = fs_err::read(&path).map_err(|source| PushError::ReadArchive {
        path: path.clone(),
        source,
    })?;
    let sha256: [u8; 32] = sha2::Sha256::digest(&bytes).into();
    if Hash::zh_from_sha256(&sha256) != zh {
        return Err(PushError::DamagedArchive {
            zh: zh.to_string(),
            path,
        });
    }
    Ok(Some(bytes))
}
