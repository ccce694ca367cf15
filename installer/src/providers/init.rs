//! The provider half of `tstore init`: select versions, bring packages into the store,
//! verify them against the lock file, link them and write the lock file.
//!
//! The work runs in three phases so that a failure leaves the working directory as it
//! was:
//!
//! 1. **Obtain and verify** every provider: select the version (lock pin unless
//!    `-upgrade`, else newest matching), find its package in the installation sources,
//!    get it into the store (or recognize it from the store's memo of that source,
//!    without reading it), and check its hashes against the lock file.
//! 2. **Decide the new lock file** and refuse under `-lockfile=readonly` if it changes.
//! 3. **Commit and link**: make each package visible in the store, point
//!    `.terraform/providers/HOST/NS/TYPE/VERSION/OS_ARCH` at its view through the mount
//!    path, and write the lock file atomically.
//!
//! **Invariant:** nothing is linked and the lock file is not touched unless every
//! provider of the configuration passed phase 1.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tstore_store::{
    Disposition, Hash, HashRecord, PackageKey, SourceFingerprint, Store, StoreError, TreeId,
};

use crate::net::discovery::{self, DiscoveryError};
use crate::net::http::{HttpClient, HttpError};
use crate::net::NetworkSettings;
use crate::providers::sources::fs_mirror::{
    FilesystemMirror, MirrorError, MirrorLocation, MirrorPackage,
};
use crate::providers::sources::net_mirror::{NetMirrorError, NetworkMirror};
use crate::providers::sources::registry::{Registry, RegistryError, VerifiedPackage};
use crate::workdir::link::{self, LinkError, LinkOutcome};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::cliconfig::{InstallMethod, InstallMethodKind};
use tstore_tofu::config::tree::{self, ModuleTreeError};
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::{LockFile, LockFileError, LockedProvider};
use tstore_tofu::version::{newest_matching, Version, VersionConstraints};

/// The lock file's name in a working directory.
pub const LOCK_FILE_NAME: &str = ".terraform.lock.hcl";

/// Everything `init` needs to know, already validated by the binary.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The working directory (root module).
    pub dir: PathBuf,
    /// Which tool's defaults apply (registry host, lock header).
    pub flavor: Flavor,
    /// `-upgrade`: ignore the versions pinned in the lock file.
    pub upgrade: bool,
    /// `-lockfile=readonly`: fail rather than change the lock file.
    pub lockfile_readonly: bool,
    /// The platform to install for.
    pub platform: Platform,
    /// The mount path links point into (`TSTORE_MOUNT`).
    pub mount: PathBuf,
    /// The effective provider installation methods from the CLI configuration.
    pub methods: Vec<InstallMethod>,
    /// How to reach registries and network mirrors.
    pub network: NetworkSettings,
}

/// Progress of an install, for the binary to render.
#[derive(Debug)]
pub enum Event<'a> {
    /// The lock file pins this provider's version.
    ReusingLocked {
        /// Provider as tofu displays it.
        provider: &'a str,
    },
    /// Looking for the newest version matching the constraints (empty: any).
    Finding {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// The merged constraints, canonical form.
        constraints: &'a str,
    },
    /// The working directory already links the right package.
    UsingPreviouslyInstalled {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
    },
    /// The lock file pins a version whose package the store holds with a matching hash
    /// (fresh or re-verified): no installation source is consulted.
    UsingFromStore {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Locked version.
        version: &'a Version,
    },
    /// `providers lock`: this platform's package was fetched (or found) for checksums.
    Fetching {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// The platform.
        platform: &'a Platform,
    },
    /// `providers lock`: this platform's checksums were obtained and authenticated.
    ObtainedChecksums {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// The platform.
        platform: &'a Platform,
        /// How the package was authenticated.
        auth: &'a str,
    },
    /// About to install.
    Installing {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
    },
    /// A package download starts (registry or network mirror).
    Downloading {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// The archive URL.
        url: &'a str,
    },
    /// Bytes of a download received so far (called often; render cheaply).
    DownloadProgress {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Bytes received.
        bytes: u64,
        /// `Content-Length`, if the server sent one.
        total: Option<u64>,
    },
    /// Installed (linked).
    Installed {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// How the package was authenticated ("unauthenticated" for mirrors).
        auth: &'a str,
        /// Whether the package content came from the store without reading the source.
        from_store: bool,
    },
}

/// Receives [`Event`]s as the install proceeds. Providers are obtained in parallel, so
/// events of different providers interleave.
pub trait Reporter: Sync {
    /// Called for each event, in order.
    fn event(&self, event: Event<'_>);
}

/// How the package content was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Obtained {
    /// Read from the source and ingested into the store.
    Ingested,
    /// Recognized from the store's memo of an unchanged source: nothing read or hashed.
    Memoized,
    /// Downloaded from a registry or network mirror and ingested into the store.
    Downloaded,
    /// Already in the store with the archive hash the (signed) source promises: nothing
    /// downloaded.
    InStore,
    /// The lock file pins the version and the store holds the package with one of the
    /// lock's hashes, its files unchanged since verified: no source consulted, no network.
    StoreByLock,
}

/// What happened to the lock file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockFileChange {
    /// There was none; it was written.
    Created,
    /// Its selections or hashes changed; it was rewritten.
    Updated,
    /// Nothing changed; it was left alone.
    Unchanged,
}

