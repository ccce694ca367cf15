//! What an OCI registry's other hosts, and the registry itself, can make tstore do.
//!
//! Credentials belong to the registry's origin and to the token service that origin names:
//! a loopback registry that requires a login hands blobs, uploads and tag pages to a storage
//! host on another port (another origin, `tstore_test_support::oci_split`), which logs every
//! `Authorization` header it receives and never gets one. A tag list is read within bounds.
//!
//! A push (against the real `docker-registry`) gives each provider its own repository and
//! replaces no published package without `--force`.

use std::path::PathBuf;
use std::process::Output;

use tstore_test_support::oci_registry::{sha256_digest, tofu_layout, OciRegistry};
use tstore_test_support::oci_split::{SplitRegistry, StorageAuth};
use tstore_test_support::server::{Response, Server};
use tstore_test_support::{lock_file, mirror, stderr, Layout, TestEnv, NULL_H1};

use tstore_test_support::Tstore;

use crate::common::{TstoreEnv, NULL_CONFIG};
use crate::oci_fixture::{null_zips, oci_cli_config};

const USER: &str = "ci";
const PASSWORD: &str = "registry-password-s3cret";
const REPO: &str = "mirror/hashicorp/null";

/// A [`SplitRegistry`] holding the null provider, and an environment whose docker-style
/// config holds the registry's login, with an `oci_mirror` on the registry.
struct Split {
    registry: SplitRegistry,
    env: TestEnv,
    ca: PathBuf,
    cfg: PathBuf,
}

impl Split {
    fn start(storage: StorageAuth) -> Split {
        Split::in_env(TestEnv::new(), storage)
    }

    fn in_env(env: TestEnv, storage: StorageAuth) -> Split {
        let registry = SplitRegistry::start(USER, PASSWORD, storage);
        let ca = registry.write_ca(&env.root.path().join("ca.pem"));
        let cfg = oci_cli_config(&env, &registry.host());
        docker_login(&env, &registry.host());
        Split {
            registry,
            env,
            ca,
            cfg,
        }
    }

    /// `tstore init` of a new checkout `name` of the null provider, from the registry.
    fn init(&self, name: &str) -> (PathBuf, Output) {
        let dir = self.env.checkout(name, &[("main.tf", NULL_CONFIG)]);
        let tstore = self.env.tstore().cli_config(&self.cfg);
        let out = tstore.env("SSL_CERT_FILE", &self.ca).init(&dir).output();
        (dir, out)
    }

    /// The storage host got requests, and none carried an `Authorization` header.
    fn assert_storage_got_no_credentials(&self) {
        let seen = self.registry.storage_requests();
        assert!(!seen.is_empty(), "the storage host was never asked");
        for r in &seen {
            assert_eq!(
                r.authorization, None,
                "{} {} carried credentials",
                r.method, r.path
            );
        }
    }

    /// The registry itself got its login (so the storage host's not getting it means
    /// something).
    fn assert_registry_got_the_login(&self) {
        let login = self.registry.login_header();
        assert!(
            self.registry
                .registry_requests()
                .iter()
                .any(|r| r.authorization.as_deref() == Some(login)),
            "the registry never got its login"
        );
    }

    /// No message shows the login or the storage host's URL signature.
    fn assert_no_secret(&self, text: &str) {
        let basic = self.registry.login_header().trim_start_matches("Basic ");
        for secret in [PASSWORD, basic, "storage-signature"] {
            assert!(!text.contains(secret), "{secret:?} shown:\n{text}");
        }
    }
}

