//! Phase 1 for one provider: select its version, find a package for it in the installation
//! methods, get that package into the store (or recognize it there) and check it against
//! the lock file. Nothing here links or writes the lock file.

mod download;
mod from_store;
mod fs_mirror;
mod hashes;
mod net_mirror;
mod oci_mirror;
mod registry;

use std::collections::BTreeSet;
use std::path::PathBuf;

use tstore_store::{Hash, HashRecord, PackageKey, SourceFingerprint, Store, TreeId};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::cliconfig::InstallMethodKind;
use tstore_tofu::lockfile::LockedProvider;
use tstore_tofu::version::{newest_matching, Version, VersionConstraints};

pub(crate) use self::download::download_and_ingest;
pub(crate) use self::from_store::{from_store_by_lock, is_store_view, reuse};
pub use self::fs_mirror::ingest_mirror_package;
pub(crate) use self::fs_mirror::obtain_fs;
pub(crate) use self::hashes::{auth_summary, join_hashes, record};
pub(crate) use self::net_mirror::obtain_net;
pub(crate) use self::oci_mirror::obtain_oci;
pub(crate) use self::registry::obtain_registry;
use crate::net::discovery;
use crate::net::http::HttpClient;
use crate::net::oci::OciClient;
use crate::providers::sources::fs_mirror::{FilesystemMirror, MirrorPackage};
use crate::providers::sources::net_mirror::NetworkMirror;
use crate::providers::sources::oci_mirror::OciMirror;
use crate::providers::sources::registry::Registry;
use crate::providers::{
    display_name, Event, InitOptions, InstallError, ObtainMode, Obtained, Planned, RemoteError,
    Reporter, LOCK_FILE_NAME,
};

/// Where a version of a provider can be had.
pub(crate) enum Candidate {
    /// A package in a filesystem mirror.
    Fs(MirrorPackage),
    /// A version listed by the provider's origin registry.
    Registry {
        registry: Registry,
        version: Version,
        platforms: Vec<Platform>,
    },
    /// A version listed by a network mirror.
    Net {
        mirror: NetworkMirror,
        version: Version,
    },
    /// A version tagged in an OCI mirror.
    Oci {
        mirror: OciMirror,
        client: std::sync::Arc<OciClient>,
        version: Version,
    },
}

impl Candidate {
    fn version(&self) -> &Version {
        match self {
            Candidate::Fs(p) => &p.version,
            Candidate::Registry { version, .. }
            | Candidate::Net { version, .. }
            | Candidate::Oci { version, .. } => version,
        }
    }
}

/// A package obtained into the store but not yet committed.
pub(crate) struct Obtainment {
    pub(crate) tree: TreeId,
    pub(crate) hashes: Vec<HashRecord>,
    pub(crate) dir_h1: Hash,
    pub(crate) lock_extra: Vec<String>,
    pub(crate) memo: Option<(PathBuf, SourceFingerprint)>,
    pub(crate) source: String,
    pub(crate) auth: String,
    pub(crate) obtained: Obtained,
    /// "current" (archive) or "local" (directory), for the lock mismatch message.
    pub(crate) origin: &'static str,
}

impl Obtainment {
    /// A package the store already holds, recognized by the `zh:` its zip was verified
    /// under: the directory `h1:` and that `zh:` go to the lock, both verified locally.
    pub(crate) fn reused_by_zh(
        tree: TreeId,
        dir_h1: Hash,
        zh: Hash,
        source: String,
        auth: String,
    ) -> Obtainment {
        Obtainment {
            tree,
            hashes: vec![
                record(dir_h1.clone(), true, false, None),
                record(zh.clone(), true, false, None),
            ],
            lock_extra: vec![zh.to_string()],
            dir_h1,
            memo: None,
            source,
            auth,
            obtained: Obtained::InStore,
            origin: "current",
        }
    }

