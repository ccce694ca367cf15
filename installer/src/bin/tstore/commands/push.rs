//! `tstore push oci://REGISTRY/PATH/${hostname}/${namespace}/${type}`: the store's provider
//! packages into an OCI registry, one tag per version, in the layout an `oci_mirror` reads;
//! with `--module ID`, one module package to `oci://REGISTRY/REPOSITORY?tag=TAG`. The target
//! is checked as an `oci_mirror`'s template is (the `--provider` selections as its
//! `include` patterns), and a tag naming another package is replaced only with `--force`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use tstore_installer::{
    check_push_target, keep_source_archive, oci_client, packages_without_source_zip, push_module,
    push_providers, DataDir, ExistingTag, ModuleMirror, ModulePush, ModuleSelection, OciClient,
    OciRepository, ProviderOptions, ProviderSelection, PushedModule, Reporter, WorkdirOptions,
};
use tstore_tofu::addr::Platform;
use tstore_tofu::cliconfig::CliConfig;

use super::{lock_store, open_existing_store};
use crate::json;
use crate::reporter::{DownloadsOnly, HumanReporter, Silent};
use crate::units;
use crate::Settings;

// Arguments of `tstore push`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tstore push 'oci://registry.example.com/mirror/${hostname}/${namespace}/${type}'\n  tstore push 'oci://registry.example.com/mirror/${namespace}/${type}' --provider hashicorp/null@2.1.2\n  tstore push --modules oci://registry.example.com/modules\n  tstore push --modules oci://registry.example.com/modules --recursive stacks"
)]
pub(crate) struct PushArgs {
    /// `oci://REGISTRY/PATH` with `${hostname}`, `${namespace}` and `${type}`, as an
    /// `oci_mirror`'s `repository_template` (quote it for the shell). A part may be left out
    /// when every `--provider` names the same value for it, as when each `include` pattern
    /// of an `oci_mirror` does. With --modules: `oci://REGISTRY/REPOSITORY`.
    pub target: String,
    /// Only this provider (`[HOST/]NAMESPACE/TYPE`, optionally `@VERSION`); repeatable.
    /// Default: every provider package in the store.
    #[arg(long = "provider", value_name = "ADDR[@VERSION]")]
    pub providers: Vec<String>,
    /// Push this module package (its id as `tstore store ls` shows it) instead of providers;
    /// the target is then `oci://REGISTRY/REPOSITORY?tag=TAG`, as `oci://` sources name it.
    #[arg(long, value_name = "PACKAGE_ID", conflicts_with_all = ["providers", "modules"])]
    pub module: Option<String>,
    /// Push module packages to a module mirror instead of providers: the target is
    /// `oci://REGISTRY/REPOSITORY`, each package tagged by its h1: hash, so that runners with
    /// `module_mirror` set install locked calls from it. Default: every module package in the
    /// store.
    #[arg(long, conflicts_with = "providers")]
    pub modules: bool,
    /// With --modules: only what the module lock files (.tstore.lock.hcl) of the roots under
    /// each DIR pin, as `init --recursive` finds the roots; fails, pushing nothing, when the
    /// store lacks one of them.
    #[arg(long, requires = "modules")]
    pub recursive: bool,
    /// With --modules --recursive: the directories to search (default: the current one).
    #[arg(value_name = "DIR", requires = "recursive")]
    pub dirs: Vec<PathBuf>,
    /// With --recursive: leave out the roots whose path relative to DIR matches this glob.
    #[arg(long, value_name = "GLOB", requires = "recursive")]
    pub exclude: Vec<String>,
    /// Build provider layers from the stored files instead of first fetching, from the
    /// installation sources, the zips the store did not keep. No source is asked, but plain
    /// tofu refuses such a layer where a lock file's hashes came from the source's zip.
    #[arg(long)]
    pub rebuild_layers: bool,
    /// Replace what a tag already names when it is another package (another zip for a
    /// platform of that provider version, or another module manifest). Without it such a
    /// push fails and leaves the tag as it is.
    #[arg(long)]
    pub force: bool,
    /// Print a JSON report on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Run `tstore push`.
pub(super) fn push(settings: &Settings, args: &PushArgs) -> Result<ExitCode> {
    let Some(template) = args.target.strip_prefix("oci://") else {
        bail!(
            "the target {:?} is not an OCI address: write oci://REGISTRY/PATH/${{hostname}}/${{namespace}}/${{type}}",
            args.target
        );
    };
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let flavor = settings.flavor_for(&cwd)?.flavor;
    let selections = args
        .providers
        .iter()
        .map(|p| {
            ProviderSelection::parse(p, flavor.default_registry_host()).map_err(anyhow::Error::from)
        })
        .collect::<Result<Vec<_>>>()?;
    // Checked before anything is fetched or uploaded.
    if args.module.is_none() && !args.modules {
        check_push_target(template, &selections)?;
    }
    let existing = if args.force {
        ExistingTag::Replace
    } else {
        ExistingTag::Refuse
    };
    let cli_config = super::place::load_cli_config(settings, flavor)?;
    let network = super::place::network_settings(settings, &cli_config);
    let client = oci_client(&network)?;
    let store = open_existing_store(settings)?;
    let _lock = lock_store(&store)?;
    let json = args.json;
    let rebuild_layers = args.rebuild_layers;
    if args.modules {
        return push_modules(settings, args, template, flavor, &store, &client, existing);
    }
    if let Some(id) = &args.module {
        let (repo, tag) = module_target(template)?;
        let pushed = push_module(&store, &client, &repo, &tag, id, existing)
            .with_context(|| format!("cannot push the module package {id} to {}", args.target))?;
        if json {
            json::print(&serde_json::json!({ "pushed_module": pushed }))?;
        } else {
            say_pushed_module(&pushed);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Layers are the sources' own zips: those the store did not keep are fetched first.
    let store = store.with_kept_archives(true);
    if !args.rebuild_layers {
        fetch_source_zips(settings, flavor, &store, &cli_config, &selections, json)?;
    }
    let pushed = push_providers(&store, &client, template, &selections, existing, &|v| {
        if !json {
            outln!(
                "Pushed {} {} ({}) to {}: {} uploaded, {} already there",
                v.provider,
                v.version,
                v.platforms.join(", "),
                v.reference,
                units::count(v.blobs_uploaded as u64, "blob"),
                units::count(v.blobs_present as u64, "blob"),
            );
        }
        // On stderr even with --json: a script still wants to know.
        if !v.rebuilt.is_empty() {
            errln!(
                "{}\n\nThe layer of {} {} for {} was built from the stored files (the source's \
                 zip was not kept, and {}), so it has a new zh: hash. tstore installs it \
                 (through h1:), but plain tofu init refuses it where the lock file's zh: \
                 hashes came from the source.\n",
                crate::style::warning("Layer rebuilt from stored files"),
                v.provider,
                v.version,
                v.rebuilt.join(", "),
                if rebuild_layers {
                    "--rebuild-layers was given"
                } else {
                    "it could not be fetched"
                },
            );
        }
    })
    .with_context(|| format!("cannot push to {}", args.target))?;
    if json {
        json::print(&serde_json::json!({ "pushed": pushed }))?;
    } else if pushed.is_empty() {
        outln!("The store holds no provider packages; nothing was pushed.");
    }
    Ok(ExitCode::SUCCESS)
}

/// Fetch from the installation sources (the CLI configuration's, as `init` uses them) the
/// zips of the selected provider packages that the store did not keep, and keep them. A zip
/// that cannot be had leaves that layer to be built from the stored files, with a warning.
fn fetch_source_zips(
    settings: &Settings,
    flavor: tstore_tofu::flavor::Flavor,
    store: &tstore_store::Store,
    cli_config: &CliConfig,
    selections: &[ProviderSelection],
    json: bool,
) -> Result<()> {
    let missing = packages_without_source_zip(store, selections)?;
    if missing.is_empty() {
        return Ok(());
    }
    let env = settings.env.lookup();
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let opts = ProviderOptions {
        workdir: WorkdirOptions::new(
            cwd.clone(),
            DataDir::resolve(&cwd, None),
            flavor,
            settings.mount.clone(),
            super::place::network_settings(settings, cli_config),
        ),
        platform: Platform::current(),
        methods: cli_config.effective_methods(
            flavor,
            &cwd,
            &env,
            &tstore_installer::mirror_providers_in,
        ),
        cli_config: cli_config.describe_files(),
    };
    let human = DownloadsOnly(HumanReporter::new());
    let reporter: &dyn Reporter = if json { &Silent } else { &human };
    for m in missing {
        let what = format!("{} {} ({})", m.addr, m.version, m.platform);
        if !json {
            outln!("Fetching the source's zip of {what}, which the store did not keep...");
        }
        match keep_source_archive(store, &opts, &m.addr, &m.version, &m.platform, reporter) {
            Ok(Some(_)) => {}
            Ok(None) => errln!(
                "{}\n\nThe source of {what} serves it unpacked: its layer is built from the \
                 stored files.\n",
                crate::style::warning("No zip to publish")
            ),
            Err(e) => errln!(
                "{}\n\n{:#}\n\nIts layer is built from the stored files instead.\n",
                crate::style::warning(&format!("Cannot fetch the zip of {what}")),
                anyhow::Error::from(e)
            ),
        }
    }
    Ok(())
}

/// `tstore push --modules`: the store's module packages (or what the lock files under DIR
/// pin) into the module mirror `oci://REGISTRY/REPOSITORY`.
fn push_modules(
    settings: &Settings,
    args: &PushArgs,
    template: &str,
    flavor: tstore_tofu::flavor::Flavor,
    store: &tstore_store::Store,
    client: &OciClient,
    existing: ExistingTag,
) -> Result<ExitCode> {
    let mirror =
        ModuleMirror::parse(&args.target, "the push target").map_err(anyhow::Error::msg)?;
    debug_assert_eq!(template, args.target.trim_start_matches("oci://"));
    let selection = if args.recursive {
        let roots = super::place::roots_of(settings, &args.dirs, true, &args.exclude)?;
        let mut locks = Vec::new();
        for root in roots {
            let path = root.join(tstore_tofu::module_lock::FILE_NAME);
            if let Some(lock) = tstore_tofu::module_lock::load(&path)? {
                locks.push((path, lock));
            }
        }
        ModuleSelection::Pinned(locks)
    } else {
        ModuleSelection::All
    };
    let json = args.json;
    let reach_records = settings.reach_records();
    let push = ModulePush {
        repo: &mirror.repository,
        selection: &selection,
        default_host: flavor.default_registry_host(),
        existing,
        reach_records: reach_records.as_deref(),
        run: &settings.run,
    };
    let pushed = tstore_installer::push_modules(store, client, &push, &|p| {
        if !json {
            say_pushed_module(p);
        }
    })
    .with_context(|| format!("cannot push module packages to {mirror}"))?;
    if json {
        json::print(&serde_json::json!({ "pushed_modules": pushed }))?;
    } else if pushed.packages.is_empty() {
        outln!("The store holds no module packages to push; nothing was pushed.");
    } else {
        let written = pushed.resolutions.iter().filter(|r| r.written).count();
        let reaches_written = pushed.reach_records.iter().filter(|r| r.written).count();
        outln!(
            "{} pushed to {mirror}, with {} of registry versions ({} written now) and {} of \
             git refs reaching locked commits ({} written now).",
            units::count(pushed.packages.len() as u64, "module package"),
            units::count(pushed.resolutions.len() as u64, "resolution"),
            written,
            units::count(pushed.reach_records.len() as u64, "check"),
            reaches_written
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per module package pushed.
fn say_pushed_module(p: &PushedModule) {
    outln!(
        "Pushed the module package {} to {} ({}): {} uploaded, {} already there",
        p.package,
        p.reference,
        p.digest,
        units::count(p.blobs_uploaded as u64, "blob"),
        units::count(p.blobs_present as u64, "blob"),
    );
}

/// `REGISTRY/REPOSITORY?tag=TAG` (after `oci://`): the repository and the tag to push to.
fn module_target(target: &str) -> Result<(OciRepository, String)> {
    let usage = || {
        anyhow::anyhow!(
            "a module is pushed to oci://REGISTRY/REPOSITORY?tag=TAG, not oci://{target}"
        )
    };
    let (path, query) = target.split_once('?').ok_or_else(usage)?;
    let tag = query
        .strip_prefix("tag=")
        .filter(|t| !t.is_empty() && !t.contains('&'));
    let (registry, name) = path.split_once('/').ok_or_else(usage)?;
    match tag {
        Some(tag) if !registry.is_empty() && !name.is_empty() => Ok((
            OciRepository {
                registry: registry.to_ascii_lowercase(),
                name: name.to_owned(),
            },
            tag.to_owned(),
        )),
        _ => Err(usage()),
    }
}
