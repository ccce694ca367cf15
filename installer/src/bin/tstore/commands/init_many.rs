//! `tstore init DIR...` and `tstore init --recursive [DIR...]`: many roots in one process,
//! each initialised exactly as a lone `tstore init` there (same lock files, `modules.json`,
//! links and root records), one after the other. A failing root does not stop the others;
//! a summary names every failure and the exit status is 1 when any failed. What the roots
//! share is asked once per process: a git ref's commit, a registry's version list.
//!
//! A root, under `--recursive`: a directory of the tree with configuration files that no
//! directory of the tree calls as a local module (`source = "./…"`, `"../…"`); `.terraform`
//! and hidden directories are not entered, symlinks are not followed, and `--exclude GLOB`
//! leaves out the roots whose path relative to the top matches.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_tofu::flavor::Flavor;

use tstore_installer::{ModuleOptions, WorkdirOptions};
use tstore_store::Store;
use tstore_tofu::static_eval::RootInputs;

use crate::cli::InitArgs;
use crate::diagnostics::{print_error, ErrorReport};
use crate::reporter::Silent;
use crate::{json, Settings};

pub(crate) fn init_many(settings: &Settings, args: InitArgs) -> Result<ExitCode> {
    let roots = roots_of(settings, &args.dirs, args.recursive, &args.exclude)?;

    // One store for every root: opened once, and a package found fresh for one root is not
    // stat'ed again for the next.
    let store = super::open_store(settings)?;
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
            println!(
                "\n[{}/{}] {}",
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
            json::capture(|| super::init::init_one(settings, one, Some(&store)));
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
        println!(
            "\ntstore init: {} roots, {} initialised, {} failed",
            roots.len(),
            roots.len() - failures.len(),
            failures.len()
        );
        for (root, why) in &failures {
            println!(
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
    let _lock = super::lock_store(store)?;
    super::parallel::in_parallel(roots, super::parallel::PARALLEL_ROOTS, |root| {
        let fetched = (|| -> Result<()> {
            let (cwd, dir) = super::working_directory(settings, Some(root))?;
            let flavor = settings.flavor_for(&dir)?;
            let cli_config = super::load_cli_config(settings, flavor.flavor)?;
            let variables =
                RootInputs::gather(&dir, settings.env.unicode_vars(), &args.var_options(&cwd))?;
            let workdir = WorkdirOptions {
                upgrade: args.upgrade,
                variables: std::sync::Arc::new(variables),
                test_directory: args.test_directory.clone(),
                ..super::workdir_options(settings, &dir, &flavor, &cli_config)?
            };
            let opts = ModuleOptions {
                workdir,
                policy: Default::default(),
                upgrade_only: Vec::new(),
                reach_records: settings.reach_records(),
                trust_lock: settings.trust_lock,
            };
            tstore_installer::prefetch_modules(store, &opts, &Silent)?;
            Ok(())
        })();
        if let Err(e) = fetched {
            tracing::debug!("prefetch of {}: {e:#}", root.display());
        }
    });
    Ok(())
}

/// The working directories `dirs` name (the current one when none), each canonical, or
/// with `recursive` the roots under each; each once.
pub(super) fn roots_of(
    settings: &Settings,
    dirs: &[PathBuf],
    recursive: bool,
    exclude: &[String],
) -> Result<Vec<PathBuf>> {
    let tops: Vec<Option<&Path>> = if dirs.is_empty() {
        vec![None]
    } else {
        dirs.iter().map(|d| Some(d.as_path())).collect()
    };
    let mut roots = Vec::new();
    for top in &tops {
        let (_, dir) = super::working_directory(settings, *top)?;
        if recursive {
            roots.extend(find_roots(&dir, exclude)?);
        } else {
            roots.push(dir);
        }
    }
    let mut seen = HashSet::new();
    roots.retain(|r| seen.insert(r.clone()));
    if roots.is_empty() {
        anyhow::bail!(
            "no root module found under {} (a directory with .tf or .tofu files that no other \
             directory of the tree calls as a local module)",
            tops.iter()
                .map(|t| t.unwrap_or(Path::new(".")).display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(roots)
}

/// The roots under `top` (see the module docs), sorted.
pub(super) fn find_roots(top: &Path, exclude: &[String]) -> Result<Vec<PathBuf>> {
    let mut candidates = Vec::new();
    let walk = walkdir::WalkDir::new(top)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || (e.file_type().is_dir() && {
                    let name = e.file_name().to_string_lossy();
                    !name.starts_with('.')
                })
        });
    for entry in walk {
        let entry = entry.with_context(|| format!("cannot list {}", top.display()))?;
        let dir = entry.path();
        if [Flavor::Tofu, Flavor::Terraform]
            .iter()
            .any(|f| tstore_tofu::config::is_config_dir(dir, *f))
        {
            candidates.push(dir.to_path_buf());
        }
    }
    // What the tree calls as a local module is a module, not a root.
    let mut called = HashSet::new();
    for dir in &candidates {
        let Ok(module) = tstore_tofu::config::load_module_requirements(dir, Flavor::Tofu) else {
            continue;
        };
        for call in module.module_calls.values() {
            if tstore_tofu::module_source::is_local(&call.source) {
                if let Ok(path) = dir.join(&call.source).canonicalize() {
                    called.insert(path);
                }
            }
        }
    }
    let exclude = exclude_set(exclude)?;
    Ok(candidates
        .into_iter()
        .filter(|d| !called.contains(d))
        .filter(|d| {
            let rel = d
                .strip_prefix(top)
                .unwrap_or(d)
                .to_string_lossy()
                .into_owned();
            !exclude.is_match(&rel)
        })
        .collect())
}

/// The `--exclude` globs as one matcher (globset: linear in the path's length, whatever the
/// pattern): `*`, `?` and `[…]` within one component, `**` any number of components; a
/// leading or trailing `/` is ignored.
fn exclude_set(exclude: &[String]) -> Result<globset::GlobSet> {
    let mut set = globset::GlobSetBuilder::new();
    for glob in exclude {
        let parsed = globset::GlobBuilder::new(glob.trim_matches('/'))
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .with_context(|| format!("--exclude {glob:?} is not a valid glob"))?;
        set.add(parsed);
    }
    set.build().context("cannot compile the --exclude globs")
}

#[cfg(test)]
fn glob_matches(glob: &str, path: &str) -> bool {
    exclude_set(&[glob.to_owned()]).unwrap().is_match(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_components_and_any_depth() {
        assert!(glob_matches("stacks/*", "stacks/app"));
        assert!(!glob_matches("stacks/*", "stacks/app/eu"));
        assert!(glob_matches("stacks/**", "stacks/app/eu"));
        assert!(glob_matches("**/test?", "a/b/test1"));
        assert!(glob_matches("**", "x"));
        assert!(!glob_matches("legacy", "legacy2"));
    }

    #[test]
    fn a_pathological_glob_is_matched_in_linear_time() {
        // Twelve `*` pieces against one long name that never matches: backtracking takes
        // exponential time; the automaton answers at once.
        let glob = "*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let name = "a".repeat(10_000);
        assert!(!glob_matches(glob, &name));
        assert!(exclude_set(&["[".into()]).is_err());
    }

    #[test]
    fn roots_are_directories_no_other_calls() {
        let top = tempfile::tempdir().unwrap();
        let top = top.path().canonicalize().unwrap();
        let write = |rel: &str, text: &str| {
            let p = top.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "stacks/a/main.tf",
            "module \"n\" {\n  source = \"../../modules/net\"\n}\n",
        );
        write("stacks/b/main.tf", "");
        write("modules/net/main.tf", "");
        write("stacks/b/.terraform/modules/x/main.tf", "");
        write(".hidden/main.tf", "");
        write("legacy/main.tf", "");
        let rel = |roots: Vec<PathBuf>| -> Vec<String> {
            roots
                .iter()
                .map(|r| r.strip_prefix(&top).unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            rel(find_roots(&top, &[]).unwrap()),
            ["legacy", "stacks/a", "stacks/b"]
        );
        assert_eq!(
            rel(find_roots(&top, &["legacy".into()]).unwrap()),
            ["stacks/a", "stacks/b"]
        );
    }
}
