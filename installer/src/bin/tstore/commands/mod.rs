//! One function per command. Human output goes to stdout in tofu's words; `--json`
//! replaces it with one JSON document; errors go to stderr.
//!
//! `--json` documents' fields are listed in `docs/reference/json.md` (its one home,
//! checked by `tests/e2e/json_reference.rs`).

pub(crate) mod cli_config;
pub(crate) mod fetch;
pub(crate) mod gc;
pub(crate) mod init;
pub(crate) mod man;
pub(crate) mod modules;
pub(crate) mod mount;
mod parallel;
mod place;
pub(crate) mod providers;
pub(crate) mod push;
pub(crate) mod roots;
pub(crate) mod store;
mod store_rm;
mod verify;
pub(crate) mod version;

use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_store::Store;

use self::modules::ModulesCommand;
use self::providers::ProvidersCommand;
use self::roots::RootsCommand;
use self::store::StoreCommand;
use crate::cli::Command;
use crate::Settings;

/// Run one command (an init the server runs uses its kept store).
pub(crate) fn run(settings: &Settings, command: Command, host: crate::Host) -> Result<ExitCode> {
    match command {
        Command::Init(args) if args.recursive || args.dirs.len() > 1 => {
            init::many::init_many(settings, args)
        }
        Command::Init(args) => {
            let source = match host {
                crate::Host::Server(kept) => init::StoreSource::Kept(kept),
                crate::Host::OwnProcess => init::StoreSource::Open,
            };
            init::init(settings, args, source)
        }
        Command::Fetch(args) => fetch::fetch(settings, args),
        Command::Store(StoreCommand::Import { path, json }) => store::import(settings, &path, json),
        Command::Store(StoreCommand::Ls { json }) => store::ls(settings, json),
        Command::Store(StoreCommand::Du { json }) => store::du(settings, json),
        Command::Store(StoreCommand::Facts { json }) => store::facts(settings, json),
        Command::Store(StoreCommand::Rm { yes, json }) => store_rm::rm(settings, yes, json),
        Command::Store(StoreCommand::Verify {
            repair,
            dry_run,
            json,
        }) => crate::commands::verify::verify(settings, repair || dry_run, dry_run, json),
        Command::Mount(args) => mount::mount(settings, &args),
        Command::Umount(args) => mount::umount(settings, &args),
        Command::Providers(ProvidersCommand::Lock(args)) => providers::lock(settings, args),
        Command::Providers(ProvidersCommand::Outdated(args)) => providers::outdated(settings, args),
        Command::Modules(ModulesCommand::Lock(args)) => modules::lock(settings, args),
        Command::Modules(ModulesCommand::Outdated(args)) => modules::outdated(settings, args),
        Command::CliConfig(args) => cli_config::cli_config(settings, args.out.as_deref()),
        Command::Gc(args) => gc::gc(settings, &args),
        Command::Roots(RootsCommand::Ls { json }) => roots::ls(settings, json),
        Command::Push(args) => push::push(settings, &args),
        Command::Serve(args) => crate::serve::serve(settings, &args),
        Command::Completions { .. } | Command::Man(_) | Command::Version(_) => {
            unreachable!(
                "main prints completions, man pages and the version before resolving settings"
            )
        }
    }
}

/// Take the store lock shared, saying on stderr when it has to wait (gc holds the lock
/// exclusively while it sweeps), as cargo does for its package lock.
pub(crate) fn lock_store(store: &Store) -> Result<tstore_store::StoreLock> {
    Ok(store.locks().shared_or_wait(say_waiting_for_store)?)
}

/// What a command says while gc holds the store lock.
pub(crate) fn say_waiting_for_store() {
    errln!("tstore: waiting for the store lock (tstore gc is running)...");
}

/// Open the store for a command that only reads it (`store ls/du/verify`, `roots ls`,
/// `cli-config`): a store that does not exist is an error naming the path, never a new
/// empty store (a mistyped `TSTORE_HOME` would otherwise look like an empty store). `gc`
/// may run from cron before the first init and opens the store as `init` does.
pub(crate) fn open_existing_store(settings: &Settings) -> Result<Store> {
    if !settings.store.join("index.sqlite").is_file() {
        anyhow::bail!(
            "there is no store at {} (TSTORE_HOME); check the path, or run `tstore init` in a \
             working directory to create it",
            settings.store.display()
        );
    }
    open_store(settings)
}

pub(crate) fn open_store(settings: &Settings) -> Result<Store> {
    let store = Store::open(&settings.store)
        .with_context(|| format!("cannot open the store at {}", settings.store.display()))?;
    let store = store
        .with_limits(settings.limits.clone())
        .with_kept_archives(settings.keep_archives);
    Ok(match &settings.machine_key {
        Some(key) => store.with_machine_key(key),
        None => store,
    })
}
