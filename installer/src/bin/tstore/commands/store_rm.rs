//! `tstore store rm`: delete the whole store, the way back to plain `tofu init`.
//!
//! `rm -rf` of a store fails for its owner (views and packages are read-only directories)
//! and would leave it half deleted. This removes only a directory that is a tstore store
//! owned by this user (`tstore_store::identify_store`: only the layout's entries, and
//! tstore's index), after the running inits
//! finished (the exclusive store lock), with the mount taken down first; nothing outside the
//! store is touched except the mount path tstore made (a FUSE mount point left empty, or the
//! symlink to the views).
//!
//! `store rm --json`'s fields: `docs/reference/json.md`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::{json, units, Settings};

/// `tstore store rm [--yes] [--json]`.
pub(crate) fn rm(settings: &Settings, yes: bool, json_out: bool) -> Result<ExitCode> {
    let root = &settings.store;
    if !root.exists() {
        if json_out {
            json::print(&serde_json::json!({
                "removed": null, "bytes": 0, "roots": [], "mount": settings.mount,
            }))?;
        } else {
            outln!(
                "There is no store at {}; nothing to remove.",
                root.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Never delete what tstore did not make: a mistyped TSTORE_HOME must not empty a home.
    if let Err(why) = tstore_store::identify_store(root) {
        anyhow::bail!(
            "{} is not a tstore store: {why}; nothing was removed. Check TSTORE_HOME (a store \
             holds only tstore's own entries and its index)",
            root.display()
        );
    }
    // What links into it, to say which working directories need an init afterwards (a
    // damaged index has no roots to tell).
    let store = crate::commands::open_store(settings).ok();
    // Only those that still do: a recorded link that is gone, or now points elsewhere (the
    // directory was deleted, or re-initialised by the tool itself), needs nothing.
    let into_store =
        |target: &std::path::Path| target.starts_with(&settings.mount) || target.starts_with(root);
    let roots: Vec<PathBuf> = store
        .as_ref()
        .and_then(|s| s.roots().list().ok())
        .map(|roots| {
            roots
                .into_iter()
                .filter(|r| {
                    r.links
                        .iter()
                        .any(|l| fs_err::read_link(&l.link).is_ok_and(|target| into_store(&target)))
                })
                .map(|r| r.path)
                .collect()
        })
        .unwrap_or_default();
    let bytes = tstore_store::regular_file_bytes(root);
    if !yes {
        errln!(
            "This removes the store at {} ({}) and the mount at {}.",
            root.display(),
            units::bytes(bytes),
            settings.mount.display()
        );
        if !roots.is_empty() {
            errln!(
                "{} {} into it; each needs `tstore init` (or `tofu init`) again afterwards:",
                units::count_as(
                    roots.len() as u64,
                    "working directory",
                    "working directories"
                ),
                if roots.len() == 1 { "links" } else { "link" }
            );
            for r in &roots {
                errln!("  {}", crate::escape::line(&r.to_string_lossy()));
            }
        }
        errln!("Nothing was removed. Run `tstore store rm --yes` to remove it.");
        if json_out {
            json::print(&serde_json::json!({
                "removed": null, "bytes": bytes, "roots": roots, "mount": settings.mount,
            }))?;
        }
        return Ok(ExitCode::FAILURE);
    }
    // Running inits finish first; new ones wait and then make a new store.
    let _lock = match &store {
        Some(s) => Some(s.locks().exclusive_or_wait(|| {
            errln!("tstore: waiting for running inits to finish...");
        })?),
        None => None,
    };
    // The mount goes first: it serves the files about to be removed.
    crate::mount::remove(settings)?;
    make_directories_writable(root)?;
    fs_err::remove_dir_all(root)
        .with_context(|| format!("cannot remove the store at {}", root.display()))?;
    if json_out {
        json::print(&serde_json::json!({
            "removed": root, "bytes": bytes, "roots": roots, "mount": settings.mount,
        }))?;
    } else {
        outln!(
            "Removed the store at {} ({}).",
            root.display(),
            units::bytes(bytes)
        );
        if !roots.is_empty() {
            outln!(
                "Run `tstore init` (or `tofu init`) again in the {} that linked into it.",
                units::count_as(
                    roots.len() as u64,
                    "working directory",
                    "working directories"
                )
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Give the owner write and search permission on every directory of the store (read-only
/// views and packages), without following a symlink or leaving the filesystem.
fn make_directories_writable(root: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(root)
        .follow_links(false)
        .same_file_system(true)
    {
        let entry = entry.with_context(|| format!("cannot walk {}", root.display()))?;
        if entry.file_type().is_dir() {
            let mode = entry.metadata()?.permissions().mode();
            if mode & 0o700 != 0o700 {
                fs_err::set_permissions(
                    entry.path(),
                    std::fs::Permissions::from_mode(mode | 0o700),
                )?;
            }
        }
    }
    Ok(())
}
