//! Provider packages in an OCI registry, laid out as OpenTofu's `oci_mirror` installation
//! method reads them (OpenTofu ≥ 1.10, `internal/getproviders/oci_*`):
//!
//! ```text
//! repository  = repository_template with ${hostname}, ${namespace}, ${type} replaced
//! tag VERSION → image index, artifactType application/vnd.opentofu.provider
//!   manifests[] (platform.os, platform.architecture)
//!     → image manifest, artifactType application/vnd.opentofu.provider-target
//!         layers[] mediaType archive/zip → the provider's zip (its digest is the zh: hash)
//! ```
//!
//! A tag is a version with `+` (not allowed in tags) written as `_`. Everything fetched by
//! digest is checked against it ([`OciClient`]).

use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::version::Version;

use crate::net::oci::{
    display_reference, single_zip_layer, OciClient, OciError, OciRepository, INDEX_MEDIA_TYPE,
    ZIP_LAYER_MEDIA_TYPE,
};

/// `artifactType` of a provider version's image index.
pub(crate) const PROVIDER_ARTIFACT_TYPE: &str = "application/vnd.opentofu.provider";
/// `artifactType` of one platform's image manifest.
pub(crate) const PROVIDER_TARGET_ARTIFACT_TYPE: &str = "application/vnd.opentofu.provider-target";

/// Errors of the OCI mirror layout.
#[derive(Debug, thiserror::Error)]
pub enum OciMirrorError {
    /// The registry exchange failed.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// The repository template does not give a valid repository address for a provider.
    #[error(
        "the oci_mirror repository_template {:?} gives {:?} for {provider}, which is not \
         REGISTRY/REPOSITORY",
        display_reference(template),
        display_reference(address)
    )]
    BadRepository {
        /// The template.
        template: String,
        /// What it gave.
        address: String,
        /// The provider.
        provider: String,
    },
    /// The artifact is not a provider package in tofu's layout.
    #[error(
        "{}:{tag} is not an OpenTofu provider artifact: {message}",
        display_reference(repository)
    )]
    NotAProvider {
        /// The repository.
        repository: String,
        /// The tag.
        tag: String,
        /// What is wrong.
        message: String,
    },
}

/// One platform's zip in the registry.
#[derive(Clone, Debug)]
pub(crate) struct OciArchive {
    /// The repository holding it.
    pub repository: OciRepository,
    /// `sha256:HEX` of the zip (the package's `zh:` hash).
    pub digest: String,
}

/// An `oci_mirror` installation method.
#[derive(Clone, Debug)]
pub(crate) struct OciMirror {
    /// The `repository_template`.
    pub template: String,
}

impl OciMirror {
    /// The repository of `addr`: the template with its placeholders replaced, split at the
    /// first `/` into registry host and repository name.
    pub(crate) fn repository(&self, addr: &ProviderAddr) -> Result<OciRepository, OciMirrorError> {
        let address = self
            .template
            .replace("${hostname}", &addr.host)
            .replace("${namespace}", &addr.namespace)
            .replace("${type}", &addr.kind);
        let bad = || OciMirrorError::BadRepository {
            template: self.template.clone(),
            address: address.clone(),
            provider: addr.to_string(),
        };
        OciRepository::parse(&address).ok_or_else(bad)
    }

    /// The versions the registry holds for `addr`: its tags that are versions.
    pub(crate) fn versions(
        &self,
        client: &OciClient,
        addr: &ProviderAddr,
    ) -> Result<Vec<Version>, OciMirrorError> {
        let repo = self.repository(addr)?;
        // Only version tags are kept while the list is read (signatures, `latest` and the
        // like are dropped page by page).
        let is_version = |tag: &str| Version::parse(&tag_to_version(tag)).is_ok();
        let tags = match client.tags(&repo, &is_version) {
            Ok(tags) => tags,
            // A repository the registry does not have holds no versions.
            Err(OciError::Http(crate::net::http::HttpError::Status { status: 404, .. })) => {
                Vec::new()
            }
            Err(e) => return Err(e.into()),
        };
        Ok(tags
            .iter()
            .filter_map(|t| Version::parse(&tag_to_version(t)).ok())
            .collect())
    }

