//! `oci://` module sources, as OpenTofu ≥ 1.10 reads them:
//!
//! ```text
//! oci://REGISTRY/REPOSITORY[//SUBDIR][?tag=TAG | ?digest=sha256:HEX]   (no query: tag "latest")
//!   → image manifest, artifactType application/vnd.opentofu.modulepkg
//!       one layer, mediaType archive/zip: the module package
//! ```
//!
//! A digest names one package for good; a tag is resolved to its manifest every init, and
//! the package is then known by its layer's digest: a layer the store already holds is not
//! downloaded. Everything fetched is checked against its digest.

use crate::modules::FetchError;
use crate::net::oci::{
    display_reference, single_zip_layer, OciClient, OciRepository, MANIFEST_MEDIA_TYPE,
    ZIP_LAYER_MEDIA_TYPE,
};

/// `artifactType` of a module package's manifest.
pub(crate) const MODULE_ARTIFACT_TYPE: &str = "application/vnd.opentofu.modulepkg";

/// An `oci://` package address: the repository and the tag or digest it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OciModuleAddress {
    /// The repository.
    pub repository: OciRepository,
    /// A tag, or `sha256:HEX`.
    pub reference: String,
}

impl OciModuleAddress {
    /// Parse `oci://REGISTRY/REPOSITORY[?tag=…|?digest=…]` (the subdirectory already cut).
    pub(crate) fn parse(url: &str) -> Result<OciModuleAddress, FetchError> {
        let bad = |why: &str| {
            FetchError::Address(format!(
                "invalid oci:// module source {:?}: {why}",
                display_reference(url)
            ))
        };
        let rest = url
            .strip_prefix("oci://")
            .ok_or_else(|| bad("it does not start with oci://"))?;
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        let (registry, name) = path
            .split_once('/')
            .ok_or_else(|| bad("it names no repository (oci://REGISTRY/REPOSITORY)"))?;
        if registry.is_empty() || name.is_empty() || name.split('/').any(str::is_empty) {
            return Err(bad("it names no repository (oci://REGISTRY/REPOSITORY)"));
        }
        let mut tag = None;
        let mut digest = None;
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            match pair.split_once('=') {
                Some(("tag", v)) if !v.is_empty() => tag = Some(v.to_owned()),
                Some(("digest", v)) if v.starts_with("sha256:") && v.len() == 71 => {
                    digest = Some(v.to_owned())
                }
                Some(("digest", _)) => return Err(bad("digest must be sha256: and 64 hex digits")),
                _ => {
                    return Err(bad(&format!(
                        "unsupported argument {:?} (tag or digest)",
                        crate::redact::redact_query(pair)
                    )))
                }
            }
        }
        let reference = match (tag, digest) {
            (Some(_), Some(_)) => return Err(bad("tag and digest are mutually exclusive")),
            (Some(t), None) => t,
            (None, Some(d)) => d,
            (None, None) => "latest".to_owned(),
        };
        Ok(OciModuleAddress {
            repository: OciRepository {
                registry: registry.to_ascii_lowercase(),
                name: name.to_owned(),
            },
            reference,
        })
    }
}

/// The digest of the one zip layer of the module package `address` names (`url`, as
/// given, for messages): its manifest resolved, which must be an image manifest of
/// OpenTofu's module artifact type (checked against the digest when the address gives one).
pub(crate) fn module_layer(
    client: &OciClient,
    address: &OciModuleAddress,
    url: &str,
) -> Result<String, FetchError> {
    let fetched = client
        .manifest(&address.repository, &address.reference)
        .map_err(|e| oci_error(url, e))?;
    layer_of_module_manifest(&fetched, url)
}

/// The digest of the one zip layer of the module package manifest `fetched` (`url` names it
/// in messages): an image manifest of OpenTofu's module artifact type, or an error.
pub(crate) fn layer_of_module_manifest(
    fetched: &crate::net::oci::FetchedManifest,
    url: &str,
) -> Result<String, FetchError> {
    let not_a_module = |why: String| {
        FetchError::Package(format!(
            "{} is not an OpenTofu module package: {why}",
            display_reference(url)
        ))
    };
    if fetched.media_type != MANIFEST_MEDIA_TYPE {
        return Err(not_a_module(format!(
            "it names a {}, not an image manifest",
            fetched.media_type
        )));
    }
    let manifest = OciClient::parse_manifest(fetched, url).map_err(|e| oci_error(url, e))?;
    if let Some(kind) = manifest.artifact_type() {
        if kind.to_string() != MODULE_ARTIFACT_TYPE {
            return Err(not_a_module(format!("its artifactType is {kind}")));
        }
    }
    single_zip_layer(&manifest).map_err(|n| {
        not_a_module(format!(
            "it has {n} layers of type {ZIP_LAYER_MEDIA_TYPE}, not one"
        ))
    })
}

/// An OCI error about the package `url` names.
pub(crate) fn oci_error(url: &str, e: crate::net::oci::OciError) -> FetchError {
    FetchError::Protocol(format!("{}: {e}", display_reference(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let a = OciModuleAddress::parse("oci://r.test:5000/modules/vpc?tag=1.2.0").unwrap();
        assert_eq!(a.repository.registry, "r.test:5000");
        assert_eq!(a.repository.name, "modules/vpc");
        assert_eq!(a.reference, "1.2.0");
        let d = format!("sha256:{}", "a".repeat(64));
        let b = OciModuleAddress::parse(&format!("oci://r.test/m?digest={d}")).unwrap();
        assert_eq!(b.reference, d);
        assert_eq!(
            OciModuleAddress::parse("oci://r.test/m").unwrap().reference,
            "latest"
        );
        for bad in [
            "oci://r.test",
            "oci://r.test/m?tag=a&digest=sha256:00",
            "oci://r.test/m?branch=x",
            "oci://r.test//m",
        ] {
            assert!(OciModuleAddress::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn invalid_addresses_are_shown_without_credentials() {
        for bad in [
            "oci://user:s3cret@r.test?token=TOK3N",
            "oci://TOK3N@r.test/m?tag=a&sig=SIGV4&digest=sha256:00",
            "oci://r.test/m?private_token=TOK3N",
            "oci://user:s3cret@r.test/m?X-Amz-Signature=SIGV4",
        ] {
            let shown = OciModuleAddress::parse(bad).unwrap_err().to_string();
            assert!(shown.contains("invalid oci:// module source"), "{shown}");
            for secret in ["s3cret", "TOK3N", "SIGV4"] {
                assert!(!shown.contains(secret), "{secret} echoed: {shown}");
            }
        }
    }
}
