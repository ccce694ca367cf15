//! The `tstore` binary: parses arguments into settings, runs one command, prints results
//! on stdout and diagnostics on stderr (on stdout as JSON lines for `init -json`), and maps
//! failures to exit codes as tofu does: 0 ok, 1 any failure, a command line that does not
//! parse included.

mod cli;
mod commands;
mod diagnostics;
mod flavor;
mod json;
mod mount;
mod reporter;
mod roots;
mod style;
mod units;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use tstore_store::Limits;
use tstore_tofu::flavor::{DecidedBy, FlavorChoice};

/// Settings shared by every command, resolved once from flags, environment and defaults.
pub struct Settings {
    /// `TSTORE_HOME`: where the store lives.
    pub store: PathBuf,
    /// `TSTORE_MOUNT`: the read-only view every link points into.
    pub mount: PathBuf,
    /// The flavor `--flavor` or `TSTORE_FLAVOR` gives, if any; otherwise each command
    /// decides it for its working directory ([`Settings::flavor_for`]).
    pub flavor_given: Option<FlavorChoice>,
    /// Archive limits (`TSTORE_MAX_ARCHIVE_BYTES`, `TSTORE_MAX_ENTRY_BYTES`,
    /// `TSTORE_MAX_ENTRIES`, `TSTORE_MAX_RATIO`), defaults from the store.
    pub limits: Limits,
    /// `--no-fuse` / `TSTORE_NO_FUSE`: use the views symlink instead of a FUSE mount.
    pub no_fuse: bool,
    /// `--keep-archives` / `TSTORE_KEEP_ARCHIVES`: keep provider zips whole in the store.
    pub keep_archives: bool,
    /// The machine key that binds the store's index to this machine
    /// (`$XDG_STATE_HOME/tstore/machine-key`, default `~/.local/state/tstore/machine-key`).
    /// Kept outside the store on purpose: a store restored from a cache does not carry it,
    /// so its index is re-verified before it is trusted.
    pub machine_key: Option<PathBuf>,
}

impl Settings {
    fn resolve(cli: &cli::Cli) -> Result<Settings> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let store = match &cli.store {
            Some(p) => p.clone(),
            None => match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
                Some(xdg) => PathBuf::from(xdg).join("tstore"),
                None => home
                    .as_ref()
                    .context("HOME is not set; set TSTORE_HOME to choose the store's directory")?
                    .join(".local/share/tstore"),
            },
        };
        let mount = match &cli.mount {
            Some(p) => p.clone(),
            None => home
                .as_ref()
                .context("HOME is not set; set TSTORE_MOUNT to choose the mount path")?
                .join(".tofu-store"),
        };
        let flavor_given = cli.flavor.map(|flavor| FlavorChoice {
            flavor,
            decided_by: if cli.flavor_from_env {
                DecidedBy::Environment
            } else {
                DecidedBy::Flag
            },
        });
        let machine_key = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            Some(xdg) => Some(PathBuf::from(xdg).join("tstore")),
            None => home.as_ref().map(|h| h.join(".local/state/tstore")),
        }
        .map(|dir| dir.join("machine-key"));
        let (store, mount) = (absolute(store)?, absolute(mount)?);
        tracing::debug!(
            "store {} ({}), mount path {} ({})",
            store.display(),
            if cli.store.is_some() {
                "TSTORE_HOME or --store"
            } else {
                "the default"
            },
            mount.display(),
            if cli.mount.is_some() {
                "TSTORE_MOUNT or --mount"
            } else {
                "the default"
            },
        );
        Ok(Settings {
            store,
            mount,
            flavor_given,
            limits: limits_from_env()?,
            no_fuse: cli.no_fuse,
            keep_archives: cli.keep_archives,
            machine_key: machine_key.map(absolute).transpose()?,
        })
    }
}

impl Settings {
    /// The flavor for the working directory `dir`, and the rule that decided it
    /// (`flavor.rs`).
    pub fn flavor_for(&self, dir: &Path) -> Result<FlavorChoice> {
        flavor::resolve(self.flavor_given.as_ref(), dir)
    }
}

