//! [`SplitRegistry`]: a small OCI registry on loopback (HTTPS, contents in memory) that
//! requires a login and hands parts of the protocol to a second server on another port, that
//! is, another origin, as registries hand blobs to their storage or CDN host:
//!
//! - a blob `GET` is redirected there (`307`, with a signature in the query);
//! - an upload session continues there (the `POST`'s `Location`);
//! - when asked ([`SplitRegistry::page_tags_through_storage`]), the tag list's second page
//!   is there (`Link: <…>; rel="next"`).
//!
//! The storage host logs every request with its `Authorization` header
//! ([`SplitRegistry::storage_requests`]). It serves anonymously, or answers every request
//! with `401` and a challenge of its own ([`StorageAuth`]): `Basic`, or `Bearer` naming a
//! token realm on itself.
//!
//! The registry speaks what a pull and a push need: tags, manifests by tag or digest, blob
//! `HEAD`/`GET`, monolithic uploads, manifest `PUT`. A request without the login gets `401`
//! with a `Basic` challenge.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;

use crate::oci_registry::{sha256_digest, tofu_layout};
use crate::server::{Request, Response, Server};

/// How the storage host treats requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageAuth {
    /// It serves everyone.
    Anonymous,
    /// `401` with `WWW-Authenticate: Basic realm="storage"`.
    Basic,
    /// `401` with `WWW-Authenticate: Bearer realm="STORAGE/token"`; its token service
    /// answers anyone, and the token it gives opens nothing.
    Bearer,
    /// Gone: the registry sends clients to a port on which nothing listens.
    Unreachable,
}

#[derive(Default)]
struct State {
    /// Blobs by digest.
    blobs: HashMap<String, Vec<u8>>,
    /// `(repository, tag or digest)` → (media type, document).
    manifests: BTreeMap<(String, String), (String, Vec<u8>)>,
    /// Upload sessions started.
    uploads: usize,
    /// Whether the tag list's second page is on the storage host.
    tags_on_storage: bool,
    /// A token realm the registry names (`Bearer`) instead of its `Basic` challenge.
    bearer_realm: Option<String>,
}

/// A running registry and its storage host; both stop when dropped.
pub struct SplitRegistry {
    registry: Server,
    storage: Server,
    /// Where the registry sends clients: the storage host, or nowhere.
    storage_url: String,
    state: Arc<Mutex<State>>,
    login: String,
}

impl std::fmt::Debug for SplitRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitRegistry")
            .field("registry", &self.registry.url())
            .field("storage", &self.storage.url())
            .finish_non_exhaustive()
    }
}

