//! [`TestRegistry`]: a provider origin registry and a network mirror on one loopback
//! [`Server`], with `SHA256SUMS` signed by a [`GpgKey`] made at test time.
//!
//! ```text
//! /.well-known/terraform.json                          service discovery ([`TestRegistry::start_tls`])
//! /v1/providers/NS/TYPE/versions
//! /v1/providers/NS/TYPE/VERSION/download/OS/ARCH       download metadata (JSON)
//! /files/NS/TYPE/VERSION/SHA256SUMS(.sig), /files/.../terraform-provider-TYPE_VERSION_OS_ARCH.zip
//! /mirror/HOST/NS/TYPE/index.json, /mirror/HOST/NS/TYPE/VERSION.json (relative archive URLs)
//! /mfiles/<zip>
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::gpg::GpgKey;
use crate::mirror::{self, PkgFile};
use crate::server::Server;
use crate::NULL_PROVIDER_FILE;

/// A registry + network mirror fixture.
#[derive(Debug)]
pub struct TestRegistry {
    /// The HTTP server.
    pub server: Server,
    /// The signing key.
    pub key: GpgKey,
    versions: Mutex<BTreeMap<String, BTreeMap<String, Vec<String>>>>,
    mirror_versions: Mutex<BTreeMap<String, Vec<String>>>,
    /// Publish dates given in the versions list, by (NS/TYPE, version).
    dates: Mutex<BTreeMap<(String, String), String>>,
    /// The signing key's `trust_signature` in later publications (empty: none).
    trust_signature: Mutex<String>,
}

impl TestRegistry {
    /// Start a server and make a key.
    pub fn start() -> TestRegistry {
        TestRegistry {
            server: Server::start(),
            key: GpgKey::generate(),
            versions: Mutex::default(),
            mirror_versions: Mutex::default(),
            dates: Mutex::default(),
            trust_signature: Mutex::default(),
        }
    }

    /// Start an HTTPS server (see [`Server::start_tls`]) and make a key. The server also
    /// answers service discovery, so [`TestRegistry::host`] (`localhost:PORT`) works as the
    /// host of a provider source address with no `host` block; write the CA for
    /// `SSL_CERT_FILE` with [`TestRegistry::write_ca`].
    pub fn start_tls() -> TestRegistry {
        let reg = TestRegistry {
            server: Server::start_tls(&[]),
            key: GpgKey::generate(),
            versions: Mutex::default(),
            mirror_versions: Mutex::default(),
            dates: Mutex::default(),
            trust_signature: Mutex::default(),
        };
        reg.server.route(
            "/.well-known/terraform.json",
            "application/json",
            r#"{"providers.v1":"/v1/providers/"}"#,
        );
        reg
    }

    /// `localhost:PORT`: a registry host (for provider source addresses) that resolves to
    /// this server.
    pub fn host(&self) -> String {
        format!("localhost:{}", self.server.port())
    }

    /// Write the PEM of the CA of an HTTPS registry to `path` (for `SSL_CERT_FILE`) and
    /// return the path. Panics for a plain HTTP registry.
    pub fn write_ca(&self, path: &Path) -> PathBuf {
        self.server
            .ca()
            .expect("an HTTPS registry (TestRegistry::start_tls)")
            .write_pem(path)
    }

    /// The `providers.v1` base URL.
    pub fn providers_url(&self) -> String {
        format!("{}/v1/providers/", self.server.url())
    }

    /// The network mirror base URL.
    pub fn mirror_url(&self) -> String {
        format!("{}/mirror/", self.server.url())
    }

    /// Publish `hashicorp/null` 2.1.2 ([`TestRegistry::publish`]): the real provider for
    /// linux_amd64 and, for darwin_amd64, a stand-in with other bytes (a second platform's
    /// hashes for the lock file). Returns the SHA256SUMS text.
    pub fn publish_null(&self) -> String {
        let other = mirror::zip_bytes(&[PkgFile {
            path: NULL_PROVIDER_FILE,
            contents: b"not for this platform",
            executable: true,
        }]);
        self.publish(
            "hashicorp/null",
            mirror::NULL_VERSION,
            &[
                ("linux_amd64", mirror::zip_bytes(&mirror::null_files())),
                ("darwin_amd64", other),
            ],
        )
    }

