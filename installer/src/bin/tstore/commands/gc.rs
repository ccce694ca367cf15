//! `tstore gc`, `tstore roots ls`, the root an `init` records, and the leftovers part of
//! `tstore store verify` (issue 7; the protocol is in ARCHITECTURE.md, "Concurrency").
//!
//! # JSON formats
//!
//! - `gc --json`: the store's `GcReport` (`{"dry_run","roots_live","roots_dropped":[PATH],
//!   "links_dropped","packages_removed":[KEY],"packages_live","packages_young",
//!   "trees_removed","blobs_removed","bytes_freed","leftovers":{"tmp","views","blobs",
//!   "blob_bytes","removed"},"millis"}`), or `{"skipped":"store busy"}`.
//! - `roots ls --json`: `{"roots":[{"path","created_at","updated_at","links":[{"link",
//!   "target","package"}]}]}`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tstore_store::{package_of_view_relpath, GcOptions, RootLink, Store, StoreLock};

use crate::Settings;

/// The links of working directory `dir` into the store: every symlink at
/// `.terraform/providers/H/N/T/V/OS_ARCH` and `.terraform/modules/KEY` whose target is under
/// the mount path or the store's views and names a package.
pub(crate) fn scan_root_links(settings: &Settings, store: &Store, dir: &Path) -> Vec<RootLink> {
    let views = store.views_dir();
    let dot = dir.join(".terraform");
    let mut links = Vec::new();
    for (sub, depth) in [("providers", 5), ("modules", 1)] {
        let base = dot.join(sub);
        if !base.is_dir() {
            continue;
        }
        for entry in walkdir::WalkDir::new(&base)
            .min_depth(1)
            .max_depth(depth)
            .sort_by_file_name()
            .into_iter()
            .filter_map(std::result::Result::ok)
            .filter(|e| e.path_is_symlink())
        {
            let Ok(target) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let rel = target
                .strip_prefix(&settings.mount)
                .or_else(|_| target.strip_prefix(&views));
            if let Some(package) = rel.ok().and_then(package_of_view_relpath) {
                links.push(RootLink {
                    link: entry.into_path(),
                    target,
                    package,
                });
            }
        }
    }
    links
}

/// Record `dir` as a root with the links it has now. Called by `init` while it still holds
/// the shared store lock, on success and on failure (a failed provider install keeps the
/// module links it made and the provider links it had).
pub(crate) fn record_root(
    settings: &Settings,
    store: &Store,
    lock: &StoreLock,
    dir: &Path,
) -> Result<()> {
    let links = scan_root_links(settings, store, dir);
    let recorded = store
        .record_root(lock, dir, &links)
        .with_context(|| format!("cannot record {} as a root of the store", dir.display()))?;
    for key in recorded.unknown {
        tracing::warn!(
            "{} links {key}, which the store does not hold",
            dir.display()
        );
    }
    Ok(())
}

/// Parse `90`, `90s`, `15m`, `1h`, `7d` (a bare number is seconds).
pub(crate) fn parse_duration(text: &str) -> Result<Duration> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num
        .parse()
        .with_context(|| format!("{text:?} is not a duration like 30s, 15m, 1h or 7d"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86400,
        _ => bail!("{text:?} is not a duration like 30s, 15m, 1h or 7d"),
    };
    Ok(Duration::from_secs(secs))
}

/// `tstore gc`.
pub(crate) fn gc(settings: &Settings, args: &crate::cli::GcArgs) -> Result<ExitCode> {
    let min_age = parse_duration(&args.min_age)?;
    let store = crate::commands::open_store(settings)?;
    let Some(lock) = store.try_lock_exclusive()? else {
        // Cron-friendly: another tstore is working; the next run will collect.
        if args.json {
            println!("{}", serde_json::json!({ "skipped": "store busy" }));
        } else {
            println!("store busy, skipped");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let report = store.gc(
        &lock,
        &GcOptions {
            min_age,
            dry_run: args.dry_run,
        },
    )?;
    drop(lock);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for root in &report.roots_dropped {
        println!("- dropped root {}", root.display());
    }
    for key in &report.packages_removed {
        println!("- {verb} {key}");
    }
    let l = &report.leftovers;
    println!(
        "gc {verb} {} packages, {} trees, {} blobs and {} leftovers ({} tmp, {} views, {} blob files); \
         {} bytes freed; {} roots live, {} dropped; {} packages live, {} kept by the grace period ({} ms)",
        report.packages_removed.len(),
        report.trees_removed,
        report.blobs_removed,
        l.tmp.len() + l.views.len() + l.blobs.len(),
        l.tmp.len(),
        l.views.len(),
        l.blobs.len(),
        report.bytes_freed,
        report.roots_live,
        report.roots_dropped.len(),
        report.packages_live,
        report.packages_young,
        report.millis
    );
    Ok(ExitCode::SUCCESS)
}

/// `tstore roots ls`.
pub(crate) fn roots_ls(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = crate::commands::open_store(settings)?;
    let roots = store.roots()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "roots": roots }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for r in &roots {
        println!("{}  ({} links)", r.path.display(), r.links.len());
        for l in &r.links {
            println!("  {} -> {}", l.link.display(), l.package);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The leftovers part of `store verify`: removed under the exclusive lock, reported only
/// when another tstore holds the lock (its temp files and views may be in progress).
pub(crate) fn verify_leftovers(store: &Store) -> Result<tstore_store::Leftovers> {
    let lock = store.try_lock_exclusive()?;
    Ok(store.leftovers(None, lock.as_ref())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
        assert!(parse_duration("1w").is_err());
        assert!(parse_duration("h").is_err());
    }
}