/// `~/.docker/config.json` with the login for `host`, as `docker login` writes it.
fn docker_login(env: &TestEnv, host: &str) {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    fs_err::create_dir_all(env.home.join(".docker")).unwrap();
    fs_err::write(
        env.home.join(".docker/config.json"),
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
}

/// A blob GET the registry redirects to its storage host: when that host asks for
/// credentials (Basic, or Bearer naming a token service on itself), tstore sends it nothing —
/// neither the registry's login nor a token from its realm, which it never asks — and fails
/// naming the host; when it serves anonymously, the pull succeeds and it still got nothing.
#[test]
fn registry_credentials_never_reach_the_host_a_blob_is_redirected_to() {
    for storage in [StorageAuth::Bearer, StorageAuth::Basic] {
        let split = Split::start(storage);
        split
            .registry
            .publish_provider(REPO, "2.1.2", &null_zips()[..1]);
        let (dir, out) = split.init("a");
        let err = stderr(&out);
        split.assert_storage_got_no_credentials();
        split.assert_registry_got_the_login();
        assert!(!out.status.success(), "{storage:?}: {err}");
        assert!(
            err.contains("asks for credentials") && err.contains(&split.registry.storage_origin()),
            "{storage:?}: {err}"
        );
        split.assert_no_secret(&err);
        assert!(
            !split
                .registry
                .storage_requests()
                .iter()
                .any(|r| r.path.starts_with("/token")),
            "{storage:?}: the storage host's token service was asked"
        );
        assert!(!dir.join(".terraform.lock.hcl").exists());
    }

    let split = Split::start(StorageAuth::Anonymous);
    split
        .registry
        .publish_provider(REPO, "2.1.2", &null_zips()[..1]);
    let (dir, out) = split.init("b");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(lock_file(&dir).contains(NULL_H1));
    assert!(split
        .registry
        .storage_requests()
        .iter()
        .any(|r| r.method == "GET" && r.path.starts_with("/blobs/sha256:")));
    split.assert_storage_got_no_credentials();
    split.assert_registry_got_the_login();
}

/// A blob redirected to a storage host that cannot be reached: the error names the host
/// but not the signature in the URL's query, which grants access to the blob.
#[test]
fn an_unreachable_storage_host_is_named_without_its_signature() {
    let split = Split::start(StorageAuth::Unreachable);
    split
        .registry
        .publish_provider(REPO, "2.1.2", &null_zips()[..1]);
    let (dir, out) = split.init("a");
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&split.registry.storage_origin()), "{err}");
    split.assert_no_secret(&err);
    assert!(!dir.join(".terraform.lock.hcl").exists());
}

/// A tag list whose next page (`Link: rel="next"`) is on another origin: the page is read
/// without credentials (its version is installed), though the registry's first page
/// needed the login.
#[test]
fn a_tag_page_on_another_origin_is_read_without_credentials() {
    let split = Split::start(StorageAuth::Anonymous);
    let zips = null_zips();
    split.registry.publish_provider(REPO, "2.0.0", &zips[..1]);
    split.registry.publish_provider(REPO, "2.1.2", &zips[..1]);
    split.registry.page_tags_through_storage();
    let (dir, out) = split.init("a");
    assert!(out.status.success(), "{}", stderr(&out));
    // 2.1.2 was listed only on the second page.
    assert!(lock_file(&dir).contains("version     = \"2.1.2\""));
    assert!(split
        .registry
        .storage_requests()
        .iter()
        .any(|r| r.path.contains("/tags/list")));
    split.assert_storage_got_no_credentials();
    split.assert_registry_got_the_login();
}

/// `tstore push` to a registry whose upload sessions continue on another origin (the
/// `Location` of the upload's `POST`): the blobs are uploaded there without credentials,
/// and the push succeeds.
#[test]
fn an_upload_location_on_another_origin_gets_no_credentials() {
    let tstore_test_support::NullMirror { env, cfg, .. } =
        TestEnv::with_null_mirror(Layout::Packed);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let split = Split::in_env(env, StorageAuth::Anonymous);
    let push = split
        .env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &split.ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            split.registry.host()
        ));
    let out = push.ok();
    split.assert_no_secret(&String::from_utf8_lossy(&out.stdout));
    assert!(split.registry.tag(REPO, "2.1.2").is_some());
    let uploads = split
        .registry
        .storage_requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.starts_with("/uploads/"))
        .count();
    assert_eq!(uploads, 2, "the config and the zip");
    split.assert_storage_got_no_credentials();
    split.assert_registry_got_the_login();
}

