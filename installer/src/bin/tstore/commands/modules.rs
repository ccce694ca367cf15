//! `tstore modules lock`: the module lock file of a working directory, its packages brought
//! into the store, `.terraform` untouched; `tstore modules outdated`: what moved upstream
//! since, nothing written.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use tstore_installer::{CallLock, LockFileChange, ModuleOptions, Reporter, WorkdirOptions};

use super::place::Place;
use super::{lock_store, open_store};
use crate::cli::values::LockfileMode;
use crate::cli::variables::RootVariableArgs;
use crate::reporter::{HumanReporter, Silent};
use crate::{json, Settings};

pub(crate) fn lock(settings: &Settings, args: ModulesLockArgs) -> Result<ExitCode> {
    if !args.modules.is_empty() && !args.upgrade {
        anyhow::bail!(
            "-module names a call to upgrade, and needs -upgrade: \
             tstore modules lock -upgrade -module={}",
            args.modules[0]
        );
    }
    let base = module_options(settings, args.dir.as_deref(), &args.vars)?;
    let opts = ModuleOptions {
        workdir: WorkdirOptions {
            upgrade: args.upgrade,
            lockfile_readonly: args.lockfile == Some(LockfileMode::Readonly),
            ..base.workdir
        },
        upgrade_only: args.modules.clone(),
        ..base
    };
    let store = open_store(settings)?;
    let _lock = lock_store(&store)?;
    let human = HumanReporter::new();
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    let report = tstore_installer::lock_modules(&store, &opts, reporter)?;
    if args.json {
        json::print(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = crate::say::stdout();
    for c in &report.calls {
        let what = match c.lock {
            CallLock::Verified => "Verified",
            CallLock::Added => "Locked",
            CallLock::Changed => "Updated",
        };
        write!(out, "- {what} module \"{}\": {}", c.key, c.source)?;
        match (&c.version, &c.commit) {
            (Some(v), Some(commit)) => write!(out, " {v} ({commit})")?,
            (Some(v), None) => write!(out, " {v}")?,
            (None, Some(commit)) => write!(out, " ({commit})")?,
            (None, None) => {}
        }
        writeln!(out)?;
    }
    for key in &report.removed {
        writeln!(out, "- Dropped module \"{key}\": no longer called")?;
    }
    let file = tstore_tofu::module_lock::FILE_NAME;
    match report.lock_file {
        LockFileChange::Created => {
            writeln!(out, "\ntstore has created the module lock file {file}.")?
        }
        LockFileChange::Updated => {
            writeln!(out, "\ntstore has updated the module lock file {file}.")?
        }
        LockFileChange::Unchanged | LockFileChange::NotUpdated => {
            writeln!(out, "\nThe module lock file {file} is up to date.")?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The module phase's options for the working directory `dir` (default: the current one),
/// as the `modules` commands take it: its variables from `vars`, no upgrade, the lock file
/// writable, the default module policy.
fn module_options(
    settings: &Settings,
    dir: Option<&std::path::Path>,
    vars: &RootVariableArgs,
) -> Result<ModuleOptions> {
    let root = Place::find(settings, dir)?.configure(settings)?;
    let variables = root.variables(settings, &vars.var_options(&root.place.cwd))?;
    Ok(ModuleOptions {
        workdir: WorkdirOptions {
            variables,
            ..root.workdir_options(settings)?
        },
        policy: Default::default(),
        upgrade_only: Vec::new(),
        reach_records: settings.reach_records(),
        run: std::sync::Arc::clone(&settings.run),
        trust_lock: settings.trust_lock,
        module_mirror: settings.module_mirror_for(&root.place.dir)?,
    })
}

/// `tstore modules outdated [DIR]`, or with `--recursive` every root under DIR that has a
/// module lock file.
pub(crate) fn outdated(settings: &Settings, args: ModulesOutdatedArgs) -> Result<ExitCode> {
    let store = open_store(settings)?;
    let _lock = lock_store(&store)?;
    let human = HumanReporter::new();
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    let dirs: Vec<Option<std::path::PathBuf>> = if args.recursive {
        let tops: Vec<std::path::PathBuf> = args.dir.iter().cloned().collect();
        crate::commands::place::roots_of(settings, &tops, true, &args.exclude)?
            .into_iter()
            .filter(|root| root.join(tstore_tofu::module_lock::FILE_NAME).exists())
            .map(Some)
            .collect()
    } else {
        vec![args.dir.clone()]
    };
    let mut reports = Vec::new();
    for dir in &dirs {
        let opts = module_options(settings, dir.as_deref(), &args.vars)?;
        let report = tstore_installer::outdated_modules(&store, &opts, reporter)?;
        reports.push((opts.workdir.dir.clone(), report));
    }
    let outdated: usize = reports
        .iter()
        .map(|(_, r)| r.calls.iter().filter(|c| is_outdated(c)).count())
        .sum();
    let checked: usize = reports.iter().map(|(_, r)| r.checked).sum();
    let status = if args.exit_code && outdated > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        if args.recursive {
            let roots: Vec<serde_json::Value> = reports
                .iter()
                .map(|(dir, report)| {
                    serde_json::json!({"dir": dir, "checked": report.checked, "calls": report.calls})
                })
                .collect();
            json::print(
                &serde_json::json!({"roots": roots, "checked": checked, "outdated": outdated}),
            )?;
        } else if let Some((_, report)) = reports.first() {
            json::print(report)?;
        }
        return Ok(status);
    }
    let mut out = crate::say::stdout();
    for (dir, report) in &reports {
        if args.recursive && !report.calls.is_empty() {
            writeln!(out, "{}:", crate::escape::line(&dir.display().to_string()))?;
        }
        write_outdated_calls(&mut out, report)?;
    }
    writeln!(
        out,
        "{} of {} outdated{}{}",
        outdated,
        crate::units::count(checked as u64, "locked call"),
        if args.recursive {
            format!(" in {}", crate::units::count(reports.len() as u64, "root"))
        } else {
            String::new()
        },
        if outdated == 0 {
            ""
        } else {
            "; \"tstore modules lock -upgrade\" (or -module=CALL) takes them"
        }
    )?;
    Ok(status)
}

/// Whether a call is outdated: an upgrade moves it, or its repository has a newer version
/// tag that the cooldown does not hold back.
fn is_outdated(c: &tstore_installer::OutdatedCall) -> bool {
    c.moved || c.newer_tags.iter().any(|t| t.held_until.is_none())
}

/// One root's outdated calls, and what the cooldown holds back.
fn write_outdated_calls(
    out: &mut impl std::io::Write,
    report: &tstore_installer::OutdatedReport,
) -> std::io::Result<()> {
    let shown = |version: &Option<String>, commit: &Option<String>| match (version, commit) {
        (Some(v), Some(c)) => format!("{v} ({})", &c[..c.len().min(12)]),
        (Some(v), None) => v.clone(),
        (None, Some(c)) => c[..c.len().min(12)].to_owned(),
        (None, None) => "-".to_owned(),
    };
    for c in &report.calls {
        if c.moved {
            writeln!(
                out,
                "- module \"{}\" ({}): locked {}, now {}",
                c.key,
                crate::escape::line(&c.source),
                shown(&c.locked_version, &c.locked_commit),
                shown(&c.latest_version, &c.latest_commit)
            )?;
        } else if c.newer_tags.is_empty() {
            writeln!(
                out,
                "- module \"{}\" ({}): locked {}, the newest old enough",
                c.key,
                crate::escape::line(&c.source),
                shown(&c.locked_version, &c.locked_commit),
            )?;
        } else {
            let tags: Vec<String> = c
                .newer_tags
                .iter()
                .map(|t| match t.held_until {
                    Some(until) => format!(
                        "{} (held back by min_release_age until {})",
                        crate::escape::line(&t.tag),
                        tstore_installer::published_day(until)
                    ),
                    None => crate::escape::line(&t.tag).to_string(),
                })
                .collect();
            writeln!(
                out,
                "- module \"{}\" ({}): locked {}, newer tags: {}",
                c.key,
                crate::escape::line(&c.source),
                shown(&c.locked_version, &c.locked_commit),
                tags.join(", ")
            )?;
        }
        for held in &c.held_back {
            writeln!(out, "    held back by min_release_age: {held}")?;
        }
    }
    Ok(())
}

/// `tstore modules …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ModulesCommand {
    /// Bring every remote module package into the store and write the module lock file
    /// `.tstore.lock.hcl`, without changing `.terraform` (the module twin of `providers
    /// lock`).
    #[command(
        after_help = "Examples:\n  tstore modules lock\n  tstore modules lock -upgrade infra/prod\n  tstore modules lock -upgrade -module=vpc   # resolve one call (and those inside it) again\n  tstore modules lock -lockfile=readonly --json   # fail when the file would change"
    )]
    Lock(ModulesLockArgs),
    /// List the locked calls whose ref now names another commit, whose constraint now
    /// selects a newer version, or whose repository has newer version tags than the one the
    /// call names; with the versions the cooldown holds back: asks the remotes, changes
    /// nothing in the working directory (`cargo update --dry-run` for modules, for a
    /// scheduled CI job).
    #[command(
        after_help = "Examples:\n  tstore modules outdated\n  tstore modules outdated infra/prod --json\n  tstore modules outdated -exit-code   # exit 2 when a call is outdated\n  tstore modules outdated --recursive infra   # every root with a module lock file"
    )]
    Outdated(ModulesOutdatedArgs),
}

