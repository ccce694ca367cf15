//! `tstore providers lock`: like `tofu providers lock`
//! (<https://github.com/opentofu/opentofu/blob/main/website/docs/cli/commands/providers/lock.mdx>),
//! record in the lock file the checksums of each provider's package for several platforms, without
//! installing anything into the working directory.
//!
//! For each required provider the version is selected as `init` selects it (the lock pin
//! while the constraints allow it, else the newest match). Then, per platform, its package
//! is fetched from the sources and authenticated exactly as `init` would (signed
//! `SHA256SUMS` from the origin registry, reported hashes of a network mirror), and its
//! `h1:` computed. The lock entry gets the union, over platforms, of the hashes OpenTofu's
//! hash-disposition RFC admits
//! (<https://github.com/opentofu/opentofu/blob/main/rfc/20250327-providerinst-auth-hashes.md>):
//! every `zh:` the registry reported (signed), every archive
//! hash verified locally, and each platform's `h1:`; plus the entry's old hashes when the
//! version did not change. Checksums are recorded fresh (trust on first use): the old
//! entry's hashes are not a gate here, as they are for `init`.
//!
//! Sources: the origin registry of each provider (the CLI configuration's `host` blocks
//! and credentials apply) unless `-fs-mirror=DIR` or `-net-mirror=URL` is given, as in
//! tofu; the CLI configuration's `provider_installation` is not used.
//!
//! Every package fetched is also committed to the store (another runner sharing the store
//! may need it), but nothing is linked into `.terraform`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use tstore_store::{HashRecord, Store};
use tstore_tofu::addr::Platform;
use tstore_tofu::cliconfig::{InstallMethod, InstallMethodKind};
use tstore_tofu::lockfile::{LockFile, LockedProvider};

use crate::net::LazyHttpClient;
use crate::options::WorkdirOptions;
use crate::providers::{
    obtain, render, Event, InstallError, LockFileChange, ObtainContext, ObtainMode, Obtained,
    Planned, ProviderOptions, ProviderRequest, Reporter, LOCK_FILE_NAME,
};
use crate::workdir::atomic::write_atomic;

/// Where `providers lock` fetches packages from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockSource {
    /// Each provider's origin registry (the default).
    Direct,
    /// `-fs-mirror=DIR`.
    FilesystemMirror(std::path::PathBuf),
    /// `-net-mirror=URL`.
    NetworkMirror(String),
}

impl LockSource {
    /// The single installation method this source stands for.
    pub fn method(&self) -> InstallMethod {
        let kind = match self {
            LockSource::Direct => InstallMethodKind::Direct,
            LockSource::FilesystemMirror(path) => {
                InstallMethodKind::FilesystemMirror { path: path.clone() }
            }
            LockSource::NetworkMirror(url) => InstallMethodKind::NetworkMirror {
                url: url.clone(),
                trust_all_hashes: false,
            },
        };
        InstallMethod {
            kind,
            include: Vec::new(),
            exclude: Vec::new(),
        }
    }
}

/// What `providers lock` needs, validated by the binary.
#[derive(Clone, Debug)]
pub struct LockOptions {
    /// Working directory, flavor and network settings; `methods` and `platform` are
    /// replaced per platform from `source` and `platforms`.
    pub base: ProviderOptions,
    /// The platforms to record checksums for (the current one when none was given).
    pub platforms: Vec<Platform>,
    /// Where packages come from.
    pub source: LockSource,
    /// Only these providers (fully-qualified); empty: every required provider.
    pub only: Vec<tstore_tofu::addr::ProviderAddr>,
}

/// One platform's package of one provider, as reported by `providers lock --json`.
#[derive(Clone, Debug, Serialize)]
pub struct PlatformReport {
    /// `os_arch`.
    pub platform: String,
    /// Where the package came from (as in `init --json`).
    pub source: String,
    /// How it was authenticated.
    pub auth: String,
    /// How its content reached the store.
    pub obtained: Obtained,
    /// The hashes known for it, with dispositions.
    pub hashes: Vec<HashRecord>,
}

/// One provider's result.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderLockReport {
    /// Fully-qualified address.
    pub provider: String,
    /// Selected version.
    pub version: String,
    /// One entry per platform, in the order asked.
    pub platforms: Vec<PlatformReport>,
}

/// The result of `providers lock`.
#[derive(Clone, Debug, Serialize)]
pub struct LockReport {
    /// Providers, sorted by address.
    pub providers: Vec<ProviderLockReport>,
    /// What happened to `.terraform.lock.hcl`.
    pub lock_file: LockFileChange,
    /// Whether a provider was new to the lock file or a platform brought a checksum it did
    /// not have: what the tools' closing message tells (`tool_version::PROVIDERS_LOCK_SAYS_NO_CHANGE`).
    pub new_checksums: bool,
}

