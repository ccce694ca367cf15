//! [`OciRegistry`]: a real OCI registry (Debian's `docker-registry`, CNCF distribution 2.8)
//! on loopback over HTTPS with a [`TestCa`], its storage in a temp dir, stopped on drop;
//! and the uploads of the distribution API, to publish artifacts into it.
//!
//! `scripts/test` installs the `docker-registry` package; a missing binary fails the test
//! with that hint.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};
use tempfile::TempDir;

use crate::oci_token::{TokenService, ISSUER, SERVICE};
use crate::tls::TestCa;

const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// How the registry authenticates clients.
enum Auth<'a> {
    Anonymous,
    /// htpasswd: this user and password only.
    Htpasswd(String, String),
    /// Tokens from the service at `realm`, whose signing certificate `sign` writes.
    Token {
        realm: String,
        sign: Box<dyn Fn(&Path) + 'a>,
    },
}

/// A running registry.
pub struct OciRegistry {
    child: Child,
    dir: TempDir,
    port: u16,
    ca: TestCa,
    agent: ureq::Agent,
    /// The fixture's own `Authorization` when the registry requires a login.
    authorization: Option<String>,
}

impl std::fmt::Debug for OciRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OciRegistry")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl OciRegistry {
    /// Start a registry on a free loopback port and wait until it answers `/v2/`.
    pub fn start() -> OciRegistry {
        OciRegistry::start_with(Auth::Anonymous)
    }

    /// [`OciRegistry::start`] with htpasswd (basic) authentication: only `user` with
    /// `password` may pull or push. The fixture itself pushes with those credentials.
    pub fn start_with_login(user: &str, password: &str) -> OciRegistry {
        OciRegistry::start_with(Auth::Htpasswd(user.to_owned(), password.to_owned()))
    }

    /// [`OciRegistry::start`] with token authentication (the bearer flow): the registry
    /// accepts only tokens `service` signs, and challenges clients to get one from it. The
    /// fixture's own uploads ([`OciRegistry::push_blob`] etc.) are not authorized: publish
    /// through the client under test.
    pub fn start_with_token_service(service: &TokenService) -> OciRegistry {
        OciRegistry::start_with(Auth::Token {
            realm: service.realm(),
            sign: Box::new(|path: &Path| service.write_signing_cert(path)),
        })
    }

    fn start_with(login: Auth<'_>) -> OciRegistry {
        assert!(
            Path::new(REGISTRY_BIN).is_file(),
            "{REGISTRY_BIN} is missing: install the docker-registry package (scripts/test does)"
        );
        let dir = tempfile::Builder::new()
            .prefix("tstore-oci-registry-")
            .tempdir()
            .expect("a temp dir for the registry");
        let ca = TestCa::new(&[]);
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        fs_err::write(&cert, &ca.server_chain_pem).unwrap();
        fs_err::write(&key, &ca.server_key_pem).unwrap();
        // The registry binds the port itself: take a free one from the kernel and hand it
        // over (the window between is the only race, and a collision fails loudly below).
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let config = dir.path().join("config.yml");
        let auth = match &login {
            Auth::Token { realm, sign } => {
                let bundle = dir.path().join("token-signer.pem");
                sign(&bundle);
                format!(
                    "auth:\n  token:\n    realm: {realm}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
                    bundle.display()
                )
            }
            Auth::Htpasswd(user, password) => {
                let htpasswd = dir.path().join("htpasswd");
                let hash = bcrypt::hash(password, 5).expect("bcrypt the test password");
                fs_err::write(&htpasswd, format!("{user}:{hash}\n")).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: tstore-test\n    path: {}\n",
                    htpasswd.display()
                )
            }
            Auth::Anonymous => String::new(),
        };
        fs_err::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\n{auth}http:\n  addr: 127.0.0.1:{port}\n  secret: tstore-test\n  tls:\n    certificate: {cert}\n    key: {key}\n",
                root = dir.path().join("data").display(),
                cert = cert.display(),
                key = key.display(),
            ),
        )
        .unwrap();
        let log = fs_err::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.file().try_clone().unwrap())
            .stderr(log.into_file())
            .spawn()
            .expect("start docker-registry");
        let tls = rustls_client(&ca);
        let agent = ureq::AgentBuilder::new()
            .tls_config(Arc::new(tls))
            .timeout(Duration::from_secs(30))
            .build();
        let authorization = match login {
            Auth::Htpasswd(user, password) => {
                use base64::Engine as _;
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
                ))
            }
            Auth::Anonymous | Auth::Token { .. } => None,
        };
        let registry = OciRegistry {
            child,
            dir,
            port,
            ca,
            agent,
            authorization,
        };
        registry.wait_ready();
        registry
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.agent.get(&format!("{}/v2/", self.url())).call() {
                Ok(_) | Err(ureq::Error::Status(401, _)) => return,
                Err(_) => {}
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not answer on port {}: {}",
                self.port,
                fs_err::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn authorized(&self, req: ureq::Request) -> ureq::Request {
        match &self.authorization {
            Some(a) => req.set("Authorization", a),
            None => req,
        }
    }

    /// `localhost:PORT`, the registry's host in repository addresses.
    pub fn host(&self) -> String {
        format!("localhost:{}", self.port)
    }

    fn url(&self) -> String {
        format!("https://{}", self.host())
    }

    /// The file in the registry's storage that holds blob `digest` (`sha256:HEX`): what a
    /// test overwrites to serve tampered bytes under a digest.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256: digest");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Write the CA's PEM to `path` (for `SSL_CERT_FILE`) and return the path.
    pub fn write_ca(&self, path: &Path) -> PathBuf {
        self.ca.write_pem(path)
    }

    /// Upload `bytes` as a blob of `repo` (monolithic upload) and return its digest.
    pub fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha256_digest(bytes);
        let start = self
            .authorized(
                self.agent
                    .post(&format!("{}/v2/{repo}/blobs/uploads/", self.url())),
            )
            .call()
            .expect("start a blob upload");
        let location = start.header("Location").expect("an upload location");
        let location = if location.starts_with('/') {
            format!("{}{location}", self.url())
        } else {
            location.to_owned()
        };
        let sep = if location.contains('?') { '&' } else { '?' };
        self.authorized(self.agent.put(&format!("{location}{sep}digest={digest}")))
            .set("Content-Type", "application/octet-stream")
            .send_bytes(bytes)
            .expect("finish the blob upload");
        digest
    }

    /// Put a manifest or index under `reference` (a tag or its digest); returns its digest.
    pub fn push_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> String {
        self.authorized(
            self.agent
                .put(&format!("{}/v2/{repo}/manifests/{reference}", self.url())),
        )
        .set("Content-Type", media_type)
        .send_bytes(bytes)
        .expect("put the manifest");
        sha256_digest(bytes)
    }

    /// The request lines (`GET /v2/… HTTP/1.1`) the registry has logged so far.
    pub fn requests(&self) -> Vec<String> {
        let log = fs_err::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default();
        log.lines()
            .filter_map(|line| {
                let start = line.find("] \"")? + 3;
                let rest = &line[start..];
                Some(rest[..rest.find('"')?].to_owned())
            })
            .collect()
    }

    /// GET a path of the registry's API (`/v2/…`) as bytes, for checks.
    pub fn get(&self, path: &str, accept: &str) -> Vec<u8> {
        let resp = self
            .authorized(self.agent.get(&format!("{}{path}", self.url())))
            .set("Accept", accept)
            .call()
            .expect("GET from the registry");
        let mut body = Vec::new();
        resp.into_reader().read_to_end(&mut body).unwrap();
        body
    }
}