    /// A zip downloaded and ingested now: its directory `h1:`, the `h1:` of the zip's
    /// listing when it differs, and its `zh:`, all verified locally; the lock gets the
    /// directory `h1:` and the `zh:`.
    pub(crate) fn downloaded(
        ingested: tstore_store::IngestedArchive,
        source: String,
        auth: String,
    ) -> Obtainment {
        let mut hashes = vec![record(ingested.ingested.h1.clone(), true, false, None)];
        if ingested.h1_zip != ingested.ingested.h1 {
            hashes.push(record(ingested.h1_zip.clone(), true, false, None));
        }
        hashes.push(record(ingested.zh.clone(), true, false, None));
        Obtainment {
            tree: ingested.ingested.tree,
            dir_h1: ingested.ingested.h1.clone(),
            lock_extra: vec![ingested.zh.to_string()],
            hashes,
            memo: None,
            source,
            auth,
            obtained: Obtained::Downloaded,
            origin: "current",
        }
    }
}

/// Phase 1 for one provider: [`ProviderJob::run`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn obtain(
    store: &Store,
    opts: &InitOptions,
    http: Option<&HttpClient>,
    addr: &ProviderAddr,
    constraints: &VersionConstraints,
    locked: Option<&LockedProvider>,
    reporter: &dyn Reporter,
    mode: ObtainMode,
) -> Result<Planned, InstallError> {
    ProviderJob {
        store,
        opts,
        http,
        addr,
        constraints,
        locked,
        reporter,
        mode,
        display: display_name(addr, opts.flavor),
    }
    .run()
}

/// Phase 1 for one provider, in its steps: the store shortcut, version selection, the
/// first installation method that has the package, the check against the lock file.
struct ProviderJob<'a> {
    store: &'a Store,
    opts: &'a InitOptions,
    /// Present when a network method is configured.
    http: Option<&'a HttpClient>,
    addr: &'a ProviderAddr,
    constraints: &'a VersionConstraints,
    locked: Option<&'a LockedProvider>,
    reporter: &'a dyn Reporter,
    mode: ObtainMode,
    /// The provider as tofu names it in messages.
    display: String,
}

