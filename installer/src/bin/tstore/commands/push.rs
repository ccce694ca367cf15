//! `tstore push oci://REGISTRY/PATH/${namespace}/${type}`: the store's provider packages
//! into an OCI registry, one tag per version, in the layout an `oci_mirror` reads; with
//! `--module ID`, one module package to `oci://REGISTRY/REPOSITORY?tag=TAG`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use tstore_installer::{
    oci_client, push_module, push_providers, NetworkSettings, OciRepository, ProviderSelection,
};
use tstore_tofu::cliconfig::CliConfig;

use super::{lock_store, open_existing_store};
use crate::cli::PushArgs;
use crate::json;
use crate::units;
use crate::Settings;

/// Run `tstore push`.
pub fn push(settings: &Settings, args: &PushArgs) -> Result<ExitCode> {
    let Some(template) = args.target.strip_prefix("oci://") else {
        bail!(
            "the target {:?} is not an OCI address: write oci://REGISTRY/PATH/${{namespace}}/${{type}}",
            args.target
        );
    };
    let selections = args
        .providers
        .iter()
        .map(|p| {
            ProviderSelection::parse(p, settings.flavor.default_registry_host())
                .map_err(anyhow::Error::from)
        })
        .collect::<Result<Vec<_>>>()?;
    let env = |k: &str| std::env::var(k).ok();
    let cli_config = CliConfig::load(settings.flavor, &env)?;
    let network = NetworkSettings::from_environment(&cli_config);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let client = oci_client(&network, home.as_deref())?;
    let store = open_existing_store(settings)?;
    let _lock = lock_store(&store)?;
    let json = args.json;
    if let Some(id) = &args.module {
        let (repo, tag) = module_target(template)?;
        let pushed = push_module(&store, &client, &repo, &tag, id)
            .with_context(|| format!("cannot push the module package {id} to {}", args.target))?;
        if json {
            json::print(&serde_json::json!({ "pushed_module": pushed }))?;
        } else {
            println!(
                "Pushed the module package {id} to {} ({}): {} uploaded, {} already there",
                pushed.reference,
                pushed.digest,
                units::count(pushed.blobs_uploaded as u64, "blob"),
                units::count(pushed.blobs_present as u64, "blob"),
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let pushed = push_providers(&store, &client, template, &selections, &|v| {
        if !json {
            println!(
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
            eprintln!(
                "{}\n\nThe store did not keep the origin's zip of {} {} for {}, so its layer was \
                 built from the stored files and has a new zh: hash. tstore installs it (through \
                 h1:), but plain tofu init refuses it where the lock file's zh: hashes came from \
                 the origin. To publish the origin's own zips, install with --keep-archives \
                 (or TSTORE_KEEP_ARCHIVES=1) into a store that does not hold them yet, then push.\n",
                crate::style::warning("Layer rebuilt from stored files"),
                v.provider,
                v.version,
                v.rebuilt.join(", "),
            );
        }
    })
    .with_context(|| format!("cannot push to {}", args.target))?;
    if json {
        json::print(&serde_json::json!({ "pushed": pushed }))?;
    } else if pushed.is_empty() {
        println!("The store holds no provider packages; nothing was pushed.");
    }
    Ok(ExitCode::SUCCESS)
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
