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

use tstore_store::{Hash, HashRecord, Package, PackageKey, SourceFingerprint, Store, TreeId};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::cliconfig::{InstallMethod, InstallMethodKind};
use tstore_tofu::config::tree;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::{LockFile, LockedProvider};
use tstore_tofu::version::{Version, VersionConstraints};

use crate::net::LazyHttpClient;
use crate::options::WorkdirOptions;
use crate::providers::state::state_providers;
use crate::providers::{
    obtain, DevOverride, Event, InitReport, InstallError, LockFileChange, ObtainContext, Obtained,
    ProviderReport, ProviderRequest, Reporter, RewrittenLockEntry,
};
use crate::workdir::atomic::write_atomic;
use crate::workdir::link::{self, LinkError, LinkOutcome};
use crate::workdir::safe_fs::{RelPath, SafeFsError};

/// The lock file's name in a working directory.
pub const LOCK_FILE_NAME: &str = ".terraform.lock.hcl";

/// What the provider phase of `init` needs, already validated by the binary.
#[derive(Clone, Debug)]
pub struct ProviderOptions {
    /// The working directory and what both phases share.
    pub workdir: WorkdirOptions,
    /// The platform to install for.
    pub platform: Platform,
    /// The effective provider installation methods from the CLI configuration.
    pub methods: Vec<InstallMethod>,
    /// What the CLI configuration (and so `methods`) was read from, in a phrase for
    /// messages: `CliConfig::describe_files`.
    pub cli_config: String,
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
    /// What goes into the lock file: the installed directory's `h1:` plus the hashes the
    /// lock rule of OpenTofu's hash-disposition RFC adds (registry-reported `zh:` lines, the
    /// `zh:` of a zip verified from a mirror; docs/decisions.md, "The lock gets
    /// the union").
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

/// Run the provider install for `opts.workdir.dir`.
pub fn install(
    store: &Store,
    opts: &ProviderOptions,
    reporter: &dyn Reporter,
) -> Result<InitReport, InstallError> {
    if opts.workdir.upgrade && opts.workdir.lockfile_readonly {
        return Err(InstallError::UpgradeConflictsWithReadonlyLock);
    }
    // A module linked into the mount is read from the store's copy of the same files: no
    // FUSE round trip per file, and the module phase's parse of each file is reused.
    let modules_dir = opts.workdir.data_dir.modules();
    let requirements = tree::load_configuration_requirements_reading(
        &opts.workdir.dir,
        &modules_dir,
        opts.workdir.flavor,
        opts.workdir.root_module(),
        &|installed| link::module_view_behind(store, &modules_dir, &opts.workdir.mount, installed),
    )?;
    let mut requirements = requirements;
    let (in_state, mut state) = state_providers(&opts.workdir, &requirements.state_storage);
    for addr in in_state {
        if let std::collections::btree_map::Entry::Vacant(slot) = requirements.providers.entry(addr)
        {
            state.only_in_state.push(slot.key().to_string());
            slot.insert(VersionConstraints::default());
        }
    }
    let lock_path = opts.workdir.dir.join(LOCK_FILE_NAME);
    let old_lock = LockFile::load(&lock_path)?;
    // The pins this install follows: the lock file, and under tofu the entries OpenTofu
    // adds for terraform's (`LockFile::upgrade_from_predecessor`), never silently: each
    // one the configuration uses is reported and the binary warns.
    let mut pins = old_lock.clone();
    let mut rewritten = Vec::new();
    if let (Some(pins), Flavor::Tofu) = (&mut pins, opts.workdir.flavor) {
        rewritten = pins.upgrade_from_predecessor();
    }
    let http = LazyHttpClient::new(&opts.workdir.network);

    // Phase 1: obtain and verify everything before touching the working directory.
    // Providers are independent, so they are obtained in parallel (downloads overlap);
    // the first error in configuration order wins.
    // `dev_overrides` providers: installed like any other by the releases before they were
    // skipped (tool_version::DEV_OVERRIDES_NOT_INSTALLED).
    let overrides = dev_overrides(opts);
    let skip_overridden = opts
        .workdir
        .tool
        .follows(&tstore_tofu::tool_version::DEV_OVERRIDES_NOT_INSTALLED);
    let wanted: Vec<_> = requirements
        .providers
        .iter()
        .filter(|(addr, _)| !addr.is_builtin())
        .filter(|(addr, _)| !(skip_overridden && overrides.iter().any(|o| &o.addr == *addr)))
        .collect();
    rewritten.retain(|(_, new)| wanted.iter().any(|(addr, _)| *addr == new));
    let cx = ObtainContext {
        store,
        opts,
        http: &http,
        reporter,
    };
    let obtain_one = |&(addr, constraints): &(&ProviderAddr, &VersionConstraints)| {
        let locked = pins.as_ref().and_then(|l| l.providers.get(addr));
        let provider = ProviderRequest {
            addr,
            constraints,
            locked,
        };
        obtain(cx, provider, ObtainMode::Init)
    };
    // The first provider is obtained on this thread: the common warm init has one, and a
    // thread (its stack and its own malloc arena) cost more than the rest of its work.
    // The threads log to the run's log (the server's request has its own).
    let log = tracing::dispatcher::get_default(Clone::clone);
    let results: Vec<Result<Planned, InstallError>> = std::thread::scope(|scope| {
        let Some((first, rest)) = wanted.split_first() else {
            return Vec::new();
        };
        let handles: Vec<_> = rest
            .iter()
            .map(|wanted| {
                scope.spawn(|| tracing::dispatcher::with_default(&log, || obtain_one(wanted)))
            })
            .collect();
        let mut results = vec![obtain_one(first)];
        results.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("provider thread panicked")),
        );
        results
    });
    let planned = results.into_iter().collect::<Result<Vec<_>, _>>()?;

    // Phase 2: the new lock file.
    let mut new_lock = next_lock_file(
        pins.as_ref(),
        planned.iter().map(Planned::selection),
        !opts
            .workdir
            .tool
            .follows(&tstore_tofu::tool_version::DROPS_UNUSED_LOCK_ENTRIES),
    );
    if opts
        .workdir
        .tool
        .follows(&tstore_tofu::tool_version::DEV_OVERRIDE_LOCK_ENTRIES_KEPT)
    {
        for o in &overrides {
            if let Some(entry) = pins.as_ref().and_then(|l| l.providers.get(&o.addr)) {
                new_lock.providers.insert(o.addr.clone(), entry.clone());
            }
        }
    }
    if !rewritten.is_empty() {
        // Entries moved to OpenTofu's registry are maintained by tofu from now on: its
        // header says so (as `tofu init` writes it), so the next init, by the lock file's
        // header, stays with tofu instead of moving them back.
        new_lock.header = None;
    }
    let mut change = match &old_lock {
        None if planned.is_empty() => LockFileChange::Unchanged,
        None => LockFileChange::Created,
        // Only a change of what the lock records rewrites it, as the tools decide: a
        // loosened constraint the locked version still meets leaves the file byte for byte.
        Some(old) if old.records_the_same(&new_lock) => LockFileChange::Unchanged,
        Some(_) => LockFileChange::Updated,
    };
    if opts.workdir.lockfile_readonly && change != LockFileChange::Unchanged {
        // Only a change of the selected providers or versions is an error; new
        // checksums (or constraints) are not recorded, and the binary warns.
        match readonly_conflict(old_lock.as_ref(), &new_lock) {
            Some(what) => {
                return Err(InstallError::LockFileReadonly {
                    lock_path: lock_path.display().to_string(),
                    what,
                })
            }
            None => change = LockFileChange::NotUpdated,
        }
    }

    // Phase 3: commit to the store, link, write the lock file; an interrupt waits for it.
    let _writing = crate::workdir::interrupt::Writing::begin();
    let mut reports = Vec::new();
    let lock_written = matches!(change, LockFileChange::Created | LockFileChange::Updated)
        && opts
            .workdir
            .tool
            .follows(&tstore_tofu::tool_version::INCOMPLETE_LOCK_WARNING);
    let mut incomplete_lock_entries = Vec::new();
    // Links are made below the data directory opened once, never through a symlink
    // (`workdir::safe_fs`); it is created only when there is something to link.
    let mut data_dir = None;
    for p in planned {
        // A package taken from the store by the lock is committed already, with the
        // hashes it was read with, and its files were just checked against their stat:
        // committing it again would only repeat a write transaction.
        let hashes = match p.obtained {
            Obtained::StoreByLock => p.hashes.clone(),
            _ => p.commit(store)?.hashes,
        };
        let link_err = |e| LinkError::new(e, p.link.clone(), &p.target);
        let dir = match &mut data_dir {
            Some(d) => d,
            None => data_dir.insert(
                opts.workdir
                    .data_dir
                    .open(true)
                    .map_err(link_err)?
                    .expect("created"),
            ),
        };
        let rel = p
            .link
            .strip_prefix(&opts.workdir.data_dir.path)
            .map_err(|_| SafeFsError::NotPlain {
                path: p.link.display().to_string(),
                why: "not below the data directory",
            })
            .and_then(RelPath::new)
            .map_err(link_err)?;
        let link_outcome = link::ensure_symlink(dir, &rel, &p.target)?;
        if link_outcome != LinkOutcome::Unchanged
            && lock_written
            && only_local_checksum(&p, &hashes, pins.as_ref(), opts.workdir.flavor)
        {
            incomplete_lock_entries.push(p.display.clone());
        }
        let provider = p.display.as_str();
        if link_outcome == LinkOutcome::Unchanged {
            reporter.event(Event::UsingPreviouslyInstalled {
                provider,
                version: &p.version,
            });
        } else if p.obtained == Obtained::StoreByLock {
            reporter.event(Event::UsingFromStore {
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
            hashes,
            link: p.link,
            target: p.target,
            link_outcome,
        });
    }
    if matches!(change, LockFileChange::Created | LockFileChange::Updated) {
        let text = render(&new_lock, opts.workdir.flavor);
        write_atomic(&lock_path, text.as_bytes()).map_err(|source| {
            InstallError::WriteLockFile {
                path: lock_path.clone(),
                source,
            }
        })?;
    }
    let lock_entries_dropped = match &old_lock {
        Some(old) if change == LockFileChange::Updated => old
            .providers
            .keys()
            .filter(|addr| !new_lock.providers.contains_key(*addr))
            .map(ToString::to_string)
            .collect(),
        _ => Vec::new(),
    };
    incomplete_lock_entries.sort();
    Ok(InitReport {
        dev_overrides: overrides
            .into_iter()
            .map(|o| DevOverride {
                provider: display_name(&o.addr, opts.workdir.flavor),
                dir: o.dir,
                installed: !skip_overridden,
            })
            .collect(),
        state,
        incomplete_lock_entries,
        lock_entries_dropped,
        providers: reports,
        lock_file: change,
        bytes_hashed: store.bytes_hashed(),
        lock_entries_rewritten: rewritten
            .into_iter()
            .map(|(from, to)| RewrittenLockEntry {
                from: from.to_string(),
                to: to.to_string(),
            })
            .collect(),
    })
}

