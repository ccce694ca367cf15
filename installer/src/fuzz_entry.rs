//! For the fuzz harness (`fuzz/`) only, not part of the API: the parsers of hostile bytes
//! this crate keeps private, each fed as the install flows feed it (the same functions, on
//! bytes instead of a response). Errors are given as their messages.

use std::collections::BTreeMap;

use tstore_tofu::addr::{Platform, ProviderAddr};

use crate::modules::getters::registry as module_registry;
use crate::net::discovery;
use crate::net::oci::{single_zip_layer, FetchedManifest, OciClient};
use crate::net::signing::{self, SigningKey};
use crate::providers::sources::registry as provider_registry;

/// An OCI image manifest as a module or a provider's platform manifest is read: parsed,
/// its `artifactType` read, and its one `archive/zip` layer found.
pub fn oci_manifest(bytes: &[u8]) -> Result<String, String> {
    let fetched = FetchedManifest {
        media_type: crate::net::oci::MANIFEST_MEDIA_TYPE.to_owned(),
        bytes: bytes.to_vec(),
    };
    let manifest = OciClient::parse_manifest(&fetched, "fuzz").map_err(|e| e.to_string())?;
    let kind = manifest.artifact_type().as_ref().map(ToString::to_string);
    let digest = single_zip_layer(&manifest).map_err(|n| format!("{n} zip layers"))?;
    Ok(format!("{kind:?} {digest}"))
}

/// An OCI image index as a provider's version is read: parsed, its `artifactType` read,
/// and the manifest of a platform found.
pub fn oci_index(bytes: &[u8]) -> Result<Option<String>, String> {
    let fetched = FetchedManifest {
        media_type: crate::net::oci::INDEX_MEDIA_TYPE.to_owned(),
        bytes: bytes.to_vec(),
    };
    let index = OciClient::parse_index(&fetched, "fuzz").map_err(|e| e.to_string())?;
    let _kind = index.artifact_type().as_ref().map(ToString::to_string);
    Ok(index
        .manifests()
        .iter()
        .find(|m| {
            m.platform().as_ref().is_some_and(|p| {
                p.os().to_string() == "linux" && p.architecture().to_string() == "amd64"
            })
        })
        .map(|m| m.digest().to_string()))
}

/// A `.well-known/terraform.json` document: the base URLs of the services tstore asks for,
/// resolved against the document's URL (and, as a `host` block's value, alone).
pub fn discovery(bytes: &[u8]) -> Result<Vec<String>, String> {
    let doc: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut urls = Vec::new();
    for service in ["providers.v1", "modules.v1"] {
        let Some(value) = doc.get(service).and_then(|v| v.as_str()) else {
            continue;
        };
        let doc_url = "https://registry.example.com/.well-known/terraform.json";
        for base in [Some(doc_url), None] {
            if let Ok(url) = discovery::service_url(base, value) {
                urls.push(url.to_string());
            }
        }
    }
    Ok(urls)
}

/// A provider registry's `versions` answer: the versions that speak a supported protocol.
pub fn provider_versions(bytes: &[u8]) -> Result<usize, String> {
    let doc: provider_registry::VersionsDoc =
        serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let addr = ProviderAddr::parse_source("hashicorp/null", "registry.opentofu.org")
        .map_err(|e| e.to_string())?;
    Ok(provider_registry::supported_versions(doc, &addr).len())
}

/// A provider registry's `download` answer for `linux_amd64`: its URLs resolved against
/// the answer's own, and its `packages` checked against its `shasum`.
pub fn provider_download(bytes: &[u8]) -> Result<Vec<String>, String> {
    let doc: provider_registry::DownloadDoc =
        serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let meta_url = url::Url::parse(
        "https://registry.example.com/v1/providers/hashicorp/null/1.0.0/download/linux/amd64",
    )
    .map_err(|e| e.to_string())?;
    for u in [
        &doc.shasums_url,
        &doc.shasums_signature_url,
        &doc.download_url,
    ] {
        provider_registry::resolve_url(&meta_url, u).map_err(|e| e.to_string())?;
    }
    let platform = Platform {
        os: "linux".into(),
        arch: "amd64".into(),
    };
    provider_registry::registry_packages(
        doc.packages.as_ref(),
        &platform,
        &doc.shasum.to_ascii_lowercase(),
    )
    .map(|p| p.hashes)
}

