//! What `tstore init` prints, in tofu's words: the empty directory, `Initializing
//! modules...` with a line per call (and with `--explain` the link/copy decision and its
//! reason), `Initializing provider plugins...`, the lock file's change, the lock entries
//! moved to OpenTofu's registry; or with `--json` one document.

use std::io::Write;

use anyhow::Result;
use tstore_installer::{
    Action, InitOutcome, LockFileChange, ModulesReport, ObtainedFrom, StateReport, StateSeen,
};
use tstore_store::Provenance;
use tstore_tofu::flavor::{Flavor, FlavorChoice};

use crate::commands::place::Configured;
use crate::json;

/// A directory without configuration files: nothing installed, nothing written.
pub(super) fn empty_directory(
    flavor: &FlavorChoice,
    as_json: bool,
    roots_below: usize,
) -> Result<()> {
    if as_json {
        return json::print(&serde_json::json!({
            "empty_directory": true,
            "roots_below": roots_below,
            "flavor": crate::flavor::to_json(flavor),
            "providers": [],
            "modules": [],
            "module_packages": { "fetched": [], "reused": [], "mirrored": [] },
        }));
    }
    let tool = flavor.flavor.product_name();
    let files = format!("{tool} configuration files");
    outln!(
        "{tool} initialized in an empty directory!\n\nThe directory has no {files}. \
         You may begin working with {tool} immediately by creating {files}."
    );
    if roots_below > 0 {
        let (n, lie) = if roots_below == 1 {
            ("1 working directory".to_owned(), "lies")
        } else {
            (format!("{roots_below} working directories"), "lie")
        };
        outln!(
            "\n{n} with {files} {lie} below it: \"tstore init --recursive\" initializes \
             every one."
        );
    }
    Ok(())
}

/// Between the phases: the flavor (`explain`), the modules part (when there was a module
/// phase), the providers' heading.
pub(super) fn modules_installed(
    out: &mut impl Write,
    flavor: &FlavorChoice,
    modules: Option<&ModulesReport>,
    explain: bool,
) -> std::io::Result<()> {
    if explain {
        writeln!(
            out,
            "Flavor: {}, decided by {}",
            flavor.flavor, flavor.decided_by
        )?;
    }
    if let Some(modules) = modules {
        write_modules(out, modules, explain)?;
    }
    writeln!(
        out,
        "\n{}",
        crate::style::heading("Initializing provider plugins...")
    )
}

/// The modules part of init's output, in tofu's words (`Initializing modules...`,
/// `- KEY in DIR`), with the link/copy decision and its reason per call when `explain`.
fn write_modules(
    out: &mut impl Write,
    modules: &ModulesReport,
    explain: bool,
) -> std::io::Result<()> {
    // "Initializing modules..." was said when the phase began (the reporter), before any
    // download.
    if modules.calls.is_empty() {
        return Ok(());
    }
    for c in &modules.calls {
        write!(
            out,
            "- {} in {}",
            crate::escape::line(&c.key),
            crate::escape::line(&c.dir)
        )?;
        if let Some(v) = &c.version {
            write!(out, " ({v})")?;
        }
        writeln!(out)?;
        if explain {
            let action = match (c.action, c.copy_bytes) {
                (Action::Link, _) => "linked read-only to the store".to_owned(),
                (Action::Copy, Some(b)) => format!(
                    "private copy ({:.1} MiB; less where the filesystem shares extents)",
                    b as f64 / (1024.0 * 1024.0)
                ),
                (Action::Copy, None) => "private copy".to_owned(),
                (Action::InPlace, _) => "read in place".to_owned(),
            };
            writeln!(out, "    {action}: {}", crate::escape::line(&c.reason))?;
            if let Some(by) = c.selected_by {
                let from = match by {
                    "lock" => "the module lock file",
                    "upgrade" => "-upgrade (the newest the call allows; the lock entry replaced)",
                    _ if c.version.is_some() => "the call's version constraint",
                    _ => "the call's source",
                };
                writeln!(out, "    version/commit from {from}")?;
            }
            match c.published {
                Some(p) if c.kind == "git" => writeln!(
                    out,
                    "    old enough under min_release_age: the tag has named this commit since \
                     {} ({}'s first sighting)",
                    tstore_installer::published_day(p.at),
                    p.source.who()
                )?,
                Some(p) => writeln!(
                    out,
                    "    the newest version old enough under min_release_age: published {} \
                     (date from {})",
                    tstore_installer::published_day(p.at),
                    p.source
                )?,
                None => {}
            }
            match c.vouched_by {
                Some(p @ (Provenance::Lock | Provenance::Mirror)) => {
                    writeln!(out, "    package vouched for by {p}, not by its source")?
                }
                Some(Provenance::Origin) | None => {}
            }
            match (c.obtained, &c.origin_why) {
                (Some(ObtainedFrom::Mirror), _) => {
                    writeln!(out, "    package from the module mirror")?
                }
                (Some(ObtainedFrom::Store), _) => writeln!(out, "    package from the store")?,
                (Some(ObtainedFrom::Origin), Some(why)) => writeln!(
                    out,
                    "    package from its origin: {}",
                    crate::escape::line(why)
                )?,
                (Some(ObtainedFrom::Origin), None) => writeln!(out, "    package from its origin")?,
                (None, _) => {}
            }
        }
    }
    write_mirror_summary(out, modules)?;
    match modules.lock_file {
        LockFileChange::Created => writeln!(
            out,
            "\ntstore has created a module lock file {} to record the module versions,\n\
             commits and checksums it installed above. Include this file in your version\n\
             control repository so that every checkout installs exactly these packages.",
            tstore_tofu::module_lock::FILE_NAME
        )?,
        LockFileChange::Updated => writeln!(
            out,
            "\ntstore has changed the module selections recorded in {}. Review those\n\
             changes and commit them if they represent changes you intended to make.",
            tstore_tofu::module_lock::FILE_NAME
        )?,
        LockFileChange::Unchanged | LockFileChange::NotUpdated => {}
    }
    Ok(())
}

