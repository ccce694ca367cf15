//! [`TestEnv`]: an isolated environment for one test.
//!
//! ```text
//! <tmp>/                 TestEnv::root (removed on drop)
//!   store/               TSTORE_HOME
//!   mount                TSTORE_MOUNT (not created: tstore creates and mounts it)
//!   home/                HOME
//!   xdg/data|config|cache  XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME
//!   tmp/                 TMPDIR
//!   work/<name>/         checkouts (working directories)
//!   cli-config/          CLI config files written by the helpers
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::peers;

/// An isolated environment for one test. Nothing it runs can see the user's real store,
/// mount, home or terraform configuration. Dropping it unmounts a FUSE mount left at
/// [`TestEnv::mount`] and removes everything, read-only store views included.
#[derive(Debug)]
pub struct TestEnv {
    /// The temp dir holding everything below.
    pub root: TempDir,
    /// The store (`TSTORE_HOME`), created empty.
    pub store: PathBuf,
    /// The mount point (`TSTORE_MOUNT`), not created.
    pub mount: PathBuf,
    /// `HOME` for commands run in this environment, created empty.
    pub home: PathBuf,
    /// Where [`TestEnv::checkout`] creates working directories.
    pub work: PathBuf,
}

impl TestEnv {
    /// Create a fresh environment in a new temp dir.
    pub fn new() -> TestEnv {
        let root = tempfile::Builder::new()
            .prefix("tstore-test-")
            .tempdir()
            .expect("create a temp dir for the test environment");
        let base = root.path().to_path_buf();
        for dir in [
            "store",
            "home",
            "work",
            "tmp",
            "xdg/data",
            "xdg/config",
            "xdg/cache",
        ] {
            fs_err::create_dir_all(base.join(dir)).expect("create test environment dir");
        }
        TestEnv {
            store: base.join("store"),
            mount: base.join("mount"),
            home: base.join("home"),
            work: base.join("work"),
            root,
        }
    }

    /// A `Command` for `program` with a clean environment: `env_clear()`, then `PATH` (the
    /// caller's), `HOME`, `TSTORE_HOME`, `TSTORE_MOUNT`, `XDG_DATA_HOME`, `XDG_CONFIG_HOME`,
    /// `XDG_CACHE_HOME`, `TMPDIR` (all inside [`TestEnv::root`]), `CHECKPOINT_DISABLE=1`,
    /// `TF_IN_AUTOMATION=1`, `LANG=C.UTF-8`, and `RUST_BACKTRACE`/`RUST_LOG` if the caller has
    /// them (for debugging). The current dir is [`TestEnv::root`].
    pub fn command(&self, program: &Path) -> Command {
        let root = self.root.path();
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TSTORE_HOME", &self.store)
            .env("TSTORE_MOUNT", &self.mount)
            .env("XDG_DATA_HOME", root.join("xdg/data"))
            .env("XDG_CONFIG_HOME", root.join("xdg/config"))
            .env("XDG_CACHE_HOME", root.join("xdg/cache"))
            .env("TMPDIR", root.join("tmp"))
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("LANG", "C.UTF-8")
            .current_dir(root);
        for key in ["RUST_BACKTRACE", "RUST_LOG"] {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
        cmd
    }

    /// The real terraform v1.0.3 (see [`peers`](crate::peers())) with the same environment
    /// as [`TestEnv::command`], run in `dir`.
    pub fn terraform(&self, dir: &Path) -> Command {
        let mut cmd = self.command(&peers().terraform);
        cmd.current_dir(dir);
        cmd
    }

    /// `JUDGE init -backend=false -input=false -no-color` in `dir`, reading `cli_config`: the
    /// init a twin checkout gets from one of the real terraforms.
    pub fn judge_init(&self, judge: &Path, dir: &Path, cli_config: &Path) -> Command {
        let mut cmd = self.command(judge);
        cmd.current_dir(dir)
            .env("TF_CLI_CONFIG_FILE", cli_config)
            .args(["init", "-backend=false", "-input=false", "-no-color"]);
        cmd
    }

    /// Create the checkout `work/<name>` holding `files` (relative path → content; parent
    /// dirs are created) and return its path.
    pub fn checkout(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = self.work.join(name);
        fs_err::create_dir_all(&dir).expect("create checkout dir");
        for (path, contents) in files {
            let path = dir.join(path);
            if let Some(parent) = path.parent() {
                fs_err::create_dir_all(parent).expect("create checkout subdir");
            }
            fs_err::write(&path, contents).expect("write checkout file");
        }
        dir
    }

    /// Write a CLI config file holding only
    /// `provider_installation { filesystem_mirror { path = "<mirror>" } }` and return its path
    /// (a new file per call, under `<root>/cli-config/`). Point `TF_CLI_CONFIG_FILE` at it.
    pub fn cli_config_fs_mirror(&self, mirror: &Path) -> PathBuf {
        let dir = self.root.path().join("cli-config");
        fs_err::create_dir_all(&dir).expect("create cli-config dir");
        let n = fs_err::read_dir(&dir).expect("list cli-config dir").count();
        let path = dir.join(format!("fs-mirror-{n}.tfrc"));
        let config = format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
            hcl_escape(&mirror.to_string_lossy())
        );
        fs_err::write(&path, config).expect("write CLI config");
        path
    }
}

