//! `init` of one working directory as a library operation: the protocol every install of a
//! root follows, in one place that tests drive without the binary.
//!
//! Rules, in the order they apply (ARCHITECTURE.md, "Concurrency"):
//!
//! 1. The root's lock first, then the store's lock shared. One init per working directory
//!    at a time (two would remove each other's private copies); the root lock is taken
//!    before the store lock, so an init that waits for another init of the same directory
//!    holds nothing gc waits for.
//! 2. The mount path resolves before any link into it is made ([`InitHooks::ensure_mount`]:
//!    the daemon belongs to the binary).
//! 3. Modules, then providers: provider requirements are read through the installed
//!    modules. Without a module phase (`-get=false`) `.terraform/modules` stays as it is.
//! 4. `DATA_DIR/plugin_path` is written once the providers are in place, so a failed init
//!    leaves it as it was.
//! 5. The root is recorded with the links the directory has now, on failure too (a failed
//!    provider install keeps the module links it made and the provider links it had), while
//!    the store lock is still held: gc never sees a package this init uses without its
//!    root.
//!
//! What a caller resolves once per root and hands in ([`InitOptions`]): the flavor, the tool
//! version, the CLI configuration's methods and network settings, the variables, the
//! module policy.

mod root_search;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use tstore_store::{StoreError, StoreLock};

use crate::modules::{ModuleInstallError, ModuleOptions, ModuleWarning, ModulesReport};
use crate::providers::{InitReport, InstallError, ProviderOptions};
use crate::report::Reporter;
use crate::workdir::data_dir::DataDir;
use crate::workdir::safe_fs::SafeFsError;
use crate::workdir::{plugin_path, root_links};
use tstore_store::Store;

pub use self::root_search::{find_roots, RootSearchError};

/// Everything one init of a working directory takes, resolved by the caller.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The provider phase; its `workdir` is the root's, shared with the module phase.
    pub providers: ProviderOptions,
    /// The module phase (same `workdir`); `None` keeps `.terraform/modules` as it is
    /// (`-get=false`).
    pub modules: Option<ModuleOptions>,
    /// The `-plugin-dir` values as given, recorded in `DATA_DIR/plugin_path`.
    pub plugin_dirs: Vec<String>,
}

/// The module phase's outcome.
#[derive(Debug, Default)]
pub struct InstalledModules {
    pub report: ModulesReport,
    pub warnings: Vec<ModuleWarning>,
}

/// What an init did.
#[derive(Debug)]
pub struct InitOutcome {
    /// `None` without a module phase.
    pub modules: Option<InstalledModules>,
    pub providers: InitReport,
}

/// What the caller does at the protocol's steps that belong to it: starting the mount's
/// daemon, saying what it waits for, rendering between the phases.
pub trait InitHooks {
    /// Why the mount path could not be made to resolve.
    type MountError: std::fmt::Display + std::fmt::Debug;

    /// Another init of the same working directory holds its lock: about to wait.
    fn waiting_for_root(&self, _dir: &Path) {}

    /// gc holds the store lock exclusively: about to wait.
    fn waiting_for_store(&self) {}

    /// Make the mount path resolve (called with both locks held, before any link is made).
    fn ensure_mount(&self, store: &Store) -> Result<(), Self::MountError>;

    /// The module phase is over (`None`: there was none); the provider phase starts next.
    fn providers_next(&self, _modules: Option<&InstalledModules>) {}

    /// The store's providers may have changed (files derived from them can be refreshed).
    fn providers_changed(&self, _store: &Store) {}
}

/// Why an init failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError<M: std::fmt::Display + std::fmt::Debug> {
    #[error("cannot lock the working directory")]
    LockRoot(#[source] StoreError),
    #[error(transparent)]
    LockStore(StoreError),
    #[error("{0}")]
    Mount(M),
    #[error(transparent)]
    Modules(ModuleInstallError),
    #[error(transparent)]
    Providers(InstallError),
    #[error("cannot record the -plugin-dir directories in {}", path.display())]
    PluginPath {
        path: PathBuf,
        #[source]
        source: SafeFsError,
    },
    /// The working directory, or its data directory, cannot be written: found before
    /// anything is downloaded, so nothing is fetched for a directory that cannot take it.
    #[error("cannot write {}", dir.display())]
    NotWritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot record {} as a root of the store", dir.display())]
    RecordRoot {
        dir: PathBuf,
        #[source]
        source: StoreError,
    },
}