/// With a module mirror, once: how many remote calls' packages came from it, from their
/// origins and from the store (`--explain` says why per call).
fn write_mirror_summary(out: &mut impl Write, modules: &ModulesReport) -> std::io::Result<()> {
    let Some(mirror) = &modules.mirror else {
        return Ok(());
    };
    let count = |from: ObtainedFrom| {
        modules
            .calls
            .iter()
            .filter(|c| c.obtained == Some(from))
            .count() as u64
    };
    let (mirrored, origin) = (count(ObtainedFrom::Mirror), count(ObtainedFrom::Origin));
    if mirrored + origin == 0 {
        return Ok(());
    }
    write!(
        out,
        "Module mirror {}: {} from it",
        crate::escape::line(mirror),
        crate::units::count(mirrored, "package")
    )?;
    if origin > 0 {
        write!(
            out,
            ", {} from {} origin{} (--explain says why)",
            crate::units::count(origin, "package"),
            if origin == 1 { "its" } else { "their" },
            if origin == 1 { "" } else { "s" }
        )?;
    }
    writeln!(out)
}

/// After the providers: the rewritten lock entries, then the JSON document or the lock
/// file's change in tofu's words.
pub(super) fn finished(
    root: &Configured,
    outcome: InitOutcome,
    as_json: bool,
    explain: bool,
) -> Result<()> {
    let report = outcome.providers;
    let modules = outcome.modules.map(|m| m.report).unwrap_or_default();
    warn_rewritten(&report.lock_entries_rewritten);
    let flavor = root.flavor();
    warn_state_unseen(&report.state, &report.lock_entries_dropped, flavor);
    if as_json {
        let mut document = serde_json::to_value(&report)?;
        document["flavor"] = crate::flavor::to_json(&root.place.flavor);
        document["tool_version"] = serde_json::to_value(&root.tool)?;
        document["modules"] = serde_json::to_value(&modules.calls)?;
        document["module_packages"] = serde_json::json!({
            "fetched": modules.fetched,
            "reused": modules.reused,
            "mirrored": modules.mirrored,
        });
        document["module_mirror"] = serde_json::to_value(&modules.mirror)?;
        document["module_lock_file"] = serde_json::to_value(modules.lock_file)?;
        return json::print(&document);
    }
    let mut out = crate::say::stdout();
    // terraform from 1.9 trims its messages: no blank line before them.
    let gap = if root
        .tool
        .tool
        .follows(&tstore_tofu::tool_version::INIT_MESSAGES_TRIMMED)
    {
        ""
    } else {
        "\n"
    };
    if signed_by_developers(&report, flavor) {
        writeln!(
            out,
            "{gap}{}",
            tstore_tofu::tool_version::signing_footer(flavor, &root.tool.tool)
        )?;
    }
    if explain {
        explain_hashes(&mut out, &report.providers)?;
        explain_state(&mut out, &report.state)?;
    }
    let tool = flavor.product_name();
    match report.lock_file {
        LockFileChange::Created => writeln!(
            out,
            "{gap}{tool} has created a lock file .terraform.lock.hcl to record the provider\n\
             selections it made above. Include this file in your version control repository\n\
             so that {tool} can guarantee to make the same selections by default when\n\
             you run \"{}\" in the future.",
            flavor.init_command()
        )?,
        LockFileChange::Updated => writeln!(
            out,
            "{gap}{tool} has made some changes to the provider dependency selections recorded\n\
             in the .terraform.lock.hcl file. Review those changes and commit them to your\n\
             version control system if they represent changes you intended to make."
        )?,
        LockFileChange::Unchanged => {}
        LockFileChange::NotUpdated => errln!(
            "\n{}\n\n\
             Changes to the provider selections were detected, but not saved in the\n\
             .terraform.lock.hcl file. To record these selections, run \"{}\" without\n\
             the \"-lockfile=readonly\" flag.",
            crate::style::warning("Provider lock file not updated"),
            flavor.init_command()
        ),
    }
    warn_dev_overrides(&report.dev_overrides, flavor);
    warn_incomplete_lock(&report, flavor);
    writeln!(
        out,
        "\ntstore has installed the providers of this working directory."
    )?;
    Ok(())
}

