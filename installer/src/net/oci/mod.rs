//! OCI registries: the part of the OCI Distribution API a client needs to read artifacts
//! (tags, manifests, blobs) and to publish them (blob uploads, manifests), on the shared
//! [`HttpClient`], with the registries'
//! authentication challenges ([`auth`]). Manifest and index documents are `oci-spec`'s
//! types; only the HTTP exchanges are written here, because they must share the CLI
//! configuration's TLS roots and the install flow's synchronous downloads.
//!
//! ```text
//! GET /v2/NAME/tags/list[?n=…&last=…]     → {"name":…,"tags":[…]}   (Link: rel="next")
//! GET /v2/NAME/manifests/REF               → an image index or image manifest
//! GET /v2/NAME/blobs/sha256:HEX            → the blob (possibly redirected)
//! HEAD /v2/NAME/blobs/sha256:HEX           → 200 when the registry has it
//! POST /v2/NAME/blobs/uploads/ → Location; PUT Location?digest=…   (monolithic upload)
//! PUT /v2/NAME/manifests/REF               (Content-Type: the manifest's media type)
//! ```
//!
//! Every document and blob fetched by digest is checked against that digest before it is
//! used: a registry is hostile input like any other source.
//!
//! Credentials belong to the registry's origin (scheme, host and port of
//! `https://REGISTRY`) and to the token service a challenge from that origin names; nothing
//! else gets them. Redirects are followed here, one hop at a time, so each hop carries the
//! `Authorization` header only when it is on the registry's origin; a hop to another origin
//! (a blob's storage or CDN host, a `Link` or upload `Location` elsewhere) is sent without
//! it, and a `401` from another origin is not answered with the registry's login: the
//! request fails with [`OciError::ForeignChallenge`]. A URL on another origin is shown in
//! messages without its query, where storage hosts put signatures.

pub(crate) mod auth;
mod transport;

use std::path::Path;

use oci_spec::image::{ImageIndex, ImageManifest};
use sha2::{Digest as _, Sha256};

use self::auth::OciCredentials;
use self::transport::{parse_url, registry_origin, shown_url, Access};
use super::http::{read_body_capped, HttpClient, HttpError};
use crate::redact::display_url;

/// The largest manifest or index read into memory (the spec suggests registries refuse
/// manifests above 4 MiB).
const MAX_MANIFEST: u64 = 4 << 20;

/// Redirects followed for one request (as Go's HTTP client, which docker and containerd use).
pub(crate) const MAX_REDIRECTS: usize = 10;

/// The most pages of one repository's tag list read: a registry answering
/// `Link: rel="next"` without end is refused, not followed.
pub(crate) const MAX_TAG_PAGES: usize = 200;
/// The most bytes of one repository's tag list read, all pages together.
pub(crate) const MAX_TAG_LIST_BYTES: u64 = 32 << 20;
/// The most tags kept from one repository's tag list (those the caller asked for).
pub(crate) const MAX_KEPT_TAGS: usize = 10_000;

/// A bound of one repository's tag list ([`OciError::TagListTooLong`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagListLimit {
    /// [`MAX_TAG_PAGES`].
    Pages,
    /// [`MAX_TAG_LIST_BYTES`].
    Bytes,
    /// [`MAX_KEPT_TAGS`].
    KeptTags,
}

impl std::fmt::Display for TagListLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TagListLimit::Pages => write!(f, "{MAX_TAG_PAGES} pages"),
            TagListLimit::Bytes => write!(f, "{} MiB", MAX_TAG_LIST_BYTES >> 20),
            TagListLimit::KeptTags => write!(f, "{MAX_KEPT_TAGS} matching tags"),
        }
    }
}

/// A blob's bytes, read as they arrive (an archive unpacked while it downloads): the read
/// that finds their end fails unless they have the digest asked for, so a reader that reads
/// to the end has read the blob or seen an error. A failed read keeps its [`OciError`], which
/// [`BlobBody::finish`] returns: the download's reason, not the parser's, is the one to show.
pub struct BlobBody<'p> {
    body: super::http::Body<'p>,
    url: String,
    digest: String,
    /// The end was read, with the digest asked for.
    verified: bool,
    failure: Option<OciError>,
}

