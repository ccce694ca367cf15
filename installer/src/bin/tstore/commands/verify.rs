//! `tstore store verify [--repair] [--dry-run] [--json]`.
//!
//! Without `--repair` it only reports: nothing in the store changes, leftovers included.
//! `--dry-run` (alone or with `--repair`) reports what `--repair` would do and changes
//! nothing. `--repair` takes the exclusive store lock, waiting for it.
//!
//! An index SQLite cannot read (`Store::index_health`) is reported as damaged; `--repair`
//! moves it aside (kept) and rebuilds it from the blobs and views on disk
//! (`Store::rebuild_damaged_index`), stops a mount serving the old file, then verifies and
//! repairs the rebuilt store as usual.
//!
//! `--json`'s fields: `docs/reference/json.md`.

use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_store::{
    IndexHealth, Provenance, RebuiltIndex, RepairReport, Store, UnsupportedName, VerifyReport,
};

use super::open_existing_store;
use crate::diagnostics::{self, ErrorReport};
use crate::json;
use crate::Settings;

/// `tstore store verify`; `repair` without `dry_run` changes the store.
pub(crate) fn verify(
    settings: &Settings,
    repair: bool,
    dry_run: bool,
    json: bool,
) -> Result<ExitCode> {
    let act = repair && !dry_run;
    let health = Store::index_health(&settings.store)?;
    let rebuilt = match &health {
        IndexHealth::Damaged { reason } if !act => {
            return damaged_index(settings, reason, repair, json);
        }
        IndexHealth::Damaged { .. } => {
            let rebuilt = Store::rebuild_damaged_index(
                &settings.store,
                settings.machine_key.as_deref(),
                || errln!("tstore: waiting for the store lock (another tstore is running)..."),
            )
            .context("cannot rebuild the store's index")?;
            if rebuilt.is_some() {
                stop_mount(settings)?;
            }
            rebuilt
        }
        IndexHealth::Sound | IndexHealth::Missing => None,
    };
    let store = open_existing_store(settings)?;
    let lock = if act {
        Some(store.locks().exclusive_or_wait(|| {
            errln!("tstore: waiting for the store lock (another tstore is running)...");
        })?)
    } else {
        None
    };
    // Names first: a dropped name's view is then a leftover the repair removes.
    let names = Names::of(&store, act)?;
    let report = store.verify().context("cannot verify the store")?;
    let plan = match &lock {
        Some(lock) => store
            .repair(lock, &report)
            .context("cannot repair the store")?,
        None => store.repair_plan(&report)?,
    };
    drop(lock);
    let bad = !report.is_clean() || !plan.leftovers.is_empty() || !names.unsupported.is_empty();
    if json {
        let mut value = serde_json::to_value(&report)?;
        value["index"] = serde_json::to_value(&health)?;
        value["index_rebuilt"] = serde_json::to_value(&rebuilt)?;
        value["clean"] = serde_json::Value::Bool(!bad && rebuilt.is_none());
        value["repair"] = serde_json::to_value(&plan)?;
        value["provenance"] = serde_json::to_value(&names.counts)?;
        value["names_unsupported"] = serde_json::to_value(&names.unsupported)?;
        value["repaired"] = serde_json::Value::Bool(act);
        json::print(&value)?;
    } else {
        if let Some(rebuilt) = &rebuilt {
            print_rebuilt(rebuilt);
        }
        print_human(&report, &plan, repair, act);
        names.print(act);
    }
    // After a repair, the store is sound again: succeed.
    Ok(if bad && !act {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What vouches for the module packages' names: how many of each provenance, and the names
/// that claim an origin their provenance does not support (content an older tstore committed
/// under an origin's name from a lock entry's hash or a mirror), dropped when `act`.
struct Names {
    counts: std::collections::BTreeMap<Provenance, usize>,
    unsupported: Vec<UnsupportedName>,
}

impl Names {
    fn of(store: &Store, act: bool) -> Result<Names> {
        let mut counts = std::collections::BTreeMap::new();
        for (_, provenance) in store.provenance().modules()? {
            *counts.entry(provenance).or_default() += 1;
        }
        let unsupported = store
            .provenance()
            .unsupported_names(tstore_installer::module_id_claims_origin)?;
        if act && !unsupported.is_empty() {
            store
                .provenance()
                .drop_unsupported_names(tstore_installer::module_id_claims_origin)
                .context("cannot drop the names their provenance does not support")?;
        }
        Ok(Names {
            counts,
            unsupported,
        })
    }

    fn print(&self, act: bool) {
        let count = |p| self.counts.get(&p).copied().unwrap_or(0);
        outln!(
            "module packages: {} from their origin, {} vouched for by a lock entry's hash, {} by a module mirror",
            count(Provenance::Origin),
            count(Provenance::Lock),
            count(Provenance::Mirror)
        );
        for n in &self.unsupported {
            outln!(
                "unsupported name: module {} claims its origin but is vouched for only by {}{}",
                n.package,
                n.provenance,
                if act {
                    "; its name was dropped with its view (a lock still finds its files by their hash)"
                } else {
                    "; no lookup by its origin uses it (--repair drops the name)"
                }
            );
        }
    }
}

/// A damaged index without `--repair` (or with `--dry-run`): say so, change nothing.
fn damaged_index(settings: &Settings, reason: &str, repair: bool, json: bool) -> Result<ExitCode> {
    let index = settings.store.join("index.sqlite");
    if json {
        json::print(&serde_json::json!({
            "index": {"state": "damaged", "reason": reason},
            "clean": false,
            "repaired": false,
        }))?;
    } else {
        outln!("damaged: the index {} ({reason})", index.display());
        if repair {
            outln!(
                "dry run: --repair would move the damaged index aside (kept, named with the time) \
                 and rebuild it from the store's blobs and views; nothing was changed"
            );
        } else {
            diagnostics::print_human(&ErrorReport {
                summary: "the store's index is damaged; nothing was changed".into(),
                detail: None,
                causes: Vec::new(),
                hint: Some(
                    "run `tstore store verify --repair`: it moves the damaged index aside (kept, \
                     named with the time) and rebuilds it from the blobs and views the store \
                     holds, so the next `tstore init` downloads nothing they still hold"
                        .into(),
                ),
            });
        }
    }
    Ok(ExitCode::from(1))
}

/// A mount of this store serves the index file that was just moved aside: unmount it (the
/// next `tstore init` mounts the store again, on the rebuilt index).
fn stop_mount(settings: &Settings) -> Result<()> {
    let unmounted = crate::mount::unmount_if_live(settings).with_context(|| {
        format!(
            "the index was rebuilt, but the mount at {} still serves the old one and cannot be \
             unmounted; run `tstore umount --lazy`",
            settings.mount.display()
        )
    })?;
    if unmounted {
        outln!(
            "unmounted the store from {}: it served the damaged index (the next `tstore init` mounts it again)",
            settings.mount.display()
        );
    }
    Ok(())
}

fn print_rebuilt(rebuilt: &RebuiltIndex) {
    for path in &rebuilt.damaged {
        outln!("moved the damaged index to {} (kept)", path.display());
    }
    outln!(
        "rebuilt the index from the store's files: {} intact blobs ({} bytes read), {} packages from their views",
        rebuilt.blobs,
        rebuilt.bytes_checked,
        rebuilt.packages.len()
    );
    for package in &rebuilt.packages {
        outln!("rebuilt: {package}");
    }
    for skipped in &rebuilt.skipped {
        outln!(
            "not rebuilt: {} ({}); the next `tstore init` fetches it again",
            skipped.path.display(),
            skipped.reason
        );
    }
    outln!(
        "the working directories recorded as roots were lost with the old index: run `tstore init` \
         in each, so that gc keeps what they link"
    );
}

fn print_human(report: &VerifyReport, plan: &RepairReport, repair: bool, act: bool) {
    outln!(
        "checked {} ({})",
        crate::units::count(report.blobs_checked, "blob"),
        crate::units::count(report.bytes_checked, "byte")
    );
    for c in &report.corrupt {
        outln!(
            "corrupt: blob {} ({}): its content does not match its hash",
            c.blob,
            c.path.display()
        );
    }
    for m in &report.missing {
        outln!(
            "missing: blob {} (referenced by tree {})",
            m.blob,
            m.referenced_by
        );
    }
    for v in &report.views_bad {
        for problem in &v.problems {
            outln!("bad view: {} ({}): {problem}", v.package, v.path.display());
        }
    }
    for c in &report.claims_bad {
        outln!("false record: {}", c.describe());
    }
    if !report.trusted {
        outln!(
            "not vouched for: this index was not written on this machine (a restored cache, a \
             copy, or a store of an older tstore); {}",
            if act {
                "it is adopted: what only its writer could vouch for was dropped"
            } else {
                "the next `tstore init` (or `--repair`) re-hashes it before using any package"
            }
        );
    }
    let (pkg_verb, blob_verb, left_verb) = if act {
        ("quarantined", "moved", "removed")
    } else if repair {
        ("would quarantine", "would move", "would remove")
    } else {
        ("damaged", "bad file", "leftover")
    };
    for p in &plan.packages {
        outln!("{pkg_verb}: {}: {}", p.package, p.reasons.join("; "));
    }
    let forget_verb = if act {
        "forgotten"
    } else if repair {
        "would forget"
    } else {
        "unconfirmed"
    };
    for p in &plan.forgotten {
        outln!("{forget_verb}: {p}: its files cannot confirm its name; it is fetched again");
    }
    for b in &plan.blobs {
        match &b.to {
            Some(to) => outln!("{blob_verb}: {} -> {}", b.from.display(), to.display()),
            None => outln!("{blob_verb}: {}", b.from.display()),
        }
    }
    let left = &plan.leftovers;
    for path in left.tmp.iter().chain(&left.views).chain(&left.blobs) {
        outln!("{left_verb}: {}", path.display());
    }
    let leftovers = left.tmp.len() + left.views.len() + left.blobs.len();
    let clean = report.is_clean() && left.is_empty();
    if act {
        outln!(
            "repaired: {} quarantined, {} moved to quarantine, {} removed",
            crate::units::count(plan.packages.len() as u64, "package"),
            crate::units::count(plan.blobs.len() as u64, "blob file"),
            crate::units::count(leftovers as u64, "leftover")
        );
        if !plan.packages.is_empty() {
            outln!(
                "run `tstore init` again in the working directories that used them: they are fetched again"
            );
        }
    } else if repair {
        outln!(
            "dry run: --repair would quarantine {}, move {}, remove {}; nothing was changed",
            crate::units::count(plan.packages.len() as u64, "package"),
            crate::units::count(plan.blobs.len() as u64, "blob file"),
            crate::units::count(leftovers as u64, "leftover")
        );
    } else if clean {
        outln!("the store is sound");
    } else {
        diagnostics::print_human(&ErrorReport {
            summary: format!(
                "the store is damaged: {} packages damaged, {leftovers} leftovers; nothing was \
                 changed",
                plan.packages.len()
            ),
            detail: None,
            causes: Vec::new(),
            hint: Some(
                "run `tstore store verify --repair`: damaged packages are quarantined (the next \
                 `tstore init` fetches them again) and leftovers removed"
                    .into(),
            ),
        });
    }
}
