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
use std::path::PathBuf;

use tstore_store::{HashRecord, PackageKey, SourceFingerprint, Store, TreeId};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::cliconfig::{InstallMethod, InstallMethodKind};
use tstore_tofu::config::tree;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::{LockFile, LockedProvider};
use tstore_tofu::version::{Version, VersionConstraints};

use crate::net::NetworkSettings;
use crate::providers::{
    obtain, Event, InitReport, InstallError, LockFileChange, Obtained, ProviderReport, Reporter,
};
use crate::workdir::atomic::write_atomic;
use crate::workdir::link::{self, LinkOutcome};

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
    pub(crate) link: PathBuf,
    pub(crate) target: PathBuf,
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

/// The lock file after this install: selections for exactly the required providers;
/// hashes merged with the old entry when the version did not change (as tofu does).
pub(crate) fn next_lock_file(old: Option<&LockFile>, planned: &[Planned]) -> LockFile {
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