/// The lock entries the tofu flavor moved to OpenTofu's registry, said as OpenTofu says
/// them (upstream: internal/command/meta_dependencies.go@v1.10.0), with the way to keep
/// terraform's entries.
fn warn_rewritten(rewritten: &[tstore_installer::RewrittenLockEntry]) {
    if rewritten.is_empty() {
        return;
    }
    let mut text = String::from(
        "Under the tofu flavor, tstore rewrote some entries in your dependency lock file, as \
         OpenTofu does:\n",
    );
    for r in rewritten {
        text.push_str(&format!("  - {} => {}\n", r.from, r.to));
    }
    text.push_str(
        "\nThe version selections were preserved, but the hashes were not because the \
         OpenTofu project's provider releases are not byte-for-byte identical. To keep the \
         lock file as terraform wrote it, use --flavor terraform (or flavor = \"terraform\" \
         in .tstore.hcl).",
    );
    errln!(
        "\n{}\n\n{text}\n",
        crate::style::warning("Dependency lock file entries automatically updated")
    );
}

/// `--explain`: which state was read for the providers it needs, and which it added.
fn explain_state(out: &mut impl Write, state: &StateReport) -> std::io::Result<()> {
    let workspace = crate::escape::line(&state.workspace);
    match &state.seen {
        StateSeen::Read { file } => writeln!(
            out,
            "State: read {} (workspace {workspace}) for the providers its resources use",
            crate::escape::line(file)
        )?,
        StateSeen::Absent => writeln!(out, "State: none yet (workspace {workspace})")?,
        StateSeen::NotLookedFor { reason } => writeln!(
            out,
            "State: not read ({}): a provider that only resources in it use is not installed",
            crate::escape::line(reason)
        )?,
        StateSeen::Remote { backend } => writeln!(
            out,
            "State: kept by the \"{}\" backend, which tstore does not read: a provider that \
             only resources in that state use is not installed",
            crate::escape::line(backend)
        )?,
        StateSeen::Unread { file, reason } => writeln!(
            out,
            "State: {} not read ({}): a provider that only resources in it use is not \
             installed",
            crate::escape::line(file.as_deref().unwrap_or("the local state")),
            crate::escape::line(reason)
        )?,
    }
    for addr in &state.only_in_state {
        writeln!(out, "  {addr}: needed by the state only")?;
    }
    Ok(())
}

/// Said once, when the lock file loses a provider and the state was not seen: that provider
/// may still be needed by resources in the state, and the tool's own init keeps it.
fn warn_state_unseen(state: &StateReport, dropped: &[String], flavor: Flavor) {
    if dropped.is_empty() || !state.seen.is_blind() {
        return;
    }
    let unseen = match &state.seen {
        StateSeen::Remote { backend } => {
            format!(
                "the state of the \"{}\" backend",
                crate::escape::line(backend)
            )
        }
        StateSeen::Unread { reason, .. } => {
            format!("the local state ({})", crate::escape::line(reason))
        }
        StateSeen::Read { .. } | StateSeen::Absent | StateSeen::NotLookedFor { .. } => return,
    };
    errln!(
        "\n{}\n\nThe lock file no longer records {}. tstore cannot read {unseen}, so it \
         cannot tell whether resources there still use them. If they do, run \"{}\" in \
         this directory: it reads the state and keeps their providers.\n",
        crate::style::warning("Providers of the state not checked"),
        dropped.join(", "),
        flavor.init_command()
    );
}

/// The lock entries that hold only this platform's locally computed checksum, in the tool's
/// words (terraform's `incompleteLockFileInformationBody`, from 1.2.6; OpenTofu's), after
/// the lock file's message as the tools print it.
fn warn_incomplete_lock(report: &tstore_installer::InitReport, flavor: Flavor) {
    let Some(first) = report.providers.first() else {
        return;
    };
    if report.incomplete_lock_entries.is_empty() {
        return;
    }
    let tool = flavor.product_name();
    let platform = &first.platform;
    errln!(
        "\n{}\n\n\
         Due to your customized provider installation methods, {tool} was forced to\n\
         calculate lock file checksums locally for the following providers:\n  - {}\n\n\
         The current .terraform.lock.hcl file only includes checksums for {platform}, so\n\
         {tool} running on another platform will fail to install these providers.\n\n\
         To calculate additional checksums for another platform, run:\n  \
         {} providers lock -platform=linux_amd64\n\
         (where linux_amd64 is the platform to generate)",
        crate::style::warning("Incomplete lock file information for providers"),
        report.incomplete_lock_entries.join("\n  - "),
        flavor.as_str(),
    );
}

