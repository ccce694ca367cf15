//! The HTTP client behind the registry and network mirror sources: `ureq` with rustls.
//!
//! - TLS roots are the bundled web PKI roots, unless `SSL_CERT_FILE` names a PEM file: then
//!   its certificates **replace** them, as in Go's TLS stack that terraform and tofu use
//!   (how a private CA, or a test's self-signed one, is trusted).
//! - Bearer tokens come from `credentials "HOST" { token = "…" }` blocks and
//!   `TF_TOKEN_<host>` variables ([`Credentials`]); the sources decide which host's token a
//!   request carries (tofu sends the provider host's token to its registry API).
//! - Responses are limited in size: JSON documents to 16 MiB, archives are streamed to disk.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::redact::{display_url, scrub};

/// The largest JSON document, `SHA256SUMS` or signature we read into memory.
const MAX_DOCUMENT: u64 = 16 << 20;

/// A download that brings fewer than [`STALL_MIN_BYTES`] in any window this long is
/// stalled and fails: a server that trickles a byte every few seconds never trips a read
/// timeout, and would hold an init forever.
const STALL_WINDOW: Duration = Duration::from_secs(30);
/// See [`STALL_WINDOW`]: about 34 bytes a second, far below any real link.
const STALL_MIN_BYTES: u64 = 1024;

/// What one transfer may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferLimits {
    /// The whole of a request answered by a document (service discovery, version lists,
    /// download metadata, `SHA256SUMS`, an OCI manifest or tag page, a token), connection
    /// and body included: tofu's `TF_REGISTRY_CLIENT_TIMEOUT`, 10 s unless set.
    pub document_deadline: Duration,
    /// The most bytes one download (an archive, a provider zip, an OCI blob) may bring:
    /// `TSTORE_MAX_ARCHIVE_BYTES`, enforced while the body arrives, so an endless body
    /// never fills the disk.
    pub max_download_bytes: u64,
}

impl Default for TransferLimits {
    fn default() -> Self {
        TransferLimits {
            document_deadline: Duration::from_secs(10),
            max_download_bytes: tstore_store::Limits::default().max_total_bytes,
        }
    }
}

