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
//!   "modules":[CallReport…],
//!   "module_packages":{"fetched":[package id…],"reused":[package id…]},
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
//! - `store verify --json`: the store's `VerifyReport`
//! - `store import --json`: `{"imported":[Package…]}`
//! - `version --json`: `{"tstore_version","commit","commit_date","platform",
//!   "provider_selections":{ADDRESS: VERSION}}`
//! - `push --json`: `{"pushed":[{"provider","version","reference","digest","platforms":[…],
//!   "blobs_uploaded","blobs_present"}]}`; with `--module`: `{"pushed_module":{"package",
//!   "reference","digest","blobs_uploaded","blobs_present"}}`

mod cli_config;
mod fetch;
mod gc;
mod init;
mod init_many;
pub(crate) mod man;
mod modules;
mod mount;
mod parallel;
mod providers;
mod push;
mod roots;
mod store;
mod store_rm;
mod verify;
pub(crate) mod version;

use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_store::Store;
use tstore_tofu::cliconfig::CliConfig;
use tstore_tofu::flavor::Flavor;

use crate::cli::{Command, ModulesCommand, ProvidersCommand, RootsCommand, StoreCommand};
use crate::Settings;

/// Run one command.
pub(crate) fn run(settings: &Settings, command: Command) -> Result<ExitCode> {
    match command {
        Command::Init(args) => init::init(settings, args),
        Command::Fetch(args) => fetch::fetch(settings, args),
        Command::Store(StoreCommand::Import { path, json }) => store::import(settings, &path, json),
        Command::Store(StoreCommand::Ls { json }) => store::ls(settings, json),
        Command::Store(StoreCommand::Du { json }) => store::du(settings, json),
        Command::Store(StoreCommand::Rm { yes, json }) => store_rm::rm(settings, yes, json),
        Command::Store(StoreCommand::Verify {
            repair,
            dry_run,
            json,
        }) => crate::commands::verify::verify(settings, repair || dry_run, dry_run, json),
        Command::Mount(args) => mount::mount(settings, &args),
        Command::Umount(args) => mount::umount(settings, &args),
        Command::Providers(ProvidersCommand::Lock(args)) => providers::lock(settings, args),
        Command::Modules(ModulesCommand::Lock(args)) => modules::lock(settings, args),
        Command::CliConfig(args) => cli_config::cli_config(settings, args.out.as_deref()),
        Command::Gc(args) => gc::gc(settings, &args),
        Command::Roots(RootsCommand::Ls { json }) => roots::ls(settings, json),
        Command::Push(args) => push::push(settings, &args),
        Command::Completions { .. } | Command::Man(_) | Command::Version(_) => {
            unreachable!(
                "main prints completions, man pages and the version before resolving settings"
            )
        }
    }
}

/// The CLI configuration `flavor` reads, saying under `TSTORE_LOG=debug` which files were
/// looked at and read, and under `info` which file of the other tool exists but is not
/// read.
pub(crate) fn load_cli_config(settings: &Settings, flavor: Flavor) -> Result<CliConfig> {
    let config = CliConfig::load(flavor, &settings.env.lookup())?;
    let search = &config.search;
    let list = |paths: &[std::path::PathBuf]| {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &search.named_by {
        Some((var, path)) => tracing::debug!(
            "CLI configuration: {var} names {}; no other file is read",
            path.display()
        ),
        None => tracing::debug!(
            "CLI configuration ({flavor}): looked at {}",
            if search.candidates.is_empty() {
                "nothing (HOME is not set)".to_owned()
            } else {
                list(&search.candidates)
            }
        ),
    }
    tracing::debug!("CLI configuration: read {}", config.describe_files());
    for other in &search.other_tool_files {
        tracing::info!(
            "{} exists but is not read under the {flavor} flavor (the other tool's file);              use --flavor, or name it with TF_CLI_CONFIG_FILE, to read it",
            other.display()
        );
    }
    Ok(config)
}

/// Take the store lock shared, saying on stderr when it has to wait (gc holds the lock
/// exclusively while it sweeps), as cargo does for its package lock.
pub(crate) use cli_config::refresh_outputs as refresh_cli_configs;

/// The network settings of `cli_config` and the environment (`TF_TOKEN_…`,
/// `SSL_CERT_FILE`, `TF_REGISTRY_CLIENT_TIMEOUT`, `DOCKER_CONFIG`), downloads capped at
/// `TSTORE_MAX_ARCHIVE_BYTES`.
pub(crate) fn network_settings(
    settings: &Settings,
    cli_config: &tstore_tofu::cliconfig::CliConfig,
) -> tstore_installer::NetworkSettings {
    tstore_installer::NetworkSettings::from_environment(cli_config, &settings.env.unicode_vars())
        .with_max_download_bytes(settings.limits.max_total_bytes)
}

pub(crate) fn lock_store(store: &Store) -> Result<tstore_store::StoreLock> {
    Ok(store.lock_shared_or_wait(|| {
        eprintln!("tstore: waiting for the store lock (tstore gc is running)...");
    })?)
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

/// The current directory and the working directory a command names (`DIR`, relative to the
/// current one; default: the current one), canonical: one name for it from here on (a root
/// recorded under an alias, a symlinked CI path, would be dropped by gc once the alias goes,
/// with everything it links).
pub(crate) fn working_directory(
    settings: &Settings,
    given: Option<&std::path::Path>,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let dir = match given {
        Some(d) => cwd.join(d),
        None => cwd.clone(),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "the working directory {} does not exist or is not a directory",
            dir.display()
        );
    }
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve the working directory {}", dir.display()))?;
    refuse_store_paths(settings, &dir)?;
    Ok((cwd, dir))
}

/// A working directory inside the store or the mount is refused: gc would count the
/// store's own files as a root and delete it with what it links, and links would point
/// into what they live in.
fn refuse_store_paths(settings: &Settings, dir: &std::path::Path) -> Result<()> {
    for (what, path) in [
        ("the store (TSTORE_HOME)", &settings.store),
        ("the store's mount (TSTORE_MOUNT)", &settings.mount),
    ] {
        let resolved = path.canonicalize().unwrap_or_else(|_| path.clone());
        if dir.starts_with(&resolved) {
            anyhow::bail!(
                "the working directory {} is inside {what} at {}; run tstore init in a \
                 checkout outside it",
                dir.display(),
                resolved.display()
            );
        }
    }
    Ok(())
}

/// The settings of an install of `dir` that a command does not take from its own flags:
/// the data directory (`TF_DATA_DIR`), the tool version, the mount path, the network (from
/// the CLI configuration), nothing upgraded, no variables.
pub(crate) fn workdir_options(
    settings: &Settings,
    dir: &std::path::Path,
    flavor: &tstore_tofu::flavor::FlavorChoice,
    cli_config: &CliConfig,
) -> Result<tstore_installer::WorkdirOptions> {
    let tool = crate::tool_version::resolve(settings, flavor)?;
    tracing::debug!("tool version {}: decided by {}", tool.tool, tool.decided_by);
    Ok(tstore_installer::WorkdirOptions {
        tool: tool.tool,
        ..tstore_installer::WorkdirOptions::new(
            dir.to_path_buf(),
            tstore_installer::DataDir::resolve(dir, settings.tf_data_dir.as_deref()),
            flavor.flavor,
            settings.mount.clone(),
            network_settings(settings, cli_config),
        )
    })
}