impl ProviderJob<'_> {
    fn run(self) -> Result<Planned, InstallError> {
        if self.mode == ObtainMode::Init {
            if let Some(planned) = from_store_by_lock(
                self.store,
                self.opts,
                self.addr,
                self.constraints,
                self.locked,
                self.reporter,
                &self.display,
            )? {
                return Ok(planned);
            }
        }
        let candidates = available_packages(self.opts, self.http, self.addr)?;
        let version = self.select_version(&candidates)?;
        let key = PackageKey::Provider {
            addr: self.addr.to_string(),
            version: version.to_string(),
            platform: self.opts.platform.to_string(),
        };
        let got = self.first_package(&candidates, &version, &key)?;
        self.check_against_lock(&version, &got)?;
        self.check_executable(&version, &got.tree)?;
        self.plan(version, key, got)
    }

    /// The lock file's version unless `-upgrade` (it must still satisfy the constraints),
    /// else the newest version any method lists that the constraints allow.
    fn select_version(&self, candidates: &[Candidate]) -> Result<Version, InstallError> {
        let constraints_text = self.constraints.to_lock_string();
        match self.locked {
            Some(locked) if !self.opts.upgrade => {
                self.reporter.event(Event::ReusingLocked {
                    provider: &self.display,
                });
                if !self.constraints.matches(&locked.version) {
                    return Err(InstallError::LockedVersionExcluded {
                        provider: self.addr.to_string(),
                        locked: locked.version.clone(),
                        constraints: constraints_text,
                        init: self.opts.flavor.init_command(),
                    });
                }
                Ok(locked.version.clone())
            }
            _ => {
                self.reporter.event(Event::Finding {
                    provider: &self.display,
                    constraints: &constraints_text,
                });
                let versions: BTreeSet<&Version> =
                    candidates.iter().map(Candidate::version).collect();
                newest_matching(versions, self.constraints)
                    .cloned()
                    .ok_or_else(|| InstallError::NoMatchingVersion {
                        provider: self.addr.to_string(),
                        constraints: constraints_text,
                    })
            }
        }
    }

    /// The package from the first method, in CLI configuration order, that has `version`
    /// for this platform, brought into the store.
    fn first_package(
        &self,
        candidates: &[Candidate],
        version: &Version,
        key: &PackageKey,
    ) -> Result<Obtainment, InstallError> {
        let (store, opts, addr) = (self.store, self.opts, self.addr);
        let store_err = |source| InstallError::Store {
            provider: addr.to_string(),
            version: version.clone(),
            source,
        };
        let remote_err = |what: &str, source: RemoteError| InstallError::Remote {
            provider: addr.to_string(),
            version: Some(version.clone()),
            what: what.to_owned(),
            source,
        };
        for candidate in candidates.iter().filter(|c| c.version() == version) {
            let got = match candidate {
                Candidate::Fs(package) if package.platform == opts.platform => {
                    Some(obtain_fs(store, &package.location).map_err(store_err)?)
                }
                Candidate::Registry {
                    registry,
                    platforms,
                    ..
                } if platforms.is_empty() || platforms.contains(&opts.platform) => {
                    let http = self.http.expect("a network method has a client");
                    let verified = registry
                        .verified_package(http, addr, version, &opts.platform)
                        .map_err(|e| remote_err("origin registry", e.into()))?;
                    Some(obtain_registry(
                        store,
                        opts,
                        http,
                        self.reporter,
                        key,
                        addr,
                        version,
                        verified,
                    )?)
                }
                Candidate::Net { mirror, .. } => {
                    let http = self.http.expect("a network method has a client");
                    let archive = mirror
                        .archive(http, addr, version, &opts.platform)
                        .map_err(|e| remote_err("network mirror", e.into()))?;
                    match archive {
                        Some(archive) => Some(obtain_net(
                            store,
                            http,
                            self.reporter,
                            opts.flavor,
                            key,
                            addr,
                            version,
                            archive,
                        )?),
                        None => None,
                    }
                }
                Candidate::Oci { mirror, client, .. } => {
                    let archive = mirror
                        .archive(client, addr, version, &opts.platform)
                        .map_err(|e| remote_err("OCI mirror", e.into()))?;
                    match archive {
                        Some(archive) => Some(obtain_oci(
                            store,
                            client,
                            self.reporter,
                            opts.flavor,
                            key,
                            addr,
                            version,
                            archive,
                        )?),
                        None => None,
                    }
                }
                _ => None,
            };
            if let Some(got) = got {
                return Ok(got);
            }
        }
        Err(if candidates.iter().any(|c| c.version() == version) {
            InstallError::NoPackageForPlatform {
                provider: addr.to_string(),
                version: version.clone(),
                platform: opts.platform.clone(),
            }
        } else {
            InstallError::NoMatchingVersion {
                provider: addr.to_string(),
                constraints: format!("= {version} (the version in the lock file)"),
            }
        })
    }

    /// Under `init`, a lock entry for this version with hashes must record one that was
    /// computed from this very package; a signed `zh:` of another platform's zip says
    /// nothing about this one.
    fn check_against_lock(&self, version: &Version, got: &Obtainment) -> Result<(), InstallError> {
        let Some(locked) = self.locked.filter(|l| {
            self.mode == ObtainMode::Init && &l.version == version && !l.hashes.is_empty()
        }) else {
            return Ok(());
        };
        let matches = got
            .hashes
            .iter()
            .filter(|r| r.disposition.verified_locally)
            .any(|r| locked.hashes.contains(&r.hash.to_string()));
        if matches {
            return Ok(());
        }
        Err(InstallError::ChecksumMismatch {
            display: self.display.clone(),
            provider: self.addr.to_string(),
            version: version.clone(),
            origin: got.origin,
            source_path: got.source.clone(),
            computed: join_hashes(got.hashes.iter().map(|r| r.hash.to_string())),
            lock_path: self.opts.dir.join(LOCK_FILE_NAME).display().to_string(),
            recorded: join_hashes(locked.hashes.iter().cloned()),
        })
    }

    /// A provider package must hold its executable at the top level, named
    /// `terraform-provider-TYPE` alone or followed by `_` or `.` (as tofu finds it:
    /// <https://github.com/opentofu/opentofu/blob/main/internal/providercache/cached_provider.go>).
    fn check_executable(&self, version: &Version, tree: &TreeId) -> Result<(), InstallError> {
        let store_err = |source| InstallError::Store {
            provider: self.addr.to_string(),
            version: version.clone(),
            source,
        };
        let tree = self.store.tree(tree).map_err(store_err)?;
        if has_provider_executable(
            tree.entries().iter().map(|e| e.path.as_str()),
            &self.addr.kind,
        ) {
            return Ok(());
        }
        Err(InstallError::NoProviderExecutable {
            display: self.display.clone(),
            version: version.clone(),
            kind: self.addr.kind.clone(),
        })
    }

    /// What phases 2 and 3 need: the link, its target and the lock file's hashes.
    fn plan(
        self,
        version: Version,
        key: PackageKey,
        got: Obtainment,
    ) -> Result<Planned, InstallError> {
        let relpath = key.view_relpath().map_err(|source| InstallError::Store {
            provider: self.addr.to_string(),
            version: version.clone(),
            source,
        })?;
        let mut lock_hashes: BTreeSet<String> = got.lock_extra.into_iter().collect();
        lock_hashes.insert(got.dir_h1.to_string());
        Ok(Planned {
            link: self.opts.data_dir.path.join(&relpath),
            target: self.opts.mount.join(&relpath),
            addr: self.addr.clone(),
            display: self.display,
            version,
            constraints: self.constraints.clone(),
            key,
            tree: got.tree,
            hashes: got.hashes,
            lock_hashes,
            memo: got.memo,
            source: got.source,
            auth: got.auth,
            obtained: got.obtained,
        })
    }
}