/// Archive limits, each overridable by an environment variable.
fn limits_from_env() -> Result<Limits> {
    let mut limits = Limits::default();
    for (var, field) in [
        ("TSTORE_MAX_ARCHIVE_BYTES", &mut limits.max_total_bytes),
        ("TSTORE_MAX_ENTRY_BYTES", &mut limits.max_entry_bytes),
        ("TSTORE_MAX_ENTRIES", &mut limits.max_entries),
        ("TSTORE_MAX_RATIO", &mut limits.max_ratio),
    ] {
        if let Some(value) = std::env::var_os(var) {
            let text = value.to_string_lossy();
            *field = text.trim().parse().with_context(|| {
                format!("{var}={text:?} is not a whole number; unset it or give a positive integer")
            })?;
        }
    }
    Ok(limits)
}

fn absolute(path: PathBuf) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path);
    }
    if path.as_os_str().is_empty() {
        bail!("an empty path was given for the store or the mount path");
    }
    Ok(std::path::absolute(&path)?)
}

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(usage) => {
            let diagnostic = diagnostics::ErrorReport::from_usage(&usage);
            if usage.json {
                diagnostics::print_json(&diagnostic);
            } else {
                diagnostics::print_human(&diagnostic);
            }
            return ExitCode::from(1);
        }
    };
    // `init -json` reports any error as JSON diagnostics on stdout, as `tofu init -json`.
    let json_errors = matches!(&cli.command, cli::Command::Init(args) if args.json);
    let report = |err: &anyhow::Error| {
        if json_errors {
            diagnostics::print_json(&diagnostics::ErrorReport::from_error(err));
        } else {
            diagnostics::print_error(err);
        }
    };
    // Completions and the man page describe the CLI itself: no settings, no store.
    match &cli.command {
        cli::Command::Completions { shell } => {
            let mut command = <cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut command, "tstore", &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        cli::Command::Man(args) => {
            return match commands::man::man(args.dir.as_deref()) {
                Ok(code) => code,
                Err(err) => {
                    diagnostics::print_error(&err);
                    ExitCode::from(1)
                }
            };
        }
        _ => {}
    }
    // `-chdir` applies before anything else reads a path, as in tofu.
    if let Some(dir) = &cli.chdir {
        if let Err(e) = std::env::set_current_dir(dir) {
            let err = anyhow::anyhow!(e).context(format!(
                "cannot switch to the directory {} given by -chdir",
                dir.display()
            ));
            report(&err);
            return ExitCode::from(1);
        }
    }
    // `version` reads the lock file of the directory -chdir names, as tofu's does.
    if let cli::Command::Version(args) = &cli.command {
        return match commands::version::version(args.json) {
            Ok(code) => code,
            Err(err) => {
                diagnostics::print_error(&err);
                ExitCode::from(1)
            }
        };
    }
    // Log lines are for people: no timestamps or module paths, and colour only on a
    // terminal, unless NO_COLOR or -no-color says otherwise.
    style::init(cli.no_color);
    let colour = style::stderr_coloured();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TSTORE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .with_ansi(colour)
        .init();
    // The mount daemon is stopped by signals on purpose; every other command cleans up.
    let handles_interrupts = !matches!(&cli.command, cli::Command::Mount(_));
    let result = Settings::resolve(&cli).and_then(|settings| {
        if handles_interrupts {
            on_interrupt(&settings);
        }
        commands::run(&settings, cli.command)
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            report(&err);
            ExitCode::from(1)
        }
    }
}

/// Ctrl-C (or SIGTERM, as CI cancellations send): let a change to a working directory in
/// progress finish, remove this process's temporary files from the store, say
/// `Interrupted` and exit 130, as shells expect.
fn on_interrupt(settings: &Settings) {
    let store = settings.store.clone();
    let installed = ctrlc::set_handler(move || {
        tstore_installer::interrupt::wait_for_writes(std::time::Duration::from_secs(60));
        let _ = tstore_store::remove_own_temps(&store);
        eprintln!("\nInterrupted");
        std::process::exit(130);
    });
    if let Err(e) = installed {
        tracing::warn!("cannot handle Ctrl-C: {e}");
    }
}
