//! The `tstore` binary: reads its environment once and parses arguments into settings
//! (`settings.rs`), runs one command, prints results on stdout and diagnostics on stderr
//! (on stdout as JSON lines for `init -json`), and maps failures to exit codes as tofu
//! does: 0 ok, 1 any failure, a command line that does not parse included.

// Client-facing output goes through `say`, which survives a reader that went away.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod say;

mod cli;
mod commands;
mod diagnostics;
mod escape;
mod flavor;
mod json;
mod log;
mod mount;
mod reporter;
mod serve;
mod settings;
mod style;
mod tool_version;
mod units;

use std::ffi::OsString;
use std::process::ExitCode;

use settings::Environment;
pub(crate) use settings::Settings;

fn main() -> ExitCode {
    let env = Environment::capture();
    let args: Vec<OsString> = std::env::args_os().collect();
    // A running init server for this store does an init in its process, as this one would.
    if let Some(code) = serve::client::forward(&env, &args) {
        return code;
    }
    let cli = match cli::parse_from(args) {
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
    run(env, cli, Host::OwnProcess)
}

/// Where a command runs: in its own process, or in the init server's for a client.
#[derive(Clone, Copy)]
pub(crate) enum Host<'a> {
    OwnProcess,
    /// The server has the client's environment, current directory, umask and standard
    /// streams in place; the process-wide log subscriber and Ctrl-C handler are the
    /// server's, and so is the store handle it keeps between requests.
    Server(&'a serve::KeptStore),
}

/// Run the parsed command line `cli` in the environment `env`.
pub(crate) fn run(env: Environment, cli: cli::Cli, host: Host<'_>) -> ExitCode {
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
            return match commands::man::man(
                <cli::Cli as clap::CommandFactory>::command(),
                args.dir.as_deref(),
            ) {
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
    style::init(cli.no_color || env.no_color());
    let colour = style::stderr_coloured();
    let log = log::subscriber(env.log_filter(), colour);
    // The server's subscriber is the process's; this run's is this thread's.
    let _log = match host {
        Host::OwnProcess => {
            tracing_subscriber::util::SubscriberInitExt::try_init(log).ok();
            None
        }
        Host::Server(_) => Some(tracing::subscriber::set_default(log)),
    };
    // The mount daemon and the server are stopped by signals on purpose; every other
    // command cleans up. A served init's client handles its own.
    let handles_interrupts = matches!(host, Host::OwnProcess)
        && !matches!(
            &cli.command,
            cli::Command::Mount(_) | cli::Command::Serve(_)
        );
    let result = Settings::resolve(&cli, env).and_then(|settings| {
        if handles_interrupts {
            on_interrupt(&settings);
        }
        commands::run(&settings, cli.command, host)
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
        errln!("\nInterrupted");
        std::process::exit(130);
    });
    if let Err(e) = installed {
        tracing::warn!("cannot handle Ctrl-C: {e}");
    }
}
