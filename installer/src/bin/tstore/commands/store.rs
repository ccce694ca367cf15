//! `tstore store import|ls|du|verify`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_installer::{FilesystemMirror, MirrorLocation};
use tstore_store::{PackageKey, SourceFingerprint, Store};

use super::{lock_store, open_existing_store, open_store};
use crate::json;
use crate::Settings;

pub(crate) fn import(settings: &Settings, path: &std::path::Path, json: bool) -> Result<ExitCode> {
    let store = open_store(settings)?;
    let _lock = lock_store(&store)?;
    let mirror = FilesystemMirror {
        root: std::path::absolute(path)?,
    };
    let mut imported = Vec::new();
    for (addr, package) in mirror.all_packages()? {
        let key = PackageKey::Provider {
            addr: addr.to_string(),
            version: package.version.to_string(),
            platform: package.platform.to_string(),
        };
        let source = match &package.location {
            MirrorLocation::Packed(p) | MirrorLocation::Unpacked(p) => p,
        };
        let (tree, hashes) = tstore_installer::ingest_mirror_package(&store, &package.location)
            .with_context(|| format!("cannot import {}", source.display()))?;
        let fingerprint = SourceFingerprint::of_path(source)?;
        let pkg = store
            .commit_package(&key, &tree, &hashes, Some((source, &fingerprint)))
            .with_context(|| format!("cannot import {}", source.display()))?;
        if !json {
            println!(
                "- Imported {} v{} ({})",
                addr, package.version, package.platform
            );
        }
        imported.push(pkg);
    }
    if json {
        json::print(&serde_json::json!({ "imported": imported }))?;
    } else if imported.is_empty() {
        println!("No provider packages found in {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn ls(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_existing_store(settings)?;
    let packages = store.packages()?;
    if json {
        json::print(&serde_json::json!({ "packages": packages }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for p in &packages {
        let PackageKey::Provider {
            addr,
            version,
            platform,
        } = &p.key
        else {
            println!(
                "{}  {} files, {} bytes  tree {}",
                p.key, p.files, p.bytes, p.tree
            );
            continue;
        };
        println!(
            "provider {addr} {version} {platform}  {} files, {} bytes  tree {}",
            p.files, p.bytes, p.tree
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn du(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_existing_store(settings)?;
    let du = store.disk_usage()?;
    if json {
        json::print(&du)?;
    } else {
        println!(
            "{} packages, {} trees, {} blobs\n{} bytes on disk (blobs)\n\
             {} bytes if every package were a separate copy\n\
             {} bytes if each of the {} links from working directories were a private copy",
            du.packages,
            du.trees,
            du.blobs,
            du.blob_bytes,
            du.logical_bytes,
            du.linked_bytes,
            du.links
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn verify(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_existing_store(settings)?;
    // Leftovers of crashed processes are removed first when no other tstore runs, else only
    // reported (they may be in progress).
    let leftovers = verify_leftovers(&store)?;
    let report = store.verify()?;
    if json {
        let mut value = serde_json::to_value(&report)?;
        value["leftovers"] = serde_json::to_value(&leftovers)?;
        json::print(&value)?;
    } else {
        let verb = if leftovers.removed {
            "removed"
        } else {
            "found (store busy, not removed)"
        };
        for path in leftovers
            .tmp
            .iter()
            .chain(&leftovers.views)
            .chain(&leftovers.blobs)
        {
            println!("leftover {verb}: {}", path.display());
        }
        println!(
            "checked {} blobs ({} bytes)",
            report.blobs_checked, report.bytes_checked
        );
        for c in &report.corrupt {
            println!(
                "corrupt: blob {} ({}): its content does not match its name",
                c.blob,
                c.path.display()
            );
        }
        for m in &report.missing {
            println!(
                "missing: blob {} (referenced by tree {})",
                m.blob, m.referenced_by
            );
        }
        for v in &report.views_bad {
            for problem in &v.problems {
                println!("bad view: {} ({}): {problem}", v.package, v.path.display());
            }
        }
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        if !json {
            eprintln!(
                "Error: the store is damaged; see the list above\n\n  hint: run `tstore init` \
                 again in the affected working directories: damaged packages are fetched again"
            );
        }
        ExitCode::from(1)
    })
}

/// The leftovers part of `store verify`: removed under the exclusive lock, reported only
/// when another tstore holds the lock (its temp files and views may be in progress).
fn verify_leftovers(store: &Store) -> Result<tstore_store::Leftovers> {
    let lock = store.try_lock_exclusive()?;
    Ok(store.leftovers(None, lock.as_ref())?)
}