impl BlobBody<'_> {
    /// Why a read failed, if one did.
    fn failure(&mut self) -> Option<OciError> {
        self.failure
            .take()
            .or_else(|| self.body.failure.take().map(OciError::Http))
    }

    /// The blob read to its end (what is left is read now) with the digest asked for: its
    /// size, or why not.
    pub fn finish(mut self) -> Result<u64, OciError> {
        if !self.verified {
            let drained = std::io::copy(&mut self, &mut std::io::sink());
            if let Some(failure) = self.failure() {
                return Err(failure);
            }
            drained.map_err(|e| OciError::Http(self.body.error(e)))?;
        }
        Ok(self.body.finish().1)
    }
}

impl std::io::Read for BlobBody<'_> {
    /// As [`super::http::Body`]'s: a failed read fails every read after it.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(failure) = &self.failure {
            return Err(std::io::Error::other(failure.to_string()));
        }
        let n = self.body.read(buf)?;
        if n == 0 && !buf.is_empty() && !self.verified {
            let actual = format!("sha256:{}", hex::encode(self.body.sha256_so_far()));
            if actual != self.digest {
                let failure = OciError::DigestMismatch {
                    what: "blob".into(),
                    url: self.url.clone(),
                    expected: self.digest.clone(),
                    actual,
                };
                let message = failure.to_string();
                self.failure = Some(failure);
                return Err(std::io::Error::other(message));
            }
            self.verified = true;
        }
        Ok(n)
    }
}

/// Media types of the documents a pull reads.
pub(crate) const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// An image manifest.
pub(crate) const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The layer media type OpenTofu's provider and module artifacts carry their zip in.
pub(crate) const ZIP_LAYER_MEDIA_TYPE: &str = "archive/zip";

/// The digest of the one `archive/zip` layer of `manifest` (OpenTofu's artifacts have exactly
/// one); `Err(n)` with how many such layers there are otherwise.
pub(crate) fn single_zip_layer(manifest: &ImageManifest) -> Result<String, usize> {
    let zips: Vec<_> = manifest
        .layers()
        .iter()
        .filter(|l| l.media_type().to_string() == ZIP_LAYER_MEDIA_TYPE)
        .collect();
    match zips.as_slice() {
        [layer] => Ok(layer.digest().to_string()),
        other => Err(other.len()),
    }
}

/// Errors of an OCI registry exchange.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The HTTP exchange failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The registry asked for credentials that are not configured, or refused them.
    #[error(
        "{} requires authentication for {}: {message}",
        display_reference(registry),
        display_reference(repository)
    )]
    Unauthorized {
        /// The registry host.
        registry: String,
        /// The repository.
        repository: String,
        /// What went wrong.
        message: String,
    },
    /// A document or blob did not match the digest it was fetched by.
    #[error(
        "{what} from {} does not match its digest: expected {expected}, got {actual}",
        display_reference(url)
    )]
    DigestMismatch {
        /// What was fetched.
        what: String,
        /// Where from.
        url: String,
        /// The digest asked for.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// A host on another origin than the registry's (where the registry redirected a
    /// request, or pointed a `Link` or upload `Location`) asked for credentials. The
    /// registry's are never sent there.
    #[error("{}, where {} sent a request for {}, asks for credentials; tstore sends the registry's credentials only to the registry and to the token service it names, so that host must serve the request without them", display_url(origin), display_reference(registry), display_reference(repository))]
    ForeignChallenge {
        /// The registry host.
        registry: String,
        /// The repository.
        repository: String,
        /// The other origin (`https://host:port`, no path).
        origin: String,
    },
    /// A tag list went on past one of its bounds ([`TagListLimit`]).
    #[error("the tag list of {} goes on past {limit}, the most tstore reads of one repository; the registry may be answering `Link: rel=\"next\"` without end", display_reference(repository))]
    TagListTooLong {
        /// `registry/name`.
        repository: String,
        /// The bound it passed.
        limit: TagListLimit,
    },
    /// More redirects than [`MAX_REDIRECTS`] in a row.
    #[error(
        "{} redirected more than {MAX_REDIRECTS} times",
        display_reference(url)
    )]
    TooManyRedirects {
        /// The URL first asked for.
        url: String,
    },
    /// A document was not what the protocol says.
    #[error("malformed {what} from {}: {message}", display_reference(url))]
    Malformed {
        /// What was fetched.
        what: String,
        /// Where from.
        url: String,
        /// What is wrong.
        message: String,
    },
}

