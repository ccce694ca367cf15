//! The provider network mirror protocol, as tofu's client speaks it
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getproviders/http_mirror_source.go>;
//! protocol: <https://github.com/opentofu/opentofu/blob/main/website/docs/internals/provider-network-mirror-protocol.mdx>).
//!
//! ```text
//! GET {base}{host}/{ns}/{type}/index.json        → {"versions":{"1.0.0":{}}}
//! GET {base}{host}/{ns}/{type}/{version}.json    → {"archives":{"linux_amd64":{"url","hashes"}}}
//! GET url (relative to the {version}.json URL)   → the zip
//! ```
//!
//! `hashes` is optional and may hold `h1:` and `zh:` values; the archive must match one.

use std::collections::BTreeMap;

use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::version::Version;
use url::Url;

use super::display_url_ref;
use crate::net::http::{HttpClient, HttpError};

/// Errors of the network mirror protocol.
#[derive(Debug, thiserror::Error)]
pub enum NetMirrorError {
    /// A request failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A URL could not be formed.
    #[error("invalid network mirror URL {:?}: {message}", display_url_ref(url))]
    BadUrl {
        /// The URL or reference.
        url: String,
        /// The parser's message.
        message: String,
    },
}

/// One platform's archive of a version.
#[derive(Clone, Debug)]
pub(crate) struct MirrorArchive {
    /// Absolute URL of the zip.
    pub url: String,
    /// Hashes the mirror reports (may be empty): this platform's, or every platform's
    /// from a mirror whose hashes are all trusted ([`NetworkMirror::trust_all_hashes`]).
    pub hashes: Vec<String>,
    /// Whether they are all trusted (`trust_all_hashes`).
    pub trusted: bool,
}

#[derive(serde::Deserialize)]
struct IndexDoc {
    versions: BTreeMap<String, serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct VersionDoc {
    archives: BTreeMap<String, ArchiveEntry>,
}

#[derive(serde::Deserialize)]
struct ArchiveEntry {
    url: String,
    #[serde(default)]
    hashes: Vec<String>,
}

/// A network mirror at a base URL.
#[derive(Clone, Debug)]
pub(crate) struct NetworkMirror {
    /// Base URL (a `/` is added if missing).
    pub base: Url,
    /// Bearer token for the mirror's host, if configured.
    pub token: Option<String>,
    /// `trust_all_hashes = true` under a release that reads it (OpenTofu ≥ 1.12): an
    /// archive's hashes are every platform's the mirror lists (upstream:
    /// internal/getproviders/http_mirror_source.go@v1.12.0).
    pub trust_all_hashes: bool,
}

impl NetworkMirror {
    /// A mirror at `url`.
    pub(crate) fn new(url: &str, token: Option<String>) -> Result<Self, NetMirrorError> {
        let with_slash = if url.ends_with('/') {
            url.to_owned()
        } else {
            format!("{url}/")
        };
        let base = Url::parse(&with_slash).map_err(|e| NetMirrorError::BadUrl {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        Ok(NetworkMirror {
            base,
            token,
            trust_all_hashes: false,
        })
    }

    fn url(&self, rel: &str) -> Result<Url, NetMirrorError> {
        self.base.join(rel).map_err(|e| NetMirrorError::BadUrl {
            url: rel.to_owned(),
            message: e.to_string(),
        })
    }

    /// The versions the mirror holds for `addr` (unparseable ones skipped).
    pub(crate) fn versions(
        &self,
        http: &HttpClient,
        addr: &ProviderAddr,
    ) -> Result<Vec<Version>, NetMirrorError> {
        let url = self.url(&format!(
            "{}/{}/{}/index.json",
            addr.host, addr.namespace, addr.kind
        ))?;
        let doc: IndexDoc = http.get_json(url.as_str(), self.token.as_deref())?;
        Ok(doc
            .versions
            .keys()
            .filter_map(|v| Version::parse(v).ok())
            .collect())
    }

    /// The archive of `version` for `platform`, if the mirror has one.
    pub(crate) fn archive(
        &self,
        http: &HttpClient,
        addr: &ProviderAddr,
        version: &Version,
        platform: &Platform,
    ) -> Result<Option<MirrorArchive>, NetMirrorError> {
        let url = self.url(&format!(
            "{}/{}/{}/{version}.json",
            addr.host, addr.namespace, addr.kind
        ))?;
        let doc: VersionDoc = http.get_json(url.as_str(), self.token.as_deref())?;
        let Some(entry) = doc.archives.get(&platform.to_string()) else {
            return Ok(None);
        };
        let archive = url.join(&entry.url).map_err(|e| NetMirrorError::BadUrl {
            url: entry.url.clone(),
            message: e.to_string(),
        })?;
        let hashes = if self.trust_all_hashes {
            doc.archives
                .values()
                .flat_map(|a| a.hashes.iter().cloned())
                .collect()
        } else {
            entry.hashes.clone()
        };
        Ok(Some(MirrorArchive {
            url: archive.to_string(),
            hashes,
            trusted: self.trust_all_hashes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_mirror_urls_are_shown_without_credentials() {
        let err = NetworkMirror::new("https://user:s3cret@m.test:bad/?token=TOK3N", None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"https://m.test:bad/?token=redacted\""),
            "{err}"
        );
        let rel = NetMirrorError::BadUrl {
            url: "//TOK3N@cdn.test:bad/p.zip?X-Amz-Signature=SIGV4".into(),
            message: "invalid port number".into(),
        }
        .to_string();
        for shown in [err, rel] {
            for secret in ["s3cret", "TOK3N", "SIGV4"] {
                assert!(!shown.contains(secret), "{secret} echoed: {shown}");
            }
        }
    }
}
