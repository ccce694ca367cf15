//! `tstore gc` (the protocol with concurrent inits is in ARCHITECTURE.md, "Concurrency").
//!
//! # JSON formats
//!
//! - `gc --json`: the store's `GcReport` (`{"dry_run","roots_live","roots_dropped":[PATH],
//!   "links_dropped","packages_removed":[KEY],"packages_live","packages_young",
//!   "packages_in_use",
//!   "trees_removed","blobs_removed","bytes_freed","leftovers":{"tmp","views","blobs",
//!   "blob_bytes","git_caches","removed"},"millis"}`), or `{"skipped":"store busy"}` when the store stayed
//!   busy for `--wait`.

use std::process::ExitCode;

use std::collections::HashSet;

use anyhow::Result;
use tstore_store::{GcOptions, PackageKey};

use crate::json;
use crate::units;
use crate::Settings;

/// `tstore gc`.
pub(crate) fn gc(settings: &Settings, args: &crate::cli::GcArgs) -> Result<ExitCode> {
    let min_age = args.min_age;
    let store = crate::commands::open_store(settings)?;
    if args.dry_run {
        // A dry run changes nothing (its transaction rolls back): the shared lock, beside
        // running inits, is enough.
        let shared = crate::commands::lock_store(&store)?;
        let preview = store.gc(
            &shared,
            &GcOptions {
                min_age,
                dry_run: true,
                in_use: packages_in_use(settings),
            },
        )?;
        return print_report(&preview, args.json);
    }
    // First a read-only check under the shared lock, beside running inits: a run that would
    // remove nothing (the common case from cron) holds neither the exclusive lock nor the
    // index's write lock, so it does not hold inits back.
    let idle = {
        let _shared = crate::commands::lock_store(&store)?;
        store.gc_idle_report(min_age, &packages_in_use(settings))?
    };
    if let Some(report) = idle {
        return print_report(&report, args.json);
    }
    let Some(lock) = store.lock_exclusive_within(args.wait)? else {
        // Cron-friendly: the store stayed busy (a long install); the next run will collect.
        if args.json {
            json::print(&serde_json::json!({ "skipped": "store busy" }))?;
        } else {
            outln!("store busy, skipped");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let report = store.gc(
        &lock,
        &GcOptions {
            min_age,
            dry_run: false,
            // Looked up under the exclusive lock, right before the sweep.
            in_use: packages_in_use(settings),
        },
    )?;
    drop(lock);
    if !report.packages_removed.is_empty() {
        crate::commands::refresh_cli_configs(settings, &store);
    }
    print_report(&report, args.json)
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

fn print_report(report: &tstore_store::GcReport, json_out: bool) -> Result<ExitCode> {
    if json_out {
        json::print(report)?;
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
    outln!("  took {} ms", report.millis);
    Ok(ExitCode::SUCCESS)
}