/// Errors from an HTTP request. A message shows its URL by [`display_url`]: without
/// credentials or a signed query's secrets.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Connection, TLS or protocol failure (nothing usable came back).
    #[error("request to {} failed: {message}", display_url(url))]
    Transport {
        /// The URL.
        url: String,
        /// ureq's description.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{} answered HTTP {status}{}", display_url(url), render_body(url, .body))]
    Status {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body (registries put `{"errors":[…]}` there).
        body: String,
    },
    /// Reading the body failed or it was too large.
    #[error("cannot read the response from {}", display_url(url))]
    Body {
        /// The URL.
        url: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The response was not the JSON document expected.
    #[error("malformed response from {}: {message}", display_url(url))]
    Malformed {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// `SSL_CERT_FILE` could not be used.
    #[error("cannot load the CA certificates of SSL_CERT_FILE={}: {message}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A temp file for a download could not be written.
    #[error("cannot write the download of {} to {}", display_url(url), path.display())]
    Write {
        /// The URL.
        url: String,
        /// The temp file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The start of an error response's body, the request's URL in it (a server may echo it)
/// shown as [`display_url`] shows it.
fn render_body(url: &str, body: &str) -> String {
    if body.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", scrub(body.trim(), &[url]))
    }
}

/// Bearer tokens by host, from the CLI configuration and the environment.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    /// `credentials` blocks, by lowercased host.
    blocks: BTreeMap<String, String>,
    /// `TF_TOKEN_…` variables, by variable name.
    vars: BTreeMap<String, String>,
}

impl Credentials {
    /// `credentials` blocks plus every `TF_TOKEN_…` variable of `env` (as in tofu, the
    /// variable wins over a block for the same host).
    pub fn new(
        blocks: &BTreeMap<String, String>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        Credentials {
            blocks: blocks
                .iter()
                .map(|(h, t)| (h.to_ascii_lowercase(), t.clone()))
                .collect(),
            vars: env
                .into_iter()
                .filter(|(k, v)| k.starts_with("TF_TOKEN_") && !v.is_empty())
                .collect(),
        }
    }

    /// The token for `host` (a hostname, optionally with `:port`).
    pub fn token(&self, host: &str) -> Option<&str> {
        let host = host.to_ascii_lowercase();
        self.vars
            .get(&token_var(&host))
            .or_else(|| self.blocks.get(&host))
            .map(String::as_str)
    }
}

/// `TF_TOKEN_` + the host with `.` → `_` and `-` → `__` (a port cannot be expressed, so it
/// is dropped).
pub(crate) fn token_var(host: &str) -> String {
    let name = host.split(':').next().unwrap_or(host);
    let mut var = String::from("TF_TOKEN_");
    for c in name.chars() {
        match c {
            '.' => var.push('_'),
            '-' => var.push_str("__"),
            c => var.push(c),
        }
    }
    var
}

/// HTTP cache validators of a response (`ETag`, `Last-Modified`), sent back as
/// `If-None-Match` / `If-Modified-Since`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validators {
    /// `ETag`, quoted as received (`"…"` or `W/"…"`).
    pub etag: Option<String>,
    /// `Last-Modified` (an HTTP date, as received).
    pub last_modified: Option<String>,
}

/// A body downloaded by [`HttpClient::download_if_changed`].
#[derive(Clone, Debug)]
pub struct Downloaded {
    /// SHA-256 of the bytes.
    pub sha256: [u8; 32],
    /// How many bytes.
    pub size: u64,
    /// The response's validators.
    pub validators: Validators,
}

/// A shared HTTP client (cheap to clone; connections are pooled).
#[derive(Clone, Debug)]
pub struct HttpClient {
    limits: TransferLimits,
    agent: ureq::Agent,
    /// The same settings, but following no redirect: for a protocol that decides at each hop
    /// which headers the next request may carry ([`HttpClient::request_one_hop`]).
    one_hop: ureq::Agent,
}

impl HttpClient {
    /// A client trusting `SSL_CERT_FILE`'s certificates when `ssl_cert_file` is given, else
    /// the bundled roots.
    pub fn new(ssl_cert_file: Option<&Path>, limits: TransferLimits) -> Result<Self, HttpError> {
        let tls = match ssl_cert_file {
            Some(path) => Some(Arc::new(tls_config(path)?)),
            None => None,
        };
        let builder = || {
            let builder = ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(30))
                .timeout_read(Duration::from_secs(120))
                .user_agent(concat!("tstore/", env!("CARGO_PKG_VERSION")));
            match &tls {
                Some(tls) => builder.tls_config(tls.clone()),
                None => builder,
            }
        };
        Ok(HttpClient {
            limits,
            agent: builder().build(),
            one_hop: builder().redirects(0).build(),
        })
    }

    /// A request of `method` to `url` on the shared agent, for protocols that need their own
    /// headers (a token service's login). A redirect is followed without the
    /// `Authorization` header (ureq's default).
    pub(crate) fn request(&self, method: &str, url: &str) -> ureq::Request {
        self.agent.request(method, url)
    }

    /// A request of `method` to `url` that does not follow redirects: a `3xx` comes back as
    /// the response, so the caller decides what the next hop may carry (the OCI client sends
    /// a registry's credentials to the registry's origin only).
    pub(crate) fn request_one_hop(&self, method: &str, url: &str) -> ureq::Request {
        self.one_hop.request(method, url)
    }

    /// What one transfer may take.
    pub fn limits(&self) -> TransferLimits {
        self.limits
    }

    /// GET `url` (with a bearer token if given), a document that must arrive whole within
    /// the document deadline; non-2xx statuses are errors.
    pub fn get(&self, url: &str, token: Option<&str>) -> Result<ureq::Response, HttpError> {
        self.get_within(url, token, Some(self.limits.document_deadline))
    }

    fn get_within(
        &self,
        url: &str,
        token: Option<&str>,
        deadline: Option<Duration>,
    ) -> Result<ureq::Response, HttpError> {
        let mut req = self.agent.get(url);
        if let Some(deadline) = deadline {
            req = req.timeout(deadline);
        }
        if let Some(token) = token {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        req.call().map_err(|e| call_error(url, e))
    }

    /// GET `url` into memory (at most 16 MiB).
    pub fn get_bytes(&self, url: &str, token: Option<&str>) -> Result<Vec<u8>, HttpError> {
        read_body_capped(self.get(url, token)?, url, MAX_DOCUMENT)
    }

    /// GET `url` and parse it as JSON of type `T`.
    pub fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        token: Option<&str>,
    ) -> Result<T, HttpError> {
        let body = self.get_bytes(url, token)?;
        serde_json::from_slice(&body).map_err(|e| HttpError::Malformed {
            url: url.to_owned(),
            message: e.to_string(),
        })
    }

    /// Stream `url` into `dest` (created), returning the SHA-256 of the bytes and their
    /// count. `progress` is called with the bytes received so far and the total, if known.
    pub fn download(
        &self,
        url: &str,
        dest: &Path,
        progress: &dyn Fn(u64, Option<u64>),
    ) -> Result<([u8; 32], u64), HttpError> {
        let resp = self.get_within(url, None, None)?;
        self.write_response(resp, url, dest, progress)
    }

    /// A conditional GET of `url` (`If-None-Match` / `If-Modified-Since` from `since`):
    /// `Ok(None)` when the server answers `304 Not Modified`, else the body streamed into
    /// `dest` as [`HttpClient::download`] does, with the response's validators.
    pub fn download_if_changed(
        &self,
        url: &str,
        dest: &Path,
        since: &Validators,
        progress: &dyn Fn(u64, Option<u64>),
    ) -> Result<Option<Downloaded>, HttpError> {
        let mut req = self.agent.get(url);
        if let Some(etag) = &since.etag {
            req = req.set("If-None-Match", etag);
        }
        if let Some(lm) = &since.last_modified {
            req = req.set("If-Modified-Since", lm);
        }
        let resp = req.call().map_err(|e| call_error(url, e))?;
        if resp.status() == 304 {
            return Ok(None);
        }
        let validators = Validators {
            etag: resp.header("ETag").map(str::to_owned),
            last_modified: resp.header("Last-Modified").map(str::to_owned),
        };
        let (sha256, size) = self.write_response(resp, url, dest, progress)?;
        Ok(Some(Downloaded {
            sha256,
            size,
            validators,
        }))
    }

    /// Stream a download's body into `dest`: at most the download cap, and failing when it
    /// stalls (see [`STALL_WINDOW`]).
    pub(crate) fn write_response(
        &self,
        resp: ureq::Response,
        url: &str,
        dest: &Path,
        progress: &dyn Fn(u64, Option<u64>),
    ) -> Result<([u8; 32], u64), HttpError> {
        let write_err = |source| HttpError::Write {
            url: url.to_owned(),
            path: dest.to_path_buf(),
            source,
        };
        let mut file = fs_err::File::create(dest).map_err(write_err)?;
        let mut body = self.body(resp, url, progress)?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => return Err(body.failure.take().unwrap_or_else(|| body.error(e))),
            };
            file.write_all(&buf[..n]).map_err(write_err)?;
        }
        file.flush().map_err(write_err)?;
        Ok(body.finish())
    }

    /// A download's body to read as it arrives ([`Body`]): at most the download cap, and
    /// failing when it stalls (see [`STALL_WINDOW`]).
    pub(crate) fn body<'p>(
        &self,
        resp: ureq::Response,
        url: &str,
        progress: &'p dyn Fn(u64, Option<u64>),
    ) -> Result<Body<'p>, HttpError> {
        let total = resp
            .header("Content-Length")
            .and_then(|v| v.parse::<u64>().ok());
        let cap = self.limits.max_download_bytes;
        let body = Body {
            reader: resp.into_reader(),
            url: url.to_owned(),
            total,
            cap,
            done: 0,
            sha: Sha256::new(),
            window: (std::time::Instant::now(), 0),
            progress,
            failure: None,
        };
        if total.is_some_and(|t| t > cap) {
            return Err(body.error(std::io::Error::other(format!(
                "the download is {} bytes, more than the {cap} tstore takes \
                 (TSTORE_MAX_ARCHIVE_BYTES)",
                total.unwrap_or_default()
            ))));
        }
        Ok(body)
    }
}

