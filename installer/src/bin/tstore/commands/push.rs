//! `tstore push oci://REGISTRY/PATH/${namespace}/${type}`: the store's provider packages
//! into an OCI registry, one tag per version, in the layout an `oci_mirror` reads.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use tstore_installer::{oci_client, push_providers, NetworkSettings, ProviderSelection};
use tstore_tofu::cliconfig::CliConfig;

use super::{lock_store, open_existing_store};
use crate::cli::PushArgs;
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
    let pushed = push_providers(&store, &client, template, &selections, &|v| {
        if !json {
            println!(
                "Pushed {} {} ({}) to {}: {} uploaded, {} already there",
                v.provider,
                v.version,
                v.platforms.join(", "),
                v.reference,
                plural(v.blobs_uploaded, "blob"),
                plural(v.blobs_present, "blob"),
            );
        }
    })
    .with_context(|| format!("cannot push to {}", args.target))?;
    if json {
        println!("{}", serde_json::json!({ "pushed": pushed }));
    } else if pushed.is_empty() {
        println!("The store holds no provider packages; nothing was pushed.");
    }
    Ok(ExitCode::SUCCESS)
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
