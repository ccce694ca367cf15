//! `tstore modules lock`: the module lock file of a working directory, its packages brought
//! into the store, `.terraform` untouched; `tstore modules outdated`: what moved upstream
//! since, nothing written.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use tstore_installer::{CallLock, LockFileChange, ModuleOptions, Reporter, WorkdirOptions};

use super::workdir::Place;
use super::{lock_store, open_store};
use crate::cli::{LockfileMode, ModulesLockArgs, ModulesOutdatedArgs, RootVariableArgs};
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

/// `tstore modules outdated [DIR]`.
pub(crate) fn outdated(settings: &Settings, args: ModulesOutdatedArgs) -> Result<ExitCode> {
    let opts = module_options(settings, args.dir.as_deref(), &args.vars)?;
    let store = open_store(settings)?;
    let _lock = lock_store(&store)?;
    let human = HumanReporter::new();
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    let report = tstore_installer::outdated_modules(&store, &opts, reporter)?;
    let outdated = report.calls.iter().filter(|c| c.moved).count();
    let status = if args.exit_code && outdated > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        json::print(&report)?;
        return Ok(status);
    }
    let mut out = crate::say::stdout();
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
        } else {
            writeln!(
                out,
                "- module \"{}\" ({}): locked {}, the newest old enough",
                c.key,
                crate::escape::line(&c.source),
                shown(&c.locked_version, &c.locked_commit),
            )?;
        }
        for held in &c.held_back {
            writeln!(out, "    held back by min_release_age: {held}")?;
        }
    }
    writeln!(
        out,
        "{} of {} outdated{}",
        outdated,
        crate::units::count(report.checked as u64, "locked call"),
        if outdated == 0 {
            ""
        } else {
            "; \"tstore modules lock -upgrade\" (or -module=CALL) takes them"
        }
    )?;
    Ok(status)
}
