//! `tstore providers lock` and `tstore providers outdated`.
//! The `--json` fields: `docs/reference/json.md`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_installer::{Event, ProviderOptions, Reporter, WorkdirOptions};
use tstore_installer::{LockOptions, LockSource};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::tool_version::PROVIDERS_LOCK_SAYS_NO_CHANGE;

use super::place::Place;
use super::{lock_store, open_store};
use crate::json;
use crate::reporter::{HumanReporter, Silent};
use crate::Settings;

/// Shows only what `tofu providers lock` shows (fetches, checksums, downloads).
struct LockReporter(HumanReporter);

impl Reporter for LockReporter {
    fn event(&self, event: Event<'_>) {
        match event {
            Event::Fetching { .. }
            | Event::ObtainedChecksums { .. }
            | Event::Retrieved { .. }
            | Event::ChecksumsTracked { .. }
            | Event::Downloading { .. }
            | Event::DownloadProgress { .. } => self.0.event(event),
            _ => {}
        }
    }
}

/// `tstore providers lock`.
pub(super) fn lock(settings: &Settings, args: ProvidersLockArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let dir = cwd;
    let flavor_choice = settings.flavor_for(&dir)?;
    let flavor = flavor_choice.flavor;
    let default_host = flavor.default_registry_host();
    let mut platforms = Vec::new();
    for platform in args.platforms {
        if !platforms.contains(&platform) {
            platforms.push(platform);
        }
    }
    if platforms.is_empty() {
        platforms.push(Platform::current());
    }
    let only = args
        .providers
        .iter()
        .map(|s| {
            ProviderAddr::parse_source(s, default_host)
                .with_context(|| format!("invalid provider source address {s:?}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let source = match (args.fs_mirror, args.net_mirror) {
        (Some(dir), _) => LockSource::FilesystemMirror(std::path::absolute(dir)?),
        (None, Some(url)) => LockSource::NetworkMirror(if url.ends_with('/') {
            url
        } else {
            format!("{url}/")
        }),
        (None, None) => LockSource::Direct,
    };
    let root = Place {
        cwd: dir.clone(),
        dir: dir.clone(),
        flavor: flavor_choice,
    }
    .configure(settings)?;
    let store = open_store(settings)?;
    let _lock = lock_store(&store)?;
    let variables = root.variables(settings, &[])?;
    let opts = LockOptions {
        base: ProviderOptions {
            workdir: WorkdirOptions {
                variables,
                ..root.workdir_options(settings)?
            },
            platform: Platform::current(),
            methods: Vec::new(),
            cli_config: root.cli_config.describe_files(),
        },
        platforms,
        source,
        only,
    };
    let human = LockReporter(HumanReporter::new());
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    let report = tstore_installer::lock_providers(&store, &opts, reporter)?;
    let mut out = crate::say::stdout();
    if args.json {
        json::print(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let tool = flavor.product_name();
    // terraform before 1.2.6 says it updated the lock file whatever it found.
    let no_change = if root.tool.tool.follows(&PROVIDERS_LOCK_SAYS_NO_CHANGE) {
        !report.new_checksums
    } else {
        false
    };
    if no_change {
        writeln!(
            out,
            "\nSuccess! {tool} has validated the lock file and found no need for changes."
        )?;
    } else {
        writeln!(
            out,
            "\nSuccess! {tool} has updated the lock file.\n\n\
             Review the changes in .terraform.lock.hcl and then commit to your\n\
             version control system to retain the new checksums.\n"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `tstore providers outdated [DIR]`.
pub(super) fn outdated(settings: &Settings, args: ProvidersOutdatedArgs) -> Result<ExitCode> {
    let root = Place::find(settings, args.dir.as_deref())?.configure(settings)?;
    let variables = root.variables(settings, &[])?;
    let workdir = WorkdirOptions {
        variables,
        ..root.workdir_options(settings)?
    };
    let base = root.place.dir.clone();
    let opts = root.provider_options(settings, workdir, &base, &[]);
    let report = tstore_installer::outdated_providers(&opts)?;
    let outdated = report.providers.iter().filter(|p| p.moved).count();
    let status = if args.exit_code && outdated > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        json::print(&report)?;
        return Ok(status);
    }
    let mut out = crate::say::stdout();
    if !report.lock_file {
        writeln!(
            out,
            "No {} here: nothing is locked yet (run \"tstore init\" or \"tstore providers lock\").",
            tstore_installer::LOCK_FILE_NAME
        )?;
        return Ok(status);
    }
    for p in &report.providers {
        match (&p.latest, p.moved) {
            (Some(latest), true) => writeln!(
                out,
                "- provider {}: locked {}, now {latest}",
                p.provider, p.locked
            )?,
            _ => writeln!(
                out,
                "- provider {}: locked {}, the newest old enough",
                p.provider, p.locked
            )?,
        }
        for held in &p.held_back {
            writeln!(out, "    held back by min_release_age: {held}")?;
        }
    }
    writeln!(
        out,
        "{} of {} outdated{}",
        outdated,
        crate::units::count(report.checked as u64, "locked provider"),
        if outdated == 0 {
            ""
        } else {
            "; \"tstore init -upgrade\" takes them"
        }
    )?;
    Ok(status)
}

/// `tstore providers …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ProvidersCommand {
    /// Record the checksums of the required providers for several platforms in the lock
    /// file (like `tofu providers lock`), and keep the packages in the store.
    #[command(
        after_help = "Examples:\n  tstore providers lock -platform=linux_amd64 -platform=darwin_arm64\n  tstore providers lock --fs-mirror /srv/mirror hashicorp/null"
    )]
    Lock(ProvidersLockArgs),
    /// List the locked providers that `init -upgrade` would move, and the newer versions the
    /// cooldown (min_release_age) holds back with the date each becomes eligible: asks the
    /// CLI configuration's installation sources, changes nothing.
    #[command(after_help = "Examples:
  tstore providers outdated
  tstore providers outdated infra/prod --json
  tstore providers outdated -exit-code   # exit 2 when a provider is outdated")]
    Outdated(ProvidersOutdatedArgs),
}

/// Arguments of `tstore providers outdated`.
#[derive(Debug, Args)]
pub(crate) struct ProvidersOutdatedArgs {
    /// The working directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Exit with status 2 when a provider is outdated (0 otherwise), for a CI job to act on.
    #[arg(long)]
    pub exit_code: bool,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `tstore providers lock`.
#[derive(Debug, Args)]
pub(crate) struct ProvidersLockArgs {
    /// Only these providers (`[HOST/]NAMESPACE/TYPE`); default: every required provider.
    pub providers: Vec<String>,
    /// A target platform `OS_ARCH`; repeatable (default: the current platform).
    #[arg(long = "platform", value_name = "OS_ARCH", value_parser = crate::cli::values::parse_platform)]
    pub platforms: Vec<Platform>,
    /// Fetch packages from this filesystem mirror instead of the origin registries.
    #[arg(long, value_name = "DIR", conflicts_with = "net_mirror")]
    pub fs_mirror: Option<PathBuf>,
    /// Fetch packages from this network mirror instead of the origin registries.
    #[arg(long, value_name = "URL")]
    pub net_mirror: Option<String>,
    /// Print a JSON report on stdout instead of human-readable progress.
    #[arg(long)]
    pub json: bool,
}
