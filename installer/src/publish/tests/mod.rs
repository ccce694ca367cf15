//! The push's own tests: stores of their own, provider zips built here, and for what goes
//! over the network a real OCI registry (Debian's `docker-registry`, one per test, from
//! `tstore_test_support::oci_registry`), read back through its own HTTP API.

mod module;
mod provider;
mod selection;

use std::io::Read as _;
use std::path::Path;

use tempfile::TempDir;
use tstore_store::{HashRecord, PackageKey, Store};
use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::oci_registry::OciRegistry;

use super::oci_client;
use crate::net::oci::{OciClient, OciRepository};
use crate::net::NetworkSettings;

/// The host short provider addresses take in these tests.
const HOST: &str = "registry.opentofu.org";

/// A store of its own in a temp dir, keeping source zips when `keep` (as
/// `--keep-archives` makes it).
struct TestStore {
    tmp: TempDir,
    store: Store,
}

impl TestStore {
    fn new(keep: bool) -> TestStore {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store"))
            .unwrap()
            .with_kept_archives(keep);
        TestStore { tmp, store }
    }

    /// Commit `registry.opentofu.org/hashicorp/TYPE` `version` for `platform` from a
    /// source zip whose one file, the executable, holds `contents`; the store keeps that
    /// zip when it keeps archives and `keep_zip`. Returns the source zip.
    fn add_provider(
        &self,
        kind: &str,
        version: &str,
        platform: &str,
        contents: &[u8],
        keep_zip: bool,
    ) -> Vec<u8> {
        let zip = provider_zip(kind, version, contents);
        let path = self
            .tmp
            .path()
            .join(format!("{kind}_{version}_{platform}.zip"));
        fs_err::write(&path, &zip).unwrap();
        let archive = if keep_zip {
            self.store.ingest().zip_keeping_it(&path).unwrap()
        } else {
            self.store.ingest().zip(&path).unwrap()
        };
        let key = PackageKey::provider(format!("{HOST}/hashicorp/{kind}"), version, platform);
        let hashes = [
            HashRecord::verified_locally(archive.ingested.h1),
            HashRecord::verified_locally(archive.zh),
        ];
        self.store
            .commit_package(&key, &archive.ingested.tree, &hashes, None)
            .unwrap();
        zip
    }

    /// Commit the module package `id` with `files` (path, contents).
    fn add_module(&self, id: &str, files: &[(&str, &str)]) {
        let dir = self.tmp.path().join("module-source").join(id);
        for (path, contents) in files {
            let path = dir.join(path);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(path, contents).unwrap();
        }
        let ingested = self.store.ingest().module_dir(&dir).unwrap();
        let hashes: Vec<HashRecord> = ingested
            .h1
            .into_iter()
            .map(HashRecord::verified_locally)
            .collect();
        self.store
            .commit_package(&PackageKey::module(id), &ingested.tree, &hashes, None)
            .unwrap();
    }
}

/// A provider's source zip as releases are built: one executable,
/// `terraform-provider-TYPE_vVERSION`, holding `contents`.
fn provider_zip(kind: &str, version: &str, contents: &[u8]) -> Vec<u8> {
    let name = format!("terraform-provider-{kind}_v{version}");
    mirror::zip_bytes(&[PkgFile {
        path: &name,
        contents,
        executable: true,
    }])
}

/// A zip's entries as (name, contents, unix mode bits).
fn zip_entries(zip: &[u8]) -> Vec<(String, Vec<u8>, u32)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).unwrap();
            let mut contents = Vec::new();
            entry.read_to_end(&mut contents).unwrap();
            let mode = entry.unix_mode().unwrap_or_default() & 0o777;
            (entry.name().to_owned(), contents, mode)
        })
        .collect()
}

/// A running registry and a client of the code under test that trusts its CA.
struct Registry {
    registry: OciRegistry,
    client: OciClient,
    _ca: TempDir,
}

impl Registry {
    fn start() -> Registry {
        let registry = OciRegistry::start();
        let ca = tempfile::tempdir().unwrap();
        let network = NetworkSettings {
            ssl_cert_file: Some(registry.write_ca(&ca.path().join("ca.pem"))),
            ..NetworkSettings::default()
        };
        let client = oci_client(&network).unwrap();
        Registry {
            registry,
            client,
            _ca: ca,
        }
    }

    /// `localhost:PORT/path`: a push target (after `oci://`) or a `registry/repository`.
    fn at(&self, path: &str) -> String {
        format!("{}/{path}", self.registry.host())
    }

    fn repository(&self, name: &str) -> OciRepository {
        OciRepository {
            registry: self.registry.host(),
            name: name.to_owned(),
        }
    }

    /// The manifest or index `repo:reference` names, read as `accept`: the document, its
    /// bytes' digest and its size.
    fn document(&self, repo: &str, reference: &str, accept: &str) -> Document {
        let bytes = self
            .registry
            .get(&format!("/v2/{repo}/manifests/{reference}"), accept);
        Document {
            json: serde_json::from_slice(&bytes).unwrap(),
            digest: sha256_digest(&bytes),
            size: bytes.len(),
        }
    }

    /// The blob `digest` of `repo`.
    fn blob(&self, repo: &str, digest: &str) -> Vec<u8> {
        self.registry
            .get(&format!("/v2/{repo}/blobs/{digest}"), "*/*")
    }

    /// How many blob uploads the registry has started.
    fn uploads(&self) -> usize {
        self.requests("POST ")
    }

    /// How many requests the registry has logged whose line starts with `prefix`.
    fn requests(&self, prefix: &str) -> usize {
        let requests = self.registry.requests();
        requests.iter().filter(|l| l.starts_with(prefix)).count()
    }
}

/// A manifest or index as the registry serves it.
struct Document {
    json: serde_json::Value,
    digest: String,
    size: usize,
}

fn sha256_digest(bytes: &[u8]) -> String {
    tstore_test_support::oci_registry::sha256_digest(bytes)
}

/// The empty config every manifest names.
fn empty_config() -> serde_json::Value {
    serde_json::json!({
        "mediaType": "application/vnd.oci.empty.v1+json",
        "digest": sha256_digest(b"{}"),
        "size": 2,
    })
}

/// Make a store's blob file writable again (blobs are read-only), to damage it.
fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}