/// A download's body, read as it arrives: hashed (SHA-256) and counted as it is read, at
/// most the download cap, failing when it stalls; progress is told of every read that
/// brings bytes. A read that fails keeps its [`HttpError`] ([`Body::failure`]), so that
/// whoever read through another parser (an archive's) can say the download failed, not the
/// archive, and every later read fails too.
pub(crate) struct Body<'p> {
    reader: Box<dyn Read + Send + Sync + 'static>,
    url: String,
    total: Option<u64>,
    cap: u64,
    done: u64,
    sha: Sha256,
    /// When the current stall window began, and the bytes read by then.
    window: (std::time::Instant, u64),
    progress: &'p dyn Fn(u64, Option<u64>),
    /// Why a read failed, if one did.
    pub(crate) failure: Option<HttpError>,
}

impl Body<'_> {
    /// The SHA-256 of the bytes read so far.
    pub(crate) fn sha256_so_far(&self) -> [u8; 32] {
        self.sha.clone().finalize().into()
    }

    /// The body failed with `source`.
    pub(crate) fn error(&self, source: std::io::Error) -> HttpError {
        HttpError::Body {
            url: self.url.clone(),
            source,
        }
    }

    /// Fail the read with `message`, kept as the body's failure.
    fn fail(&mut self, message: String) -> std::io::Error {
        self.failure = Some(self.error(std::io::Error::other(message.clone())));
        std::io::Error::other(message)
    }

    /// The SHA-256 of the bytes read, and their count.
    pub(crate) fn finish(self) -> ([u8; 32], u64) {
        (self.sha.finalize().into(), self.done)
    }
}

