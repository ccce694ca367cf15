//! One function per command. Human output goes to stdout in tofu's words; `--json`
//! replaces it with one JSON document; errors go to stderr.
//!
//! # JSON formats
//!
//! Every document is an object starting with `"format_version": 1` (see `json.rs`).
//!
//! - `init --json`: [`InitReport`]: `{"providers":[{"provider","version","platform",
//!   "source" (`filesystem_mirror:PATH`, `registry:URL`, `network_mirror:URL`),"auth",
//!   "obtained":"ingested"|"memoized"|"downloaded"|"in_store"|"store_by_lock",
//!   "hashes":[{"hash","disposition":{"verified_locally","reported_by_registry",
//!   "signed_by_key_ids"}}],
//!   "link","target","link_outcome"}],"lock_file":"created"|"updated"|"unchanged",
//!   "bytes_hashed":N,"lock_entries_rewritten":[{"from","to"}] (only when any),
//!   "modules":[CallReport…] (per remote call "obtained":"store"|"mirror"|"origin" and
//!   "vouched_by":"origin"|"lock"|"mirror", and
//!   with a module mirror "origin_why"),
//!   "module_packages":{"fetched":[package id…],"reused":[package id…],
//!   "mirrored":[package id…]},"module_mirror":"oci://REGISTRY/REPOSITORY"|null,
//!   "flavor":{"name":"tofu"|"terraform","decided_by":"--flavor"|"TSTORE_FLAVOR"|
//!   ".tstore.hcl"|"lock file header"|"lock file hosts"|"module lock file hosts"|
//!   ".tofu files"|"PATH"|"default"|
//!   "tool version"},
//!   "tool_version":{"name":"terraform 1.11.4","decided_by":"--tool-version"|
//!   "TSTORE_TOOL_VERSION"|"PATH"|"newest","binary" (PATH only)}}`
//! - `init --json DIR...` / `init --json --recursive`: `{"roots":[{"dir","ok","report"
//!   (the lone init's document)|"error":{"summary","detail"}}],"failed":N}`
//! - `fetch --json`: `{"roots":[{"dir","providers":[{"provider","version","platform",
//!   "obtained"}],"modules":[{"key","source","verified"}]}]}`
//! - `store ls --json`: `{"packages":[Package…]}`
//! - `store du --json`: the store's `DiskUsage`
//! - `store facts --json`: `{"recorded","matching","mismatched":[{"blob","rules"}],
//!   "not_held","other_builds"}`
//! - `store verify --json`: the store's `VerifyReport`
//! - `store import --json`: `{"imported":[Package…]}`
//! - `version --json`: `{"tstore_version","commit","commit_date","platform",
//!   "provider_selections":{ADDRESS: VERSION}}`
//! - `push --json`: `{"pushed":[{"provider","version","reference","digest","platforms":[…],
//!   "blobs_uploaded","blobs_present"}]}`; with `--module`: `{"pushed_module":{"package",
//!   "reference","digest","blobs_uploaded","blobs_present"}}`; with `--modules`:
//!   `{"pushed_modules":{"packages":[{"package","reference","digest","blobs_uploaded",
//!   "blobs_present"}],"resolutions":[{"module","version","reference","written"}]}}`

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
    Ok(store.lock_shared_or_wait(say_waiting_for_store)?)
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
