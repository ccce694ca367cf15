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

use crate::addr::{Platform, ProviderAddr};
use crate::cliconfig::{InstallMethod, InstallMethodKind};
use crate::config::{self, ConfigError};
use crate::flavor::Flavor;
use crate::fsmirror::{FilesystemMirror, MirrorError, MirrorLocation, MirrorPackage};
use crate::link::{self, LinkError, LinkOutcome};
use crate::lockfile::{LockFile, LockFileError, LockedProvider};
use crate::version::{newest_matching, Version, VersionConstraints};

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
    /// About to install.
    Installing {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
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

/// Receives [`Event`]s as the install proceeds.
pub trait Reporter {
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
    /// Where the package came from (e.g. `filesystem_mirror:/path/to/zip`).
    pub source: String,
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
    Config(#[from] ConfigError),
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
    /// The one-line summary tofu prints after `Error: ` for this kind of failure.
    pub fn summary(&self) -> &'static str {
        match self {
            InstallError::Config(_) => "Failed to load the configuration",
            InstallError::LockFile(_) => "Failed to read the dependency lock file",
            InstallError::NotFound { .. }
            | InstallError::UnsupportedMethod { .. }
            | InstallError::NoMatchingVersion { .. }
            | InstallError::LockedVersionExcluded { .. }
            | InstallError::Mirror(_) => "Failed to query available provider packages",
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
struct Planned {
    addr: ProviderAddr,
    display: String,
    version: Version,
    constraints: VersionConstraints,
    key: PackageKey,
    tree: TreeId,
    hashes: Vec<HashRecord>,
    /// The `h1:` of the installed directory: what tofu records in the lock file.
    dir_h1: Hash,
    source_path: PathBuf,
    fingerprint: SourceFingerprint,
    obtained: Obtained,
    link: PathBuf,
    target: PathBuf,
}

/// Run the provider install for `opts.dir`.
pub fn init(
    store: &Store,
    opts: &InitOptions,
    reporter: &dyn Reporter,
) -> Result<InitReport, InstallError> {
    let default_host = opts.flavor.default_registry_host();
    let requirements = config::load_module_requirements(&opts.dir, default_host)?;
    let lock_path = opts.dir.join(LOCK_FILE_NAME);
    let old_lock = LockFile::load(&lock_path)?;

    // Phase 1: obtain and verify everything before touching the working directory.
    let mut planned = Vec::new();
    for (addr, constraints) in &requirements.providers {
        if addr.is_builtin() {
            continue;
        }
        let locked = old_lock.as_ref().and_then(|l| l.providers.get(addr));
        planned.push(obtain(store, opts, addr, constraints, locked, reporter)?);
    }

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
                Some((&p.source_path, &p.fingerprint)),
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
                auth: "unauthenticated",
                from_store: p.obtained == Obtained::Memoized,
            });
        }
        reports.push(ProviderReport {
            provider: p.addr.to_string(),
            version: p.version.to_string(),
            platform: opts.platform.to_string(),
            source: format!("filesystem_mirror:{}", p.source_path.display()),
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
fn render(lock: &LockFile, flavor: Flavor) -> String {
    lock.to_string_with_header(flavor)
}

/// Phase 1 for one provider.
fn obtain(
    store: &Store,
    opts: &InitOptions,
    addr: &ProviderAddr,
    constraints: &VersionConstraints,
    locked: Option<&LockedProvider>,
    reporter: &dyn Reporter,
) -> Result<Planned, InstallError> {
    let display = display_name(addr, opts.flavor);
    let constraints_text = constraints.to_lock_string();
    let candidates = available_packages(opts, addr)?;

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
            let versions: BTreeSet<&Version> = candidates.iter().map(|p| &p.version).collect();
            newest_matching(versions, constraints)
                .cloned()
                .ok_or_else(|| InstallError::NoMatchingVersion {
                    provider: addr.to_string(),
                    constraints: constraints_text.clone(),
                })?
        }
    };

    let package = candidates
        .iter()
        .find(|p| p.version == version && p.platform == opts.platform)
        .ok_or_else(|| {
            if candidates.iter().any(|p| p.version == version) {
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
            }
        })?;

    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let source_path = match &package.location {
        MirrorLocation::Packed(p) | MirrorLocation::Unpacked(p) => p.clone(),
    };
    let fingerprint = SourceFingerprint::of_path(&source_path).map_err(store_err)?;
    let (tree, hashes, obtained) = match store
        .source_memo(&source_path, &fingerprint)
        .map_err(store_err)?
    {
        Some(memo) => (memo.tree, memo.hashes, Obtained::Memoized),
        None => {
            let (tree, hashes) = ingest(store, &package.location).map_err(store_err)?;
            (tree, hashes, Obtained::Ingested)
        }
    };
    let dir_h1 = hashes
        .first()
        .map(|r| r.hash.clone())
        .expect("ingest records the directory h1 first");

    if let Some(locked) = locked.filter(|l| l.version == version && !l.hashes.is_empty()) {
        let matches = hashes
            .iter()
            .any(|r| locked.hashes.contains(&r.hash.to_string()));
        if !matches {
            return Err(InstallError::ChecksumMismatch {
                display,
                provider: addr.to_string(),
                version,
                origin: match package.location {
                    MirrorLocation::Packed(_) => "current",
                    MirrorLocation::Unpacked(_) => "local",
                },
                source_path: source_path.display().to_string(),
                computed: join_hashes(hashes.iter().map(|r| r.hash.to_string())),
                lock_path: opts.dir.join(LOCK_FILE_NAME).display().to_string(),
                recorded: join_hashes(locked.hashes.iter().cloned()),
            });
        }
    }

    let key = PackageKey::Provider {
        addr: addr.to_string(),
        version: version.to_string(),
        platform: opts.platform.to_string(),
    };
    let relpath = key.view_relpath().map_err(store_err)?;
    Ok(Planned {
        link: opts.dir.join(".terraform").join(&relpath),
        target: opts.mount.join(&relpath),
        addr: addr.clone(),
        display,
        version,
        constraints: constraints.clone(),
        key,
        tree,
        hashes,
        dir_h1,
        source_path,
        fingerprint,
        obtained,
    })
}

fn join_hashes(hashes: impl Iterator<Item = String>) -> String {
    hashes.collect::<Vec<_>>().join(", ")
}

/// Ingest a mirror package. The first record is always the directory `h1:`.
fn ingest(
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

/// Every package of `addr` in the filesystem mirrors whose patterns match it, in
/// method order (the first method holding a version wins, as in tofu).
fn available_packages(
    opts: &InitOptions,
    addr: &ProviderAddr,
) -> Result<Vec<MirrorPackage>, InstallError> {
    let mut found = Vec::new();
    let mut locations = Vec::new();
    for method in opts.methods.iter().filter(|m| m.matches(addr)) {
        match &method.kind {
            InstallMethodKind::FilesystemMirror { path } => {
                locations.push(format!("{} (filesystem mirror)", path.display()));
                let mirror = FilesystemMirror { root: path.clone() };
                found.extend(mirror.packages(addr)?);
            }
            InstallMethodKind::NetworkMirror { .. } if found.is_empty() => {
                return Err(InstallError::UnsupportedMethod {
                    provider: addr.to_string(),
                    method: "network_mirror",
                })
            }
            InstallMethodKind::Direct if found.is_empty() => {
                return Err(InstallError::UnsupportedMethod {
                    provider: addr.to_string(),
                    method: "direct",
                })
            }
            _ => {}
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
        hashes.insert(p.dir_h1.to_string());
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