impl SplitRegistry {
    /// Start the registry (only `user` with `password` may use it) and its storage host.
    pub fn start(user: &str, password: &str, storage_auth: StorageAuth) -> SplitRegistry {
        let state: Arc<Mutex<State>> = Arc::default();
        let login = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        let storage = Server::start_tls(&[]);
        let storage_url = match storage_auth {
            StorageAuth::Unreachable => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .expect("a free loopback port")
                    .port();
                format!("https://127.0.0.1:{port}")
            }
            _ => storage.url(),
        };
        {
            let state = state.clone();
            let realm = format!("{storage_url}/token");
            storage.route_fallback(move |req| storage_answer(req, storage_auth, &realm, &state));
        }
        let registry = Server::start_tls(&[]);
        {
            let (state, login, storage_url) = (state.clone(), login.clone(), storage_url.clone());
            registry.route_fallback(move |req| registry_answer(req, &login, &storage_url, &state));
        }
        SplitRegistry {
            registry,
            storage,
            storage_url,
            state,
            login,
        }
    }

    /// `127.0.0.1:PORT`, the registry's host in repository addresses.
    pub fn host(&self) -> String {
        self.registry
            .url()
            .trim_start_matches("https://")
            .to_owned()
    }

    /// The storage host's origin, `https://127.0.0.1:PORT`, where the registry sends
    /// clients.
    pub fn storage_origin(&self) -> String {
        self.storage_url.clone()
    }

    /// The `Authorization` value of the registry's login.
    pub fn login_header(&self) -> &str {
        &self.login
    }

    /// Write the CAs of both servers to `path` (for `SSL_CERT_FILE`) and return the path.
    pub fn write_ca(&self, path: &Path) -> PathBuf {
        let pem = [&self.registry, &self.storage]
            .iter()
            .map(|s| s.ca().expect("HTTPS").ca_pem.clone())
            .collect::<String>();
        fs_err::write(path, pem).unwrap();
        path.to_path_buf()
    }

    /// Challenge with `Bearer realm="REALM"` (a token service the registry names) instead
    /// of `Basic`.
    pub fn name_token_realm(&self, realm: &str) {
        self.state.lock().unwrap().bearer_realm = Some(realm.to_owned());
    }

    /// Serve the tag list in two pages, the second on the storage host.
    pub fn page_tags_through_storage(&self) {
        self.state.lock().unwrap().tags_on_storage = true;
    }

    /// Every request the storage host received, in order.
    pub fn storage_requests(&self) -> Vec<Request> {
        self.storage.requests()
    }

    /// Every request the registry received, in order.
    pub fn registry_requests(&self) -> Vec<Request> {
        self.registry.requests()
    }

    /// The digest of the document `repo:tag` names, if any.
    pub fn tag(&self, repo: &str, tag: &str) -> Option<String> {
        let state = self.state.lock().unwrap();
        state
            .manifests
            .get(&(repo.to_owned(), tag.to_owned()))
            .map(|(_, bytes)| sha256_digest(bytes))
    }

    /// Publish one provider version into `repo` in OpenTofu's layout (as
    /// [`crate::oci_registry::OciRegistry::push_provider`] does), directly into the
    /// registry's memory. Returns the index's digest.
    pub fn publish_provider(&self, repo: &str, version: &str, zips: &[(&str, Vec<u8>)]) -> String {
        use serde_json::json;
        use tofu_layout as t;
        let mut state = self.state.lock().unwrap();
        let config = sha256_digest(b"{}");
        state.blobs.insert(config.clone(), b"{}".to_vec());
        let mut manifests = Vec::new();
        for (platform, zip) in zips {
            let (os, arch) = platform.split_once('_').expect("OS_ARCH");
            let layer = sha256_digest(zip);
            state.blobs.insert(layer.clone(), zip.clone());
            let manifest = serde_json::to_vec(&json!({
                "schemaVersion": 2,
                "mediaType": t::MANIFEST,
                "artifactType": t::PROVIDER_TARGET,
                "config": {"mediaType": t::EMPTY_CONFIG, "digest": config, "size": 2},
                "layers": [{"mediaType": t::ZIP_LAYER, "digest": layer, "size": zip.len()}],
            }))
            .unwrap();
            let digest = sha256_digest(&manifest);
            state.manifests.insert(
                (repo.to_owned(), digest.clone()),
                (t::MANIFEST.to_owned(), manifest.clone()),
            );
            manifests.push(json!({
                "mediaType": t::MANIFEST,
                "artifactType": t::PROVIDER_TARGET,
                "digest": digest,
                "size": manifest.len(),
                "platform": {"os": os, "architecture": arch},
            }));
        }
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": t::INDEX,
            "artifactType": t::PROVIDER,
            "manifests": manifests,
        }))
        .unwrap();
        let digest = sha256_digest(&index);
        for reference in [version.replace('+', "_"), digest.clone()] {
            state.manifests.insert(
                (repo.to_owned(), reference),
                (t::INDEX.to_owned(), index.clone()),
            );
        }
        digest
    }
}