impl Drop for OciRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn rustls_client(ca: &TestCa) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let pem = ca.ca_pem.as_bytes();
    for cert in rustls_pemfile_certs(pem) {
        roots.add(cert).expect("add the test CA");
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// The DER certificates of a PEM text.
fn rustls_pemfile_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject as _;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates")
}

/// Media types and artifact types of OpenTofu's provider artifacts in OCI registries.
pub mod tofu_layout {
    /// An image index.
    pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
    /// An image manifest.
    pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    /// The empty config blob's media type.
    pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
    /// `artifactType` of a provider version's index.
    pub const PROVIDER: &str = "application/vnd.opentofu.provider";
    /// `artifactType` of one platform's manifest.
    pub const PROVIDER_TARGET: &str = "application/vnd.opentofu.provider-target";
    /// The media type of the layer holding the provider's zip.
    pub const ZIP_LAYER: &str = "archive/zip";
    /// `artifactType` of a module package's manifest.
    pub const MODULE: &str = "application/vnd.opentofu.modulepkg";
}

impl OciRegistry {
    /// Publish one provider version into `repo` in OpenTofu's layout: per platform
    /// (`OS_ARCH`), a manifest whose one layer is the zip, and the tag `version` naming an
    /// index of those manifests. Returns the index's digest.
    pub fn push_provider(&self, repo: &str, version: &str, zips: &[(&str, Vec<u8>)]) -> String {
        use serde_json::json;
        use tofu_layout as t;
        let config = self.push_blob(repo, b"{}");
        let mut manifests = Vec::new();
        for (platform, zip) in zips {
            let (os, arch) = platform.split_once('_').expect("OS_ARCH");
            let layer = self.push_blob(repo, zip);
            let manifest = serde_json::to_vec(&json!({
                "schemaVersion": 2,
                "mediaType": t::MANIFEST,
                "artifactType": t::PROVIDER_TARGET,
                "config": {"mediaType": t::EMPTY_CONFIG, "digest": config, "size": 2},
                "layers": [{"mediaType": t::ZIP_LAYER, "digest": layer, "size": zip.len()}],
            }))
            .unwrap();
            let digest = sha256_digest(&manifest);
            self.push_manifest(repo, &digest, t::MANIFEST, &manifest);
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
        self.push_manifest(repo, &version.replace('+', "_"), t::INDEX, &index)
    }
}

impl OciRegistry {
    /// Publish a module package (`zip`) into `repo` under `tag` in OpenTofu's layout: a
    /// manifest whose one layer is the zip. Returns the manifest's digest.
    pub fn push_module(&self, repo: &str, tag: &str, zip: &[u8]) -> String {
        use serde_json::json;
        use tofu_layout as t;
        let config = self.push_blob(repo, b"{}");
        let layer = self.push_blob(repo, zip);
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": t::MANIFEST,
            "artifactType": t::MODULE,
            "config": {"mediaType": t::EMPTY_CONFIG, "digest": config, "size": 2},
            "layers": [{"mediaType": t::ZIP_LAYER, "digest": layer, "size": zip.len()}],
        }))
        .unwrap();
        self.push_manifest(repo, tag, t::MANIFEST, &manifest)
    }
}
