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

/// Run the provider install for `opts.workdir.dir`: what the configuration and the state
/// need, then three phases (obtain and verify everything, decide the new lock file, then
/// commit, link and write), so that a failure before the last leaves the working directory
/// as it was.
pub fn install(
    store: &Store,
    opts: &ProviderOptions,
    reporter: &dyn Reporter,
) -> Result<InitReport, InstallError> {
    if opts.workdir.upgrade && opts.workdir.lockfile_readonly {
        return Err(InstallError::UpgradeConflictsWithReadonlyLock);
    }
    let (requirements, state) = steps::required_providers(store, opts)?;
    let lock_path = opts.workdir.dir.join(LOCK_FILE_NAME);
    let steps::LockPins {
        old: old_lock,
        pins,
        mut rewritten,
    } = steps::lock_pins(&lock_path, opts.workdir.flavor)?;
    let http = LazyHttpClient::new(&opts.workdir.network);

    // Phase 1: obtain and verify everything before touching the working directory.
    let overrides = dev_overrides(opts);
    let skip_overridden = opts
        .workdir
        .tool
        .follows(&tstore_tofu::tool_version::DEV_OVERRIDES_NOT_INSTALLED);
    let wanted = steps::wanted(&requirements, &overrides, skip_overridden);
    rewritten.retain(|(_, new)| wanted.iter().any(|(addr, _)| *addr == new));
    let cx = ObtainContext {
        store,
        opts,
        http: &http,
        reporter,
    };
    let planned = steps::obtain_all(cx, &wanted, pins.as_ref())?;

    // Phase 2: the new lock file.
    let (new_lock, change) = steps::next_lock(
        opts,
        &lock_path,
        old_lock.as_ref(),
        pins.as_ref(),
        &planned,
        &overrides,
        !rewritten.is_empty(),
    )?;

    // Phase 3: commit to the store, link, write the lock file; an interrupt waits for it.
    let _writing = crate::workdir::interrupt::Writing::begin();
    let (reports, mut incomplete_lock_entries) =
        steps::commit_and_link(store, opts, reporter, planned, pins.as_ref(), change)?;
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

mod steps;
#[cfg(test)]
mod tests;
