//! Phase 1 for one provider: select its version, find a package for it in the installation
//! methods, get that package into the store (or recognize it there) and check it against
//! the lock file. Nothing here links or writes the lock file.

mod candidates;
mod download;
mod from_store;
mod fs_mirror;
mod hashes;
mod net_mirror;
mod oci_mirror;
mod registry;

use std::collections::BTreeSet;
use std::path::PathBuf;

use tstore_store::{Hash, HashRecord, PackageKey, SourceFingerprint, Store, StoreError, TreeId};
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::LockedProvider;
use tstore_tofu::version::{newest_matching, Version, VersionConstraints};

use self::candidates::{available_packages, Candidate};
pub(crate) use self::download::download_and_ingest;
pub(crate) use self::from_store::{from_store_by_lock, is_store_view, reuse};
pub use self::fs_mirror::ingest_mirror_package;
pub(crate) use self::fs_mirror::obtain_fs;
pub use self::hashes::SIGNING_SKIPPED;
pub(crate) use self::hashes::{auth_summary, join_hashes, record};
pub(crate) use self::net_mirror::obtain_net;
pub(crate) use self::oci_mirror::obtain_oci;
pub(crate) use self::registry::obtain_registry;
use crate::net::LazyHttpClient;
use crate::providers::sources::registry::KeylessSigning;
use crate::providers::{
    display_name, Event, InstallError, ObtainMode, Obtained, Planned, ProviderOptions, RemoteError,
    Reporter, LOCK_FILE_NAME,
};

/// What every provider of one run is obtained with, the same for all of them.
#[derive(Clone, Copy)]
pub(crate) struct ObtainContext<'a> {
    /// The store packages are brought into.
    pub(crate) store: &'a Store,
    /// The run's options: the platform, the installation methods, the flavor.
    pub(crate) opts: &'a ProviderOptions,
    /// The run's HTTP client, built when a network method is first asked.
    pub(crate) http: &'a LazyHttpClient<'a>,
    pub(crate) reporter: &'a dyn Reporter,
}

/// One provider the configuration requires: its address, its version constraints and its
/// lock file entry, if it has one.
#[derive(Clone, Copy)]
pub(crate) struct ProviderRequest<'a> {
    pub(crate) addr: &'a ProviderAddr,
    pub(crate) constraints: &'a VersionConstraints,
    pub(crate) locked: Option<&'a LockedProvider>,
}

/// The package selected for a provider and being brought into the store: the provider at
/// one version, for the run's platform.
pub(crate) struct SelectedPackage<'a> {
    pub(crate) addr: &'a ProviderAddr,
    pub(crate) version: &'a Version,
    /// Its key in the store.
    pub(crate) key: &'a PackageKey,
    /// The provider as tofu names it in messages.
    pub(crate) display: &'a str,
    /// What the CLI configuration was read from, for a remote error's hint.
    pub(crate) cli_config: &'a str,
}

impl SelectedPackage<'_> {
    /// The store failed while this package was brought into it.
    pub(crate) fn store_error(&self, source: StoreError) -> InstallError {
        InstallError::Store {
            provider: self.addr.to_string(),
            version: self.version.clone(),
            source,
        }
    }

    /// The source `what` failed to deliver this package.
    pub(crate) fn remote_error(&self, what: String, source: RemoteError) -> InstallError {
        InstallError::Remote {
            provider: self.addr.to_string(),
            version: Some(self.version.clone()),
            what,
            source,
            cli_config: self.cli_config.to_owned(),
        }
    }
}

/// A package obtained into the store but not yet committed.
pub(crate) struct Obtainment {
    pub(crate) tree: TreeId,
    pub(crate) hashes: Vec<HashRecord>,
    pub(crate) dir_h1: Hash,
    /// Hashes the lock records besides the directory `h1:`: those a registry signed, or a
    /// trusted source reported.
    pub(crate) lock_extra: Vec<String>,
    /// The `zh:` of a zip verified in this run (downloaded, or a mirror's zip read now),
    /// never one known from an earlier run: the tofu flavor locks it, as OpenTofu's installer
    /// locks the hashes it verified locally (OpenTofu's `internal/providercache/installer.go`
    /// at v1.12);
    /// terraform records only the `h1:` from a mirror.
    pub(crate) verified_zh: Option<String>,
    /// A filesystem mirror's zip: `tofu init` locks none of its hashes but the `h1:` it
    /// computes (nothing authenticates a local archive, so nothing else counts as verified
    /// locally: OpenTofu 1.12.6 `installer.go`); `providers lock` still records its `zh:`.
    pub(crate) local_archive: bool,
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
            lock_extra: Vec::new(),
            verified_zh: None,
            local_archive: false,
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
            lock_extra: Vec::new(),
            verified_zh: Some(ingested.zh.to_string()),
            local_archive: false,
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
pub(crate) fn obtain(
    cx: ObtainContext<'_>,
    provider: ProviderRequest<'_>,
    mode: ObtainMode,
) -> Result<Planned, InstallError> {
    ProviderJob {
        cx,
        provider,
        mode,
        display: display_name(provider.addr, cx.opts.workdir.flavor),
    }
    .run()
}

/// Phase 1 for one provider, in its steps: the store shortcut, version selection, the
/// first installation method that has the package, the check against the lock file.
struct ProviderJob<'a> {
    cx: ObtainContext<'a>,
    provider: ProviderRequest<'a>,
    mode: ObtainMode,
    /// The provider as tofu names it in messages.
    display: String,
}