    /// The zip of `version` for `platform`, if the registry has one.
    pub(crate) fn archive(
        &self,
        client: &OciClient,
        addr: &ProviderAddr,
        version: &Version,
        platform: &Platform,
    ) -> Result<Option<OciArchive>, OciMirrorError> {
        let repo = self.repository(addr)?;
        let tag = version_to_tag(&version.to_string());
        let not_a_provider = |message: String| OciMirrorError::NotAProvider {
            repository: repo.to_string(),
            tag: tag.clone(),
            message,
        };
        let index_url = format!("{repo}:{tag}");
        let fetched = client.manifest(&repo, &tag)?;
        if fetched.media_type != INDEX_MEDIA_TYPE {
            return Err(not_a_provider(format!(
                "its tag names a {}, not an image index",
                fetched.media_type
            )));
        }
        let index = OciClient::parse_index(&fetched, &index_url)?;
        if let Some(kind) = index.artifact_type() {
            if kind.to_string() != PROVIDER_ARTIFACT_TYPE {
                return Err(not_a_provider(format!("artifactType is {kind}")));
            }
        }
        let (os, arch) = (platform.os.as_str(), platform.arch.as_str());
        let Some(entry) = index.manifests().iter().find(|m| {
            m.platform()
                .as_ref()
                .is_some_and(|p| p.os().to_string() == os && p.architecture().to_string() == arch)
        }) else {
            return Ok(None);
        };
        let digest = entry.digest().to_string();
        let fetched = client.manifest(&repo, &digest)?;
        let manifest = OciClient::parse_manifest(&fetched, &format!("{repo}@{digest}"))?;
        if let Some(kind) = manifest.artifact_type() {
            if kind.to_string() != PROVIDER_TARGET_ARTIFACT_TYPE {
                return Err(not_a_provider(format!(
                    "the {os}_{arch} manifest's artifactType is {kind}"
                )));
            }
        }
        let digest = single_zip_layer(&manifest).map_err(|n| {
            not_a_provider(format!(
                "the {os}_{arch} manifest has {n} layers of type {ZIP_LAYER_MEDIA_TYPE}, not one"
            ))
        })?;
        if !digest.starts_with("sha256:") {
            return Err(not_a_provider(format!(
                "the zip's digest {digest} is not SHA-256"
            )));
        }
        Ok(Some(OciArchive {
            repository: repo,
            digest,
        }))
    }
}

/// The version a tag names: `+` cannot appear in a tag, so tags write it as `_`.
pub(crate) fn tag_to_version(tag: &str) -> String {
    tag.replace('_', "+")
}

/// The tag of a version.
pub(crate) fn version_to_tag(version: &str) -> String {
    version.replace('+', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> ProviderAddr {
        ProviderAddr::parse_source(s, "registry.opentofu.org").unwrap()
    }

    #[test]
    fn repository_template() {
        let m = OciMirror {
            template: "oci.example.test:5000/mirror/${hostname}/${namespace}/${type}".into(),
        };
        let repo = m.repository(&addr("hashicorp/null")).unwrap();
        assert_eq!(repo.registry, "oci.example.test:5000");
        assert_eq!(repo.name, "mirror/registry.opentofu.org/hashicorp/null");
        let bad = OciMirror {
            template: "${namespace}".into(),
        };
        assert!(bad.repository(&addr("hashicorp/null")).is_err());
    }

    #[test]
    fn errors_do_not_echo_credentials() {
        let bad = OciMirror {
            template: "user:s3cret@r.test".into(),
        };
        let shown = bad
            .repository(&addr("hashicorp/null"))
            .unwrap_err()
            .to_string();
        assert!(shown.contains("gives \"r.test\""), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        let shown = OciMirrorError::NotAProvider {
            repository: "TOK3N@r.test/mirror/null".into(),
            tag: "1.0.0".into(),
            message: "no".into(),
        }
        .to_string();
        assert!(
            shown.starts_with("r.test/mirror/null:1.0.0 is not"),
            "{shown}"
        );
        assert!(!shown.contains("TOK3N"), "{shown}");
    }

    #[test]
    fn tags_and_versions() {
        assert_eq!(tag_to_version("1.2.3_build.4"), "1.2.3+build.4");
        assert_eq!(version_to_tag("1.2.3+build.4"), "1.2.3_build.4");
        assert_eq!(version_to_tag("2.1.2"), "2.1.2");
    }
}
