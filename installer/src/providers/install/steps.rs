//! The steps of [`install`](super::install), in order: what the configuration and the state
//! need, the lock file's pins, the providers wanted, phase 1 (obtain and verify, in
//! parallel), phase 2 (the new lock file) and phase 3 (commit and link).

use tstore_store::Store;
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::config::tree;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::LockFile;
use tstore_tofu::version::VersionConstraints;

use super::*;
use crate::StateReport;

/// The providers the configuration requires, with those only the state needs (constraint-
/// free), and what was seen of the state.
pub(super) fn required_providers(
    store: &Store,
    opts: &ProviderOptions,
) -> Result<(tree::ConfigurationRequirements, StateReport), InstallError> {
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
    Ok((requirements, state))
}

/// The lock file as it is, and the pins this install follows.
pub(super) struct LockPins {
    /// The lock file as it is on disk.
    pub(super) old: Option<LockFile>,
    /// What this install follows: the lock file, and under tofu the entries OpenTofu adds
    /// for terraform's (`LockFile::upgrade_from_predecessor`), never silently: each one the
    /// configuration uses is reported and the binary warns.
    pub(super) pins: Option<LockFile>,
    /// The entries so added: (terraform's address, OpenTofu's).
    pub(super) rewritten: Vec<(ProviderAddr, ProviderAddr)>,
}

/// Read the lock file at `lock_path` and the pins it gives under `flavor`.
pub(super) fn lock_pins(
    lock_path: &std::path::Path,
    flavor: Flavor,
) -> Result<LockPins, InstallError> {
    let old = LockFile::load(lock_path)?;
    let mut pins = old.clone();
    let mut rewritten = Vec::new();
    if let (Some(pins), Flavor::Tofu) = (&mut pins, flavor) {
        rewritten = pins.upgrade_from_predecessor();
    }
    Ok(LockPins {
        old,
        pins,
        rewritten,
    })
}

/// The providers to install: every required one but the built-in ones and, where the
/// release skips them (`tool_version::DEV_OVERRIDES_NOT_INSTALLED`), the `dev_overrides`.
pub(super) fn wanted<'a>(
    requirements: &'a tree::ConfigurationRequirements,
    overrides: &[Overridden],
    skip_overridden: bool,
) -> Vec<(&'a ProviderAddr, &'a VersionConstraints)> {
    requirements
        .providers
        .iter()
        .filter(|(addr, _)| !addr.is_builtin())
        .filter(|(addr, _)| !(skip_overridden && overrides.iter().any(|o| &o.addr == *addr)))
        .collect()
}

/// Phase 1: every wanted provider obtained and verified. Providers are independent, so they
/// are obtained in parallel (downloads overlap); the first error in configuration order
/// wins.
pub(super) fn obtain_all(
    cx: ObtainContext<'_>,
    wanted: &[(&ProviderAddr, &VersionConstraints)],
    pins: Option<&LockFile>,
) -> Result<Vec<Planned>, InstallError> {
    let obtain_one = |&(addr, constraints): &(&ProviderAddr, &VersionConstraints)| {
        let locked = pins.and_then(|l| l.providers.get(addr));
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
    results.into_iter().collect()
}

/// Phase 2: the new lock file, and how it differs from the old one; `-lockfile=readonly`
/// refuses a change of the selected providers or versions. `rewritten`: entries were moved
/// to OpenTofu's registry.
pub(super) fn next_lock(
    opts: &ProviderOptions,
    lock_path: &std::path::Path,
    old_lock: Option<&LockFile>,
    pins: Option<&LockFile>,
    planned: &[Planned],
    overrides: &[Overridden],
    rewritten: bool,
) -> Result<(LockFile, LockFileChange), InstallError> {
    let mut new_lock = next_lock_file(
        pins,
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
        for o in overrides {
            if let Some(entry) = pins.and_then(|l| l.providers.get(&o.addr)) {
                new_lock.providers.insert(o.addr.clone(), entry.clone());
            }
        }
    }
    if rewritten {
        // Entries moved to OpenTofu's registry are maintained by tofu from now on: its
        // header says so (as `tofu init` writes it), so the next init, by the lock file's
        // header, stays with tofu instead of moving them back.
        new_lock.header = None;
    }
    let mut change = match old_lock {
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
        match readonly_conflict(old_lock, &new_lock) {
            Some(what) => {
                return Err(InstallError::LockFileReadonly {
                    lock_path: lock_path.display().to_string(),
                    what,
                })
            }
            None => change = LockFileChange::NotUpdated,
        }
    }

    Ok((new_lock, change))
}

/// Phase 3: each planned package committed to the store and linked; returns the reports
/// and the providers whose new lock entry holds only this platform's local checksum.
pub(super) fn commit_and_link(
    store: &Store,
    opts: &ProviderOptions,
    reporter: &dyn Reporter,
    planned: Vec<Planned>,
    pins: Option<&LockFile>,
    change: LockFileChange,
) -> Result<(Vec<ProviderReport>, Vec<String>), InstallError> {
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
            && only_local_checksum(&p, &hashes, pins, opts.workdir.flavor)
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
    Ok((reports, incomplete_lock_entries))
}