impl ProviderJob<'_> {
    fn run(self) -> Result<Planned, InstallError> {
        let (cx, addr) = (self.cx, self.provider.addr);
        if self.mode == ObtainMode::Init {
            if let Some(planned) = from_store_by_lock(cx, self.provider, &self.display)? {
                return Ok(planned);
            }
        }
        let candidates = available_packages(cx.opts, cx.http, addr)?;
        let version = self.select_version(&candidates)?;
        let key = PackageKey::Provider {
            addr: addr.to_string(),
            version: version.to_string(),
            platform: cx.opts.platform.to_string(),
        };
        let package = SelectedPackage {
            addr,
            version: &version,
            key: &key,
            display: &self.display,
            cli_config: &cx.opts.cli_config,
        };
        let got = self.first_package(&candidates, &package)?;
        self.check_against_lock(&version, &got)?;
        self.check_executable(&package, &got.tree)?;
        self.plan(version, key, got)
    }

    /// The lock file's version unless `-upgrade` (it must still satisfy the constraints),
    /// else the newest version any method lists that the constraints allow.
    fn select_version(&self, candidates: &[Candidate]) -> Result<Version, InstallError> {
        let ProviderRequest {
            addr,
            constraints,
            locked,
        } = self.provider;
        let (opts, reporter) = (self.cx.opts, self.cx.reporter);
        let constraints_text = constraints.to_lock_string();
        match locked {
            Some(locked) if !opts.workdir.upgrade => {
                reporter.event(Event::ReusingLocked {
                    provider: &self.display,
                    version: &locked.version,
                });
                if !constraints.matches(&locked.version) {
                    return Err(InstallError::LockedVersionExcluded {
                        provider: addr.to_string(),
                        locked: locked.version.clone(),
                        constraints: constraints_text,
                        init: opts.workdir.flavor.init_command(),
                    });
                }
                Ok(locked.version.clone())
            }
            _ => {
                reporter.event(Event::Finding {
                    provider: &self.display,
                    constraints: &constraints_text,
                });
                let versions: BTreeSet<&Version> =
                    candidates.iter().map(Candidate::version).collect();
                let forms = [
                    addr.to_string(),
                    format!("{}/{}", addr.namespace, addr.kind),
                ];
                if let Some(policy) = opts
                    .workdir
                    .release_age
                    .as_ref()
                    .filter(|p| p.applies_to(&forms))
                {
                    return match choose_old_enough(policy, candidates, &versions, constraints) {
                        Ok(chosen) => Ok(chosen.version),
                        Err(held) if held.is_empty() => Err(InstallError::NoMatchingVersion {
                            provider: addr.to_string(),
                            constraints: constraints_text,
                        }),
                        Err(held) => Err(InstallError::HeldBack {
                            provider: addr.to_string(),
                            constraints: constraints_text,
                            held,
                            policy: policy.describe(),
                        }),
                    };
                }
                newest_matching(versions, constraints)
                    .cloned()
                    .ok_or_else(|| InstallError::NoMatchingVersion {
                        provider: addr.to_string(),
                        constraints: constraints_text,
                    })
            }
        }
    }

    /// The package from the first method, in CLI configuration order, that has the selected
    /// version for this platform, brought into the store.
    fn first_package(
        &self,
        candidates: &[Candidate],
        package: &SelectedPackage<'_>,
    ) -> Result<Obtainment, InstallError> {
        let (cx, addr, version) = (self.cx, package.addr, package.version);
        let platform = &cx.opts.platform;
        let remote_err =
            |what: &str, source: RemoteError| package.remote_error(what.into(), source);
        for candidate in candidates.iter().filter(|c| c.version() == version) {
            let got = match candidate {
                Candidate::Fs(mirrored) if mirrored.platform == *platform => Some(
                    obtain_fs(cx.store, &mirrored.location).map_err(|e| package.store_error(e))?,
                ),
                Candidate::Registry {
                    registry,
                    platforms,
                    ..
                } if platforms.is_empty() || platforms.contains(platform) => {
                    let http = cx.http.get().map_err(InstallError::https_setup)?;
                    let keyless = KeylessSigning::for_provider(
                        addr,
                        cx.opts.workdir.flavor,
                        cx.opts.workdir.network.enforce_gpg_validation,
                    );
                    let verified = registry
                        .verified_package(
                            http,
                            addr,
                            version,
                            platform,
                            keyless,
                            &cx.opts.workdir.network.trust_roots,
                        )
                        .map_err(|e| remote_err("origin registry", e.into()))?;
                    Some(obtain_registry(cx, http, package, verified)?)
                }
                Candidate::Net { mirror, .. } => {
                    let http = cx.http.get().map_err(InstallError::https_setup)?;
                    let archive = mirror
                        .archive(http, addr, version, platform)
                        .map_err(|e| remote_err("network mirror", e.into()))?;
                    match archive {
                        Some(archive) => Some(obtain_net(cx, http, package, archive)?),
                        None => None,
                    }
                }
                Candidate::Oci { mirror, client, .. } => {
                    let archive = mirror
                        .archive(client, addr, version, platform)
                        .map_err(|e| remote_err("OCI mirror", e.into()))?;
                    match archive {
                        Some(archive) => Some(obtain_oci(cx, client, package, archive)?),
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
                platform: platform.clone(),
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
        let Some(locked) = self.provider.locked.filter(|l| {
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
            provider: self.provider.addr.to_string(),
            version: version.clone(),
            origin: got.origin,
            source_path: got.source.clone(),
            computed: join_hashes(got.hashes.iter().map(|r| r.hash.to_string())),
            lock_path: self
                .cx
                .opts
                .workdir
                .dir
                .join(LOCK_FILE_NAME)
                .display()
                .to_string(),
            recorded: join_hashes(locked.hashes.iter().cloned()),
            more_info: tstore_tofu::tool_version::checksum_mismatch_link(
                self.cx.opts.workdir.flavor,
                &self.cx.opts.workdir.tool,
            ),
        })
    }

    /// A provider package must hold its executable at the top level, named
    /// `terraform-provider-TYPE` alone or followed by `_` or `.` (as tofu finds it:
    /// <https://github.com/opentofu/opentofu/blob/main/internal/providercache/cached_provider.go>).
    fn check_executable(
        &self,
        package: &SelectedPackage<'_>,
        tree: &TreeId,
    ) -> Result<(), InstallError> {
        let tree = self
            .cx
            .store
            .tree(tree)
            .map_err(|e| package.store_error(e))?;
        let kind = &package.addr.kind;
        if has_provider_executable(tree.entries().iter().map(|e| e.path.as_str()), kind) {
            return Ok(());
        }
        Err(InstallError::NoProviderExecutable {
            display: self.display.clone(),
            version: package.version.clone(),
            kind: kind.clone(),
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
            provider: self.provider.addr.to_string(),
            version: version.clone(),
            source,
        })?;
        let mut lock_hashes: BTreeSet<String> = got.lock_extra.into_iter().collect();
        let local_archive_in_init = got.local_archive && self.mode == ObtainMode::Init;
        if self.cx.opts.workdir.flavor == Flavor::Tofu && !local_archive_in_init {
            lock_hashes.extend(got.verified_zh);
        }
        lock_hashes.insert(got.dir_h1.to_string());
        Ok(Planned {
            link: self.cx.opts.workdir.data_dir.path.join(&relpath),
            target: self.cx.opts.workdir.mount.join(&relpath),
            addr: self.provider.addr.clone(),
            display: self.display,
            version,
            constraints: self.provider.constraints.clone(),
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

/// Under the cooldown, the newest of `versions` the constraints allow that is old enough by
/// its registry's date (a version listed only by a mirror has no date), or every version
/// held back. None allowed at all: nothing held back (the caller says no version matches).
pub(crate) fn choose_old_enough(
    policy: &crate::ReleaseAge,
    candidates: &[Candidate],
    versions: &BTreeSet<&Version>,
    constraints: &VersionConstraints,
) -> Result<crate::Chosen<Version>, Vec<crate::HeldBack>> {
    let dated: Vec<(Version, Option<crate::Published>)> = versions
        .iter()
        .rev()
        .filter(|v| constraints.matches(v))
        .map(|v| {
            let at = candidates.iter().find_map(|c| match c {
                Candidate::Registry {
                    version, published, ..
                } if version == *v => *published,
                _ => None,
            });
            let published = at.map(|at| crate::Published {
                at,
                source: crate::AgeSource::Registry,
            });
            ((*v).clone(), published)
        })
        .collect();
    policy.choose(&dated, crate::cooldown::now())
}

/// The version `init -upgrade` would choose for `addr` now, from the sources `opts` names
/// (under the cooldown, the newest old enough), and the newer versions the cooldown holds
/// back; `None`: no version the constraints allow (or none old enough).
pub(crate) fn newest_allowed(
    opts: &ProviderOptions,
    http: &LazyHttpClient<'_>,
    addr: &ProviderAddr,
    constraints: &VersionConstraints,
) -> Result<(Option<Version>, Vec<crate::HeldBack>), InstallError> {
    let candidates = available_packages(opts, http, addr)?;
    let versions: BTreeSet<&Version> = candidates.iter().map(Candidate::version).collect();
    let forms = [
        addr.to_string(),
        format!("{}/{}", addr.namespace, addr.kind),
    ];
    match opts
        .workdir
        .release_age
        .as_ref()
        .filter(|p| p.applies_to(&forms))
    {
        Some(policy) => match choose_old_enough(policy, &candidates, &versions, constraints) {
            Ok(chosen) => Ok((Some(chosen.version), chosen.held_back)),
            Err(held) => Ok((None, held)),
        },
        None => Ok((newest_matching(versions, constraints).cloned(), Vec::new())),
    }
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