impl Read for Body<'_> {
    /// A failed read fails every read after it: a reader that went on past an error (the
    /// `zip` crate skipping the rest of an entry) must not resume mid-stream.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(failure) = &self.failure {
            return Err(std::io::Error::other(failure.to_string()));
        }
        let n = match self.reader.read(buf) {
            Ok(0) => return Ok(0),
            Ok(n) => n,
            Err(e) => {
                let message = e.to_string();
                self.failure = Some(self.error(e));
                return Err(std::io::Error::other(message));
            }
        };
        let cap = self.cap;
        if self.done + n as u64 > cap {
            return Err(self.fail(format!(
                "the download goes past {cap} bytes, the most tstore takes \
                 (TSTORE_MAX_ARCHIVE_BYTES)"
            )));
        }
        if self.window.0.elapsed() >= STALL_WINDOW {
            if self.done - self.window.1 < STALL_MIN_BYTES {
                return Err(self.fail(format!(
                    "the download stalled: fewer than {STALL_MIN_BYTES} bytes in {} s",
                    STALL_WINDOW.as_secs()
                )));
            }
            self.window = (std::time::Instant::now(), self.done);
        }
        self.sha.update(&buf[..n]);
        self.done += n as u64;
        (self.progress)(self.done, self.total);
        Ok(n)
    }
}