/// An OCI reference (`REGISTRY/NAME[:TAG|@DIGEST]`, a registry host, an `oci://` module
/// source) or a registry URL as messages show it: without user information before the
/// registry host (registries are reached over HTTPS, where a user alone may be a token) and
/// with secret-looking query values redacted, as [`display_url`] shows an `https` URL. A
/// URL of another scheme is shown by [`display_url`].
pub(crate) fn display_reference(reference: &str) -> String {
    let as_https = |rest: &str| {
        let shown = display_url(&format!("https://{rest}"));
        shown
            .strip_prefix("https://")
            .map(str::to_owned)
            .unwrap_or(shown)
    };
    match reference.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("oci") => {
            format!("{scheme}://{}", as_https(rest))
        }
        Some(_) => display_url(reference),
        None => as_https(reference),
    }
}

/// A repository in a registry: `registry/name`, e.g. `ghcr.example/org/null`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OciRepository {
    /// `host[:port]`.
    pub registry: String,
    /// The repository name (`/`-separated path components).
    pub name: String,
}

impl OciRepository {
    /// `REGISTRY/NAME` (after `oci://`): a registry host (letters, digits, `.-:[]`), then a
    /// name of `/`-separated components of lowercase letters, digits and `._-`, as the
    /// distribution spec allows; the host lowercased. `None` for anything else.
    pub fn parse(address: &str) -> Option<OciRepository> {
        let (registry, name) = address.split_once('/')?;
        let name_ok = !name.is_empty()
            && name.split('/').all(|c| {
                !c.is_empty()
                    && c.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    })
            });
        let registry_ok = !registry.is_empty()
            && registry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
        (name_ok && registry_ok).then(|| OciRepository {
            registry: registry.to_ascii_lowercase(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for OciRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.registry, self.name)
    }
}

/// A manifest as fetched (checked against its digest when fetched by one): its media type and
/// its bytes.
#[derive(Debug)]
pub struct FetchedManifest {
    /// The `mediaType` the document declares (or the response's `Content-Type`).
    pub media_type: String,
    /// The document.
    pub bytes: Vec<u8>,
}

/// A client for OCI registries over HTTPS, sharing [`HttpClient`]'s connections and roots.
pub struct OciClient {
    http: HttpClient,
    credentials: OciCredentials,
    /// `Authorization` values by registry and scope, once a challenge was answered.
    tokens: std::sync::Mutex<std::collections::HashMap<(String, String), String>>,
}