/// A registry whose tag list never ends (`Link: rel="next"` on every page, each page new
/// versions and other tags): tstore stops at its bound and fails naming the repository and
/// the bound, instead of reading (and keeping) tags without end.
#[test]
fn an_endless_tag_list_is_refused_at_its_bound() {
    let env = TestEnv::new();
    let server = Server::start_tls(&[]);
    let host = server.url().trim_start_matches("https://").to_owned();
    let list = format!("/v2/{REPO}/tags/list");
    let next = list.clone();
    server.route_fn(&list, move |req| {
        let page: u64 = req
            .path
            .split_once("?page=")
            .and_then(|(_, n)| n.parse().ok())
            .unwrap_or(0);
        let tags: Vec<String> = (0..20)
            .flat_map(|i| [format!("{page}.{i}.0"), format!("sha256-{page}-{i}.sig")])
            .collect();
        Response {
            status: 200,
            content_type: "application/json".into(),
            body: serde_json::json!({ "name": REPO, "tags": tags })
                .to_string()
                .into_bytes(),
            headers: vec![(
                "Link".into(),
                format!("<{next}?page={}>; rel=\"next\"", page + 1),
            )],
        }
    });
    let ca = server
        .ca()
        .unwrap()
        .write_pem(&env.root.path().join("ca.pem"));
    let cfg = oci_cli_config(&env, &host);
    let dir = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let init = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&dir);
    let err = stderr(&init.fails());
    assert!(
        err.contains(&format!("the tag list of {host}/{REPO}")) && err.contains("200 pages"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 200, "pages read");
    assert!(!dir.join(".terraform.lock.hcl").exists());

    // Only version tags count towards the bound on tags kept: a list of more other tags
    // than that bound (signatures, builds) is read, and its one version asked for.
    let server = Server::start_tls(&[]);
    let host = server.url().trim_start_matches("https://").to_owned();
    let mut tags: Vec<String> = (0..12_000).map(|i| format!("sha256-{i}.sig")).collect();
    tags.push("2.1.2".into());
    server.route(
        &list,
        "application/json",
        serde_json::json!({ "name": REPO, "tags": tags }).to_string(),
    );
    let ca = server
        .ca()
        .unwrap()
        .write_pem(&env.root.path().join("ca2.pem"));
    let cfg = oci_cli_config(&env, &host);
    let dir = env.checkout("b", &[("main.tf", NULL_CONFIG)]);
    let init = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&dir);
    let err = stderr(&init.fails());
    assert!(!err.contains("tag list"), "{err}");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path == format!("/v2/{REPO}/manifests/2.1.2")),
        "{err}"
    );
}

/// A store holding the null provider (from a packed filesystem mirror, whose zip is
/// returned), a real registry, and `tstore push TARGET [--provider P]…` against it.
struct Pusher {
    env: TestEnv,
    cfg: PathBuf,
    ca: PathBuf,
    registry: OciRegistry,
    zip: Vec<u8>,
}

impl Pusher {
    fn start() -> Pusher {
        let tstore_test_support::NullMirror { env, mirror, cfg } =
            TestEnv::with_null_mirror(Layout::Packed);
        let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
        env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
        let zip = fs_err::read(mirror.join(mirror::NULL_ADDR).join(mirror::packed_name(
            "null",
            "2.1.2",
            "linux_amd64",
        )))
        .unwrap();
        let registry = OciRegistry::start();
        let ca = registry.write_ca(&env.root.path().join("ca.pem"));
        Pusher {
            env,
            cfg,
            ca,
            registry,
            zip,
        }
    }

    /// `tstore push oci://REGISTRY/PATH` with `args` after it.
    fn push(&self, path: &str, args: &[&str]) -> Tstore {
        self.env
            .tstore()
            .cli_config(&self.cfg)
            .env("SSL_CERT_FILE", &self.ca)
            .arg("push")
            .arg(format!("oci://{}/{path}", self.registry.host()))
            .args(args)
    }

    /// The index `repo:2.1.2` names, and its digest.
    fn index(&self, repo: &str) -> (serde_json::Value, String) {
        let bytes = self
            .registry
            .get(&format!("/v2/{repo}/manifests/2.1.2"), tofu_layout::INDEX);
        (
            serde_json::from_slice(&bytes).unwrap(),
            sha256_digest(&bytes),
        )
    }

    /// The upload sessions the registry has started.
    fn uploads(&self) -> usize {
        self.registry
            .requests()
            .iter()
            .filter(|l| l.starts_with("POST "))
            .count()
    }
}

/// The manifest digest an index names for `os`.
fn manifest_for(index: &serde_json::Value, os: &str) -> String {
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["platform"]["os"] == os)
        .and_then(|m| m["digest"].as_str())
        .unwrap_or_else(|| panic!("no {os} manifest in {index}"))
        .to_owned()
}

/// A push target is checked as an `oci_mirror`'s template is, the `--provider` selections
/// standing for its `include` patterns: without `${type}`, every provider of a namespace
/// would share one repository and each version's tag; without `${hostname}` (and no
/// `--provider`), every host's providers would. Such a push fails before the registry is
/// asked anything; one selected provider fixes every part, and that push goes through.
#[test]
fn a_push_target_must_give_each_provider_its_own_repository() {
    let p = Pusher::start();
    for (path, args, needle) in [
        (
            "mirror/${hostname}/${namespace}",
            &[][..],
            "must use ${type}",
        ),
        (
            "mirror/${namespace}/${type}",
            &[][..],
            "must use ${hostname}",
        ),
        (
            "mirror/${namespace}",
            &[
                "--provider",
                "hashicorp/null",
                "--provider",
                "hashicorp/random",
            ][..],
            "must use ${type}",
        ),
    ] {
        let err = stderr(&p.push(path, args).fails());
        assert!(err.contains(needle), "{path}: {err}");
        assert!(err.contains("--provider"), "{path}: {err}");
    }
    assert!(
        p.registry
            .requests()
            .iter()
            .all(|l| l.starts_with("GET /v2/ ")),
        "the registry was asked: {:#?}",
        p.registry.requests()
    );
    p.push("mirror/${namespace}", &["--provider", "hashicorp/null"])
        .ok();
    let (index, _) = p.index("mirror/hashicorp");
    manifest_for(&index, "linux");
}

