//! Where a provider's versions can be had: every installation method that matches its
//! address, asked for the versions it lists.

use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::cliconfig::InstallMethodKind;
use tstore_tofu::version::Version;

use super::is_store_view;
use crate::net::discovery;
use crate::net::oci::OciClient;
use crate::net::LazyHttpClient;
use crate::providers::sources::fs_mirror::{FilesystemMirror, MirrorPackage};
use crate::providers::sources::net_mirror::NetworkMirror;
use crate::providers::sources::oci_mirror::OciMirror;
use crate::providers::sources::registry::Registry;
use crate::providers::{InstallError, ProviderOptions, RemoteError};

/// Where a version of a provider can be had.
pub(crate) enum Candidate {
    /// A package in a filesystem mirror.
    Fs(MirrorPackage),
    /// A version listed by the provider's origin registry.
    Registry {
        registry: Registry,
        version: Version,
        platforms: Vec<Platform>,
        /// When the registry says it was published, if it does (the cooldown).
        published: Option<u64>,
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
    pub(super) fn version(&self) -> &Version {
        match self {
            Candidate::Fs(p) => &p.version,
            Candidate::Registry { version, .. }
            | Candidate::Net { version, .. }
            | Candidate::Oci { version, .. } => version,
        }
    }
}

/// Every candidate of `addr` from the methods whose patterns match it, in method order
/// (the first method holding a version wins, as in tofu).
pub(crate) fn available_packages(
    opts: &ProviderOptions,
    http: &LazyHttpClient<'_>,
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
        cli_config: opts.cli_config.clone(),
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
            InstallMethodKind::NetworkMirror {
                url,
                trust_all_hashes,
            } => {
                locations.push(format!("{url} (network mirror)"));
                let http = http.get().map_err(InstallError::https_setup)?;
                let what = format!("network mirror {url}");
                let host = url::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default();
                let token = opts
                    .workdir
                    .network
                    .credentials
                    .token(&host)
                    .map(str::to_owned);
                let mut mirror = NetworkMirror::new(url, token)
                    .map_err(|e| remote_err(what.clone(), e.into()))?;
                mirror.trust_all_hashes = *trust_all_hashes
                    && opts
                        .workdir
                        .tool
                        .follows(&tstore_tofu::tool_version::TRUSTED_MIRROR_HASHES);
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
                let http = http.get().map_err(InstallError::https_setup)?;
                let client = match &oci_client {
                    Some(client) => std::sync::Arc::clone(client),
                    None => {
                        let credentials = opts
                            .workdir
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
                let http = http.get().map_err(InstallError::https_setup)?;
                let what = format!("registry {}", addr.host);
                let token = opts
                    .workdir
                    .network
                    .credentials
                    .token(&addr.host)
                    .map(str::to_owned);
                let base = discovery::discover(
                    http,
                    &opts.workdir.network.hosts,
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
                    published: v.published,
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
fn under_other_flavor(
    opts: &ProviderOptions,
    addr: &ProviderAddr,
) -> Option<(String, &'static str)> {
    use tstore_tofu::flavor::Flavor;
    if addr.host != opts.workdir.flavor.default_registry_host() {
        return None;
    }
    let other = match opts.workdir.flavor {
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
