//! [`Tstore`]: a `tstore` command line, built and run in the tests' vocabulary.
//!
//! The binary is the caller's: the installer's end-to-end tests make one from their
//! `tstore` command (`crate::common::TstoreEnv` there: `env.tstore()`), which this crate cannot name.
//!
//! ```no_run
//! use std::path::Path;
//! use tstore_test_support::{TestEnv, Tstore};
//!
//! let env = TestEnv::new();
//! let dir = env.checkout("a", &[("main.tf", "")]);
//! let tstore = Tstore::new(&env, Path::new("target/debug/tstore"));
//! // `tstore init -upgrade DIR` with no FUSE, which must succeed.
//! tstore.no_fuse().init(&dir).arg("-upgrade").ok();
//! ```

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Output};

use crate::{run_fail, run_ok, TestEnv};

/// A `tstore` command: a [`Command`] and the directory operand of [`Tstore::init`], which
/// goes last, after every argument added later (`init -upgrade DIR`). Methods that add
/// take and return `self`; [`Tstore::ok`], [`Tstore::fails`], [`Tstore::output`] and
/// [`Tstore::json`] run it.
#[derive(Debug)]
pub struct Tstore {
    cmd: Command,
    last: Vec<OsString>,
}

impl Tstore {
    /// `bin` in `env`'s isolated environment ([`TestEnv::command`]).
    pub fn new(env: &TestEnv, bin: &Path) -> Tstore {
        Tstore::from_command(env.command(bin))
    }

    /// A prepared command (the binary, its environment, maybe arguments).
    pub fn from_command(cmd: Command) -> Tstore {
        Tstore {
            cmd,
            last: Vec::new(),
        }
    }

    /// `init`, with `dir` as the last operand.
    pub fn init(self, dir: &Path) -> Tstore {
        let mut t = self.arg("init");
        t.last.push(dir.as_os_str().to_owned());
        t
    }

    /// `TSTORE_NO_FUSE=1`: the store is not mounted; links point into it.
    pub fn no_fuse(self) -> Tstore {
        self.env("TSTORE_NO_FUSE", "1")
    }

    /// `TSTORE_TOOL_VERSION=TOOL`: the release of the tool that runs the directory
    /// (`"terraform 1.11.4"`), as a judge's side of a comparison names it.
    pub fn tool_version(self, tool: &str) -> Tstore {
        self.env("TSTORE_TOOL_VERSION", tool)
    }

    /// `TF_CLI_CONFIG_FILE=CFG`.
    pub fn cli_config(self, cfg: &Path) -> Tstore {
        self.env("TF_CLI_CONFIG_FILE", cfg)
    }

    /// `TF_CLI_CONFIG_FILE=CFG` when a configuration is given; with `None`, nothing is set
    /// (no CLI configuration: the isolated `HOME` has none).
    pub fn maybe_cli_config(self, cfg: Option<&Path>) -> Tstore {
        match cfg {
            Some(cfg) => self.cli_config(cfg),
            None => self,
        }
    }

    /// One argument (before [`Tstore::init`]'s directory).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Tstore {
        self.cmd.arg(arg);
        self
    }

    /// Arguments (before [`Tstore::init`]'s directory).
    pub fn args<I, S>(mut self, args: I) -> Tstore
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// One environment variable.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Tstore {
        self.cmd.env(key, value);
        self
    }

    /// Environment variables ([`Command::envs`]).
    pub fn envs<I, K, V>(mut self, vars: I) -> Tstore
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    /// The current directory (the [`TestEnv`]'s root unless set).
    pub fn current_dir(mut self, dir: &Path) -> Tstore {
        self.cmd.current_dir(dir);
        self
    }

    /// The value it sets for the environment variable `key` (`None`: not set, or removed),
    /// to derive another from it (a `PATH` with one more directory first).
    pub fn get_env(&self, key: impl AsRef<OsStr>) -> Option<&OsStr> {
        let key = key.as_ref();
        self.cmd
            .get_envs()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v)
    }

    /// The command as it will run (the [`Tstore::init`] directory last), to run otherwise
    /// (spawned, with other stdio, ...).
    pub fn command(mut self) -> Command {
        self.cmd.args(&self.last);
        self.cmd
    }

    /// Run it; panic with everything needed to debug it unless it succeeds
    /// ([`run_ok`](crate::run_ok)).
    #[track_caller]
    pub fn ok(self) -> Output {
        run_ok(&mut self.command())
    }

    /// Run it; panic unless it fails with an exit code ([`run_fail`](crate::run_fail)).
    #[track_caller]
    pub fn fails(self) -> Output {
        run_fail(&mut self.command())
    }

    /// Run it, whatever the outcome; panics only if it cannot be started.
    #[track_caller]
    pub fn output(self) -> Output {
        self.command().output().expect("run tstore")
    }

    /// Run it with `--json` (after the arguments so far, before [`Tstore::init`]'s
    /// directory), which must succeed, and parse its stdout.
    #[track_caller]
    pub fn json(self) -> serde_json::Value {
        json(&self.arg("--json").ok())
    }
}

/// Parse a command's stdout as JSON; panic with its status, stdout and stderr if it is not.
#[track_caller]
pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}) status {:?}:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_line;

    #[test]
    fn the_init_directory_goes_last() {
        let env = TestEnv::new();
        let cmd = Tstore::new(&env, Path::new("tstore"))
            .no_fuse()
            .init(Path::new("/w"))
            .arg("-upgrade")
            .args(["--json"])
            .command();
        let line = command_line(&cmd);
        assert!(line.ends_with("tstore init -upgrade --json /w"), "{line}");
        assert!(line.contains("TSTORE_NO_FUSE=1 "), "{line}");
    }

    #[test]
    fn get_env_reads_what_is_set() {
        let env = TestEnv::new();
        let tstore = Tstore::new(&env, Path::new("tstore")).no_fuse();
        assert_eq!(tstore.get_env("TSTORE_NO_FUSE"), Some(OsStr::new("1")));
        assert_eq!(tstore.get_env("HOME"), Some(env.home.as_os_str()));
        assert_eq!(tstore.get_env("TF_CLI_CONFIG_FILE"), None);
        let cfg = Path::new("/c.tfrc");
        let with = Tstore::new(&env, Path::new("tstore")).maybe_cli_config(Some(cfg));
        assert_eq!(with.get_env("TF_CLI_CONFIG_FILE"), Some(cfg.as_os_str()));
        let without = Tstore::new(&env, Path::new("tstore")).maybe_cli_config(None);
        assert_eq!(without.get_env("TF_CLI_CONFIG_FILE"), None);
    }

    #[test]
    fn run_and_parse() {
        let env = TestEnv::new();
        let echo = |text: &str| {
            let mut cmd = env.command(Path::new("sh"));
            cmd.args(["-c", &format!("echo '{text}'")]);
            Tstore::from_command(cmd)
        };
        assert_eq!(echo("{\"a\":1}").json()["a"], 1);
        assert!(echo("x").ok().status.success());
        let mut cmd = env.command(Path::new("sh"));
        cmd.args(["-c", "exit 2"]);
        assert_eq!(Tstore::from_command(cmd).fails().status.code(), Some(2));
    }
}
