//! The command line as tofu takes it: its single-dash long flags rewritten for clap, a
//! command line that does not parse said in tofu's words ([`UsageError`]), and where
//! `--flavor`'s value came from.

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use super::values::go_bool;
use super::Cli;

/// A command line that does not parse, said as tofu says it: `Error: Failed to parse
/// command-line flags`, then what is wrong (`flag provided but not defined: -foo` for a flag
/// the command does not take) and where its flags are listed.
#[derive(Debug)]
pub(crate) struct UsageError {
    /// The command the arguments were for (`["init"]`, `["store", "verify"]`; empty for
    /// `tstore` itself).
    pub command: Vec<String>,
    /// What is wrong, in one or a few lines.
    pub detail: String,
    /// Whether the command line asked for JSON output of `init` (`-json`), so the error
    /// is printed as a JSON diagnostic as `tofu init -json` prints it.
    pub json: bool,
}

impl UsageError {
    /// tofu's summary for a command line that does not parse.
    pub(crate) const SUMMARY: &'static str = "Failed to parse command-line flags";

    /// Where the flags of the command are listed: `tstore init --help`.
    pub(crate) fn help_command(&self) -> String {
        let mut words = vec!["tstore"];
        words.extend(self.command.iter().map(String::as_str));
        words.push("--help");
        words.join(" ")
    }
}

/// Parse `args` for the init server: a command line that parses, or `None` for one whose
/// help, version or usage error its own process prints (nothing is printed here, and
/// nothing exits).
pub(crate) fn parse_served(args: Vec<OsString>) -> Option<Cli> {
    // The command is the same for every request: built once (with the subcommands requests
    // name), kept for the server's life.
    static COMMAND: std::sync::Mutex<Option<clap::Command>> = std::sync::Mutex::new(None);
    let mut kept = COMMAND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let command = kept.get_or_insert_with(Cli::command);
    parse_with(command, &args).1.ok()
}

/// Parse the process arguments `args`, accepting tofu's single-dash long flags
/// (`-upgrade`, `-lockfile=readonly`) as well as the usual `--upgrade`. `--help` and
/// `--version` print and exit here; any other problem is a [`UsageError`].
pub(crate) fn parse_from(args: Vec<OsString>) -> Result<Cli, UsageError> {
    let (rewritten, parsed) = try_parse(&args);
    let err = match parsed {
        Ok(cli) => return Ok(cli),
        Err(err) => err,
    };
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    let command = command_path(&rewritten);
    let json = command == ["init"] && asks_for_json(&rewritten);
    let detail = match (err.kind(), err.get(ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(ContextValue::String(arg))) => {
            let given = given_flag(&args, arg);
            if given.starts_with('-') {
                format!("flag provided but not defined: {given}")
            } else {
                format!("unexpected argument {given:?}: too many command line arguments")
            }
        }
        _ => clap_message(&err),
    };
    Err(UsageError {
        command,
        detail,
        json,
    })
}

/// The arguments with tofu's single-dash long flags given two dashes, and what clap makes
/// of them.
fn try_parse(args: &[OsString]) -> (Vec<OsString>, Result<Cli, clap::Error>) {
    parse_with(&mut Cli::command(), args)
}

/// [`try_parse`] with `command`, which the parse builds as far as `args` need.
fn parse_with(
    command: &mut clap::Command,
    args: &[OsString],
) -> (Vec<OsString>, Result<Cli, clap::Error>) {
    // One command serves the rewrite and the parse; a subcommand's arguments are defined
    // only once it is named (`defer`).
    let rewritten = with_double_dashes(command, args.iter().cloned());
    let parsed = command
        .try_get_matches_from_mut(&rewritten)
        .and_then(|matches| {
            let mut cli = Cli::from_arg_matches(&matches)?;
            cli.flavor_from_env = from_env(&matches, "flavor");
            cli.tool_version_from_env = from_env(&matches, "tool_version");
            Ok(cli)
        });
    (rewritten, parsed)
}

/// The flag as the user typed it, without `=VALUE`: clap names the first letter of an
/// unknown single-dash word (`-f` of `-foo`, as if it were a cluster of short flags), so the
/// word is looked up among the arguments.
pub(super) fn given_flag(args: &[OsString], invalid: &str) -> String {
    let cut = |text: &str| text.split('=').next().unwrap_or(text).to_owned();
    let short = invalid.len() == 2 && invalid.starts_with('-') && !invalid.starts_with("--");
    if short {
        let word = args
            .iter()
            .skip(1)
            .take_while(|a| *a != "--")
            .filter_map(|a| a.to_str())
            .find(|a| a.starts_with(invalid) && !a.starts_with("--"));
        if let Some(word) = word {
            return cut(word);
        }
    }
    cut(invalid)
}

