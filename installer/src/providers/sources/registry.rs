//! The provider registry protocol (`providers.v1`), as tofu's client speaks it
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getproviders/registry_client.go>;
//! protocol: <https://github.com/opentofu/opentofu/blob/main/website/docs/internals/provider-registry-protocol.mdx>).
//!
//! ```text
//! GET {base}{ns}/{type}/versions                              → versions, protocols, platforms
//! GET {base}{ns}/{type}/{version}/download/{os}/{arch}        → filename, URLs, shasum, keys
//! GET shasums_url, shasums_signature_url (binary OpenPGP)     → verified before any download
//! GET download_url                                            → the zip (checked by the caller)
//! ```
//!
//! Relative URLs in the download metadata resolve against the metadata document's URL.
//! Requests to the registry API carry the provider host's bearer token; the archive
//! download does not (it often lives on another host).

use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::version::Version;
use url::Url;

use crate::net::http::{HttpClient, HttpError};
use crate::net::signing::{self, SignatureError, SigningKey};

/// Plugin protocol majors this installer accepts (Terraform 0.12+ / OpenTofu).
const SUPPORTED_PROTOCOLS: [u64; 2] = [5, 6];

/// Errors of the registry protocol.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A request failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A document was not what the protocol says.
    #[error("malformed response from {url}: {message}")]
    Malformed {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The signature over SHA256SUMS is bad.
    #[error("the SHA256SUMS of {provider} {version} from {url} failed authentication")]
    Signature {
        /// Fully-qualified address.
        provider: String,
        /// Version.
        version: Version,
        /// The signature URL.
        url: String,
        /// Why.
        #[source]
        source: SignatureError,
    },
    /// The registry's `shasum` is not what its signed SHA256SUMS says for the file.
    #[error(
        "the registry reports shasum {reported} for {filename}, but its signed SHA256SUMS {}",
        match .listed { Some(l) => format!("lists {l}"), None => "has no line for it".to_owned() }
    )]
    ShasumNotSigned {
        /// Archive file name.
        filename: String,
        /// `shasum` from the metadata.
        reported: String,
        /// The SHA256SUMS line's hash, if any.
        listed: Option<String>,
    },
}

/// One version as listed by the registry.
#[derive(Clone, Debug)]
pub(crate) struct RegistryVersion {
    /// The version.
    pub version: Version,
    /// Platforms it is published for.
    pub platforms: Vec<Platform>,
}

/// A package whose SHA256SUMS passed signature verification: what to download and what
/// it must hash to.
#[derive(Clone, Debug)]
pub(crate) struct VerifiedPackage {
    /// The archive's URL.
    pub download_url: String,
    /// The archive's SHA-256, lowercase hex (signed).
    pub shasum: String,
    /// Every line of the signed SHA256SUMS: (hex, file name).
    pub signed_sums: Vec<(String, String)>,
    /// The key that verified the signature (`key_id` as the registry gave it).
    pub key_id: String,
}

#[derive(serde::Deserialize)]
struct VersionsDoc {
    versions: Vec<VersionEntry>,
}

#[derive(serde::Deserialize)]
struct VersionEntry {
    version: String,
    #[serde(default)]
    protocols: Vec<String>,
    #[serde(default)]
    platforms: Vec<PlatformEntry>,
}

#[derive(serde::Deserialize)]
struct PlatformEntry {
    os: String,
    arch: String,
}

#[derive(serde::Deserialize)]
struct DownloadDoc {
    filename: String,
    download_url: String,
    shasums_url: String,
    shasums_signature_url: String,
    shasum: String,
    #[serde(default)]
    signing_keys: SigningKeys,
}

#[derive(Default, serde::Deserialize)]
struct SigningKeys {
    #[serde(default)]
    gpg_public_keys: Vec<KeyEntry>,
}

#[derive(serde::Deserialize)]
struct KeyEntry {
    key_id: String,
    ascii_armor: String,
}

/// A registry's `providers.v1` endpoint.
#[derive(Clone, Debug)]
pub(crate) struct Registry {
    /// The discovered base URL (ends in `/`).
    pub base: Url,
    /// The provider host's bearer token.
    pub token: Option<String>,
}

impl Registry {
    fn url(&self, rel: &str) -> Result<Url, RegistryError> {
        self.base.join(rel).map_err(|e| RegistryError::Malformed {
            url: format!("{}{rel}", self.base),
            message: e.to_string(),
        })
    }

