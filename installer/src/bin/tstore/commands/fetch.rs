//! `tstore fetch [--recursive] [DIR...]`: the store filled from lock files alone. For each
//! root, every provider `.terraform.lock.hcl` pins (for each `-platform`) and every module
//! package `.tstore.lock.hcl` pins are brought into the store and verified against their
//! entries, as `init` verifies them; nothing in the working directories changes (no
//! `.terraform`, no lock file written: a lock file that would change is an error). A store
//! that holds everything already asks no source. Roots are fetched a few at a time. Then
//! `tstore push` publishes them.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use tstore_installer::{
    CallLock, FetchedProvider, ModuleOptions, Obtained, Reporter, WorkdirOptions,
};
use tstore_tofu::addr::Platform;

use super::place::Place;
use super::{lock_store, open_store};
use crate::reporter::{HumanReporter, Silent};
use crate::{json, Settings};

// Arguments of `tstore fetch`.
#[derive(Debug, Args)]
pub(crate) struct FetchArgs {
    /// The working directories whose lock files to read (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Every root under each DIR, as `init --recursive` finds them.
    #[arg(long)]
    pub recursive: bool,
    /// With --recursive: leave out the roots whose path relative to DIR matches this glob;
    /// repeatable.
    #[arg(long, value_name = "GLOB", requires = "recursive")]
    pub exclude: Vec<String>,
    /// A platform `OS_ARCH` to fetch providers for; repeatable (default: the current one).
    #[arg(long = "platform", value_name = "OS_ARCH", value_parser = crate::cli::values::parse_platform)]
    pub platforms: Vec<Platform>,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn fetch(settings: &Settings, args: FetchArgs) -> Result<ExitCode> {
    let roots = super::place::roots_of(settings, &args.dirs, args.recursive, &args.exclude)?;
    let platforms = if args.platforms.is_empty() {
        vec![Platform::current()]
    } else {
        args.platforms.clone()
    };
    let store = std::sync::Arc::new(open_store(settings)?);
    let _facts = tstore_installer::keep_facts_in(std::sync::Arc::clone(&store));
    let _lock = lock_store(&store)?;
    let human = HumanReporter::new();
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    // Roots are fetched a few at a time (the network is the floor of a cold fetch); what
    // they report is printed in their order.
    let results = super::parallel::in_parallel(&roots, super::parallel::PARALLEL_ROOTS, |root| {
        fetch_root(settings, &store, root, &platforms, reporter)
    });
    let mut documents = Vec::new();
    let mut out = crate::say::stdout();
    for (root, result) in roots.iter().zip(results) {
        let (providers, modules) = result.with_context(|| {
            format!("cannot fetch what the lock files of {} pin", root.display())
        })?;
        if args.json {
            documents.push(serde_json::json!({
                "dir": root,
                "providers": providers,
                "modules": modules.iter().map(|(key, source, verified)| serde_json::json!({
                    "key": key, "source": source, "verified": verified,
                })).collect::<Vec<_>>(),
            }));
            continue;
        }
        writeln!(out, "{}:", root.display())?;
        for p in &providers {
            let how = match p.obtained {
                Obtained::StoreByLock => "in the store",
                _ => "fetched",
            };
            writeln!(out, "- {} {} {}: {how}", p.provider, p.version, p.platform)?;
        }
        for (key, source, _) in &modules {
            writeln!(out, "- module \"{key}\" ({source}): verified")?;
        }
        if providers.is_empty() && modules.is_empty() {
            writeln!(out, "  no lock file pins anything here")?;
        }
    }
    if args.json {
        json::print(&serde_json::json!({ "roots": documents }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A module call's package: its key, its source, whether its entry verified it unchanged.
type ModuleChecked = (String, String, bool);

/// The module phase's error as `fetch` says it: fetch never writes a lock file, so a lock
/// that would change is the lock file's news, not a flag's refusal.
fn for_fetch(err: tstore_installer::ModuleInstallError) -> anyhow::Error {
    match err {
        tstore_installer::ModuleInstallError::LockReadonly { changes } => anyhow::anyhow!(
            "{} does not pin what the configuration calls now ({}); tstore fetch installs \
             only what a lock file pins and never writes one. Run \"tstore init\" (or \
             \"tstore modules lock\") in this directory to record the change, commit {}, \
             then fetch again",
            tstore_tofu::module_lock::FILE_NAME,
            changes.join("; "),
            tstore_tofu::module_lock::FILE_NAME
        ),
        other => other.into(),
    }
}

/// One root's providers (per platform) and module packages, fetched and verified.
fn fetch_root(
    settings: &Settings,
    store: &tstore_store::Store,
    dir: &std::path::Path,
    platforms: &[Platform],
    reporter: &dyn Reporter,
) -> Result<(Vec<FetchedProvider>, Vec<ModuleChecked>)> {
    let root = Place {
        cwd: dir.to_path_buf(),
        dir: dir.to_path_buf(),
        flavor: settings.flavor_for(dir)?,
    }
    .configure(settings)?;
    let workdir = WorkdirOptions {
        variables: root.variables(settings, &[])?,
        lockfile_readonly: true,
        ..root.workdir_options(settings)?
    };
    let providers = tstore_installer::fetch_locked_providers(
        store,
        &root.provider_options(settings, workdir.clone(), dir, &[]),
        platforms,
        reporter,
    )?;
    let mut modules = Vec::new();
    if dir.join(tstore_tofu::module_lock::FILE_NAME).is_file() {
        let report = tstore_installer::lock_modules(
            store,
            &ModuleOptions {
                workdir,
                policy: Default::default(),
                upgrade_only: Vec::new(),
                reach_records: settings.reach_records(),
                run: std::sync::Arc::clone(&settings.run),
                trust_lock: settings.trust_lock,
                module_mirror: settings.module_mirror_for(dir)?,
            },
            reporter,
        )
        .map_err(for_fetch)?;
        modules = report
            .calls
            .into_iter()
            .map(|c| (c.key, c.source, c.lock == CallLock::Verified))
            .collect();
    }
    Ok((providers, modules))
}
