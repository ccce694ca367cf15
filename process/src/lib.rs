//! The one way tstore starts another program: git, docker credential helpers, the
//! tool-version probe, `systemctl`, `fusermount3` and its own mount daemon.
//!
//! tstore runs in directories other people wrote (a pull request's checkout, a restored
//! cache), so a process it starts must not pick up anything from where tstore happens to be.
//! The rules, enforced here for every process (clippy's `disallowed-methods` forbids
//! `std::process::Command::new` everywhere else):
//!
//! - **A private empty working directory.** Each process starts in a directory made for it
//!   (0700, empty) and removed once the process has ended (or, for a daemon, once tstore lets
//!   go of it); never in tstore's own working directory, which may be a checkout.
//! - **Found on `PATH`'s absolute directories only.** A program named without a `/` is looked
//!   up in the absolute directories of `PATH`; empty and relative entries (`bin`, `.`) are
//!   skipped, as Go's `exec.LookPath` refuses them: they name files of whatever directory
//!   tstore runs in ([`absolute_dirs`]). When tstore runs as root, a candidate another
//!   user could change (their directory on the way, a group- or world-writable directory
//!   without the sticky bit, a file not root's) is skipped and said once (`root_trust.rs`).
//! - **git discovers no repository and runs no hook** ([`Command::git`]): repository
//!   discovery stops at the private directory (`GIT_CEILING_DIRECTORIES`), a bare repository
//!   is used only where tstore names it (`safe.bareRepository=explicit`), hooks and the
//!   fsmonitor are off, and the variables that point git at another repository are removed.
//!   git still reads the system's and the user's global configuration (where proxies,
//!   credential helpers and corporate CAs live) and what tstore passes on its command line.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};

/// Variables that would make git use a repository, index or object store other than the
/// one tstore names.
const GIT_LOCATION_VARIABLES: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_CEILING_DIRECTORIES",
];

/// Settings every git process gets on its command line (which outranks every configuration
/// file, a repository's included): no bare repository unless named with `--git-dir`, no
/// hook, no fsmonitor program.
const GIT_SETTINGS: &[&str] = &[
    "safe.bareRepository=explicit",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
];

/// A process to start, built as [`std::process::Command`] builds one, started under this
/// module's rules.
#[derive(Debug, Default)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    stdin: Option<Stdio>,
    stdout: Option<Stdio>,
    stderr: Option<Stdio>,
    process_group: Option<i32>,
    git: bool,
}