/// A tag whose linux_amd64 manifest holds another zip names another package: the push
/// fails naming the tag and the platform, uploads nothing and leaves the tag alone; with
/// `--force` the store's package takes that platform, and the platform the store lacks
/// (darwin_amd64) stays. A tag naming only other platforms gains the store's without
/// `--force`, and a second push changes nothing. A tag whose manifest holds the same zip
/// (an index and manifest written by another tool) names the same package: it is left as
/// it is.
#[test]
fn a_push_does_not_replace_a_tag_naming_another_package() {
    let p = Pusher::start();
    let provider = ["--provider", "hashicorp/null"];
    let other_build = mirror::zip_bytes(&[mirror::PkgFile {
        path: tstore_test_support::NULL_PROVIDER_FILE,
        contents: b"another build of null 2.1.2",
        executable: true,
    }]);
    let darwin = null_zips().remove(1);

    // Another package for linux_amd64.
    let theirs = p.registry.push_provider(
        "taken/hashicorp/null",
        "2.1.2",
        &[("linux_amd64", other_build), darwin.clone()],
    );
    let (their_index, _) = p.index("taken/hashicorp/null");
    let uploads = p.uploads();
    let err = stderr(&p.push("taken/${namespace}/${type}", &provider).fails());
    assert!(
        err.contains(&format!(
            "{}/taken/hashicorp/null:2.1.2 already names another package for linux_amd64",
            p.registry.host()
        )) && err.contains("--force"),
        "{err}"
    );
    assert_eq!(p.index("taken/hashicorp/null").1, theirs, "the tag moved");
    assert_eq!(p.uploads(), uploads, "something was uploaded");

    p.push(
        "taken/${namespace}/${type}",
        &["--force", "--provider", "hashicorp/null"],
    )
    .ok();
    let (index, digest) = p.index("taken/hashicorp/null");
    assert_ne!(digest, theirs);
    let linux = manifest_for(&index, "linux");
    let manifest: serde_json::Value = serde_json::from_slice(&p.registry.get(
        &format!("/v2/taken/hashicorp/null/manifests/{linux}"),
        tofu_layout::MANIFEST,
    ))
    .unwrap();
    assert_eq!(manifest["layers"][0]["digest"], sha256_digest(&p.zip));
    assert_eq!(
        manifest_for(&index, "darwin"),
        manifest_for(&their_index, "darwin")
    );

    // Only another platform: the store's joins it.
    p.registry
        .push_provider("partial/hashicorp/null", "2.1.2", &[darwin]);
    let (their_index, _) = p.index("partial/hashicorp/null");
    p.push("partial/${namespace}/${type}", &provider).ok();
    let (index, digest) = p.index("partial/hashicorp/null");
    assert_eq!(index["manifests"].as_array().unwrap().len(), 2, "{index}");
    assert_eq!(
        manifest_for(&index, "darwin"),
        manifest_for(&their_index, "darwin")
    );
    p.push("partial/${namespace}/${type}", &provider).ok();
    assert_eq!(p.index("partial/hashicorp/null").1, digest);

    // The same zip under another tool's manifest (and index, which lists linux_amd64
    // before darwin_amd64): the same package, and the tag stays as it is.
    let same = p.registry.push_provider(
        "same/hashicorp/null",
        "2.1.2",
        &[("linux_amd64", p.zip.clone()), null_zips().remove(1)],
    );
    p.push("same/${namespace}/${type}", &provider).ok();
    assert_eq!(p.index("same/hashicorp/null").1, same);
}

/// A registry that names a token service over plain HTTP: the login is not sent there in
/// clear text (the service sees no request), and the error says why.
#[test]
fn a_login_never_goes_to_a_token_service_over_plain_http() {
    let split = Split::start(StorageAuth::Anonymous);
    split
        .registry
        .publish_provider(REPO, "2.1.2", &null_zips()[..1]);
    let plain = tstore_test_support::server::Server::start();
    plain.route("/token", "application/json", r#"{"token":"t"}"#);
    split
        .registry
        .name_token_realm(&format!("{}/token", plain.url()));
    let (dir, out) = split.init("a");
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not HTTPS"), "{err}");
    assert!(
        plain.requests().is_empty(),
        "the plain-HTTP token service was asked"
    );
    split.assert_no_secret(&err);
    assert!(!dir.join(".terraform.lock.hcl").exists());
}
