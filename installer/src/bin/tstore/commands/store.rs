//! `tstore store import|ls|du` (`store verify` is in verify.rs).

use std::path::PathBuf;

use clap::Subcommand;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_installer::{redacted_url, FilesystemMirror, MirrorLocation};
use tstore_store::{PackageKey, Provenance, SourceFingerprint};

use super::{lock_store, open_existing_store, open_store};
use crate::json;
use crate::units;
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
            outln!(
                "- Imported {} v{} ({})",
                addr,
                package.version,
                package.platform
            );
        }
        imported.push(pkg);
    }
    if json {
        json::print(&serde_json::json!({ "imported": imported }))?;
    } else if imported.is_empty() {
        outln!("No provider packages found in {}", path.display());
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
    // Module packages are named by the addresses they were installed for, where the store
    // remembers them (registry versions and archive URLs; a git package's id carries its
    // commit and repository name).
    let mut sources: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (package, source) in store.memos().module_sources()? {
        sources
            .entry(package)
            .or_default()
            .push(describe_source(&source));
    }
    for p in &packages {
        if let PackageKey::Module { id } = &p.key {
            let from = sources
                .get(id)
                .map(|s| format!("  ({})", s.join(", ")))
                .unwrap_or_default();
            // What vouches for the name, when it is not the source the name claims.
            let vouched = match p.provenance {
                Provenance::Origin => String::new(),
                other => format!("  vouched for by {other}"),
            };
            outln!(
                "module {id}{from}  {}, {}{vouched}",
                units::count(p.files, "file"),
                units::bytes(p.bytes)
            );
            continue;
        }
        let PackageKey::Provider {
            addr,
            version,
            platform,
        } = &p.key
        else {
            outln!(
                "{}  {}, {}  tree {}",
                p.key,
                units::count(p.files, "file"),
                units::bytes(p.bytes),
                p.tree
            );
            continue;
        };
        outln!(
            "provider {addr} {version} {platform}  {}, {}  tree {}",
            units::count(p.files, "file"),
            units::bytes(p.bytes),
            p.tree
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A module source memo key as a person writes the address: `registry\0HOST/NS/NAME/SYSTEM\0V`
/// → `HOST/NS/NAME/SYSTEM 1.2.0`, `git\0URL?ref=R\0COMMIT` → `git::URL?ref=R (COMMIT)`,
/// `http\0URL` → `URL`; a URL without its credentials or secret query values.
fn describe_source(key: &str) -> String {
    let parts: Vec<&str> = key.split('\0').collect();
    match parts.as_slice() {
        ["registry", address, version] => format!("{address} {version}"),
        ["git", url, commit] => format!(
            "{} ({})",
            redacted_url(&format!("git::{url}")),
            &commit[..commit.len().min(12)]
        ),
        [_, rest @ ..] if !rest.is_empty() => rest
            .iter()
            .map(|p| redacted_url(p))
            .collect::<Vec<_>>()
            .join(" "),
        _ => redacted_url(key),
    }
}

/// `tstore store facts`: every recorded fact whose content the store holds, derived again.
pub(crate) fn facts(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_existing_store(settings)?;
    let check = tstore_installer::check_facts(&store)?;
    if json {
        json::print(&check)?;
    } else {
        outln!(
            "{} recorded: {} matching a fresh parse, {} not, {} of content the store does not \
             hold (a working directory's own files), {} of another tstore build",
            units::count(check.recorded as u64, "fact"),
            check.matching,
            check.mismatched.len(),
            check.not_held,
            check.other_builds
        );
        for m in &check.mismatched {
            outln!("mismatch: blob {} under {}", m.blob, m.rules);
        }
    }
    Ok(if check.mismatched.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(crate) fn du(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_existing_store(settings)?;
    let du = store.space().usage()?;
    if json {
        json::print(&du)?;
    } else {
        outln!(
            "{}, {}, {}",
            units::count(du.packages, "package"),
            units::count(du.trees, "tree"),
            units::count(du.blobs, "blob")
        );
        if du.links == 0 {
            outln!(
                "{} on disk; no working directory links into the store yet",
                units::bytes(du.blob_bytes)
            );
        } else {
            // What `tofu init` would have written: a private copy behind every link.
            let saved = du.linked_bytes.saturating_sub(du.blob_bytes);
            let percent = (saved * 100).checked_div(du.linked_bytes).unwrap_or(0);
            outln!(
                "{} on disk, {} as private copies ({} from working directories): {percent}% saved",
                units::bytes(du.blob_bytes),
                units::bytes(du.linked_bytes),
                units::count(du.links, "link"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::describe_source;

    #[test]
    fn sources_are_described_without_secrets() {
        assert_eq!(
            describe_source("registry\0r.test/ns/name/aws\x001.2.0"),
            "r.test/ns/name/aws 1.2.0"
        );
        assert_eq!(
            describe_source(
                "git\0https://TOKEN@h.test/r.git?ref=v1\x003fbb99d1be850365f85d62321a7e5865d45ba643"
            ),
            "git::https://h.test/r.git?ref=v1 (3fbb99d1be85)"
        );
        assert_eq!(
            describe_source("git\0ssh://git:pw@h.test/r.git?ref=v1\0abc"),
            "git::ssh://git@h.test/r.git?ref=v1 (abc)"
        );
        assert_eq!(
            describe_source("http\0https://u:p@h.test/m.zip?X-Amz-Signature=S&archive=zip"),
            "https://h.test/m.zip?X-Amz-Signature=redacted&archive=zip"
        );
    }
}

/// `tstore store …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Ingest every provider package of a filesystem mirror directory (packed or unpacked layout).
    #[command(
        after_help = "Examples:\n  tstore store import /srv/terraform-mirror       # e.g. made by `tofu providers mirror`\n  tstore store import ~/.terraform.d/plugins --json"
    )]
    Import {
        /// The mirror directory.
        path: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the packages in the store.
    #[command(
        after_help = "Examples:\n  tstore store ls                                 # kind, name, version, platform, size\n  tstore store ls --json | jq -r '.packages[].name'"
    )]
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show how much disk the store uses, and what copies per checkout would cost.
    #[command(
        after_help = "Examples:\n  tstore store du           # on disk, and what a private copy per link would cost\n  tstore store du --json    # the counts for scripts"
    )]
    Du {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the recorded facts of configuration files against a fresh parse of their bytes.
    ///
    /// An init records what each configuration file it parses says (module calls,
    /// provider requirements, versions, declarations) by the file's content, so that no
    /// later process parses those bytes again. This derives every recorded fact whose
    /// content the store holds again and compares; exits non-zero when one differs.
    #[command(
        after_help = "Examples:\n  tstore store facts          # recorded, matching, mismatched\n  tstore store facts --json"
    )]
    Facts {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-hash every blob and check that every tree is complete; report only, unless --repair.
    ///
    /// Hashes are recomputed from the bytes (each blob's BLAKE3, each package's h1:, each
    /// kept zip's zh:), never taken from the index. Exits non-zero when anything is bad (a
    /// damaged or missing blob, a bad view, an index record the bytes contradict, an index
    /// SQLite cannot read) or leftovers are found.
    #[command(
        after_help = "Examples:\n  tstore store verify             # report only; exit 1 names what is damaged\n  tstore store verify --dry-run   # what --repair would do\n  tstore store verify --repair    # quarantine damaged packages, rebuild a damaged index"
    )]
    Verify {
        /// Quarantine every package with a bad or missing blob, a bad view or a record its
        /// bytes contradict (the next `tstore init` fetches it again), move bad blob files
        /// to `quarantine/` in the store, and remove leftovers. A damaged index is moved
        /// aside (kept) and rebuilt from the blobs and views. Waits for the exclusive store
        /// lock.
        #[arg(long)]
        repair: bool,
        /// Show what --repair would do and change nothing (implies --repair).
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete the whole store and take down its mount (`rm -rf` fails on its read-only
    /// directories).
    ///
    /// Removes only a directory that is a tstore store owned by you, after running inits
    /// finish. Without --yes it says what it would remove, and which working directories
    /// link into the store (each needs `tstore init` or `tofu init` again), and removes
    /// nothing.
    #[command(
        after_help = "Examples:\n  tstore store rm          # what would go\n  tstore store rm --yes    # remove it"
    )]
    Rm {
        /// Remove it.
        #[arg(long)]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}