impl std::fmt::Debug for OciClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The cached `Authorization` values are secrets: never shown.
        f.debug_struct("OciClient")
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl OciClient {
    /// A client using `http` and `credentials`.
    pub fn new(http: HttpClient, credentials: OciCredentials) -> OciClient {
        OciClient {
            http,
            credentials,
            tokens: Default::default(),
        }
    }

    fn base(repo: &OciRepository) -> String {
        format!("https://{}/v2/{}", repo.registry, repo.name)
    }

    /// The tags of `repo` that `keep` accepts (an OCI mirror keeps versions), following
    /// pagination, sorted. What is read is bounded: at most [`MAX_TAG_PAGES`] pages and
    /// [`MAX_TAG_LIST_BYTES`] bytes, one page at a time, and at most [`MAX_KEPT_TAGS`] kept
    /// tags (others are dropped as each page is read); a list going past any bound is
    /// [`OciError::TagListTooLong`].
    pub fn tags(
        &self,
        repo: &OciRepository,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, OciError> {
        #[derive(serde::Deserialize)]
        struct TagList {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let too_long = |limit| OciError::TagListTooLong {
            repository: repo.to_string(),
            limit,
        };
        let mut url = format!("{}/tags/list", Self::base(repo));
        let registry = registry_origin(repo);
        let mut kept = std::collections::BTreeSet::new();
        let mut bytes = 0u64;
        for _ in 0..MAX_TAG_PAGES {
            // A `Link` may name another origin: `send` gives it no credentials.
            let resp = self.get(repo, &url, &[])?;
            let next = resp.header("Link").and_then(next_link);
            let shown = shown_url(&parse_url(&url)?, &registry);
            let body = read_capped(resp, &shown, MAX_MANIFEST)?;
            bytes += body.len() as u64;
            if bytes > MAX_TAG_LIST_BYTES {
                return Err(too_long(TagListLimit::Bytes));
            }
            let list: TagList = serde_json::from_slice(&body).map_err(|e| OciError::Malformed {
                what: "tag list".into(),
                url: shown.clone(),
                message: e.to_string(),
            })?;
            for tag in list.tags.unwrap_or_default() {
                if keep(&tag) {
                    kept.insert(tag);
                    if kept.len() > MAX_KEPT_TAGS {
                        return Err(too_long(TagListLimit::KeptTags));
                    }
                }
            }
            match next {
                Some(next) => url = resolve(&url, &next),
                None => return Ok(kept.into_iter().collect()),
            }
        }
        Err(too_long(TagListLimit::Pages))
    }

    /// The manifest or index `reference` (a tag or a digest) names. A digest reference is
    /// checked against the bytes.
    pub fn manifest(
        &self,
        repo: &OciRepository,
        reference: &str,
    ) -> Result<FetchedManifest, OciError> {
        let url = format!("{}/manifests/{reference}", Self::base(repo));
        let accept = format!("{INDEX_MEDIA_TYPE}, {MANIFEST_MEDIA_TYPE}");
        let resp = self.get(repo, &url, &[("Accept", &accept)])?;
        let content_type = resp.content_type().to_owned();
        let bytes = read_capped(resp, &url, MAX_MANIFEST)?;
        let digest = sha256_digest(&bytes);
        if reference.contains(':') && reference != digest {
            return Err(OciError::DigestMismatch {
                what: "manifest".into(),
                url,
                expected: reference.to_owned(),
                actual: digest,
            });
        }
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(rename = "mediaType")]
            media_type: Option<String>,
        }
        let declared = serde_json::from_slice::<Head>(&bytes)
            .ok()
            .and_then(|h| h.media_type);
        Ok(FetchedManifest {
            media_type: declared.unwrap_or(content_type),
            bytes,
        })
    }

    /// Parse a fetched document as an image index.
    pub fn parse_index(fetched: &FetchedManifest, url: &str) -> Result<ImageIndex, OciError> {
        serde_json::from_slice(&fetched.bytes).map_err(|e| OciError::Malformed {
            what: "image index".into(),
            url: url.to_owned(),
            message: e.to_string(),
        })
    }

    /// Parse a fetched document as an image manifest.
    pub fn parse_manifest(fetched: &FetchedManifest, url: &str) -> Result<ImageManifest, OciError> {
        serde_json::from_slice(&fetched.bytes).map_err(|e| OciError::Malformed {
            what: "image manifest".into(),
            url: url.to_owned(),
            message: e.to_string(),
        })
    }

    /// The URL of a blob, for messages.
    pub fn blob_url(repo: &OciRepository, digest: &str) -> String {
        format!("{}/blobs/{digest}", Self::base(repo))
    }

    /// Stream the blob `digest` (`sha256:HEX`) of `repo` into `dest` and check it against
    /// the digest; returns its size. `progress` gets the bytes so far and the total.
    pub fn download_blob(
        &self,
        repo: &OciRepository,
        digest: &str,
        dest: &Path,
        progress: &dyn Fn(u64, Option<u64>),
    ) -> Result<u64, OciError> {
        let url = Self::blob_url(repo, digest);
        let resp = self.get(repo, &url, &[])?;
        let (sha, size) = self.http.write_response(resp, &url, dest, progress)?;
        let actual = format!("sha256:{}", hex::encode(sha));
        if actual != digest {
            return Err(OciError::DigestMismatch {
                what: "blob".into(),
                url,
                expected: digest.to_owned(),
                actual,
            });
        }
        Ok(size)
    }

    /// Blob `digest` of `repo`, to read as it arrives ([`BlobBody`]).
    pub fn blob_body<'p>(
        &self,
        repo: &OciRepository,
        digest: &str,
        progress: &'p dyn Fn(u64, Option<u64>),
    ) -> Result<BlobBody<'p>, OciError> {
        let url = Self::blob_url(repo, digest);
        let resp = self.get(repo, &url, &[])?;
        let body = self.http.body(resp, &url, progress)?;
        Ok(BlobBody {
            body,
            url,
            digest: digest.to_owned(),
            verified: false,
            failure: None,
        })
    }

    fn get(
        &self,
        repo: &OciRepository,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<ureq::Response, OciError> {
        self.send(repo, Access::Pull, "GET", url, headers, None)
    }

    /// Whether `repo` holds the blob `digest`.
    pub fn has_blob(&self, repo: &OciRepository, digest: &str) -> Result<bool, OciError> {
        let url = Self::blob_url(repo, digest);
        match self.send(repo, Access::Pull, "HEAD", &url, &[], None) {
            Ok(_) => Ok(true),
            Err(OciError::Http(HttpError::Status { status: 404, .. })) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Upload `bytes` as a blob of `repo` unless the registry has it; returns its digest
    /// and whether it was uploaded.
    pub fn push_blob(
        &self,
        repo: &OciRepository,
        bytes: &[u8],
    ) -> Result<(String, bool), OciError> {
        let digest = sha256_digest(bytes);
        if self.has_blob(repo, &digest)? {
            return Ok((digest, false));
        }
        let start = format!("{}/blobs/uploads/", Self::base(repo));
        let resp = self.send(repo, Access::Push, "POST", &start, &[], Some(&[]))?;
        let location = resp.header("Location").ok_or_else(|| OciError::Malformed {
            what: "upload session".into(),
            url: start.clone(),
            message: "no Location header".into(),
        })?;
        // The upload may continue on another origin: `send` gives it no credentials.
        let location = resolve(&start, location);
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = format!("{location}{sep}digest={digest}");
        self.send(
            repo,
            Access::Push,
            "PUT",
            &put,
            &[("Content-Type", "application/octet-stream")],
            Some(bytes),
        )?;
        Ok((digest, true))
    }

    /// Put a manifest or index under `reference` (a tag, or its own digest); returns its
    /// digest.
    pub fn push_manifest(
        &self,
        repo: &OciRepository,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<String, OciError> {
        let url = format!("{}/manifests/{reference}", Self::base(repo));
        self.send(
            repo,
            Access::Push,
            "PUT",
            &url,
            &[("Content-Type", media_type)],
            Some(bytes),
        )?;
        Ok(sha256_digest(bytes))
    }
}

/// `sha256:HEX` of `bytes`.
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn read_capped(resp: ureq::Response, url: &str, cap: u64) -> Result<Vec<u8>, OciError> {
    Ok(read_body_capped(resp, url, cap)?)
}

/// The target of a `Link: <…>; rel="next"` header.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim().trim_start_matches("rel=").trim_matches('"') == "next");
        is_next.then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

/// `link` resolved against `base` (registries send paths like `/v2/…?last=…`).
fn resolve(base: &str, link: &str) -> String {
    url::Url::parse(base)
        .and_then(|b| b.join(link))
        .map(|u| u.to_string())
        .unwrap_or_else(|_| link.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_links() {
        assert_eq!(
            next_link(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
        assert_eq!(next_link(r#"</x>; rel="prev""#), None);
        assert_eq!(
            resolve("https://r.test/v2/a/tags/list", "/v2/a/tags/list?last=b"),
            "https://r.test/v2/a/tags/list?last=b"
        );
    }

    #[test]
    fn references_are_shown_without_credentials() {
        assert_eq!(
            display_reference("oci://user:s3cret@r.test/m?tag=1&token=TOK3N"),
            "oci://r.test/m?tag=1&token=redacted"
        );
        assert_eq!(
            display_reference("TOK3N@r.test:5000/a/b:1.0"),
            "r.test:5000/a/b:1.0"
        );
        assert_eq!(
            display_reference("r.test/a@sha256:00"),
            "r.test/a@sha256:00",
            "a digest is not user information"
        );
        assert_eq!(
            display_reference("https://u:s3cret@r.test/v2/a/tags/list?sig=SIGV4"),
            "https://r.test/v2/a/tags/list?sig=redacted"
        );
    }

    #[test]
    fn errors_do_not_echo_credentials() {
        let errors = [
            OciError::Unauthorized {
                registry: "user:s3cret@r.test".into(),
                repository: "a/b".into(),
                message: "refused".into(),
            },
            OciError::DigestMismatch {
                what: "blob".into(),
                url: "https://TOK3N@r.test/v2/a/blobs/sha256:00?X-Amz-Signature=SIGV4".into(),
                expected: "sha256:00".into(),
                actual: "sha256:11".into(),
            },
            OciError::ForeignChallenge {
                registry: "TOK3N@r.test".into(),
                repository: "a/b".into(),
                origin: "https://cdn.test".into(),
            },
            OciError::TagListTooLong {
                repository: "user:s3cret@r.test/a".into(),
                limit: TagListLimit::Pages,
            },
            OciError::TooManyRedirects {
                url: "https://user:s3cret@r.test/v2/a/manifests/1?token=TOK3N".into(),
            },
            OciError::Malformed {
                what: "image manifest".into(),
                url: "oci://user:s3cret@r.test/a?tag=1&sig=SIGV4".into(),
                message: "bad".into(),
            },
        ];
        for e in errors {
            let shown = e.to_string();
            for secret in ["s3cret", "TOK3N", "SIGV4"] {
                assert!(!shown.contains(secret), "{secret} echoed: {shown}");
            }
            assert!(
                shown.contains("r.test") || shown.contains("cdn.test"),
                "{shown}"
            );
        }
    }

    #[test]
    fn digests() {
        assert_eq!(
            sha256_digest(b"{}"),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
