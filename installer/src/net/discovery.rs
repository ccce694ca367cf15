//! Service discovery
//! (<https://github.com/opentofu/opentofu/blob/main/website/docs/internals/remote-service-discovery.mdx>):
//! `GET https://HOST/.well-known/terraform.json` maps service ids such as `providers.v1` to base URLs, absolute or relative to the
//! discovery document. A `host "HOST" { services = {…} }` block of the CLI configuration
//! replaces the document entirely (no request is made), which is also how tests point
//! tstore and terraform at a plain-HTTP loopback registry.

use std::collections::BTreeMap;

use tstore_tofu::cliconfig::HostServices;
use url::Url;

use crate::net::http::{HttpClient, HttpError};
use crate::redact::display_url;

/// Why a host's services could not be discovered.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The discovery document could not be fetched or parsed.
    #[error("failed to request the discovery document of {host}")]
    Request {
        /// The host.
        host: String,
        /// The HTTP error.
        #[source]
        source: HttpError,
    },
    /// The host offers no such service.
    #[error("host {host} does not offer the {service} service (not a provider registry?)")]
    NoService {
        /// The host.
        host: String,
        /// The service id.
        service: String,
    },
    /// The service URL is not a URL.
    #[error(
        "host {host} gives an invalid URL {:?} for {service}: {message}",
        display_url(url)
    )]
    BadUrl {
        /// The host.
        host: String,
        /// The service id.
        service: String,
        /// The value given.
        url: String,
        /// The parser's message.
        message: String,
    },
}

/// The base URL of `service` on `host`: from the CLI configuration's `host` block if there
/// is one, else from the host's discovery document over HTTPS.
pub(crate) fn discover(
    http: &HttpClient,
    overrides: &BTreeMap<String, HostServices>,
    host: &str,
    service: &str,
    token: Option<&str>,
) -> Result<Url, DiscoveryError> {
    let no_service = || DiscoveryError::NoService {
        host: host.to_owned(),
        service: service.to_owned(),
    };
    let (base, value) = if let Some(block) = overrides.get(host) {
        let value = block.services.get(service).ok_or_else(no_service)?;
        (None, value.clone())
    } else {
        let doc_url = format!("https://{host}/.well-known/terraform.json");
        let doc: BTreeMap<String, serde_json::Value> =
            http.get_json(&doc_url, token)
                .map_err(|source| DiscoveryError::Request {
                    host: host.to_owned(),
                    source,
                })?;
        let value = doc
            .get(service)
            .and_then(|v| v.as_str())
            .ok_or_else(no_service)?;
        (Some(doc_url), value.to_owned())
    };
    let bad = |message: String| DiscoveryError::BadUrl {
        host: host.to_owned(),
        service: service.to_owned(),
        url: value.clone(),
        message,
    };
    service_url(base.as_deref(), &value).map_err(bad)
}

/// The base URL a service's `value` names: relative to `doc_url`, the discovery document's
/// URL, when it came from one, else absolute (a `host` block's); http(s) only, and ending
/// in `/`. Errs with the reason.
pub(crate) fn service_url(doc_url: Option<&str>, value: &str) -> Result<Url, String> {
    let mut url = match doc_url {
        Some(base) => Url::parse(base)
            .and_then(|b| b.join(value))
            .map_err(|e| e.to_string())?,
        None => Url::parse(value).map_err(|e| e.to_string())?,
    };
    if !matches!(url.scheme(), "https" | "http") {
        return Err("only https (or http from a host block) is supported".into());
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_service_urls_are_shown_without_credentials() {
        let http = HttpClient::new(None, Default::default()).unwrap();
        for (value, shown) in [
            (
                "ftp://user:s3cret@r.test/v1/?token=TOK3N",
                "ftp://user@r.test/v1/?token=redacted",
            ),
            (
                "https://TOK3N@r.test:bad/v1/?X-Amz-Signature=SIGV4",
                "https://r.test:bad/v1/?X-Amz-Signature=redacted",
            ),
        ] {
            let hosts = BTreeMap::from([(
                "r.test".to_owned(),
                HostServices {
                    services: BTreeMap::from([("modules.v1".to_owned(), value.to_owned())]),
                },
            )]);
            let err = discover(&http, &hosts, "r.test", "modules.v1", None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(shown), "{err}");
            for secret in ["s3cret", "TOK3N", "SIGV4"] {
                assert!(!err.contains(secret), "{secret} echoed: {err}");
            }
        }
    }
}