fn respond(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Response {
    Response {
        status,
        content_type: "application/json".into(),
        body: body.into(),
        headers: headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

fn not_found() -> Response {
    respond(404, &[], r#"{"errors":[{"code":"NOT_FOUND"}]}"#)
}

/// `/v2/NAME/REST` split at the first of the protocol's path words.
fn split_api_path(path: &str) -> Option<(String, &str)> {
    let rest = path.strip_prefix("/v2/")?;
    for word in ["/tags/list", "/manifests/", "/blobs/"] {
        if let Some(at) = rest.find(word) {
            return Some((rest[..at].to_owned(), &rest[at + 1..]));
        }
    }
    None
}

fn query_value(path: &str, key: &str) -> Option<String> {
    let query = path.split_once('?')?.1;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

fn tags_of(state: &State, repo: &str) -> Vec<String> {
    state
        .manifests
        .keys()
        .filter(|(r, reference)| r == repo && !reference.starts_with("sha256:"))
        .map(|(_, reference)| reference.clone())
        .collect()
}

fn tag_list(repo: &str, tags: &[String]) -> Vec<u8> {
    serde_json::json!({"name": repo, "tags": tags})
        .to_string()
        .into_bytes()
}

fn registry_answer(
    req: &Request,
    login: &str,
    storage_url: &str,
    state: &Mutex<State>,
) -> Response {
    if req.authorization.as_deref() != Some(login) {
        let challenge = match &state.lock().unwrap().bearer_realm {
            Some(realm) => format!(r#"Bearer realm="{realm}",service="split""#),
            None => r#"Basic realm="tstore-split-registry""#.to_owned(),
        };
        return respond(
            401,
            &[("WWW-Authenticate", &challenge)],
            r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#,
        );
    }
    let path = req.path.split('?').next().unwrap_or_default();
    let Some((repo, rest)) = split_api_path(path) else {
        return not_found();
    };
    let mut state = state.lock().unwrap();
    match (req.method.as_str(), rest) {
        ("GET", "tags/list") => {
            let tags = tags_of(&state, &repo);
            if state.tags_on_storage && tags.len() > 1 {
                let link = format!(
                    "<{storage_url}/v2/{repo}/tags/list?last={}>; rel=\"next\"",
                    tags[0]
                );
                return respond(200, &[("Link", &link)], tag_list(&repo, &tags[..1]));
            }
            respond(200, &[], tag_list(&repo, &tags))
        }
        ("GET" | "HEAD", rest) if rest.starts_with("manifests/") => {
            let reference = &rest["manifests/".len()..];
            match state.manifests.get(&(repo, reference.to_owned())) {
                Some((media_type, bytes)) => Response {
                    status: 200,
                    content_type: media_type.clone(),
                    body: bytes.clone(),
                    headers: vec![("Docker-Content-Digest".into(), sha256_digest(bytes))],
                },
                None => not_found(),
            }
        }
        ("PUT", rest) if rest.starts_with("manifests/") => {
            let reference = &rest["manifests/".len()..];
            let media_type = serde_json::from_slice::<serde_json::Value>(&req.body)
                .ok()
                .and_then(|v| v["mediaType"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let digest = sha256_digest(&req.body);
            for reference in [reference.to_owned(), digest.clone()] {
                state.manifests.insert(
                    (repo.clone(), reference),
                    (media_type.clone(), req.body.clone()),
                );
            }
            respond(201, &[("Docker-Content-Digest", &digest)], "")
        }
        ("POST", "blobs/uploads/") => {
            state.uploads += 1;
            let location = format!("{storage_url}/uploads/{}", state.uploads);
            respond(202, &[("Location", &location)], "")
        }
        ("HEAD", rest) if rest.starts_with("blobs/") => {
            match state.blobs.get(&rest["blobs/".len()..]) {
                Some(bytes) => Response {
                    status: 200,
                    content_type: "application/octet-stream".into(),
                    body: bytes.clone(),
                    headers: Vec::new(),
                },
                None => not_found(),
            }
        }
        ("GET", rest) if rest.starts_with("blobs/") => {
            let digest = &rest["blobs/".len()..];
            if !state.blobs.contains_key(digest) {
                return not_found();
            }
            // Storage hosts sign their URLs: the signature must not show in messages.
            let location = format!("{storage_url}/blobs/{digest}?signature=storage-signature");
            respond(307, &[("Location", &location)], "")
        }
        _ => not_found(),
    }
}

fn storage_answer(req: &Request, auth: StorageAuth, realm: &str, state: &Mutex<State>) -> Response {
    let path = req.path.split('?').next().unwrap_or_default();
    match auth {
        StorageAuth::Anonymous | StorageAuth::Unreachable => {}
        StorageAuth::Basic => {
            return respond(401, &[("WWW-Authenticate", r#"Basic realm="storage""#)], "")
        }
        StorageAuth::Bearer if path == "/token" => {
            return respond(200, &[], r#"{"token":"storage-token"}"#)
        }
        StorageAuth::Bearer => {
            let challenge = format!(r#"Bearer realm="{realm}",service="storage""#);
            return respond(401, &[("WWW-Authenticate", &challenge)], "");
        }
    }
    let mut state = state.lock().unwrap();
    if let Some(digest) = path.strip_prefix("/blobs/") {
        return match state.blobs.get(digest) {
            Some(bytes) => Response {
                status: 200,
                content_type: "application/octet-stream".into(),
                body: bytes.clone(),
                headers: Vec::new(),
            },
            None => not_found(),
        };
    }
    if path.starts_with("/uploads/") && req.method == "PUT" {
        let Some(digest) = query_value(&req.path, "digest") else {
            return respond(400, &[], r#"{"errors":[{"code":"DIGEST_INVALID"}]}"#);
        };
        if sha256_digest(&req.body) != digest {
            return respond(400, &[], r#"{"errors":[{"code":"DIGEST_INVALID"}]}"#);
        }
        state.blobs.insert(digest.clone(), req.body.clone());
        return respond(201, &[("Docker-Content-Digest", &digest)], "");
    }
    if let Some((repo, "tags/list")) = split_api_path(path) {
        let last = query_value(&req.path, "last").unwrap_or_default();
        let tags: Vec<String> = tags_of(&state, &repo)
            .into_iter()
            .filter(|t| *t > last)
            .collect();
        return respond(200, &[], tag_list(&repo, &tags));
    }
    not_found()
}
