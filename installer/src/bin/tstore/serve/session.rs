//! One request in the server's process: the client's environment, umask, current directory
//! and standard streams put in place, the command run by the code a process of its own
//! runs, then the server's own put back before the next request.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use rustix::fs::Mode;

use super::relay::Output;
use super::wire::Request;
use crate::settings::Environment;

/// What the server puts back after each request.
pub(super) struct Own {
    env: Vec<(OsString, OsString)>,
    umask: Mode,
    cwd: OwnedFd,
    /// Standard streams between requests: a write nobody asked for goes nowhere, never
    /// to the last client.
    null: OwnedFd,
}

impl Own {
    pub(super) fn capture() -> std::io::Result<Own> {
        let umask = rustix::process::umask(Mode::from_bits_truncate(0o022));
        rustix::process::umask(umask);
        let dir = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY;
        Ok(Own {
            env: std::env::vars_os().collect(),
            umask,
            cwd: rustix::fs::open(".", dir | rustix::fs::OFlags::CLOEXEC, Mode::empty())?,
            null: rustix::fs::open(
                "/dev/null",
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
                Mode::empty(),
            )?,
        })
    }

    /// Put the server's state back (and the standard streams on `/dev/null`).
    fn restore(&self) {
        let _ = rustix::stdio::dup2_stdin(&self.null);
        let _ = rustix::stdio::dup2_stdout(&self.null);
        let _ = rustix::stdio::dup2_stderr(&self.null);
        let _ = rustix::process::fchdir(&self.cwd);
        rustix::process::umask(self.umask);
        replace_env(&self.env);
    }
}

/// How a request went.
pub(super) enum Ran {
    /// Not run: the client runs the command itself.
    Declined(&'static str),
    Exited(u8),
    /// The command panicked (its message went to the client's stderr). What a run holds
    /// is its own and went with it; the store handle is opened anew for the next request,
    /// and the server goes on.
    Panicked,
}

/// Run `request` as its client's own process would.
pub(super) fn run(request: Request, own: &Own, kept: &super::KeptStore) -> Ran {
    if !request
        .env
        .iter()
        .all(|(name, value)| settable(name, value))
    {
        return Ran::Declined("its environment cannot be set");
    }
    // clap reads the variables that stand for flags from the process environment.
    replace_env(&request.env);
    let cli = match crate::cli::parse_served(request.args) {
        Some(cli) if matches!(cli.command, crate::cli::Command::Init(_)) => cli,
        // Help, the version, a usage error, another command: printed by its own process.
        _ => {
            replace_env(&own.env);
            return Ran::Declined("not an init");
        }
    };
    // A pipe or socket the client does not read from holds no server: its output goes
    // through a copier that gives up on it in time.
    let (stdout, stderr) = match (Output::of(request.stdout), Output::of(request.stderr)) {
        (Ok(stdout), Ok(stderr)) => (stdout, stderr),
        _ => {
            replace_env(&own.env);
            return Ran::Declined("its streams cannot be taken");
        }
    };
    let entered = (|| -> std::io::Result<()> {
        rustix::process::fchdir(&request.cwd)?;
        rustix::stdio::dup2_stdin(&request.stdin)?;
        rustix::stdio::dup2_stdout(stdout.fd())?;
        rustix::stdio::dup2_stderr(stderr.fd())?;
        Ok(())
    })();
    if entered.is_err() {
        own.restore();
        stdout.finish();
        stderr.finish();
        return Ran::Declined("its directory or streams cannot be taken");
    }
    rustix::process::umask(Mode::from_bits_truncate(request.umask));
    let env = Environment::from_vars(request.env);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::run(env, cli, crate::Host::Server(kept))
    }));
    let _ = std::io::stdout().flush();
    own.restore();
    stdout.finish();
    stderr.finish();
    match result {
        Ok(code) => Ran::Exited(exit_status(code)),
        Err(_) => {
            kept.forget();
            Ran::Panicked
        }
    }
}

/// Make the process environment `vars`, in their order (of two equal names the first, as
/// `getenv` finds it). The server runs one request at a time, and its other threads (the
/// acceptor, which declines a client arriving meanwhile, and a request's stream relays)
/// read no variable.
fn replace_env(vars: &[(OsString, OsString)]) {
    let current: Vec<OsString> = std::env::vars_os().map(|(name, _)| name).collect();
    for name in current {
        std::env::remove_var(name);
    }
    for (name, value) in vars {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    }
}

/// Whether `set_var` takes this variable (it panics on an empty name, `=` in the name, or
/// NUL anywhere).
fn settable(name: &OsString, value: &OsString) -> bool {
    let name = name.as_bytes();
    !name.is_empty()
        && !name.contains(&b'=')
        && !name.contains(&0)
        && !value.as_bytes().contains(&0)
}

/// The number behind an `ExitCode` (which keeps it private).
fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_keep_their_number() {
        for n in [0, 1, 2, 101, 130, 255] {
            assert_eq!(exit_status(ExitCode::from(n)), n);
        }
        assert_eq!(exit_status(ExitCode::SUCCESS), 0);
        assert_eq!(exit_status(ExitCode::FAILURE), 1);
    }

    #[test]
    fn variables_set_var_would_panic_on_are_not_settable() {
        let ok = OsString::from("x");
        assert!(settable(&OsString::from("TF_VAR_a"), &ok));
        assert!(settable(&OsString::from("EMPTY"), &OsString::new()));
        for name in ["", "A=B", "A\0"] {
            assert!(!settable(&OsString::from(name), &ok), "{name:?}");
        }
        assert!(!settable(&OsString::from("A"), &OsString::from("a\0b")));
    }
}
