//! `tstore init`: modules, then providers, then the root the store keeps alive.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_installer::{LockFileChange, ProviderOptions, Reporter, WorkdirOptions};
use tstore_store::Store;
use tstore_tofu::addr::Platform;
use tstore_tofu::cliconfig::CliConfig;
use tstore_tofu::flavor::{Flavor, FlavorChoice};
use tstore_tofu::static_eval::RootInputs;

use super::{lock_store, open_store};
use crate::cli::{InitArgs, LockfileMode};
use crate::reporter::{HumanReporter, Silent};
use crate::{json, mount, roots, Settings};

pub(crate) fn init(settings: &Settings, args: InitArgs) -> Result<ExitCode> {
    if args.recursive || args.dirs.len() > 1 {
        return super::init_many::init_many(settings, args);
    }
    init_one(settings, args, None)
}

/// `tstore init` of one working directory (`args.dirs`' only one, or the current one),
/// with `store` when the caller has it open already (one store for many roots).
pub(crate) fn init_one(
    settings: &Settings,
    args: InitArgs,
    store: Option<&Store>,
) -> Result<ExitCode> {
    let (cwd, dir) = super::working_directory(settings, args.dirs.first().map(|d| d.as_path()))?;
    let flavor_choice = settings.flavor_for(&dir)?;
    let flavor = flavor_choice.flavor;
    if !tstore_tofu::config::is_config_dir(&dir, flavor) {
        // Nothing to install, nothing written: the tool's own words, exit 0.
        let (tool, files) = match flavor {
            tstore_tofu::flavor::Flavor::Tofu => ("OpenTofu", "OpenTofu configuration files"),
            tstore_tofu::flavor::Flavor::Terraform => {
                ("Terraform", "Terraform configuration files")
            }
        };
        if args.json {
            json::print(&serde_json::json!({
                "empty_directory": true,
                "flavor": crate::flavor::to_json(&flavor_choice),
                "providers": [],
                "modules": [],
                "module_packages": { "fetched": [], "reused": [] },
            }))?;
        } else {
            println!(
                "{tool} initialized in an empty directory!\n\nThe directory has no {files}. \
                 You may begin working with {tool} immediately by creating {files}."
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let env = settings.env.lookup();
    let cli_config = super::load_cli_config(settings, flavor)?;
    // `-plugin-dir` replaces every installation method of the CLI configuration, as in
    // tofu; an empty value only clears `.terraform/plugin_path`.
    let plugin_dirs = tstore_installer::plugin_path::search_dirs(&args.plugin_dir);
    let methods = if plugin_dirs.is_empty() {
        cli_config.effective_methods(flavor, &cwd, &env, &tstore_installer::mirror_providers_in)
    } else {
        CliConfig::plugin_dir_methods(&cwd, &plugin_dirs)
    };
    let opened;
    let store = match store {
        Some(store) => store,
        None => {
            opened = open_store(settings)?;
            &opened
        }
    };
    // One init per working directory at a time, taken before the store lock so that a
    // waiting init holds nothing gc waits for.
    let _root_lock = store
        .lock_root(&dir, || {
            eprintln!(
                "tstore: waiting for another tstore init of {} to finish...",
                dir.display()
            );
        })
        .context("cannot lock the working directory")?;
    // Shared: any number of inits and imports at once; gc takes it exclusive. Held until
    // the root is recorded, so gc never sees a package this init uses without its root
    // (ARCHITECTURE.md, "Concurrency").
    let lock = lock_store(store)?;
    let data_dir = tstore_installer::DataDir::resolve(&dir, settings.tf_data_dir.as_deref());
    let result = init_locked(
        settings,
        args,
        store,
        Place {
            cwd: &cwd,
            dir: &dir,
            data_dir: &data_dir,
            flavor: &flavor_choice,
        },
        &cli_config,
        methods,
    );
    // On failure too: the links the directory has now (kept or made) stay pinned.
    let recorded = roots::record_root(settings, store, &lock, &dir, &data_dir);
    let code = result?;
    recorded?;
    Ok(code)
}

/// Where an init runs, resolved once: the current directory (relative `-var-file` and
/// mirror paths), the working directory (canonical), its data directory, its flavor.
struct Place<'a> {
    cwd: &'a std::path::Path,
    dir: &'a std::path::Path,
    data_dir: &'a tstore_installer::DataDir,
    flavor: &'a FlavorChoice,
}

fn init_locked(
    settings: &Settings,
    args: InitArgs,
    store: &Store,
    place: Place<'_>,
    cli_config: &CliConfig,
    methods: Vec<tstore_tofu::cliconfig::InstallMethod>,
) -> Result<ExitCode> {
    let flavor_choice = place.flavor;
    let flavor = flavor_choice.flavor;
    // The mount path must resolve before any link into it is made.
    match mount::ensure(settings, store)? {
        mount::Ensured::Mounted { pid, repaired } => eprintln!(
            "tstore: {} the store at {} (FUSE, read-only; daemon pid {pid})",
            if repaired {
                "the mount was stale; remounted"
            } else {
                "mounted"
            },
            settings.mount.display()
        ),
        mount::Ensured::AlreadyMounted | mount::Ensured::ViewsLink(_) => {}
    }
    let variables = RootInputs::gather(
        place.dir,
        settings.env.unicode_vars(),
        &args.var_options(place.cwd),
    )
    .context("cannot read the root module's variable values")?;
    let tool = crate::tool_version::resolve(settings, flavor_choice)?;
    tracing::debug!("tool version {}: decided by {}", tool.tool, tool.decided_by);
    let workdir = WorkdirOptions {
        upgrade: args.upgrade,
        lockfile_readonly: args.lockfile == Some(LockfileMode::Readonly),
        variables: std::sync::Arc::new(variables),
        test_directory: args.test_directory.clone(),
        tool: tool.tool.clone(),
        ..WorkdirOptions::new(
            place.dir.to_path_buf(),
            place.data_dir.clone(),
            flavor,
            settings.mount.clone(),
            crate::commands::network_settings(settings, cli_config),
        )
    };
    let opts = ProviderOptions {
        workdir: workdir.clone(),
        platform: Platform::current(),
        methods,
        cli_config: cli_config.describe_files(),
    };
    if flavor == Flavor::Tofu
        && args.test_directory != tstore_tofu::config::test_files::DEFAULT_TEST_DIRECTORY
        && !place.dir.join(&args.test_directory).is_dir()
    {
        eprintln!(
            "\n{}\n\nRequested test directory {} does not exist.\n",
            crate::style::warning("Test directory does not exist"),
            place.dir.join(&args.test_directory).display()
        );
    }
    let mut out = std::io::stdout();
    let human = HumanReporter::new();
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    // Modules first: provider requirements are read through the installed modules.
    // `-get=false` keeps `.terraform/modules` as it is, as tofu does.
    let modules = if args.get {
        let (modules, warnings) = tstore_installer::install_modules(
            store,
            &tstore_installer::ModuleOptions {
                policy: module_policy(place.dir, cli_config, args.assume_read_only)?,
                upgrade_only: Vec::new(),
                reach_records: settings.reach_records(),
                trust_lock: settings.trust_lock,
                workdir,
            },
            reporter,
        )?;
        for w in &warnings {
            eprintln!("{}", crate::style::warning(&module_warning(w)));
        }
        modules
    } else {
        tstore_installer::ModulesReport::default()
    };
    if !args.json {
        if args.explain {
            writeln!(
                out,
                "Flavor: {flavor}, decided by {}",
                flavor_choice.decided_by
            )?;
        }
        if args.get {
            write_modules(&mut out, &modules, args.explain)?;
        }
        writeln!(
            out,
            "\n{}",
            crate::style::heading("Initializing provider plugins...")
        )?;
    }
    let report = tstore_installer::install_providers(store, &opts, reporter)?;
    // Written once the providers are in place, so a failed init leaves it as it was.
    tstore_installer::plugin_path::record(place.data_dir, &args.plugin_dir).with_context(|| {
        format!(
            "cannot record the -plugin-dir directories in {}",
            place
                .data_dir
                .path
                .join(tstore_installer::plugin_path::FILE_NAME)
                .display()
        )
    })?;
    // A provider that entered the store is excluded from the network methods of the files
    // `tstore cli-config --out` keeps.
    crate::commands::refresh_cli_configs(settings, store);
    warn_rewritten(&report.lock_entries_rewritten);
    if args.json {
        let mut report = serde_json::to_value(&report)?;
        report["flavor"] = crate::flavor::to_json(flavor_choice);
        report["tool_version"] = serde_json::to_value(&tool)?;
        report["modules"] = serde_json::to_value(&modules.calls)?;
        report["module_packages"] = serde_json::json!({
            "fetched": modules.fetched,
            "reused": modules.reused,
        });
        report["module_lock_file"] = serde_json::to_value(modules.lock_file)?;
        json::print(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let tool = match flavor {
        Flavor::Tofu => "OpenTofu",
        Flavor::Terraform => "Terraform",
    };
    match report.lock_file {
        LockFileChange::Created => writeln!(
            out,
            "\n{tool} has created a lock file .terraform.lock.hcl to record the provider\n\
             selections it made above. Include this file in your version control repository\n\
             so that {tool} can guarantee to make the same selections by default when\n\
             you run \"{}\" in the future.",
            flavor.init_command()
        )?,
        LockFileChange::Updated => writeln!(
            out,
            "\n{tool} has made some changes to the provider dependency selections recorded\n\
             in the .terraform.lock.hcl file. Review those changes and commit them to your\n\
             version control system if they represent changes you intended to make."
        )?,
        LockFileChange::Unchanged => {}
        LockFileChange::NotUpdated => eprintln!(
            "\n{}\n\n\
             Changes to the provider selections were detected, but not saved in the\n\
             .terraform.lock.hcl file. To record these selections, run \"{}\" without\n\
             the \"-lockfile=readonly\" flag.",
            crate::style::warning("Provider lock file not updated"),
            flavor.init_command()
        ),
    }
    writeln!(
        out,
        "\ntstore has installed the providers of this working directory."
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A module warning in words.
fn module_warning(w: &tstore_installer::ModuleWarning) -> String {
    use tstore_installer::ModuleWarning;
    match w {
        ModuleWarning::InvalidMeta {
            at,
            key,
            package,
            error,
        } => format!(
            "{at}: module \"{key}\": ignoring invalid {} of package {package}: {error}",
            tstore_installer::META_FILE
        ),
        ModuleWarning::UnreadableInstallState { error } => {
            format!("{error}; ignoring tstore's install state")
        }
        ModuleWarning::ForeignStateEntry { state_file, key } => format!(
            "{}: ignoring the entry {key:?}, which is not a module key tstore writes",
            state_file.display()
        ),
        ModuleWarning::RefMovedOn {
            key,
            repo,
            reference,
            locked,
            tip,
            tag,
        } => {
            let repo = tstore_installer::redacted_url(repo);
            if *tag {
                format!(
                    "module \"{key}\": the tag {reference:?} of {repo} MOVED since the lock was \
                     written: it named {locked}, it names {tip} now. Tags should never move: \
                     the locked commit {locked}, which the tag's new commit descends from, was \
                     installed. Find out who moved the tag; run `tstore init -upgrade` only to \
                     take its new commit."
                )
            } else {
                format!(
                    "module \"{key}\": {reference:?} of {repo} moved on since the lock was \
                     written (to {tip}); the locked commit {locked}, which it still reaches, \
                     was installed. Run `tstore init -upgrade` to take the new commit."
                )
            }
        }
        ModuleWarning::RefUnchecked {
            key,
            repo,
            reference,
            why,
        } => format!(
            "module \"{key}\": not checked that {reference:?} of {} still reaches the locked \
             commit ({why}); installed on the lock's checksums alone (TSTORE_TRUST_LOCK)",
            tstore_installer::redacted_url(repo)
        ),
        ModuleWarning::KeptForeignCopy { slot, kept_as } => format!(
            "{} was not made by tstore and held files its package does not (written there by \
             the module, or edited): it was moved to {} instead of being replaced. Take what \
             you need from it, then delete it.",
            slot.display(),
            kept_as.display()
        ),
    }
}

/// The modules part of init's output, in tofu's words (`Initializing modules...`,
/// `- KEY in DIR`), with the link/copy decision and its reason per call when `explain`.
fn write_modules(
    out: &mut impl Write,
    modules: &tstore_installer::ModulesReport,
    explain: bool,
) -> std::io::Result<()> {
    use tstore_installer::Action;
    if modules.calls.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\n{}",
        crate::style::heading("Initializing modules...")
    )?;
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
        }
    }
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
    eprintln!(
        "\n{}\n\n{text}\n",
        crate::style::warning("Dependency lock file entries automatically updated")
    );
}

/// The module policy: the repository's `.tstore.hcl` (nearest above the working
/// directory), then the CLI configuration's `tstore_modules` block.
fn module_policy(
    dir: &std::path::Path,
    cli_config: &CliConfig,
    assume_read_only: bool,
) -> Result<tstore_installer::ModulePolicy> {
    let mut levels = Vec::new();
    levels.extend(tstore_installer::find_repository_rules(dir)?);
    if let Some((file, body)) = &cli_config.tstore_modules {
        let origin = format!("the tstore_modules block of {file}");
        levels.push(tstore_installer::parse_machine_rules(body, &origin)?);
    }
    Ok(tstore_installer::ModulePolicy {
        levels,
        assume_read_only,
    })
}