/// Arguments of `tstore modules outdated`.
#[derive(Debug, Args)]
pub(crate) struct ModulesOutdatedArgs {
    /// The working directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Every root under DIR (as `init --recursive` finds them) that has a module lock file.
    #[arg(long)]
    pub recursive: bool,
    /// With --recursive: leave out the roots whose path relative to DIR matches this glob;
    /// repeatable.
    #[arg(long, value_name = "GLOB", requires = "recursive")]
    pub exclude: Vec<String>,
    /// Exit with status 2 when a call is outdated (0 otherwise), for a CI job to act on.
    #[arg(long)]
    pub exit_code: bool,
    #[command(flatten)]
    pub vars: RootVariableArgs,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `tstore modules lock`.
#[derive(Debug, Args)]
pub(crate) struct ModulesLockArgs {
    /// The working directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Resolve every call again (the newest version its constraint allows, the commit its
    /// ref names now) and rewrite the entries.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", hide_default_value = true, value_parser = crate::cli::values::go_bool)]
    pub upgrade: bool,
    /// With -upgrade: resolve only this call again (a call path as the lock file keys it:
    /// `vpc`, `vpc.label`), with the calls inside it; the others keep their entries.
    /// Repeatable.
    #[arg(long = "module", value_name = "CALL")]
    pub modules: Vec<String>,
    /// `readonly`: fail when an entry would be added, removed or changed.
    #[arg(long, value_enum, value_name = "MODE")]
    pub lockfile: Option<LockfileMode>,
    #[command(flatten)]
    pub vars: RootVariableArgs,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}