/// Whether a provider installed in this run was signed by its developer, which the tools
/// follow with a footer on provider signing: terraform for partner and community providers
/// (not HashiCorp's), OpenTofu for any signed one.
fn signed_by_developers(report: &tstore_installer::InitReport, flavor: Flavor) -> bool {
    report.providers.iter().any(|p| {
        let installed = p.link_outcome != tstore_installer::LinkOutcome::Unchanged;
        let by_developer = match flavor {
            Flavor::Terraform => {
                p.auth.starts_with("self-signed")
                    || p.auth.starts_with("signed by a HashiCorp partner")
            }
            Flavor::Tofu => p.auth.starts_with("signed,") || p.auth == "signed",
        };
        installed && by_developer
    })
}

/// The CLI configuration's `dev_overrides`, in the tool's words (terraform's and OpenTofu's
/// `providerDevOverrideInitWarnings`; the last sentence as each release words it).
fn warn_dev_overrides(overrides: &[tstore_installer::DevOverride], flavor: Flavor) {
    let Some(first) = overrides.first() else {
        return;
    };
    let mut text = String::from(
        "The following provider development overrides are set in the CLI configuration:\n",
    );
    for o in overrides {
        text.push_str(&format!(" - {} in {}\n", o.provider, o.dir.display()));
    }
    if first.installed {
        text.push_str(&format!(
            "\nSkip {} init when using provider development overrides. It is not necessary and \
             may error unexpectedly.",
            flavor.as_str()
        ));
    } else {
        text.push_str(
            "\nThese providers are not installed as part of init since they were overwritten. \
             If this is unintentional please re-run without the development overrides set.",
        );
    }
    errln!(
        "\n{}\n\n{}",
        crate::style::warning("Provider development overrides are in effect"),
        crate::escape::text(&text)
    );
}

/// `--explain`: per provider, where its package came from, and per hash what vouches for it:
/// computed here from the package's own bytes, a signature over the registry's checksums
/// (by key), a registry's or mirror's word alone, or nothing but this first install
/// (trusted on first use).
fn explain_hashes(
    out: &mut impl Write,
    providers: &[tstore_installer::ProviderReport],
) -> std::io::Result<()> {
    for p in providers {
        writeln!(
            out,
            "Provider {} {} ({}): {}; {}",
            p.provider,
            p.version,
            p.platform,
            crate::escape::line(&p.source),
            match p.obtained {
                tstore_installer::Obtained::Ingested => "read from the source and stored",
                tstore_installer::Obtained::Downloaded => "downloaded and stored",
                tstore_installer::Obtained::Memoized =>
                    "from the store (the source unchanged since it was read)",
                tstore_installer::Obtained::InStore =>
                    "from the store (it holds the archive the source vouches for)",
                tstore_installer::Obtained::StoreByLock =>
                    "from the store (it holds a package with one of the lock's hashes; no source asked)",
            }
        )?;
        // The package's archive checksum verified here and covered by a signature.
        let archive_signed = p
            .hashes
            .iter()
            .any(|h| h.disposition.verified_locally && !h.disposition.signed_by_key_ids.is_empty());
        for h in &p.hashes {
            writeln!(
                out,
                "  {}: {}",
                h.hash,
                provenance(&h.disposition, archive_signed)
            )?;
        }
    }
    Ok(())
}

/// What vouches for one hash, in words.
fn provenance(d: &tstore_store::Disposition, archive_signed: bool) -> String {
    let mut said = Vec::new();
    if d.verified_locally {
        said.push("computed here from the installed package".to_owned());
    }
    if !d.signed_by_key_ids.is_empty() {
        said.push(format!(
            "in checksums signed by key ID {}",
            d.signed_by_key_ids.join(", ")
        ));
    } else if d.reported_by_registry {
        said.push("reported by the registry or mirror, unsigned".to_owned());
    }
    if !d.verified_locally && (d.reported_by_registry || !d.signed_by_key_ids.is_empty()) {
        said.push("another platform's package, not checked here".to_owned());
    }
    if d.verified_locally && !d.reported_by_registry && d.signed_by_key_ids.is_empty() {
        said.push(if archive_signed {
            "of the archive whose signed checksum was verified here".to_owned()
        } else {
            "nothing else vouches for it: trusted on first use".to_owned()
        });
    }
    said.join("; ")
}