    /// The versions of `addr` that speak a supported protocol (unparseable versions are
    /// skipped, as tofu does).
    pub(crate) fn versions(
        &self,
        http: &HttpClient,
        addr: &ProviderAddr,
    ) -> Result<Vec<RegistryVersion>, RegistryError> {
        let url = self.url(&format!("{}/{}/versions", addr.namespace, addr.kind))?;
        let doc: VersionsDoc = http.get_json(url.as_str(), self.token.as_deref())?;
        let mut out = Vec::new();
        for entry in doc.versions {
            let Ok(version) = Version::parse(&entry.version) else {
                continue;
            };
            let compatible = entry.protocols.is_empty()
                || entry.protocols.iter().any(|p| {
                    p.split('.')
                        .next()
                        .and_then(|m| m.parse::<u64>().ok())
                        .is_some_and(|m| SUPPORTED_PROTOCOLS.contains(&m))
                });
            if !compatible {
                tracing::debug!("skipping {addr} {version}: protocols {:?}", entry.protocols);
                continue;
            }
            out.push(RegistryVersion {
                version,
                platforms: entry
                    .platforms
                    .into_iter()
                    .map(|p| Platform {
                        os: p.os,
                        arch: p.arch,
                    })
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Fetch the download metadata, `SHA256SUMS` and its signature; verify the signature
    /// and that `shasum` is the signed line for `filename`.
    pub(crate) fn verified_package(
        &self,
        http: &HttpClient,
        addr: &ProviderAddr,
        version: &Version,
        platform: &Platform,
    ) -> Result<VerifiedPackage, RegistryError> {
        let meta_url = self.url(&format!(
            "{}/{}/{version}/download/{}/{}",
            addr.namespace, addr.kind, platform.os, platform.arch
        ))?;
        let doc: DownloadDoc = http.get_json(meta_url.as_str(), self.token.as_deref())?;
        let resolve = |u: &str| {
            meta_url
                .join(u)
                .map(String::from)
                .map_err(|e| RegistryError::Malformed {
                    url: meta_url.to_string(),
                    message: format!("bad URL {u:?}: {e}"),
                })
        };
        let shasums_url = resolve(&doc.shasums_url)?;
        let signature_url = resolve(&doc.shasums_signature_url)?;
        let download_url = resolve(&doc.download_url)?;
        let sums = http.get_bytes(&shasums_url, None)?;
        let signature = http.get_bytes(&signature_url, None)?;
        let keys: Vec<SigningKey> = doc
            .signing_keys
            .gpg_public_keys
            .into_iter()
            .map(|k| SigningKey {
                key_id: k.key_id,
                ascii_armor: k.ascii_armor,
            })
            .collect();
        let key_id = signing::verify_detached(&keys, &sums, &signature).map_err(|source| {
            RegistryError::Signature {
                provider: addr.to_string(),
                version: version.clone(),
                url: signature_url.clone(),
                source,
            }
        })?;
        let signed_sums = parse_sha256sums(&sums).map_err(|message| RegistryError::Malformed {
            url: shasums_url.clone(),
            message,
        })?;
        let shasum = doc.shasum.to_ascii_lowercase();
        let listed = signed_sums
            .iter()
            .find(|(_, f)| *f == doc.filename)
            .map(|(h, _)| h.clone());
        if listed.as_deref() != Some(shasum.as_str()) {
            return Err(RegistryError::ShasumNotSigned {
                filename: doc.filename,
                reported: shasum,
                listed,
            });
        }
        Ok(VerifiedPackage {
            download_url,
            shasum,
            signed_sums,
            key_id,
        })
    }
}

/// Parse sha256sum output: `<64 hex>  <file name>` per line (a `*` binary marker before the
/// name is tolerated).
pub(crate) fn parse_sha256sums(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SHA256SUMS is not UTF-8".to_owned())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (hash, rest) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("SHA256SUMS line {} has no file name", i + 1))?;
        let name = rest.trim_start().trim_start_matches('*');
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("SHA256SUMS line {} has no SHA-256", i + 1));
        }
        out.push((hash.to_ascii_lowercase(), name.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256sums_lines() {
        let h = "9455ba7c20a0eace758a38bef5fc0eb1e47cf231b4eaeaa9b1f26a1eb8acab53";
        let text = format!("{h}  a.zip\n{}  *b.zip\n", h.to_uppercase());
        let sums = parse_sha256sums(text.as_bytes()).unwrap();
        assert_eq!(sums[0], (h.to_owned(), "a.zip".to_owned()));
        assert_eq!(sums[1], (h.to_owned(), "b.zip".to_owned()));
        assert!(parse_sha256sums(b"abc  x.zip\n").is_err());
    }
}