/// Install the modules and providers of `opts.providers.workdir.dir` into `store` and link
/// them, following the protocol of this module's rules.
pub fn init<H: InitHooks>(
    store: &Store,
    opts: &InitOptions,
    hooks: &H,
    reporter: &dyn Reporter,
) -> Result<InitOutcome, InitError<H::MountError>> {
    let workdir = &opts.providers.workdir;
    check_writable(workdir)?;
    let _root_lock = store
        .locks()
        .root(&workdir.dir, || hooks.waiting_for_root(&workdir.dir))
        .map_err(InitError::LockRoot)?;
    let lock = store
        .locks()
        .shared_or_wait(|| hooks.waiting_for_store())
        .map_err(InitError::LockStore)?;
    let installed = install(store, opts, hooks, reporter);
    let recorded = record_root(
        store,
        &lock,
        &workdir.dir,
        &workdir.data_dir,
        &workdir.mount,
    );
    let outcome = installed?;
    recorded?;
    // A private copy of a module package links nothing into the store: its package is
    // stamped used, so that `gc --min-age` keeps what this init used.
    let copied: Vec<tstore_store::PackageKey> = outcome
        .modules
        .iter()
        .flat_map(|m| &m.report.calls)
        .filter(|c| c.action == crate::modules::Action::Copy)
        .filter_map(|c| c.package.as_deref().map(tstore_store::PackageKey::module))
        .collect();
    if let Err(e) = store.roots().mark_used(&lock, &copied) {
        tracing::warn!("cannot stamp the copied module packages as used: {e}");
    }
    Ok(outcome)
}

/// The working directory takes the lock file, and the data directory (or, before it
/// exists, the nearest directory above it) takes `.terraform`'s links: both must be writable,
/// which is asked of the kernel (`access(2)`: a read-only filesystem, and modes for anyone
/// but root) before anything is fetched.
fn check_writable<M: std::fmt::Display + std::fmt::Debug>(
    workdir: &crate::options::WorkdirOptions,
) -> Result<(), InitError<M>> {
    let data = &workdir.data_dir.path;
    let data_or_parent = data.ancestors().find(|p| p.exists()).unwrap_or(data);
    for dir in [workdir.dir.as_path(), data_or_parent] {
        nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).map_err(|errno| {
            InitError::NotWritable {
                dir: dir.to_owned(),
                source: std::io::Error::from(errno),
            }
        })?;
    }
    Ok(())
}

/// Steps 2 to 4, under both locks.
fn install<H: InitHooks>(
    store: &Store,
    opts: &InitOptions,
    hooks: &H,
    reporter: &dyn Reporter,
) -> Result<InitOutcome, InitError<H::MountError>> {
    hooks.ensure_mount(store).map_err(InitError::Mount)?;
    let modules = match &opts.modules {
        Some(modules) => {
            let (report, warnings) =
                crate::modules::install(store, modules, reporter).map_err(InitError::Modules)?;
            Some(InstalledModules { report, warnings })
        }
        None => None,
    };
    hooks.providers_next(modules.as_ref());
    let providers = crate::providers::install(store, &opts.providers, reporter)
        .map_err(InitError::Providers)?;
    let data_dir = &opts.providers.workdir.data_dir;
    plugin_path::record(data_dir, &opts.plugin_dirs).map_err(|source| InitError::PluginPath {
        path: data_dir.path.join(plugin_path::FILE_NAME),
        source,
    })?;
    hooks.providers_changed(store);
    Ok(InitOutcome { modules, providers })
}

/// Record `dir` as a root with the links its data directory has now into the store.
fn record_root<M: std::fmt::Display + std::fmt::Debug>(
    store: &Store,
    lock: &StoreLock,
    dir: &Path,
    data_dir: &DataDir,
    mount: &Path,
) -> Result<(), InitError<M>> {
    let links = root_links::scan_links(data_dir, mount, &store.views_dir());
    let recorded =
        store
            .roots()
            .record(lock, dir, &links)
            .map_err(|source| InitError::RecordRoot {
                dir: dir.to_path_buf(),
                source,
            })?;
    for key in recorded.unknown {
        tracing::warn!(
            "{} links {key}, which the store does not hold",
            dir.display()
        );
    }
    Ok(())
}