/// Every candidate of `addr` from the methods whose patterns match it, in method order
/// (the first method holding a version wins, as in tofu).
pub(crate) fn available_packages(
    opts: &InitOptions,
    http: Option<&HttpClient>,
    addr: &ProviderAddr,
) -> Result<Vec<Candidate>, InstallError> {
    let mut found = Vec::new();
    let mut locations = Vec::new();
    let mut oci_client: Option<std::sync::Arc<OciClient>> = None;
    let remote_err = |what: String, source: RemoteError| InstallError::Remote {
        provider: addr.to_string(),
        version: None,
        what,
        source,
    };
    for method in opts.methods.iter().filter(|m| m.matches(addr)) {
        match &method.kind {
            // The store's own view (`tstore cli-config`): what it holds is already
            // in the store, and reading it back through the mount would only re-hash it.
            InstallMethodKind::FilesystemMirror { path } if is_store_view(opts, path) => {
                locations.push(format!("{} (the store itself)", path.display()));
            }
            InstallMethodKind::FilesystemMirror { path } => {
                locations.push(format!("{} (filesystem mirror)", path.display()));
                let mirror = FilesystemMirror { root: path.clone() };
                found.extend(mirror.packages(addr)?.into_iter().map(Candidate::Fs));
            }
            InstallMethodKind::NetworkMirror { url } => {
                locations.push(format!("{url} (network mirror)"));
                let http = http.expect("a network method has a client");
                let what = format!("network mirror {url}");
                let host = url::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default();
                let token = opts.network.credentials.token(&host).map(str::to_owned);
                let mirror = NetworkMirror::new(url, token)
                    .map_err(|e| remote_err(what.clone(), e.into()))?;
                let versions = mirror
                    .versions(http, addr)
                    .map_err(|e| remote_err(what.clone(), e.into()))?;
                found.extend(versions.into_iter().map(|version| Candidate::Net {
                    mirror: mirror.clone(),
                    version,
                }));
            }
            InstallMethodKind::OciMirror {
                repository_template,
            } => {
                let mirror = OciMirror {
                    template: repository_template.clone(),
                };
                let what = format!("OCI mirror {repository_template}");
                let repo = mirror
                    .repository(addr)
                    .map_err(|e| remote_err(what.clone(), e.into()))?;
                locations.push(format!("{repo} (OCI mirror)"));
                let http = http.expect("a network method has a client");
                let client = match &oci_client {
                    Some(client) => std::sync::Arc::clone(client),
                    None => {
                        let credentials = opts
                            .network
                            .oci_logins()
                            .map_err(|e| remote_err(what.clone(), e.into()))?;
                        let client = std::sync::Arc::new(OciClient::new(http.clone(), credentials));
                        oci_client = Some(std::sync::Arc::clone(&client));
                        client
                    }
                };
                let versions = mirror
                    .versions(&client, addr)
                    .map_err(|e| remote_err(what.clone(), e.into()))?;
                found.extend(versions.into_iter().map(|version| Candidate::Oci {
                    mirror: mirror.clone(),
                    client: std::sync::Arc::clone(&client),
                    version,
                }));
            }
            InstallMethodKind::Direct => {
                locations.push(format!("{} (origin registry)", addr.host));
                let http = http.expect("a network method has a client");
                let what = format!("registry {}", addr.host);
                let token = opts
                    .network
                    .credentials
                    .token(&addr.host)
                    .map(str::to_owned);
                let base = discovery::discover(
                    http,
                    &opts.network.hosts,
                    &addr.host,
                    "providers.v1",
                    token.as_deref(),
                )
                .map_err(|e| remote_err(what.clone(), e.into()))?;
                let registry = Registry { base, token };
                let versions = registry
                    .versions(http, addr)
                    .map_err(|e| remote_err(what.clone(), e.into()))?;
                found.extend(versions.into_iter().map(|v| Candidate::Registry {
                    registry: registry.clone(),
                    version: v.version,
                    platforms: v.platforms,
                }));
            }
            InstallMethodKind::DevOverrides(_) => {}
        }
    }
    if found.is_empty() {
        return Err(InstallError::NotFound {
            provider: addr.to_string(),
            locations,
            other_flavor: under_other_flavor(opts, addr),
            cli_config: opts.cli_config.clone(),
        });
    }
    Ok(found)
}