/// What `-lockfile=readonly` cannot allow: a different set of providers, or another
/// version for one of them (`None` when only checksums or constraints differ).
pub(crate) fn readonly_conflict(old: Option<&LockFile>, new: &LockFile) -> Option<String> {
    let Some(old) = old else {
        return Some("it does not exist yet".into());
    };
    let added: Vec<String> = new
        .providers
        .keys()
        .filter(|a| !old.providers.contains_key(*a))
        .map(ToString::to_string)
        .collect();
    let removed: Vec<String> = old
        .providers
        .keys()
        .filter(|a| !new.providers.contains_key(*a))
        .map(ToString::to_string)
        .collect();
    let moved: Vec<String> = new
        .providers
        .iter()
        .filter_map(|(a, p)| {
            let was = &old.providers.get(a)?.version;
            (was != &p.version).then(|| format!("{a} {was} -> {}", p.version))
        })
        .collect();
    let mut what = Vec::new();
    if !added.is_empty() {
        what.push(format!("new providers: {}", added.join(", ")));
    }
    if !removed.is_empty() {
        what.push(format!(
            "providers no longer required: {}",
            removed.join(", ")
        ));
    }
    if !moved.is_empty() {
        what.push(format!("other versions: {}", moved.join(", ")));
    }
    (!what.is_empty()).then(|| what.join("; "))
}