    /// Publish `ns_type` (`NS/TYPE`) `version` with one zip per platform (`OS_ARCH`); signs
    /// the SHA256SUMS. Returns the SHA256SUMS text.
    pub fn publish(&self, ns_type: &str, version: &str, zips: &[(&str, Vec<u8>)]) -> String {
        self.publish_with_packages(ns_type, version, zips, None)
    }

    /// [`TestRegistry::publish`] with `packages` (OpenTofu ≥ 1.12's every-platform hashes,
    /// as given) in every platform's download metadata.
    pub fn publish_with_packages(
        &self,
        ns_type: &str,
        version: &str,
        zips: &[(&str, Vec<u8>)],
        packages: Option<serde_json::Value>,
    ) -> String {
        self.publish_signed_by(ns_type, version, zips, packages, true)
    }

    /// [`TestRegistry::publish`] with no `signing_keys` in the download metadata (the
    /// SHA256SUMS still signed), as OpenTofu's registry serves a provider published without
    /// keys.
    pub fn publish_without_keys(
        &self,
        ns_type: &str,
        version: &str,
        zips: &[(&str, Vec<u8>)],
    ) -> String {
        self.publish_signed_by(ns_type, version, zips, None, false)
    }

    fn publish_signed_by(
        &self,
        ns_type: &str,
        version: &str,
        zips: &[(&str, Vec<u8>)],
        packages: Option<serde_json::Value>,
        with_keys: bool,
    ) -> String {
        let kind = ns_type.rsplit('/').next().unwrap();
        let files = format!("/files/{ns_type}/{version}");
        let mut sums = String::new();
        let mut sorted: Vec<_> = zips.iter().collect();
        sorted.sort_by_key(|(p, _)| *p);
        for (platform, zip) in &sorted {
            let name = format!("terraform-provider-{kind}_{version}_{platform}.zip");
            sums.push_str(&format!("{}  {name}\n", hex::encode(Sha256::digest(zip))));
            self.server
                .route(&format!("{files}/{name}"), "application/zip", zip.clone());
        }
        self.server
            .route(&format!("{files}/SHA256SUMS"), "text/plain", sums.clone());
        self.server.route(
            &format!("{files}/SHA256SUMS.sig"),
            "application/octet-stream",
            self.key.sign(sums.as_bytes()),
        );
        for (platform, zip) in &sorted {
            let (os, arch) = platform.split_once('_').unwrap();
            let name = format!("terraform-provider-{kind}_{version}_{platform}.zip");
            let mut meta = serde_json::json!({
                "protocols": ["5.0"],
                "os": os,
                "arch": arch,
                "filename": name,
                "download_url": format!("{}{files}/{name}", self.server.url()),
                "shasums_url": format!("{}{files}/SHA256SUMS", self.server.url()),
                "shasums_signature_url": format!("{}{files}/SHA256SUMS.sig", self.server.url()),
                "shasum": hex::encode(Sha256::digest(zip)),
                "signing_keys": {"gpg_public_keys": [{
                    "key_id": self.key.key_id,
                    "ascii_armor": self.key.armor,
                    "trust_signature": *self.trust_signature.lock().unwrap(),
                    "source": "tstore tests",
                    "source_url": null
                }]}
            });
            if let Some(packages) = &packages {
                meta["packages"] = packages.clone();
            }
            if !with_keys {
                meta["signing_keys"] = serde_json::json!({"gpg_public_keys": []});
            }
            self.server.route(
                &format!("/v1/providers/{ns_type}/{version}/download/{os}/{arch}"),
                "application/json",
                meta.to_string(),
            );
        }
        self.versions
            .lock()
            .unwrap()
            .entry(ns_type.to_owned())
            .or_default()
            .insert(
                version.to_owned(),
                sorted.iter().map(|(p, _)| p.to_string()).collect(),
            );
        self.route_versions(ns_type);
        sums
    }

    /// Give the signing key `trust_signature` (an armored detached signature over the key's
    /// binary form, as HashiCorp's partners key makes one) in later publications.
    pub fn set_trust_signature(&self, trust_signature: &str) {
        *self.trust_signature.lock().unwrap() = trust_signature.to_owned();
    }