/// One installed provider, as reported by `init --json`.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderReport {
    /// Fully-qualified provider address.
    pub provider: String,
    /// Selected version.
    pub version: String,
    /// Platform installed.
    pub platform: String,
    /// Where the package came from: `filesystem_mirror:/path/to/zip`,
    /// `registry:https://…/x.zip` or `network_mirror:https://…/x.zip`.
    pub source: String,
    /// How the package was authenticated, as tofu words it (`signed, key ID …`,
    /// `verified checksum`, `unauthenticated`).
    pub auth: String,
    /// How its content reached the store.
    pub obtained: Obtained,
    /// The hashes known for the package, with their dispositions.
    pub hashes: Vec<HashRecord>,
    /// The link in the working directory.
    pub link: PathBuf,
    /// Where the link points.
    pub target: PathBuf,
    /// What was done to the link.
    pub link_outcome: LinkOutcome,
}

/// The result of a successful `init`.
#[derive(Clone, Debug, Serialize)]
pub struct InitReport {
    /// Installed providers, sorted by address.
    pub providers: Vec<ProviderReport>,
    /// What happened to `.terraform.lock.hcl`.
    pub lock_file: LockFileChange,
    /// Content bytes this run read and hashed (0 when everything came from the store).
    pub bytes_hashed: u64,
}