/// A provider of the flavor's default registry host that no method has may sit in a
/// filesystem mirror under the other tool's host (a mirror made for terraform, used with
/// the tofu flavor): that address and the flavor using its host, for the hint.
fn under_other_flavor(opts: &InitOptions, addr: &ProviderAddr) -> Option<(String, &'static str)> {
    use tstore_tofu::flavor::Flavor;
    if addr.host != opts.flavor.default_registry_host() {
        return None;
    }
    let other = match opts.flavor {
        Flavor::Tofu => Flavor::Terraform,
        Flavor::Terraform => Flavor::Tofu,
    };
    let moved = ProviderAddr {
        host: other.default_registry_host().to_owned(),
        ..addr.clone()
    };
    opts.methods.iter().find_map(|m| match &m.kind {
        InstallMethodKind::FilesystemMirror { path } => {
            let mirror = FilesystemMirror { root: path.clone() };
            let has = mirror.packages(&moved).is_ok_and(|p| !p.is_empty());
            has.then(|| (moved.to_string(), other.as_str()))
        }
        _ => None,
    })
}

/// Whether the package files (`/`-separated paths of regular files and symlinks) include
/// a top-level `terraform-provider-KIND`, `terraform-provider-KIND_…` or
/// `terraform-provider-KIND.…`.
fn has_provider_executable<'a>(mut paths: impl Iterator<Item = &'a str>, kind: &str) -> bool {
    let prefix = format!("terraform-provider-{kind}");
    paths.any(|p| {
        !p.contains('/')
            && p.strip_prefix(&prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['_', '.']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_executable_names() {
        for (paths, kind, want) in [
            (&["terraform-provider-null_v2.1.2_x4"][..], "null", true),
            (&["terraform-provider-null"], "null", true),
            (&["terraform-provider-null.exe"], "null", true),
            (&["README.md", "terraform-provider-null_v1"], "null", true),
            (&["terraform-provider-nullish"], "null", false),
            (&["terraform-package"], "package", false),
            (&["bin/terraform-provider-null"], "null", false),
            (&[], "null", false),
        ] {
            assert_eq!(
                has_provider_executable(paths.iter().copied(), kind),
                want,
                "{paths:?} {kind}"
            );
        }
    }
}