/// A `SHA256SUMS` file.
pub fn sha256sums(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    provider_registry::parse_sha256sums(bytes)
}

/// A detached OpenPGP `signature` over `data`, checked against one ASCII-armored key.
pub fn signature(ascii_armor: &str, data: &[u8], signature: &[u8]) -> Result<String, String> {
    let keys = [SigningKey {
        trust_signature: None,
        key_id: "0123456789ABCDEF".into(),
        ascii_armor: ascii_armor.to_owned(),
    }];
    signing::verify_detached(&keys, data, signature).map_err(|e| e.to_string())
}

/// A module registry's `versions` answer: the versions it lists.
pub fn module_versions(bytes: &[u8]) -> Result<usize, String> {
    let list: module_registry::Versions =
        serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    Ok(module_registry::listed_versions(&list).len())
}

/// A module registry's `download` answer as JSON: the package address it names.
pub fn module_location(bytes: &[u8]) -> Result<String, String> {
    let body: module_registry::Location =
        serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let download = url::Url::parse("https://registry.example.com/v1/modules/a/b/c/1.0.0/download")
        .map_err(|e| e.to_string())?;
    module_registry::resolve_location(&download, body.location).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    //! Each entry point reaches past the parse on a well-formed document: the harness
    //! fuzzes what the install flows do with one, not only the JSON syntax.

    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn oci_documents() {
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "config":{{"mediaType":"application/vnd.oci.empty.v1+json","digest":"{DIGEST}","size":2}},
            "layers":[{{"mediaType":"archive/zip","digest":"{DIGEST}","size":1}}]}}"#
        );
        assert_eq!(
            oci_manifest(manifest.as_bytes()).unwrap(),
            format!("None {DIGEST}")
        );
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "digest":"{DIGEST}","size":1,"platform":{{"os":"linux","architecture":"amd64"}}}}]}}"#
        );
        assert_eq!(
            oci_index(index.as_bytes()).unwrap().as_deref(),
            Some(DIGEST)
        );
        assert!(oci_manifest(b"{").is_err());
    }

    #[test]
    fn discovery_and_registry_documents() {
        assert_eq!(
            discovery(br#"{"providers.v1":"/v1/providers","modules.v1":"https://m.example.com/v1/modules/"}"#)
                .unwrap(),
            [
                "https://registry.example.com/v1/providers/",
                "https://m.example.com/v1/modules/",
                "https://m.example.com/v1/modules/",
            ]
        );
        let versions = br#"{"versions":[{"version":"1.0.0","protocols":["5.0"]},{"version":"2.0.0","protocols":["4.0"]}]}"#;
        assert_eq!(provider_versions(versions).unwrap(), 1);
        let shasum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let download = format!(
            r#"{{"filename":"a.zip","download_url":"a.zip","shasums_url":"S","shasums_signature_url":"S.sig",
            "shasum":"{shasum}","packages":{{"linux_amd64":{{"hashes":["zh:{shasum}"],"package_size":1}}}}}}"#
        );
        assert_eq!(
            provider_download(download.as_bytes()).unwrap(),
            [format!("zh:{shasum}")]
        );
        assert_eq!(
            sha256sums(format!("{shasum}  a.zip\n").as_bytes())
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            module_versions(br#"{"modules":[{"versions":[{"version":"1.0.0"},{"version":"x"}]}]}"#)
                .unwrap(),
            1
        );
        assert_eq!(
            module_location(br#"{"location":"./a.zip"}"#).unwrap(),
            "https://registry.example.com/v1/modules/a/b/c/1.0.0/a.zip"
        );
        assert!(signature("not a key", b"data", b"not a signature").is_err());
    }
}