/// clap's own message without its `error: ` prefix, usage and `--help` lines.
pub(super) fn clap_message(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        lines.push(line.strip_prefix("error: ").unwrap_or(line));
    }
    lines.join("\n").trim().to_owned()
}

/// The subcommand names among the arguments, as far as they name subcommands.
pub(super) fn command_path(args: &[OsString]) -> Vec<String> {
    let root = Cli::command();
    let mut command = &root;
    let mut path = Vec::new();
    for arg in args.iter().skip(1) {
        let Some(word) = arg.to_str() else { continue };
        if word == "--" {
            break;
        }
        if word.starts_with('-') {
            continue;
        }
        if let Some(sub) = command.find_subcommand(word) {
            path.push(sub.get_name().to_owned());
            command = sub;
        }
    }
    path
}

/// Whether `--json` (or `--json=TRUE`) is among the (rewritten) arguments.
pub(super) fn asks_for_json(args: &[OsString]) -> bool {
    args.iter()
        .filter_map(|a| a.to_str())
        .take_while(|a| *a != "--")
        .any(|a| match a.strip_prefix("--json") {
            Some("") => true,
            Some(value) => value
                .strip_prefix('=')
                .is_some_and(|v| go_bool(v) == Ok(true)),
            None => false,
        })
}

/// Whether the global argument `id` came from its environment variable. A global argument
/// given after the subcommand is recorded in the subcommand's matches.
pub(super) fn from_env(matches: &clap::ArgMatches, id: &str) -> bool {
    let mut m = matches;
    loop {
        match m.value_source(id) {
            Some(clap::parser::ValueSource::CommandLine) => return false,
            Some(clap::parser::ValueSource::EnvVariable) => return true,
            _ => {}
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return false,
        }
    }
}

/// Rewrite `-name[=value]` to `--name[=value]` when `name` is a long flag of tstore.
pub(super) fn with_double_dashes(
    command: &clap::Command,
    args: impl IntoIterator<Item = OsString>,
) -> Vec<OsString> {
    let args: Vec<OsString> = args.into_iter().collect();
    // The words that may be a long flag written with one dash, by position.
    let mut rest_is_positional = false;
    let candidates: Vec<bool> = args
        .iter()
        .map(|arg| {
            let Some(text) = arg.to_str() else {
                return false;
            };
            if text == "--" {
                rest_is_positional = true;
            }
            let single = !rest_is_positional && text.starts_with('-') && !text.starts_with("--");
            let name = text.trim_start_matches('-').split('=').next().unwrap_or("");
            single && name.len() > 1
        })
        .collect();
    // Without one, nothing is rewritten and no subcommand's flags are looked up.
    if !candidates.contains(&true) {
        return args;
    }
    let longs = long_flags_along(command, &args);
    args.into_iter()
        .zip(candidates)
        .map(|(arg, candidate)| {
            let name = arg
                .to_str()
                .map(|text| text.trim_start_matches('-').split('=').next().unwrap_or(""));
            match name {
                Some(name) if candidate && longs.iter().any(|l| l == name) => {
                    OsString::from(format!("-{}", arg.to_string_lossy()))
                }
                _ => arg,
            }
        })
        .collect()
}

/// The long flags of `root` and of the subcommands `args` name, in order (`store verify`):
/// the ones a single-dash word can mean there. Only those commands are defined (a deferred
/// command's arguments exist once it is built).
pub(super) fn long_flags_along(root: &clap::Command, args: &[OsString]) -> Vec<String> {
    let mut out = vec!["help".to_owned(), "version".to_owned()];
    let longs = |cmd: &clap::Command, out: &mut Vec<String>| {
        out.extend(
            cmd.get_arguments()
                .filter_map(|a| a.get_long())
                .map(str::to_owned),
        );
    };
    longs(root, &mut out);
    let mut named: Option<clap::Command> = None;
    for word in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if word == "--" {
            break;
        }
        if word.starts_with('-') {
            continue;
        }
        let Some(sub) = named.as_ref().unwrap_or(root).find_subcommand(word) else {
            continue;
        };
        let mut sub = sub.clone();
        sub.build();
        longs(&sub, &mut out);
        named = Some(sub);
    }
    out
}