/// Run `providers lock` for `opts.base.workdir.dir`.
pub fn lock(
    store: &Store,
    opts: &LockOptions,
    reporter: &dyn Reporter,
) -> Result<LockReport, InstallError> {
    let base = &opts.base;
    let requirements = base.workdir.configuration_requirements()?;
    let lock_path = base.workdir.dir.join(LOCK_FILE_NAME);
    let old_lock = LockFile::load(&lock_path)?;
    let http = LazyHttpClient::new(&base.workdir.network);
    let wanted: Vec<_> = requirements
        .providers
        .iter()
        .filter(|(addr, _)| !addr.is_builtin())
        .filter(|(addr, _)| opts.only.is_empty() || opts.only.contains(addr))
        .collect();

    // Phase 1: every provider for every platform, before anything is written.
    let mut planned: Vec<Vec<Planned>> = Vec::new();
    let summarized = base
        .workdir
        .tool
        .follows(&tstore_tofu::tool_version::PROVIDERS_LOCK_SAYS_NO_CHANGE);
    for (addr, constraints) in &wanted {
        let locked = old_lock.as_ref().and_then(|l| l.providers.get(*addr));
        let mut per_platform = Vec::new();
        for platform in &opts.platforms {
            let popts = ProviderOptions {
                workdir: WorkdirOptions {
                    upgrade: false,
                    ..base.workdir.clone()
                },
                platform: platform.clone(),
                methods: vec![opts.source.method()],
                ..base.clone()
            };
            let cx = ObtainContext {
                store,
                opts: &popts,
                http: &http,
                reporter,
            };
            let provider = ProviderRequest {
                addr,
                constraints,
                locked,
            };
            let p = obtain(cx, provider, ObtainMode::Lock)?;
            reporter.event(Event::Fetching {
                provider: &p.display,
                version: &p.version,
                platform,
            });
            if summarized {
                reporter.event(Event::Retrieved {
                    provider: &p.display,
                    version: &p.version,
                    platform,
                    auth: &p.auth,
                });
            } else {
                reporter.event(Event::ObtainedChecksums {
                    provider: &p.display,
                    platform,
                    auth: &p.auth,
                });
            }
            per_platform.push(p);
        }
        planned.push(per_platform);
    }
    // Once every package is retrieved: per provider and platform, what its checksums did to
    // the lock entry (the tools' `providersLockCalculateChangeType`).
    if summarized {
        for (p, platform) in planned
            .iter()
            .flat_map(|per_platform| per_platform.iter().zip(&opts.platforms))
        {
            let old = old_lock.as_ref().and_then(|l| l.providers.get(&p.addr));
            let change = match old {
                None => "This was a new provider and the checksums for this platform are now tracked in the lock file",
                Some(old) if p.lock_hashes.is_subset(&old.hashes) => {
                    "All checksums for this platform were already tracked in the lock file"
                }
                Some(_) => "Additional checksums for this platform are now tracked in the lock file",
            };
            reporter.event(Event::ChecksumsTracked {
                provider: &p.display,
                platform,
                change,
            });
        }
    }

    // Whether a provider is new to the lock file, or a platform brought a checksum it did
    // not have (the tools' `providersLockCalculateChangeType`; the constraints do not count).
    let new_checksums = planned.iter().flatten().any(|p| {
        old_lock
            .as_ref()
            .and_then(|l| l.providers.get(&p.addr))
            .is_none_or(|old| !p.lock_hashes.is_subset(&old.hashes))
    });

    // Phase 2: the new lock file: only the providers worked on change.
    let mut new_lock = old_lock.clone().unwrap_or_default();
    for per_platform in &planned {
        let Some(first) = per_platform.first() else {
            continue;
        };
        let mut hashes: BTreeSet<String> = BTreeSet::new();
        if let Some(old) = old_lock
            .as_ref()
            .and_then(|l| l.providers.get(&first.addr))
            .filter(|old| old.version == first.version)
        {
            hashes.extend(old.hashes.iter().cloned());
        }
        for p in per_platform {
            hashes.extend(p.lock_hashes.iter().cloned());
        }
        let constraints =
            (!first.constraints.is_empty()).then(|| first.constraints.to_lock_string());
        new_lock.providers.insert(
            first.addr.clone(),
            LockedProvider {
                version: first.version.clone(),
                constraints,
                hashes,
            },
        );
    }
    let text = render(&new_lock, base.workdir.flavor);
    let change = match &old_lock {
        None if planned.is_empty() => LockFileChange::Unchanged,
        None => LockFileChange::Created,
        Some(old) if render(old, base.workdir.flavor) == text => LockFileChange::Unchanged,
        Some(_) => LockFileChange::Updated,
    };

    // Phase 3: commit the packages (for other runners sharing the store), write the lock.
    let mut providers = BTreeMap::new();
    for per_platform in planned {
        let mut report = None;
        for p in per_platform {
            let package = p.commit(store)?;
            let entry = report.get_or_insert_with(|| ProviderLockReport {
                provider: p.addr.to_string(),
                version: p.version.to_string(),
                platforms: Vec::new(),
            });
            entry.platforms.push(PlatformReport {
                platform: p.key.platform().to_owned(),
                source: p.source,
                auth: p.auth,
                obtained: p.obtained,
                hashes: package.hashes,
            });
        }
        if let Some(r) = report {
            providers.insert(r.provider.clone(), r);
        }
    }
    if matches!(change, LockFileChange::Created | LockFileChange::Updated) {
        write_atomic(&lock_path, text.as_bytes()).map_err(|source| {
            InstallError::WriteLockFile {
                path: lock_path.clone(),
                source,
            }
        })?;
    }
    Ok(LockReport {
        providers: providers.into_values().collect(),
        lock_file: change,
        new_checksums,
    })
}

#[cfg(test)]
mod tests;
