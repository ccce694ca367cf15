//! `tstore gc` (the protocol with concurrent inits is in ARCHITECTURE.md, "Concurrency").
//! `gc --json`'s fields: `docs/reference/json.md`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use std::collections::HashSet;

use anyhow::Result;
use clap::Args;
use tstore_store::{GcOptions, PackageKey, SizeBudget};

use crate::json;
use crate::units;
use crate::Settings;

// Arguments of `tstore gc` (a plain comment: clap would take a doc comment as help).
#[derive(Debug, Args)]
pub(crate) struct GcArgs {
    /// Keep anything younger than this (`30s`, `15m`, `1h`, `7d`; a bare number is seconds).
    #[arg(long, default_value = "1h", value_name = "DURATION", value_parser = crate::cli::values::parse_duration)]
    pub min_age: Duration,
    /// Report what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How long to wait for running inits to finish; new inits wait behind gc meanwhile,
    /// and gc skips (exit 0) if the store is still busy then.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = crate::cli::values::parse_duration)]
    pub wait: Duration,
    /// Then drop packages no checkout links, least recently used first, until the store's
    /// files take at most SIZE (`500M`, `20G`, `1T`; powers of 1024).
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::values::parse_size)]
    pub max_size: Option<u64>,
    /// Then drop packages no checkout links, least recently used first, until the store's
    /// filesystem has SIZE free.
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::values::parse_size)]
    pub min_free: Option<u64>,
    /// Before a CI cache is saved: keep only what the lock files of the roots under each
    /// DIR pin (default: the current directory) and what checkouts link; everything else
    /// goes whatever its age, the git cache too when every git call is pinned.
    #[arg(long)]
    pub ci: bool,
    /// With --ci: the directories whose roots' lock files say what to keep.
    #[arg(value_name = "DIR", requires = "ci")]
    pub dirs: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tstore gc`.
pub(crate) fn gc(settings: &Settings, args: &GcArgs) -> Result<ExitCode> {
    let budget = (args.max_size.is_some() || args.min_free.is_some()).then_some(SizeBudget {
        max_size: args.max_size,
        min_free: args.min_free,
    });
    let store = crate::commands::open_store(settings)?;
    // `--ci`: what the lock files of the roots under the directories pin stays, with what
    // is linked; nothing else is young enough to keep.
    let ci = if args.ci {
        let dirs = if args.dirs.is_empty() {
            vec![std::path::PathBuf::from(".")]
        } else {
            args.dirs.clone()
        };
        let _shared = crate::commands::lock_store(&store)?;
        Some(tstore_installer::ci_keep(&store, &dirs)?)
    } else {
        None
    };
    let options = |dry_run: bool| GcOptions {
        min_age: if ci.is_some() {
            std::time::Duration::ZERO
        } else {
            args.min_age
        },
        dry_run,
        // Looked up right before the sweep (under the exclusive lock for a real run).
        in_use: packages_in_use(settings),
        budget,
        pinned: ci.as_ref().map(|k| k.pinned.clone()).unwrap_or_default(),
        keep_git_cache: ci.as_ref().is_some_and(|k| k.git_cache_needed.is_some()),
    };
    let git_cache_before = git_cache_sizes(&store);
    if args.dry_run {
        // A dry run changes nothing (its transaction rolls back): the shared lock, beside
        // running inits, is enough.
        let shared = crate::commands::lock_store(&store)?;
        let preview = store.gc(&shared, &options(true))?;
        return print_report(&preview, ci.as_ref(), &git_cache_before, args.json);
    }
    // First a read-only check under the shared lock, beside running inits: a run that would
    // remove nothing (the common case from cron) holds neither the exclusive lock nor the
    // index's write lock, so it does not hold inits back. A store over its budget, and a CI
    // cache's prune, always have work.
    let idle = {
        let _shared = crate::commands::lock_store(&store)?;
        let over_budget = match &budget {
            Some(b) => store
                .space()
                .budget_target(b, store.space().content_bytes()?, 0)?
                .is_some(),
            None => false,
        };
        if over_budget || ci.is_some() {
            None
        } else {
            store.gc_idle_report(args.min_age, &packages_in_use(settings))?
        }
    };
    if let Some(report) = idle {
        // Nothing to collect: what inits of this boot left to the page cache is still made
        // durable, beside them (durability.rs).
        store.make_durable()?;
        return print_report(&report, None, &git_cache_before, args.json);
    }
    let Some(lock) = store.locks().exclusive_within(args.wait)? else {
        // Cron-friendly: the store stayed busy (a long install); the next run will collect.
        if args.json {
            json::print(&serde_json::json!({ "skipped": "store busy" }))?;
        } else {
            outln!("store busy, skipped");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let report = store.gc(&lock, &options(false))?;
    drop(lock);
    if !report.packages_removed.is_empty() {
        super::cli_config::refresh_cli_configs(settings, &store);
    }
    print_report(&report, ci.as_ref(), &git_cache_before, args.json)
}

/// The bytes of each cached git repository now.
fn git_cache_sizes(
    store: &tstore_store::Store,
) -> std::collections::BTreeMap<std::path::PathBuf, u64> {
    let Ok(dir) = store.git_cache_dir() else {
        return Default::default();
    };
    let Ok(entries) = fs_err::read_dir(&dir) else {
        return Default::default();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| {
            let bytes = walkdir::WalkDir::new(e.path())
                .into_iter()
                .filter_map(|f| f.ok())
                .filter_map(|f| f.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum();
            (e.path(), bytes)
        })
        .collect()
}

/// The packages some process has a file of open or mapped through the mount now (a
/// provider binary running from it): gc keeps them, see `tstore_store::GcOptions::in_use`.
fn packages_in_use(settings: &Settings) -> HashSet<PackageKey> {
    let mount = settings
        .mount
        .canonicalize()
        .unwrap_or_else(|_| settings.mount.clone());
    tstore_fsmount::files_in_use_under(&mount)
        .iter()
        .filter_map(|path| path.strip_prefix(&mount).ok())
        .filter_map(tstore_store::package_of_view_relpath)
        .collect()
}

fn print_report(
    report: &tstore_store::GcReport,
    ci: Option<&tstore_installer::CiKeep>,
    git_cache_before: &std::collections::BTreeMap<std::path::PathBuf, u64>,
    json_out: bool,
) -> Result<ExitCode> {
    let git_cache_freed: u64 = report
        .leftovers
        .git_caches
        .iter()
        .filter_map(|p| git_cache_before.get(p))
        .sum();
    if json_out {
        let mut doc = serde_json::to_value(report)?;
        if let Some(ci) = ci {
            doc["ci"] = serde_json::json!({
                "roots": ci.roots,
                "pinned": ci.pinned.len(),
                "git_cache_kept_because": ci.git_cache_needed,
                "bytes_saved": report.bytes_freed + git_cache_freed,
            });
        }
        json::print(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let drop_verb = if report.dry_run {
        "would drop"
    } else {
        "dropped"
    };
    for root in &report.roots_dropped {
        outln!(
            "- {drop_verb} root {}",
            crate::escape::line(&root.to_string_lossy())
        );
    }
    for key in &report.packages_removed {
        outln!("- {verb} {key}");
    }
    let l = &report.leftovers;
    let leftovers = (l.tmp.len() + l.views.len() + l.blobs.len()) as u64;
    outln!(
        "gc {verb} {}, {} and {}, freeing {}",
        units::count(report.packages_removed.len() as u64, "package"),
        units::count(report.trees_removed, "tree"),
        units::count(report.blobs_removed, "blob"),
        units::bytes(report.bytes_freed),
    );
    outln!(
        "  leftovers: {} ({} temp, {}, {})",
        leftovers,
        l.tmp.len(),
        units::count(l.views.len() as u64, "view"),
        units::count(l.blobs.len() as u64, "blob file"),
    );
    if !l.git_caches.is_empty() {
        let n = l.git_caches.len();
        let repos = if n == 1 { "repository" } else { "repositories" };
        outln!("  git cache: {n} {repos} {verb} (unused for the grace period)");
    }
    outln!(
        "  roots: {} live, {} {}",
        report.roots_live,
        report.roots_dropped.len(),
        if report.dry_run { "to drop" } else { "dropped" }
    );
    outln!(
        "  packages: {} live, {} kept by the grace period",
        report.packages_live,
        report.packages_young
    );
    if report.packages_in_use > 0 {
        outln!(
            "  {} kept: a running process has files of {} open through the mount",
            units::count(report.packages_in_use, "package"),
            if report.packages_in_use == 1 {
                "it"
            } else {
                "them"
            }
        );
    }
    if let Some(b) = &report.budget {
        print_budget(b, report.dry_run);
    }
    if let Some(ci) = ci {
        outln!(
            "  ci: kept {} the lock files of {} pin; {} {} in all",
            units::count(ci.pinned.len() as u64, "package"),
            units::count(ci.roots.len() as u64, "root"),
            if report.dry_run {
                "would save"
            } else {
                "saved"
            },
            units::bytes(report.bytes_freed + git_cache_freed),
        );
        match &ci.git_cache_needed {
            Some(why) => outln!("  git cache kept: {}", crate::escape::line(why)),
            None if !report.leftovers.git_caches.is_empty() => {
                outln!(
                "  git cache: every git call is pinned and held by its lock entry's hash; {} {}",
                if report.dry_run { "would free" } else { "freed" },
                units::bytes(git_cache_freed)
            )
            }
            None => {}
        }
    }
    outln!("  took {} ms", report.millis);
    Ok(ExitCode::SUCCESS)
}

/// What the size budget did: the store's size against its target, and what could not go.
fn print_budget(b: &tstore_store::BudgetReport, dry_run: bool) {
    let dropped = units::count(b.packages_dropped.len() as u64, "package");
    let verb = if dry_run { "would drop" } else { "dropped" };
    outln!(
        "  budget: {} of packages before, {} after (target {}); {verb} {dropped} no checkout links, least recently used first",
        units::bytes(b.size_before),
        units::bytes(b.size_after),
        units::bytes(b.target),
    );
    if !b.met {
        outln!(
            "  the store does not fit: {} are linked by live checkouts{} (never dropped); remove checkouts, or see them with `tstore roots ls`",
            units::bytes(b.linked_bytes),
            if b.in_use > 0 {
                format!(", and {} are open by running processes", units::count(b.in_use, "package"))
            } else {
                String::new()
            }
        );
    }
}