/// The lock file as tofu would write it, keeping an existing header.
pub(crate) fn render(lock: &LockFile, flavor: Flavor) -> String {
    lock.to_string_with_header(flavor)
}

/// The lock file after this install: an entry per selected provider, its hashes merged
/// with the old entry when the version did not change. Entries of providers no longer
/// required are kept when `keep_unused` (terraform before 1.1.2), dropped otherwise (tofu,
/// later terraform: `tool_version::DROPS_UNUSED_LOCK_ENTRIES`).
pub(crate) fn next_lock_file<'a>(
    old: Option<&LockFile>,
    selections: impl IntoIterator<Item = Selection<'a>>,
    keep_unused: bool,
) -> LockFile {
    let mut providers = BTreeMap::new();
    if keep_unused {
        if let Some(old) = old {
            providers.extend(old.providers.iter().map(|(a, p)| (a.clone(), p.clone())));
        }
    }
    for p in selections {
        let mut hashes = BTreeSet::new();
        if let Some(old_entry) = old.and_then(|l| l.providers.get(p.addr)) {
            if &old_entry.version == p.version {
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

/// One provider's selection, as the lock file records it.
pub(crate) struct Selection<'a> {
    pub(crate) addr: &'a ProviderAddr,
    pub(crate) version: &'a Version,
    pub(crate) constraints: &'a VersionConstraints,
    /// The hashes this install vouches for.
    pub(crate) lock_hashes: &'a BTreeSet<String>,
}

impl Planned {
    /// Make the package visible in the store, with its verified hashes and source memo.
    pub(crate) fn commit(&self, store: &Store) -> Result<Package, InstallError> {
        store
            .commit_package(
                &self.key,
                &self.tree,
                &self.hashes,
                self.memo.as_ref().map(|(path, fp)| (path.as_path(), fp)),
            )
            .map_err(|source| InstallError::Store {
                provider: self.addr.to_string(),
                version: self.version.clone(),
                source,
            })
    }

    pub(crate) fn selection(&self) -> Selection<'_> {
        Selection {
            addr: &self.addr,
            version: &self.version,
            constraints: &self.constraints,
            lock_hashes: &self.lock_hashes,
        }
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

/// Whether the tool would call `p`'s new lock entry incomplete: nothing signed its
/// checksums (under tofu, a registry's unsigned checksums count as signed), and the entry
/// held nothing before for this version, or only the checksum computed here (terraform's
/// `getProviders` `ProvidersLockUpdated` callback; OpenTofu's at v1.12.x). An entry of
/// another version (`-upgrade` moved it) holds nothing for this one: the tools start each
/// version's hashes afresh.
fn only_local_checksum(
    p: &Planned,
    hashes: &[HashRecord],
    pins: Option<&LockFile>,
    flavor: Flavor,
) -> bool {
    let signed = hashes.iter().any(|r| {
        !r.disposition.signed_by_key_ids.is_empty()
            || (flavor == Flavor::Tofu && r.disposition.reported_by_registry)
    });
    if signed {
        return false;
    }
    let local: BTreeSet<String> = hashes
        .iter()
        .filter(|r| r.disposition.verified_locally && matches!(r.hash, Hash::H1(_)))
        .map(|r| r.hash.to_string())
        .collect();
    match pins
        .and_then(|l| l.providers.get(&p.addr))
        .filter(|prior| prior.version == p.version)
    {
        None => true,
        Some(prior) => prior.hashes.is_empty() || prior.hashes == local,
    }
}

/// A provider the CLI configuration's `dev_overrides` points at a local directory.
struct Overridden {
    addr: ProviderAddr,
    dir: PathBuf,
}

/// The `dev_overrides` of the CLI configuration, by address (a key that is not a provider
/// address is left out: the tool reports it when it reads the file).
fn dev_overrides(opts: &ProviderOptions) -> Vec<Overridden> {
    let host = opts.workdir.flavor.default_registry_host();
    let mut out: Vec<Overridden> = opts
        .methods
        .iter()
        .filter_map(|m| match &m.kind {
            InstallMethodKind::DevOverrides(map) => Some(map),
            _ => None,
        })
        .flatten()
        .filter_map(|(key, dir)| {
            let addr = ProviderAddr::parse_source(key, host).ok()?;
            Some(Overridden {
                addr,
                dir: dir.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.addr.cmp(&b.addr));
    out.dedup_by(|a, b| a.addr == b.addr);
    out
}

#[cfg(test)]
mod tests;
