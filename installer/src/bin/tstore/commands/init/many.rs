//! `tstore init DIR...` and `tstore init --recursive [DIR...]`: many roots in one process,
//! each initialised exactly as a lone `tstore init` there (same lock files, `modules.json`,
//! links and root records), one after the other. A failing root does not stop the others;
//! a summary names every failure and the exit status is 1 when any failed. What the roots
//! share is asked once per process: a git ref's commit, a registry's version list.
//!
//! The roots under `--recursive` are [`tstore_installer::find_roots`]'.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tstore_installer::{ModuleOptions, WorkdirOptions};
use tstore_store::Store;

use super::InitArgs;
use crate::commands::place::Place;
use crate::diagnostics::{print_error, ErrorReport};
use crate::reporter::Silent;
use crate::{json, units, Settings};

pub(crate) fn init_many(settings: &Settings, args: InitArgs) -> Result<ExitCode> {
    let roots =
        crate::commands::place::roots_of(settings, &args.dirs, args.recursive, &args.exclude)?;

    // One store for every root: opened once, and a package found fresh for one root is not
    // stat'ed again for the next.
    let store = std::sync::Arc::new(crate::commands::open_store(settings)?);
    let _facts = tstore_installer::keep_facts_in(std::sync::Arc::clone(&store));
    // Roots never initialised here (no `modules.json` yet) are the ones whose packages a
    // new runner lacks; an initialised root's packages are in the store already.
    let new_roots: Vec<PathBuf> = roots
        .iter()
        .filter(|r| {
            let data_dir = tstore_installer::DataDir::resolve(r, settings.tf_data_dir.as_deref());
            !data_dir.modules().join("modules.json").exists()
        })
        .cloned()
        .collect();
    if args.get && new_roots.len() > 1 {
        prefetch(settings, &store, &new_roots, &args)?;
    }
    let mut failures: Vec<(PathBuf, String)> = Vec::new();
    let mut documents = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        if !args.json {
            let failed = match failures.len() {
                0 => String::new(),
                n => format!(" ({n} failed so far)"),
            };
            outln!(
                "\n[{}/{}] {}{failed}",
                i + 1,
                roots.len(),
                crate::escape::line(&root.to_string_lossy())
            );
        }
        let one = InitArgs {
            dirs: vec![root.clone()],
            recursive: false,
            exclude: Vec::new(),
            ..args.clone()
        };
        let (result, captured) =
            json::capture(|| super::init(settings, one, super::StoreSource::Given(&store)));
        let report = captured.into_iter().next();
        match result {
            Ok(code) if code == ExitCode::SUCCESS => {
                documents.push(serde_json::json!({"dir": root, "ok": true, "report": report}));
            }
            Ok(_) => {
                failures.push((root.clone(), "failed".into()));
                documents.push(serde_json::json!({"dir": root, "ok": false, "report": report}));
            }
            Err(err) => {
                let error = ErrorReport::from_error(&err);
                if !args.json {
                    print_error(&err);
                }
                documents.push(serde_json::json!({
                    "dir": root,
                    "ok": false,
                    "error": {"summary": error.summary, "detail": error.detail},
                }));
                failures.push((root.clone(), error.summary));
            }
        }
    }
    if args.json {
        json::print(&serde_json::json!({
            "roots": documents,
            "failed": failures.len(),
        }))?;
    } else {
        outln!(
            "\ntstore init: {} roots, {} initialised, {} failed",
            roots.len(),
            roots.len() - failures.len(),
            failures.len()
        );
        for (root, why) in &failures {
            outln!(
                "  - {}: {}",
                crate::escape::line(&root.to_string_lossy()),
                crate::escape::line(why)
            );
        }
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The fetch phase of a run over many roots: every root's module packages brought into the
/// store a few roots at a time, as its init would find them (lock pins followed), nothing
/// written in the working directories; the inits that follow, one root after the other,
/// find them there. A root whose modules cannot be fetched is left for its init, which
/// reports it in its turn.
fn prefetch(settings: &Settings, store: &Store, roots: &[PathBuf], args: &InitArgs) -> Result<()> {
    let _lock = crate::commands::lock_store(store)?;
    let progress = Progress::start(roots.len(), args.json);
    // Package ids from their origins and from a module mirror, and the mirrors named.
    let brought = std::sync::Mutex::new(Brought::default());
    crate::commands::parallel::in_parallel(
        roots,
        crate::commands::parallel::PARALLEL_ROOTS,
        |root| {
            let fetched = (|| -> Result<()> {
                let root = Place::find(settings, Some(root))?.configure(settings)?;
                let workdir = WorkdirOptions {
                    upgrade: args.upgrade,
                    variables: root.variables(settings, &args.var_options(&root.place.cwd))?,
                    test_directory: args.test_directory.clone(),
                    ..root.workdir_options(settings)?
                };
                let opts = ModuleOptions {
                    workdir,
                    policy: Default::default(),
                    upgrade_only: Vec::new(),
                    reach_records: settings.reach_records(),
                    run: std::sync::Arc::clone(&settings.run),
                    trust_lock: settings.trust_lock,
                    module_mirror: settings.module_mirror_for(&root.place.dir)?,
                };
                let report = tstore_installer::prefetch_modules(store, &opts, &Silent)?;
                let mut brought = brought.lock().unwrap_or_else(|e| e.into_inner());
                brought.fetched.extend(report.fetched);
                brought.mirrored.extend(report.mirrored);
                brought
                    .mirrors
                    .extend(opts.module_mirror.map(|m| m.to_string()));
                Ok(())
            })();
            if let Err(e) = fetched {
                tracing::debug!("prefetch of {}: {e:#}", root.display());
            }
            progress.root_done(root);
        },
    );
    progress.finish();
    let brought = brought.into_inner().unwrap_or_else(|e| e.into_inner());
    if !args.json && !brought.mirrors.is_empty() {
        errln!(
            "tstore: module mirror {}: {} from it, {} from their origins",
            brought
                .mirrors
                .iter()
                .map(|m| crate::escape::line(m).into_owned())
                .collect::<Vec<_>>()
                .join(", "),
            units::count(brought.mirrored.len() as u64, "package"),
            units::count(brought.fetched.len() as u64, "package"),
        );
    }
    Ok(())
}

/// What the fetch phase of many roots brought into the store.
#[derive(Default)]
struct Brought {
    fetched: std::collections::BTreeSet<String>,
    mirrored: std::collections::BTreeSet<String>,
    mirrors: std::collections::BTreeSet<String>,
}

/// What the fetch phase of many roots shows while it runs, on stderr: a bar of the roots
/// done on a terminal; off a terminal a line when it starts and one when it ends, so that
/// a CI log never shows a silent phase. Nothing under `--json`.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    said: bool,
    total: usize,
    started: std::time::Instant,
}

impl Progress {
    fn start(total: usize, json: bool) -> Progress {
        use std::io::IsTerminal as _;
        let terminal = std::io::stderr().is_terminal();
        let bar = (!json && terminal).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "Fetching the module packages of every root [{pos}/{len}] {wide_msg}",
                )
                .expect("valid template"),
            );
            bar
        });
        let said = !json && !terminal;
        if said {
            errln!("tstore: fetching the module packages of {total} roots...");
        }
        Progress {
            bar,
            said,
            total,
            started: std::time::Instant::now(),
        }
    }

    fn root_done(&self, root: &std::path::Path) {
        if let Some(bar) = &self.bar {
            bar.set_message(crate::escape::line(&root.to_string_lossy()).into_owned());
            bar.inc(1);
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        if self.said {
            errln!(
                "tstore: fetched the module packages of {} roots in {:.1} s",
                self.total,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}