impl Command {
    /// A process of `program`: a path, or a name looked up in `PATH`'s absolute directories
    /// when it starts.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            program: program.as_ref().to_owned(),
            ..Command::default()
        }
    }

    /// `git`, isolated from every repository but the ones the caller names (module docs).
    pub fn git() -> Command {
        let mut cmd = Command::new("git");
        cmd.git = true;
        for name in GIT_LOCATION_VARIABLES {
            cmd.env_remove(name);
        }
        for setting in GIT_SETTINGS {
            cmd.arg("-c").arg(setting);
        }
        cmd
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.envs
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.envs.push((key.as_ref().to_owned(), None));
        self
    }

    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.stdin = Some(cfg.into());
        self
    }

    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.stdout = Some(cfg.into());
        self
    }

    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.stderr = Some(cfg.into());
        self
    }

    /// Start the process in process group `pgroup` (`0`: a new one of its own), so that a
    /// signal to the group that ran tstore does not reach it.
    pub fn process_group(&mut self, pgroup: i32) -> &mut Command {
        self.process_group = Some(pgroup);
        self
    }

    /// The arguments given so far (git's own settings included).
    pub fn get_args(&self) -> impl Iterator<Item = &OsStr> {
        self.args.iter().map(OsString::as_os_str)
    }

    /// The variables set (`Some`) or removed (`None`) for the process, in the order given.
    pub fn get_envs(&self) -> impl Iterator<Item = (&OsStr, Option<&OsStr>)> {
        self.envs.iter().map(|(k, v)| (k.as_os_str(), v.as_deref()))
    }

    /// Run to the end, collecting stdout and stderr (stdin: nothing unless set).
    pub fn output(&mut self) -> io::Result<Output> {
        let (mut cmd, _dir) = self.build()?;
        cmd.output()
    }

    /// Run to the end (stdio inherited unless set).
    pub fn status(&mut self) -> io::Result<ExitStatus> {
        let (mut cmd, _dir) = self.build()?;
        cmd.status()
    }

    /// Start the process. Its private directory lives as long as the returned [`Child`]
    /// (programs ask for their working directory: Go's runtime fails without one).
    pub fn spawn(&mut self) -> io::Result<Child> {
        let (mut cmd, dir) = self.build()?;
        Ok(Child {
            child: cmd.spawn()?,
            _dir: dir,
        })
    }

    /// The `std` command under the rules, and its private working directory (which lives as
    /// long as the returned guard). Stdio set by the caller is used by this start only.
    fn build(&mut self) -> io::Result<(std::process::Command, tempfile::TempDir)> {
        let search_path = std::env::var_os("PATH");
        let program = resolve(&self.program, search_path.as_deref())?;
        let dir = tempfile::Builder::new()
            .prefix("tstore-run-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        // The one place that makes a `std::process::Command`.
        #[allow(clippy::disallowed_methods)]
        let mut cmd = std::process::Command::new(program);
        cmd.args(&self.args).current_dir(dir.path());
        for (key, value) in &self.envs {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        if self.git {
            // Discovery looks at the private directory (empty) and never above it.
            let ceiling = dir.path().parent().unwrap_or(Path::new("/"));
            cmd.env("GIT_CEILING_DIRECTORIES", ceiling);
        }
        if let Some(s) = self.stdin.take() {
            cmd.stdin(s);
        }
        if let Some(s) = self.stdout.take() {
            cmd.stdout(s);
        }
        if let Some(s) = self.stderr.take() {
            cmd.stderr(s);
        }
        if let Some(g) = self.process_group {
            std::os::unix::process::CommandExt::process_group(&mut cmd, g);
        }
        Ok((cmd, dir))
    }
}

/// A started process ([`std::process::Child`] through `Deref`) and its private working
/// directory, removed when this is dropped: a process still running then (a daemon) keeps
/// an empty, deleted directory in which nothing can be created.
#[derive(Debug)]
pub struct Child {
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Child {
    /// Wait for the process, collecting what was piped.
    pub fn wait_with_output(self) -> io::Result<Output> {
        self.child.wait_with_output()
    }
}

impl std::ops::Deref for Child {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.child
    }
}

impl std::ops::DerefMut for Child {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.child
    }
}

/// The absolute directories of `search_path` (a `PATH` value), in order: empty and relative
/// entries name directories of whatever working directory a process has, so they are
/// skipped.
pub fn absolute_dirs(search_path: &OsStr) -> impl Iterator<Item = PathBuf> + '_ {
    std::env::split_paths(search_path).filter(|d| d.is_absolute())
}

/// The first executable regular file `name` in the absolute directories of `search_path`;
/// when tstore runs as root, the first one no other user can change (`root_trust.rs`).
pub fn find_on_path(name: &str, search_path: &OsStr) -> Option<PathBuf> {
    find_on_path_as(name, search_path, root_trust::running_as_root())
}

/// [`find_on_path`] for a process that runs as root (`as_root`) or not.
fn find_on_path_as(name: &str, search_path: &OsStr, as_root: bool) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    absolute_dirs(search_path).find_map(|dir| {
        let candidate = dir.join(name);
        let executable = std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if !executable {
            return None;
        }
        if as_root {
            if let Err(untrusted) = root_trust::check(&candidate) {
                root_trust::warn_skipped(&dir, name, &untrusted);
                return None;
            }
        }
        Some(candidate)
    })
}

/// The file `program` starts: itself when it names a path, else its first match in
/// `search_path`'s absolute directories.
fn resolve(program: &OsStr, search_path: Option<&OsStr>) -> io::Result<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 || path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    search_path
        .and_then(|p| find_on_path(&program.to_string_lossy(), p))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} was not found in PATH's absolute directories (relative and empty \
                     entries are skipped, and for root those another user can change)",
                    program.to_string_lossy()
                ),
            )
        })
}

mod root_trust;

#[cfg(test)]
mod tests;