/// Why `init` failed. Each variant maps to one of tofu's error summaries.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The configuration could not be read.
    #[error(transparent)]
    Config(#[from] ModuleTreeError),
    /// The lock file could not be read.
    #[error(transparent)]
    LockFile(#[from] LockFileError),
    /// No installation method can serve this provider.
    #[error(
        "provider {provider} was not found in any of the search locations{}",
        render_locations(.locations)
    )]
    NotFound {
        /// Fully-qualified address.
        provider: String,
        /// The places searched.
        locations: Vec<String>,
    },
    /// A method that this version of tstore cannot use yet would be needed.
    #[error(
        "provider {provider} would be installed through the {method} installation method, \
         which this version of tstore does not support yet; add a filesystem_mirror for it \
         to the CLI configuration"
    )]
    UnsupportedMethod {
        /// Fully-qualified address.
        provider: String,
        /// Method name as written in the CLI configuration.
        method: &'static str,
    },
    /// No available version matches.
    #[error(
        "no available releases match the given constraints {constraints} for provider {provider}"
    )]
    NoMatchingVersion {
        /// Fully-qualified address.
        provider: String,
        /// Canonical constraints.
        constraints: String,
    },
    /// The lock file pins a version the configuration no longer allows.
    #[error(
        "locked provider {provider} {locked} does not match configured version constraint \
         {constraints}; must use {init} -upgrade to allow selection of new versions"
    )]
    LockedVersionExcluded {
        /// Fully-qualified address.
        provider: String,
        /// Version in the lock file.
        locked: Version,
        /// Canonical constraints.
        constraints: String,
        /// `tofu init` or `terraform init`.
        init: &'static str,
    },
    /// The selected version exists, but not for this platform.
    #[error("provider {provider} {version} is not available for {platform}")]
    NoPackageForPlatform {
        /// Fully-qualified address.
        provider: String,
        /// Selected version.
        version: Version,
        /// Target platform.
        platform: Platform,
    },
    /// The package does not match the lock file: nothing was linked.
    #[error(
        "Error while installing {display} v{version}: the {origin} package for {provider} {version} \
         doesn't match any of the checksums previously recorded in the dependency lock file \
         (this might be because the available checksums are for packages targeting different \
         platforms)\n\n  Package {source_path} has {computed}\n  {lock_path} records {recorded}"
    )]
    ChecksumMismatch {
        /// Provider as tofu displays it.
        display: String,
        /// Fully-qualified address.
        provider: String,
        /// Selected version.
        version: Version,
        /// "local" (unpacked) or "current" (archive), as tofu words it.
        origin: &'static str,
        /// The package location.
        source_path: String,
        /// Hashes computed for the package.
        computed: String,
        /// The lock file.
        lock_path: String,
        /// Hashes the lock file records.
        recorded: String,
    },
    /// `-lockfile=readonly` and the lock file would change.
    #[error(
        "the lock file {lock_path} would change ({what}), but -lockfile=readonly was given; \
         run init without it to record the change"
    )]
    LockFileReadonly {
        /// The lock file.
        lock_path: String,
        /// A short description of the change.
        what: String,
    },
    /// A filesystem mirror could not be searched.
    #[error(transparent)]
    Mirror(#[from] MirrorError),
    /// A registry or network mirror failed (unreachable, malformed answer, bad signature).
    #[error("{}{provider}{} from the {what}", if .version.is_some() { "cannot install " } else { "cannot list the versions of " }, .version.as_ref().map(|v| format!(" {v}")).unwrap_or_default())]
    Remote {
        /// Fully-qualified address.
        provider: String,
        /// The version being installed, `None` while listing versions.
        version: Option<Version>,
        /// A short description of the step.
        what: String,
        /// The underlying error.
        #[source]
        source: RemoteError,
    },
    /// A downloaded archive does not hash to what its source promised.
    #[error(
        "the archive of {provider} {version} downloaded from {url} does not match the \
         checksums its source reported\n\n  Downloaded archive has {computed}\n  The source reported {expected}"
    )]
    ArchiveChecksum {
        /// Fully-qualified address.
        provider: String,
        /// Version.
        version: Version,
        /// The archive URL.
        url: String,
        /// What the download hashes to.
        computed: String,
        /// What the source promised.
        expected: String,
    },
    /// The store failed for one provider.
    #[error("store operation failed for provider {provider} {version}")]
    Store {
        /// Fully-qualified address.
        provider: String,
        /// Selected version.
        version: Version,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// A link in the working directory could not be written.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The lock file could not be written.
    #[error("cannot write the dependency lock file {path}")]
    WriteLockFile {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// The errors of the network sources.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Service discovery.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// The registry protocol.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The network mirror protocol.
    #[error(transparent)]
    NetMirror(#[from] NetMirrorError),
    /// A download.
    #[error(transparent)]
    Http(#[from] HttpError),
}

fn render_locations(locations: &[String]) -> String {
    if locations.is_empty() {
        return String::new();
    }
    let mut s = String::from(":\n");
    for l in locations {
        s.push_str("\n  - ");
        s.push_str(l);
    }
    s
}

impl InstallError {
    /// The HTTP client could not be set up (an unreadable `SSL_CERT_FILE`).
    pub(crate) fn https_setup(source: HttpError) -> InstallError {
        InstallError::Remote {
            provider: "(all providers)".into(),
            version: None,
            what: "cannot set up HTTPS".into(),
            source: RemoteError::Http(source),
        }
    }

    /// The one-line summary tofu prints after `Error: ` for this kind of failure.
    pub fn summary(&self) -> &'static str {
        match self {
            InstallError::Config(_) => "Failed to load the configuration",
            InstallError::LockFile(_) => "Failed to read the dependency lock file",
            InstallError::NotFound { .. }
            | InstallError::UnsupportedMethod { .. }
            | InstallError::NoMatchingVersion { .. }
            | InstallError::LockedVersionExcluded { .. }
            | InstallError::Mirror(_)
            | InstallError::Remote { version: None, .. } => {
                "Failed to query available provider packages"
            }
            InstallError::Remote { .. } | InstallError::ArchiveChecksum { .. } => {
                "Failed to install provider"
            }
            InstallError::NoPackageForPlatform { .. }
            | InstallError::ChecksumMismatch { .. }
            | InstallError::Store { .. }
            | InstallError::Link(_) => "Failed to install provider",
            InstallError::LockFileReadonly { .. } => "Provider dependency changes detected",
            InstallError::WriteLockFile { .. } => "Failed to write the dependency lock file",
        }
    }

    /// A suggestion for the user, when there is an obvious next step.
    pub fn hint(&self) -> Option<String> {
        match self {
            InstallError::ChecksumMismatch { .. } => Some(
                "if the new package is expected, remove this provider's entry from the lock \
                 file (or run init with -upgrade after changing the version) and run init again"
                    .into(),
            ),
            InstallError::Remote {
                source: RemoteError::Registry(RegistryError::Signature { .. }),
                ..
            } => Some(
                "the SHA256SUMS is not signed by any key the registry lists for this provider; \
                 do not use this package, and tell the registry's operator"
                    .into(),
            ),
            InstallError::Remote {
                source: RemoteError::Registry(RegistryError::ShasumNotSigned { .. }),
                ..
            }
            | InstallError::ArchiveChecksum { .. } => Some(
                "the package was not installed because it may have been tampered with; \
                 try again later, and tell the source's operator if it persists"
                    .into(),
            ),
            InstallError::Remote { .. } => Some(
                "check that the source is reachable and serves the provider protocols \
                 (network, the CLI configuration's host blocks, SSL_CERT_FILE for a private CA)"
                    .into(),
            ),
            InstallError::NotFound { .. } => Some(
                "check the provider_installation block of your CLI configuration \
                 (TF_CLI_CONFIG_FILE)"
                    .into(),
            ),
            _ => None,
        }
    }
}

/// A provider that passed phase 1.
pub(crate) struct Planned {
    pub(crate) addr: ProviderAddr,
    pub(crate) display: String,
    pub(crate) version: Version,
    pub(crate) constraints: VersionConstraints,
    pub(crate) key: PackageKey,
    pub(crate) tree: TreeId,
    pub(crate) hashes: Vec<HashRecord>,
    /// What goes into the lock file (spec §8): the installed directory's `h1:` plus, from
    /// network sources, the hashes the RFC's lock rule adds.
    pub(crate) lock_hashes: BTreeSet<String>,
    /// The source path and fingerprint to memoize (filesystem mirrors).
    pub(crate) memo: Option<(PathBuf, SourceFingerprint)>,
    pub(crate) source: String,
    pub(crate) auth: String,
    pub(crate) obtained: Obtained,
    link: PathBuf,
    target: PathBuf,
}

/// What phase 1 is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObtainMode {
    /// `init`: a package the store holds with a lock hash is used without any source, and
    /// every package must match the lock's hashes.
    Init,
    /// `providers lock`: fetch from the sources and record fresh checksums (trust on first
    /// use for the platforms asked for); the lock only pins the version.
    Lock,
}

/// Run the provider install for `opts.dir`.
pub fn init(
    store: &Store,
    opts: &InitOptions,
    reporter: &dyn Reporter,
) -> Result<InitReport, InstallError> {
    let default_host = opts.flavor.default_registry_host();
    let requirements = tree::load_configuration_requirements(&opts.dir, default_host)?;
    let lock_path = opts.dir.join(LOCK_FILE_NAME);
    let old_lock = LockFile::load(&lock_path)?;
    let needs_network = opts.methods.iter().any(|m| {
        matches!(
            m.kind,
            InstallMethodKind::NetworkMirror { .. } | InstallMethodKind::Direct
        )
    });
    let http = if needs_network {
        Some(
            opts.network
                .http_client()
                .map_err(InstallError::https_setup)?,
        )
    } else {
        None
    };

    // Phase 1: obtain and verify everything before touching the working directory.
    // Providers are independent, so they are obtained in parallel (downloads overlap);
    // the first error in configuration order wins.
    let wanted: Vec<_> = requirements
        .providers
        .iter()
        .filter(|(addr, _)| !addr.is_builtin())
        .collect();
    let results: Vec<Result<Planned, InstallError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = wanted
            .iter()
            .map(|(addr, constraints)| {
                let locked = old_lock.as_ref().and_then(|l| l.providers.get(*addr));
                let http = http.as_ref();
                scope.spawn(move || {
                    obtain(
                        store,
                        opts,
                        http,
                        addr,
                        constraints,
                        locked,
                        reporter,
                        ObtainMode::Init,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("provider thread panicked"))
            .collect()
    });
    let planned = results.into_iter().collect::<Result<Vec<_>, _>>()?;

    // Phase 2: the new lock file.
    let new_lock = next_lock_file(old_lock.as_ref(), &planned);
    let change = match &old_lock {
        None if planned.is_empty() => LockFileChange::Unchanged,
        None => LockFileChange::Created,
        Some(old) if render(old, opts.flavor) == render(&new_lock, opts.flavor) => {
            LockFileChange::Unchanged
        }
        Some(_) => LockFileChange::Updated,
    };
    if opts.lockfile_readonly && change != LockFileChange::Unchanged {
        return Err(InstallError::LockFileReadonly {
            lock_path: lock_path.display().to_string(),
            what: match change {
                LockFileChange::Created => "it does not exist yet".into(),
                _ => "provider selections or checksums differ".into(),
            },
        });
    }

    // Phase 3: commit to the store, link, write the lock file.
    let mut reports = Vec::new();
    for p in planned {
        let store_err = |source| InstallError::Store {
            provider: p.addr.to_string(),
            version: p.version.clone(),
            source,
        };
        let package = store
            .commit_package(
                &p.key,
                &p.tree,
                &p.hashes,
                p.memo.as_ref().map(|(path, fp)| (path.as_path(), fp)),
            )
            .map_err(store_err)?;
        let link_outcome = link::ensure_symlink(&p.link, &p.target)?;
        let provider = p.display.as_str();
        if link_outcome == LinkOutcome::Unchanged {
            reporter.event(Event::UsingPreviouslyInstalled {
                provider,
                version: &p.version,
            });
        } else {
            reporter.event(Event::Installing {
                provider,
                version: &p.version,
            });
            reporter.event(Event::Installed {
                provider,
                version: &p.version,
                auth: &p.auth,
                from_store: matches!(
                    p.obtained,
                    Obtained::Memoized | Obtained::InStore | Obtained::StoreByLock
                ),
            });
        }
        reports.push(ProviderReport {
            provider: p.addr.to_string(),
            version: p.version.to_string(),
            platform: opts.platform.to_string(),
            source: p.source,
            auth: p.auth,
            obtained: p.obtained,
            hashes: package.hashes,
            link: p.link,
            target: p.target,
            link_outcome,
        });
    }
    if change != LockFileChange::Unchanged {
        let text = render(&new_lock, opts.flavor);
        write_atomic(&lock_path, text.as_bytes()).map_err(|source| {
            InstallError::WriteLockFile {
                path: lock_path.clone(),
                source,
            }
        })?;
    }
    Ok(InitReport {
        providers: reports,
        lock_file: change,
        bytes_hashed: store.bytes_hashed(),
    })
}

/// The lock file as tofu would write it, keeping an existing header.
pub(crate) fn render(lock: &LockFile, flavor: Flavor) -> String {
    lock.to_string_with_header(flavor)
}

/// Where a version of a provider can be had.
enum Candidate {
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
}

impl Candidate {
    fn version(&self) -> &Version {
        match self {
            Candidate::Fs(p) => &p.version,
            Candidate::Registry { version, .. } | Candidate::Net { version, .. } => version,
        }
    }
}

/// A package obtained into the store but not yet committed.
struct Obtainment {
    tree: TreeId,
    hashes: Vec<HashRecord>,
    dir_h1: Hash,
    lock_extra: Vec<String>,
    memo: Option<(PathBuf, SourceFingerprint)>,
    source: String,
    auth: String,
    obtained: Obtained,
    /// "current" (archive) or "local" (directory), for the lock mismatch message.
    origin: &'static str,
}

/// Phase 1 for one provider.
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
    let display = display_name(addr, opts.flavor);
    let constraints_text = constraints.to_lock_string();
    if mode == ObtainMode::Init {
        if let Some(planned) =
            from_store_by_lock(store, opts, addr, constraints, locked, reporter, &display)?
        {
            return Ok(planned);
        }
    }
    let candidates = available_packages(opts, http, addr)?;

    let version = match locked {
        Some(locked) if !opts.upgrade => {
            reporter.event(Event::ReusingLocked { provider: &display });
            if !constraints.matches(&locked.version) {
                return Err(InstallError::LockedVersionExcluded {
                    provider: addr.to_string(),
                    locked: locked.version.clone(),
                    constraints: constraints_text,
                    init: opts.flavor.init_command(),
                });
            }
            locked.version.clone()
        }
        _ => {
            reporter.event(Event::Finding {
                provider: &display,
                constraints: &constraints_text,
            });
            let versions: BTreeSet<&Version> = candidates.iter().map(Candidate::version).collect();
            newest_matching(versions, constraints)
                .cloned()
                .ok_or_else(|| InstallError::NoMatchingVersion {
                    provider: addr.to_string(),
                    constraints: constraints_text.clone(),
                })?
        }
    };

    let key = PackageKey::Provider {
        addr: addr.to_string(),
        version: version.to_string(),
        platform: opts.platform.to_string(),
    };
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

    // The first method, in CLI configuration order, that has the version for this platform.
    let mut got = None;
    for candidate in candidates.iter().filter(|c| *c.version() == version) {
        match candidate {
            Candidate::Fs(package) if package.platform == opts.platform => {
                got = Some(obtain_fs(store, &package.location).map_err(store_err)?);
            }
            Candidate::Registry {
                registry,
                platforms,
                ..
            } if platforms.is_empty() || platforms.contains(&opts.platform) => {
                let http = http.expect("a network method has a client");
                let verified = registry
                    .verified_package(http, addr, &version, &opts.platform)
                    .map_err(|e| remote_err("origin registry", e.into()))?;
                got = Some(obtain_registry(
                    store, opts, http, reporter, &key, addr, &version, verified,
                )?);
            }
            Candidate::Net { mirror, .. } => {
                let http = http.expect("a network method has a client");
                let archive = mirror
                    .archive(http, addr, &version, &opts.platform)
                    .map_err(|e| remote_err("network mirror", e.into()))?;
                if let Some(archive) = archive {
                    got = Some(obtain_net(
                        store,
                        http,
                        reporter,
                        opts.flavor,
                        &key,
                        addr,
                        &version,
                        archive,
                    )?);
                }
            }
            _ => {}
        }
        if got.is_some() {
            break;
        }
    }
    let Some(got) = got else {
        return Err(if candidates.iter().any(|c| *c.version() == version) {
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
        });
    };

    if let Some(locked) =
        locked.filter(|l| mode == ObtainMode::Init && l.version == version && !l.hashes.is_empty())
    {
        // Only hashes computed from this package count: a signed zh: of another
        // platform's zip says nothing about this one.
        let matches = got
            .hashes
            .iter()
            .filter(|r| r.disposition.verified_locally)
            .any(|r| locked.hashes.contains(&r.hash.to_string()));
        if !matches {
            return Err(InstallError::ChecksumMismatch {
                display,
                provider: addr.to_string(),
                version,
                origin: got.origin,
                source_path: got.source.clone(),
                computed: join_hashes(got.hashes.iter().map(|r| r.hash.to_string())),
                lock_path: opts.dir.join(LOCK_FILE_NAME).display().to_string(),
                recorded: join_hashes(locked.hashes.iter().cloned()),
            });
        }
    }

    let relpath = key.view_relpath().map_err(store_err)?;
    let mut lock_hashes: BTreeSet<String> = got.lock_extra.into_iter().collect();
    lock_hashes.insert(got.dir_h1.to_string());
    Ok(Planned {
        link: opts.dir.join(".terraform").join(&relpath),
        target: opts.mount.join(&relpath),
        addr: addr.clone(),
        display,
        version,
        constraints: constraints.clone(),
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

/// Issue 4 item 5: when the lock pins a version (no `-upgrade`, still allowed by the
/// constraints) and the store holds that package for this platform with a hash the lock
/// records, computed by the store itself (the memoized `h1:` of the tree, or the `zh:` of
/// the archive it was ingested from), use it without consulting any source: no version
/// listing, no download, no re-hash. The package's files are first checked against their
/// stat at commit ([`Store::package_freshness`]); a stale package is re-verified, and if
/// damaged removed from the store, in which case the normal path fetches it again.
fn from_store_by_lock(
    store: &Store,
    opts: &InitOptions,
    addr: &ProviderAddr,
    constraints: &VersionConstraints,
    locked: Option<&LockedProvider>,
    reporter: &dyn Reporter,
    display: &str,
) -> Result<Option<Planned>, InstallError> {
    let Some(locked) = locked else {
        return Ok(None);
    };
    if opts.upgrade
        || locked.hashes.is_empty()
        || !constraints.matches(&locked.version)
        || !opts.methods.iter().any(|m| m.matches(addr))
        || fs_mirror_offers(opts, addr, &locked.version)
    {
        return Ok(None);
    }
    let version = locked.version.clone();
    let key = PackageKey::Provider {
        addr: addr.to_string(),
        version: version.to_string(),
        platform: opts.platform.to_string(),
    };
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let Some(package) = store.package(&key).map_err(store_err)? else {
        return Ok(None);
    };
    let matches_lock = package
        .hashes
        .iter()
        .any(|r| r.disposition.verified_locally && locked.hashes.contains(&r.hash.to_string()));
    if !matches_lock {
        return Ok(None);
    }
    if store.trusted_package(&key).map_err(store_err)?.is_none() {
        return Ok(None);
    }
    let Some(dir_h1) = stored_dir_h1(&package.hashes) else {
        return Ok(None);
    };
    reporter.event(Event::ReusingLocked { provider: display });
    reporter.event(Event::UsingFromStore {
        provider: display,
        version: &version,
    });
    // The RFC's lock union, as the source that brought the package recorded it: hashes
    // reported by its registry, and archive hashes verified locally; plus the directory h1.
    let mut lock_hashes: BTreeSet<String> = package
        .hashes
        .iter()
        .filter(|r| {
            r.disposition.reported_by_registry
                || (r.disposition.verified_locally && matches!(r.hash, Hash::Zh(_)))
        })
        .map(|r| r.hash.to_string())
        .collect();
    lock_hashes.insert(dir_h1.to_string());
    let auth = auth_summary(&package.hashes, opts.flavor);
    let relpath = key.view_relpath().map_err(store_err)?;
    Ok(Some(Planned {
        link: opts.dir.join(".terraform").join(&relpath),
        target: opts.mount.join(&relpath),
        addr: addr.clone(),
        display: display.to_owned(),
        version,
        constraints: constraints.clone(),
        source: format!("store:{}", relpath.display()),
        tree: package.tree,
        hashes: package.hashes,
        key,
        lock_hashes,
        memo: None,
        auth,
        obtained: Obtained::StoreByLock,
    }))
}

/// Whether a filesystem mirror consulted for `addr` holds `version` for the platform. Such
/// a mirror is read as tofu reads it (a memo hit costs only `lstat`s), so a package
/// changed in the team's mirror is still reported against the lock; the store shortcut
/// only saves network sources. A mirror that cannot be listed does not count.
fn fs_mirror_offers(opts: &InitOptions, addr: &ProviderAddr, version: &Version) -> bool {
    opts.methods
        .iter()
        .filter(|m| m.matches(addr))
        .any(|m| match &m.kind {
            InstallMethodKind::FilesystemMirror { path } if is_store_view(opts, path) => false,
            InstallMethodKind::FilesystemMirror { path } => FilesystemMirror { root: path.clone() }
                .packages(addr)
                .is_ok_and(|packages| {
                    packages
                        .iter()
                        .any(|p| p.version == *version && p.platform == opts.platform)
                }),
            _ => false,
        })
}

/// Whether `path` is the store's provider view on the mount path (as `tstore cli-config`
/// writes it), compared after resolving symlinks.
fn is_store_view(opts: &InitOptions, path: &Path) -> bool {
    let view = opts.mount.join("providers");
    path == view
        || matches!(
            (fs_err::canonicalize(path), fs_err::canonicalize(&view)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// The authentication summary of seed 001 from a package's hash dispositions: signed if
/// any hash carries a key ID, "signing skipped" if reported by a registry, else
/// "verified checksum" (the store computed the hash that matched the lock).
fn auth_summary(hashes: &[HashRecord], flavor: Flavor) -> String {
    if let Some(key_id) = hashes
        .iter()
        .find_map(|r| r.disposition.signed_by_key_ids.first())
    {
        return match flavor {
            Flavor::Terraform => format!("self-signed, key ID {key_id}"),
            Flavor::Tofu => format!("signed, key ID {key_id}"),
        };
    }
    if hashes.iter().any(|r| r.disposition.reported_by_registry) {
        return "signing skipped".into();
    }
    "verified checksum".into()
}

fn record(hash: Hash, verified_locally: bool, reported: bool, key: Option<&str>) -> HashRecord {
    HashRecord {
        hash,
        disposition: Disposition {
            verified_locally,
            reported_by_registry: reported,
            signed_by_key_ids: key.map(|k| vec![k.to_owned()]).unwrap_or_default(),
        },
    }
}

/// A filesystem mirror package: from the source memo, or ingested.
fn obtain_fs(store: &Store, location: &MirrorLocation) -> Result<Obtainment, StoreError> {
    let (path, origin) = match location {
        MirrorLocation::Packed(p) => (p.clone(), "current"),
        MirrorLocation::Unpacked(p) => (p.clone(), "local"),
    };
    let fingerprint = SourceFingerprint::of_path(&path)?;
    let (tree, hashes, obtained) = match store.source_memo(&path, &fingerprint)? {
        Some(memo) => (memo.tree, memo.hashes, Obtained::Memoized),
        None => {
            let (tree, hashes) = ingest_mirror_package(store, location)?;
            (tree, hashes, Obtained::Ingested)
        }
    };
    let dir_h1 = hashes
        .first()
        .map(|r| r.hash.clone())
        .expect("ingest records the directory h1 first");
    // RFC lock rule (seed 001): a packed mirror also records the zh: of the zip it
    // verified (terraform 1.0.3 records only the h1:; see ARCHITECTURE.md).
    let lock_extra = hashes
        .iter()
        .filter(|r| matches!(r.hash, Hash::Zh(_)) && r.disposition.verified_locally)
        .map(|r| r.hash.to_string())
        .collect();
    Ok(Obtainment {
        tree,
        hashes,
        dir_h1,
        lock_extra,
        source: format!("filesystem_mirror:{}", path.display()),
        memo: Some((path, fingerprint)),
        auth: "unauthenticated".into(),
        obtained,
        origin,
    })
}

/// The directory `h1:` of a committed package: the `h1:` recorded as verified locally that
/// is not the archive form (the store records the directory form first).
fn stored_dir_h1(hashes: &[HashRecord]) -> Option<Hash> {
    hashes
        .iter()
        .find(|r| matches!(r.hash, Hash::H1(_)) && r.disposition.verified_locally)
        .map(|r| r.hash.clone())
}

/// Download `url` into the store's temp dir and ingest it; the archive's zh must be one of
/// `expected` (if any is given) — checked before anything is extracted.
#[allow(clippy::too_many_arguments)]
fn download_and_ingest(
    store: &Store,
    http: &HttpClient,
    reporter: &dyn Reporter,
    display: &str,
    addr: &ProviderAddr,
    version: &Version,
    url: &str,
    expected_zh: Option<&Hash>,
) -> Result<tstore_store::IngestedArchive, InstallError> {
    let remote_err = |source: RemoteError| InstallError::Remote {
        provider: addr.to_string(),
        version: Some(version.clone()),
        what: format!("archive at {url}"),
        source,
    };
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let tmp_dir = store.root().join("tmp");
    let temp = tempfile::Builder::new()
        .prefix("download-")
        .suffix(".zip")
        .tempfile_in(&tmp_dir)
        .map_err(|source| {
            remote_err(RemoteError::Http(HttpError::Write {
                url: url.to_owned(),
                path: tmp_dir.clone(),
                source,
            }))
        })?;
    reporter.event(Event::Downloading {
        provider: display,
        version,
        url,
    });
    let progress = |bytes, total| {
        reporter.event(Event::DownloadProgress {
            provider: display,
            bytes,
            total,
        })
    };
    let (sha, _bytes) = http
        .download(url, temp.path(), &progress)
        .map_err(|e| remote_err(e.into()))?;
    let zh = Hash::zh_from_sha256(&sha);
    if let Some(expected) = expected_zh {
        if *expected != zh {
            return Err(InstallError::ArchiveChecksum {
                provider: addr.to_string(),
                version: version.clone(),
                url: url.to_owned(),
                computed: zh.to_string(),
                expected: expected.to_string(),
            });
        }
    }
    store.ingest_zip(temp.path()).map_err(store_err)
}

/// A registry package: SHA256SUMS already verified; reuse the store's copy when it holds the
/// signed archive hash, else download, check and ingest.
#[allow(clippy::too_many_arguments)]
fn obtain_registry(
    store: &Store,
    opts: &InitOptions,
    http: &HttpClient,
    reporter: &dyn Reporter,
    key: &PackageKey,
    addr: &ProviderAddr,
    version: &Version,
    verified: VerifiedPackage,
) -> Result<Obtainment, InstallError> {
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let zh = Hash::Zh(verified.shasum.clone());
    let key_id = verified.key_id.as_str();
    let mut hashes = Vec::new();
    let (tree, dir_h1, obtained) = match reuse(store, key, &zh).map_err(store_err)? {
        Some((tree, dir_h1)) => {
            hashes.push(record(dir_h1.clone(), true, false, None));
            (tree, dir_h1, Obtained::InStore)
        }
        None => {
            let archive = download_and_ingest(
                store,
                http,
                reporter,
                &display_name(addr, opts.flavor),
                addr,
                version,
                &verified.download_url,
                Some(&zh),
            )?;
            hashes.push(record(archive.ingested.h1.clone(), true, false, None));
            if archive.h1_zip != archive.ingested.h1 {
                hashes.push(record(archive.h1_zip.clone(), true, false, None));
            }
            (
                archive.ingested.tree,
                archive.ingested.h1,
                Obtained::Downloaded,
            )
        }
    };
    let mut lock_extra = Vec::new();
    for (sum, _file) in &verified.signed_sums {
        let h = Hash::Zh(sum.clone());
        lock_extra.push(h.to_string());
        hashes.push(record(h.clone(), h == zh, true, Some(key_id)));
    }
    let auth = match opts.flavor {
        Flavor::Terraform => format!("self-signed, key ID {key_id}"),
        Flavor::Tofu => format!("signed, key ID {key_id}"),
    };
    Ok(Obtainment {
        tree,
        hashes,
        dir_h1,
        lock_extra,
        memo: None,
        source: format!("registry:{}", verified.download_url),
        auth,
        obtained,
        origin: "current",
    })
}

/// The committed package `key` if it records `zh` (its archive was verified before): its
/// tree and directory `h1:`.
fn reuse(store: &Store, key: &PackageKey, zh: &Hash) -> Result<Option<(TreeId, Hash)>, StoreError> {
    let Some(package) = store.trusted_package(key)? else {
        return Ok(None);
    };
    if !package
        .hashes
        .iter()
        .any(|r| r.hash == *zh && r.disposition.verified_locally)
    {
        return Ok(None);
    }
    Ok(stored_dir_h1(&package.hashes).map(|h1| (package.tree, h1)))
}

/// A network mirror package: the archive must match one of the mirror's hashes, if it
/// gives any. The lock gets the directory `h1:` and the zip's `zh:` (RFC; terraform 1.0.3
/// records only the `h1:`).
#[allow(clippy::too_many_arguments)]
fn obtain_net(
    store: &Store,
    http: &HttpClient,
    reporter: &dyn Reporter,
    flavor: Flavor,
    key: &PackageKey,
    addr: &ProviderAddr,
    version: &Version,
    archive: crate::providers::sources::net_mirror::MirrorArchive,
) -> Result<Obtainment, InstallError> {
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let reported: Vec<Hash> = archive
        .hashes
        .iter()
        .filter_map(|h| h.parse::<Hash>().ok())
        .collect();
    let auth = if reported.is_empty() {
        "unauthenticated"
    } else {
        "verified checksum"
    };
    // A reported zh: already verified into the store means nothing to download.
    for zh in reported.iter().filter(|h| matches!(h, Hash::Zh(_))) {
        if let Some((tree, dir_h1)) = reuse(store, key, zh).map_err(store_err)? {
            return Ok(Obtainment {
                tree,
                hashes: vec![
                    record(dir_h1.clone(), true, false, None),
                    record(zh.clone(), true, false, None),
                ],
                lock_extra: vec![zh.to_string()],
                dir_h1,
                memo: None,
                source: format!("network_mirror:{}", archive.url),
                auth: auth.into(),
                obtained: Obtained::InStore,
                origin: "current",
            });
        }
    }
    let ingested = download_and_ingest(
        store,
        http,
        reporter,
        &display_name(addr, flavor),
        addr,
        version,
        &archive.url,
        None,
    )?;
    let computed = [&ingested.ingested.h1, &ingested.h1_zip, &ingested.zh];
    if !reported.is_empty() && !computed.iter().any(|h| reported.contains(h)) {
        return Err(InstallError::ArchiveChecksum {
            provider: addr.to_string(),
            version: version.clone(),
            url: archive.url.clone(),
            computed: join_hashes(computed.iter().map(|h| h.to_string())),
            expected: join_hashes(reported.iter().map(|h| h.to_string())),
        });
    }
    let mut hashes = vec![record(ingested.ingested.h1.clone(), true, false, None)];
    if ingested.h1_zip != ingested.ingested.h1 {
        hashes.push(record(ingested.h1_zip.clone(), true, false, None));
    }
    hashes.push(record(ingested.zh.clone(), true, false, None));
    Ok(Obtainment {
        tree: ingested.ingested.tree,
        dir_h1: ingested.ingested.h1.clone(),
        lock_extra: vec![ingested.zh.to_string()],
        hashes,
        memo: None,
        source: format!("network_mirror:{}", archive.url),
        auth: auth.into(),
        obtained: Obtained::Downloaded,
        origin: "current",
    })
}

fn join_hashes(hashes: impl Iterator<Item = String>) -> String {
    hashes.collect::<Vec<_>>().join(", ")
}

/// Ingest a filesystem-mirror package, with the hashes verified locally for it: the
/// directory `h1:` (always first), and for a zip its archive-form `h1:` when different and
/// its `zh:`.
pub fn ingest_mirror_package(
    store: &Store,
    location: &MirrorLocation,
) -> Result<(TreeId, Vec<HashRecord>), StoreError> {
    let local = |hash| HashRecord {
        hash,
        disposition: Disposition {
            verified_locally: true,
            ..Disposition::default()
        },
    };
    match location {
        MirrorLocation::Unpacked(dir) => {
            let ingested = store.ingest_dir(dir)?;
            Ok((ingested.tree, vec![local(ingested.h1)]))
        }
        MirrorLocation::Packed(zip) => {
            let archive = store.ingest_zip(zip)?;
            let mut hashes = vec![local(archive.ingested.h1.clone())];
            // A zip with directory entries has a different archive-form h1 (spec 1.4):
            // remember it too, so a lock written by tofu from that zip still matches.
            if archive.h1_zip != archive.ingested.h1 {
                hashes.push(local(archive.h1_zip));
            }
            hashes.push(local(archive.zh));
            Ok((archive.ingested.tree, hashes))
        }
    }
}

/// Every candidate of `addr` from the methods whose patterns match it, in method order
/// (the first method holding a version wins, as in tofu).
fn available_packages(
    opts: &InitOptions,
    http: Option<&HttpClient>,
    addr: &ProviderAddr,
) -> Result<Vec<Candidate>, InstallError> {
    let mut found = Vec::new();
    let mut locations = Vec::new();
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
        });
    }
    Ok(found)
}

/// The lock file after this install: selections for exactly the required providers;
/// hashes merged with the old entry when the version did not change (as tofu does).
fn next_lock_file(old: Option<&LockFile>, planned: &[Planned]) -> LockFile {
    let mut providers = BTreeMap::new();
    for p in planned {
        let mut hashes = BTreeSet::new();
        if let Some(old_entry) = old.and_then(|l| l.providers.get(&p.addr)) {
            if old_entry.version == p.version {
                hashes.extend(old_entry.hashes.iter().cloned());
            }
        }
        hashes.extend(p.lock_hashes.iter().cloned());
        let constraints = (!p.constraints.is_empty()).then(|| p.constraints.to_lock_string());
        providers.insert(
            p.addr.clone(),
            LockedProvider {
                version: p.version.clone(),
                constraints,
                hashes,
            },
        );
    }
    LockFile {
        header: old.and_then(|l| l.header.clone()),
        providers,
        ..LockFile::default()
    }
}

/// The provider as tofu displays it: without the host when it is the default one.
pub fn display_name(addr: &ProviderAddr, flavor: Flavor) -> String {
    if addr.host == flavor.default_registry_host() {
        format!("{}/{}", addr.namespace, addr.kind)
    } else {
        addr.to_string()
    }
}

/// Write a file atomically: temp file in the same directory, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(contents)?;
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    fs_err::File::open(dir)?.sync_all()?;
    Ok(())
}