impl Default for TestEnv {
    fn default() -> Self {
        TestEnv::new()
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // A test that panicked may leave tstore's FUSE mount up; removing the tree under a
        // live mount would fail (it is read-only) or walk into the store.
        if is_mount_point(&self.mount) {
            let _ = Command::new("fusermount3")
                .args(["-u", "-z"])
                .arg(&self.mount)
                .status();
        }
        // ... and must not leave its daemon running (`tstore mount` writes its pid there).
        if let Ok(pid) = fs_err::read_to_string(self.store.join("mount.pid")) {
            let pid = pid.trim();
            if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
        // The store makes its views 0555; make every dir writable again so the TempDir can
        // be removed. Stay on this filesystem, and never follow symlinks out of the tree.
        for entry in walkdir::WalkDir::new(self.root.path())
            .same_file_system(true)
            .into_iter()
            .filter_map(Result::ok)
        {
            if entry.file_type().is_dir() {
                if let Ok(meta) = entry.metadata() {
                    let mode = meta.permissions().mode();
                    if mode & 0o700 != 0o700 {
                        let _ = fs_err::set_permissions(
                            entry.path(),
                            std::fs::Permissions::from_mode(mode | 0o700),
                        );
                    }
                }
            }
        }
    }
}

/// Escape a string for a double-quoted HCL string literal.
fn hcl_escape(s: &str) -> String {
    s.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace("${", "$${")
        .replace("%{", "%%{")
}

/// Whether `path` is listed as a mount point in `/proc/self/mountinfo`.
fn is_mount_point(path: &Path) -> bool {
    let Ok(info) = fs_err::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    // Field 5 is the mount point, with space, tab, newline and backslash octal-escaped.
    let want = path
        .to_string_lossy()
        .replace('\\', r"\134")
        .replace(' ', r"\040")
        .replace('\t', r"\011")
        .replace('\n', r"\012");
    info.lines()
        .any(|line| line.split(' ').nth(4) == Some(want.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_ok, stdout};

    #[test]
    fn layout_and_clean_env() {
        let env = TestEnv::new();
        assert!(env.store.is_dir() && env.home.is_dir() && env.work.is_dir());
        assert!(!env.mount.exists());
        let out = run_ok(env.command(Path::new("env")).env("EXTRA", "x"));
        let text = stdout(&out);
        let mut keys: Vec<&str> = text
            .lines()
            .filter_map(|line| line.split('=').next())
            .collect();
        keys.sort_unstable();
        for key in [
            "CHECKPOINT_DISABLE",
            "EXTRA",
            "HOME",
            "LANG",
            "PATH",
            "TF_IN_AUTOMATION",
            "TMPDIR",
            "TSTORE_HOME",
            "TSTORE_MOUNT",
            "XDG_CACHE_HOME",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
        ] {
            assert!(keys.contains(&key), "{key} missing from {text}");
        }
        assert!(text.contains(&format!("TSTORE_HOME={}\n", env.store.display())));
        assert!(!keys.contains(&"TF_CLI_CONFIG_FILE"));
    }

    #[test]
    fn checkout_and_cli_config() {
        let env = TestEnv::new();
        let dir = env.checkout("a", &[("main.tf", "x"), ("modules/m/main.tf", "y")]);
        assert_eq!(dir, env.work.join("a"));
        assert_eq!(
            fs_err::read_to_string(dir.join("modules/m/main.tf")).unwrap(),
            "y"
        );
        let first = env.cli_config_fs_mirror(Path::new("/m/\"q\""));
        let second = env.cli_config_fs_mirror(Path::new("/m2"));
        assert_ne!(first, second);
        assert_eq!(
            fs_err::read_to_string(first).unwrap(),
            "provider_installation {\n  filesystem_mirror {\n    path = \"/m/\\\"q\\\"\"\n  }\n}\n"
        );
    }

    #[test]
    fn drop_removes_read_only_trees() {
        let env = TestEnv::new();
        let root = env.root.path().to_path_buf();
        let view = env.store.join("views/a");
        fs_err::create_dir_all(&view).unwrap();
        fs_err::write(view.join("f"), "x").unwrap();
        fs_err::set_permissions(&view, std::fs::Permissions::from_mode(0o555)).unwrap();
        fs_err::set_permissions(
            env.store.join("views"),
            std::fs::Permissions::from_mode(0o555),
        )
        .unwrap();
        drop(env);
        assert!(!root.exists());
    }
}
