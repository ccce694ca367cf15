//! A tag that already names something: what it names ([`PublishedTag`]), and what a push
//! does when that is another package ([`ExistingTag`]).

use std::collections::BTreeMap;

use super::PushError;
use crate::net::oci::{OciClient, OciError, OciRepository, INDEX_MEDIA_TYPE};
use crate::providers::sources::oci_mirror::PROVIDER_ARTIFACT_TYPE;

/// What a push does with a tag that already names another package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExistingTag {
    /// Fail, leaving the tag as it is ([`PushError::TagTaken`]).
    Refuse,
    /// Put this push's package there (`tstore push --force`).
    Replace,
}

/// What a tag named before a push.
pub(super) struct PublishedTag {
    /// The digest of the document the tag names.
    pub(super) digest: String,
    /// When it is an OpenTofu provider index: its manifest descriptors by `OS_ARCH`.
    pub(super) platforms: Option<BTreeMap<String, serde_json::Value>>,
    /// The document's `artifactType`, if any.
    pub(super) artifact_type: Option<String>,
    /// The document's annotations (`null`: none).
    pub(super) annotations: serde_json::Value,
}

impl PublishedTag {
    /// What `repo:tag` names; `None` when the registry has no such tag.
    pub(super) fn read(
        client: &OciClient,
        repo: &OciRepository,
        tag: &str,
    ) -> Result<Option<PublishedTag>, PushError> {
        let fetched = match client.manifest(repo, tag) {
            Ok(fetched) => fetched,
            Err(OciError::Http(crate::net::http::HttpError::Status { status: 404, .. })) => {
                return Ok(None)
            }
            Err(e) => return Err(e.into()),
        };
        let digest = crate::net::oci::sha256_digest(&fetched.bytes);
        let doc: serde_json::Value = serde_json::from_slice(&fetched.bytes).unwrap_or_default();
        let is_provider_index = fetched.media_type == INDEX_MEDIA_TYPE
            && doc["artifactType"].as_str() == Some(PROVIDER_ARTIFACT_TYPE);
        let platforms = is_provider_index.then(|| {
            doc["manifests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| {
                    let os = d["platform"]["os"].as_str()?;
                    let arch = d["platform"]["architecture"].as_str()?;
                    Some((format!("{os}_{arch}"), d.clone()))
                })
                .collect()
        });
        Ok(Some(PublishedTag {
            digest,
            platforms,
            artifact_type: doc["artifactType"].as_str().map(str::to_owned),
            annotations: doc["annotations"].clone(),
        }))
    }

    /// The manifest digest the tag names for `platform` (`OS_ARCH`), if any.
    pub(super) fn manifest_of(&self, platform: &str) -> Option<&str> {
        self.platforms.as_ref()?.get(platform)?["digest"].as_str()
    }
}