    /// List `ns_type` `version` with `published_at` (RFC 3339), as the public registries'
    /// APIs date their versions (the protocol has no date).
    pub fn date(&self, ns_type: &str, version: &str, published_at: &str) {
        self.dates.lock().unwrap().insert(
            (ns_type.to_owned(), version.to_owned()),
            published_at.to_owned(),
        );
        self.route_versions(ns_type);
    }

    /// Serve the versions list of `ns_type`.
    fn route_versions(&self, ns_type: &str) {
        let all = self.versions.lock().unwrap();
        let dates = self.dates.lock().unwrap();
        let Some(entry) = all.get(ns_type) else {
            return;
        };
        let doc = serde_json::json!({
            "versions": entry.iter().map(|(v, platforms)| {
                let mut listed = serde_json::json!({
                    "version": v,
                    "protocols": ["5.0"],
                    "platforms": platforms.iter().map(|p| {
                        let (os, arch) = p.split_once('_').unwrap();
                        serde_json::json!({"os": os, "arch": arch})
                    }).collect::<Vec<_>>(),
                });
                if let Some(at) = dates.get(&(ns_type.to_owned(), v.clone())) {
                    listed["published_at"] = serde_json::json!(at);
                }
                listed
            }).collect::<Vec<_>>()
        });
        self.server.route(
            &format!("/v1/providers/{ns_type}/versions"),
            "application/json",
            doc.to_string(),
        );
    }

    /// Publish `addr` (`HOST/NS/TYPE`) `version` on the network mirror: one
    /// `(OS_ARCH, zip, hashes)` per platform; archive URLs are relative.
    pub fn publish_mirror(
        &self,
        addr: &str,
        version: &str,
        archives: &[(&str, Vec<u8>, Vec<String>)],
    ) {
        let kind = addr.rsplit('/').next().unwrap();
        let mut doc = serde_json::Map::new();
        for (platform, zip, hashes) in archives {
            let name = format!("terraform-provider-{kind}_{version}_{platform}.zip");
            self.server
                .route(&format!("/mfiles/{name}"), "application/zip", zip.clone());
            let mut entry = serde_json::json!({"url": format!("../../../../mfiles/{name}")});
            if !hashes.is_empty() {
                entry["hashes"] = serde_json::json!(hashes);
            }
            doc.insert(platform.to_string(), entry);
        }
        self.server.route(
            &format!("/mirror/{addr}/{version}.json"),
            "application/json",
            serde_json::json!({"archives": doc}).to_string(),
        );
        let mut all = self.mirror_versions.lock().unwrap();
        let list = all.entry(addr.to_owned()).or_default();
        list.push(version.to_owned());
        let index: serde_json::Map<String, serde_json::Value> = list
            .iter()
            .map(|v| (v.clone(), serde_json::json!({})))
            .collect();
        self.server.route(
            &format!("/mirror/{addr}/index.json"),
            "application/json",
            serde_json::json!({"versions": index}).to_string(),
        );
    }

    /// Write a CLI config to `path`: a `host` block pointing each of `hosts` at this
    /// registry (plain HTTP), then `installation` (the body of `provider_installation`).
    pub fn write_cli_config(&self, path: &Path, hosts: &[&str], installation: &str) -> PathBuf {
        let mut text = String::new();
        for host in hosts {
            text.push_str(&format!(
                "host \"{host}\" {{\n  services = {{\n    \"providers.v1\" = \"{}\"\n  }}\n}}\n\n",
                self.providers_url()
            ));
        }
        text.push_str(&format!("provider_installation {{\n{installation}\n}}\n"));
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).unwrap();
        }
        fs_err::write(path, text).unwrap();
        path.to_path_buf()
    }

    /// [`TestRegistry::write_cli_config`] with no `host` block and the network mirror
    /// ([`TestRegistry::mirror_url`]) as the only installation method.
    pub fn write_mirror_cli_config(&self, path: &Path) -> PathBuf {
        let installation = format!(
            "  network_mirror {{\n    url = \"{}\"\n  }}",
            self.mirror_url()
        );
        self.write_cli_config(path, &[], &installation)
    }
}