/// The body of `resp` into memory; more than `cap` bytes is an error.
pub(crate) fn read_body_capped(
    resp: ureq::Response,
    url: &str,
    cap: u64,
) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    resp.into_reader()
        .take(cap + 1)
        .read_to_end(&mut body)
        .map_err(|source| HttpError::Body {
            url: url.to_owned(),
            source,
        })?;
    if body.len() as u64 > cap {
        return Err(HttpError::Body {
            url: url.to_owned(),
            source: std::io::Error::other(format!("response larger than {cap} bytes")),
        });
    }
    Ok(body)
}

/// A failed `call()` as an [`HttpError`]: an error status with the start of its body, or the
/// transport failure.
pub(crate) fn call_error(url: &str, e: ureq::Error) -> HttpError {
    match e {
        ureq::Error::Status(status, resp) => {
            let mut body = String::new();
            let _ = resp.into_reader().take(4096).read_to_string(&mut body);
            HttpError::Status {
                url: url.to_owned(),
                status,
                body,
            }
        }
        ureq::Error::Transport(t) => HttpError::Transport {
            url: url.to_owned(),
            message: transport_message(&t),
        },
    }
}

/// What went wrong in a transport failure, without its URL: ureq's own text starts with the
/// URL it was asked for, query included, and messages show the URL as the caller chose to
/// (a storage host's signed query left out).
fn transport_message(t: &ureq::Transport) -> String {
    let mut message = t.kind().to_string();
    if let Some(detail) = t.message() {
        message.push_str(": ");
        message.push_str(detail);
    }
    if let Some(source) = std::error::Error::source(t) {
        message.push_str(&format!(": {source}"));
    }
    message
}

fn tls_config(path: &Path) -> Result<rustls::ClientConfig, HttpError> {
    let ca_err = |message: String| HttpError::CaFile {
        path: path.to_path_buf(),
        message,
    };
    let pem = fs_err::read(path).map_err(|e| ca_err(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        let cert = cert.map_err(|e| ca_err(e.to_string()))?;
        roots.add(cert).map_err(|e| ca_err(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(ca_err("no PEM certificates in the file".into()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ca_err(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_do_not_echo_secrets() {
        let url = "https://user:S3CRET@host.test/m.zip?X-Amz-Signature=SIGNED&archive=zip";
        let shown = "https://host.test/m.zip?X-Amz-Signature=redacted&archive=zip";
        let io = || std::io::Error::other("boom");
        let errors = [
            HttpError::Transport {
                url: url.into(),
                message: "timed out".into(),
            },
            HttpError::Status {
                url: url.into(),
                status: 403,
                body: format!("<Error>denied for {url}</Error>"),
            },
            HttpError::Body {
                url: url.into(),
                source: io(),
            },
            HttpError::Malformed {
                url: url.into(),
                message: "not JSON".into(),
            },
            HttpError::Write {
                url: url.into(),
                path: PathBuf::from("/tmp/x"),
                source: io(),
            },
        ];
        for e in errors {
            let text = e.to_string();
            assert!(text.contains(shown), "{text}");
            assert!(
                !text.contains("S3CRET") && !text.contains("SIGNED"),
                "{text}"
            );
        }
    }

    #[test]
    fn token_variable_names_follow_tofu() {
        assert_eq!(token_var("tstore.test"), "TF_TOKEN_tstore_test");
        assert_eq!(token_var("my-host.test:8443"), "TF_TOKEN_my__host_test");
    }

    #[test]
    fn env_token_wins_over_credentials_block() {
        let blocks = BTreeMap::from([("a.test".to_owned(), "block".to_owned())]);
        let creds = Credentials::new(&blocks, []);
        assert_eq!(creds.token("A.test"), Some("block"));
        let env = [("TF_TOKEN_a_test".to_owned(), "env".to_owned())];
        let creds = Credentials::new(&blocks, env);
        assert_eq!(creds.token("a.test"), Some("env"));
        assert_eq!(creds.token("b.test"), None);
    }
}
