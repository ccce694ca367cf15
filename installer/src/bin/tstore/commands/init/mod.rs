//! `tstore init` of one working directory: its settings resolved once into the library's
//! [`InitOptions`], the library's [`tstore_installer::init`] run with this binary's hooks
//! (the mount's daemon, the waiting messages, the output between the phases), the outcome
//! rendered in tofu's words (`output.rs`). `many.rs`: many roots in one process, each as a
//! lone init here.

use std::cell::RefCell;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use tstore_installer::{
    InitError, InitHooks, InitOptions, InstalledModules, ModuleOptions, ModulePolicy, Reporter,
    WorkdirOptions,
};
use tstore_store::Store;
use tstore_tofu::flavor::{Flavor, FlavorChoice};

mod args;
pub(super) mod many;
mod output;

pub(crate) use args::InitArgs;

use super::place::{Configured, Place};
use crate::cli::values::LockfileMode;
use crate::reporter::{HumanReporter, Silent};
use crate::{mount, Settings};

/// Where an init's store comes from.
pub(crate) enum StoreSource<'a> {
    /// Opened by the init, once its CLI configuration reads.
    Open,
    /// Open already (one store for many roots).
    Given(&'a Store),
    /// The init server's handle, checked again for this request as a new open would be.
    Kept(&'a crate::serve::KeptStore),
}

/// `tstore init` of one working directory (`args.dirs`' only one, or the current one),
/// with the store from `source`.
pub(crate) fn init(settings: &Settings, args: InitArgs, source: StoreSource) -> Result<ExitCode> {
    let place = Place::find(settings, args.dirs.first().map(|d| d.as_path()))?;
    if !tstore_tofu::config::is_config_dir(&place.dir, place.flavor.flavor) {
        // Nothing to install, nothing written: the tool's own words, exit 0.
        // A repository's top (a monorepo's): say where the roots are. Only there, so that
        // an init in a home directory does not walk it; a failed search says nothing.
        let below = if place.dir.join(".git").exists() {
            tstore_installer::find_roots(&place.dir, &[])
                .map(|roots| roots.len())
                .unwrap_or(0)
        } else {
            0
        };
        output::empty_directory(&place.flavor, args.json, below)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The store is opened once the CLI configuration reads (a command that fails on its
    // input creates nothing), and before the tool's version is asked.
    let cli_config = super::place::load_cli_config(settings, place.flavor.flavor)?;
    let opened;
    let _facts;
    let store = match source {
        StoreSource::Given(store) => store,
        StoreSource::Open | StoreSource::Kept(_) => {
            opened = match source {
                StoreSource::Kept(kept) => kept.for_request(settings)?,
                _ => std::sync::Arc::new(super::open_store(settings)?),
            };
            _facts = tstore_installer::keep_facts_in(std::sync::Arc::clone(&opened));
            &*opened
        }
    };
    let root = place.configure_with(settings, cli_config)?;
    let opts = options(settings, &args, &root)?;
    warn_missing_test_directory(&args, &root);
    let hooks = Hooks {
        settings,
        args: &args,
        flavor: &root.place.flavor,
        output: RefCell::new(Ok(())),
    };
    let human = HumanReporter::new().for_tool(&opts.providers.workdir.tool);
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    let outcome = tstore_installer::init(store, &opts, &hooks, reporter).map_err(into_anyhow)?;
    hooks.output.into_inner()?;
    output::finished(&root, outcome, args.json, args.explain)?;
    Ok(ExitCode::SUCCESS)
}

/// The library's options for `root`, from the command line.
fn options(settings: &Settings, args: &InitArgs, root: &Configured) -> Result<InitOptions> {
    let dir = &root.place.dir;
    let workdir = WorkdirOptions {
        upgrade: args.upgrade,
        lockfile_readonly: args.lockfile == Some(LockfileMode::Readonly),
        variables: root.variables(settings, &args.var_options(&root.place.cwd))?,
        test_directory: args.test_directory.clone(),
        backend_off: args.tofu_compat.backend == Some(false),
        ..root.workdir_options(settings)?
    };
    // `-get=false` keeps `.terraform/modules` as it is, as tofu does.
    let modules = if args.get {
        let machine = root.cli_config.tstore_modules.as_ref();
        Some(ModuleOptions {
            policy: ModulePolicy::load(
                dir,
                machine.map(|(file, body)| (file.as_str(), body.as_str())),
                args.assume_read_only,
            )?,
            upgrade_only: Vec::new(),
            reach_records: settings.reach_records(),
            run: std::sync::Arc::clone(&settings.run),
            trust_lock: settings.trust_lock,
            module_mirror: settings.module_mirror_for(dir)?,
            workdir: workdir.clone(),
        })
    } else {
        None
    };
    Ok(InitOptions {
        providers: root.provider_options(settings, workdir, &root.place.cwd, &args.plugin_dir),
        modules,
        plugin_dirs: args.plugin_dir.clone(),
    })
}

/// tofu's warning for a `-test-directory` that does not exist (the default may be absent).
fn warn_missing_test_directory(args: &InitArgs, root: &Configured) {
    let dir = root.place.dir.join(&args.test_directory);
    if root.flavor() == Flavor::Tofu
        && args.test_directory != tstore_tofu::config::test_files::DEFAULT_TEST_DIRECTORY
        && !dir.is_dir()
    {
        errln!(
            "\n{}\n\nRequested test directory {} does not exist.\n",
            crate::style::warning("Test directory does not exist"),
            dir.display()
        );
    }
}

/// This binary's part of the init protocol.
struct Hooks<'a> {
    settings: &'a Settings,
    args: &'a InitArgs,
    flavor: &'a FlavorChoice,
    /// The first failure to write the output between the phases, returned once init ends.
    output: RefCell<std::io::Result<()>>,
}

impl InitHooks for Hooks<'_> {
    type MountError = anyhow::Error;

    fn waiting_for_root(&self, dir: &Path) {
        errln!(
            "tstore: waiting for another tstore init of {} to finish...",
            dir.display()
        );
    }

    fn waiting_for_store(&self) {
        super::say_waiting_for_store();
    }

    fn ensure_mount(&self, store: &Store) -> Result<()> {
        match mount::ensure(self.settings, store)? {
            mount::Ensured::Mounted { pid, repaired } => errln!(
                "tstore: {} the store at {} (FUSE, read-only; daemon pid {pid})",
                if repaired {
                    "the mount was stale; remounted"
                } else {
                    "mounted"
                },
                self.settings.mount.display()
            ),
            mount::Ensured::ViewsLink(_) => warn_root_without_fuse(self.settings),
            mount::Ensured::AlreadyMounted => {}
        }
        Ok(())
    }

    fn providers_next(&self, modules: Option<&InstalledModules>) {
        // A warning about a repository and ref (a ref left unchecked) says the same for
        // every root of a run: said once.
        for w in modules.iter().flat_map(|m| &m.warnings) {
            if w.once_per_run()
                .is_none_or(|key| self.settings.run.first_time(&key))
            {
                errln!("{}", crate::style::warning(&w.to_string()));
            }
        }
        if self.args.json {
            return;
        }
        let written = output::modules_installed(
            &mut crate::say::stdout(),
            self.flavor,
            modules.map(|m| &m.report),
            self.args.explain,
        );
        let mut output = self.output.borrow_mut();
        if output.is_ok() {
            *output = written;
        }
    }

    fn providers_changed(&self, store: &Store) {
        // A provider that entered the store is excluded from the network methods of the
        // files `tstore cli-config --out` keeps.
        super::cli_config::refresh_cli_configs(self.settings, store);
    }
}

/// Without FUSE the packages are read-only by their mode bits alone, which root ignores: say
/// what that means and what still holds (docs/reference/fuse-mount.md). Where FUSE was
/// turned off on purpose (`--no-fuse`, `TSTORE_NO_FUSE`) one line, once on this machine;
/// where it was not to be had, the whole warning, once per run.
fn warn_root_without_fuse(settings: &Settings) {
    if !nix::unistd::geteuid().is_root() || !settings.run.first_time("root without FUSE") {
        return;
    }
    if settings.no_fuse {
        if tstore_installer::first_said_on_this_machine(
            settings.state_dir.as_deref(),
            "root without FUSE",
        ) {
            errln!(
                "{}",
                crate::style::warning(
                    "without FUSE root can write into the store's packages; every init checks \
                     a package before linking it and repairs a changed one \
                     (docs/reference/fuse-mount.md)"
                )
            );
        }
        return;
    }
    errln!(
        "{}",
        crate::style::warning(
            "without FUSE, root can write into the store's packages: their mode bits do not \
             stop root, and a write through one working directory's link changes the package \
             for every directory that links it (and, through shared files, other packages) \
             until the next tstore init, which checks every package against its files before \
             linking it and repairs a changed one. Mount the store with FUSE for read-only \
             packages, or run init as an ordinary user."
        )
    );
}

/// The library's error as the binary's: the same chain of causes as each step's own error
/// under its context, so that the diagnostics render it as before.
fn into_anyhow(err: InitError<anyhow::Error>) -> anyhow::Error {
    let context = err.to_string();
    match err {
        InitError::Mount(e) => e,
        InitError::LockStore(e) => e.into(),
        InitError::Modules(e) => e.into(),
        InitError::Providers(e) => e.into(),
        InitError::LockRoot(source) | InitError::RecordRoot { source, .. } => {
            anyhow::Error::from(source).context(context)
        }
        InitError::PluginPath { source, .. } => anyhow::Error::from(source).context(context),
        InitError::NotWritable { source, .. } => anyhow::Error::from(source).context(format!(
            "{context}: tstore init writes the lock file and .terraform there; run it where \
             you can write, or make the directory writable"
        )),
    }
}
