//! [`GitRepo`]: git repositories made by a test, for `git::file://…` module sources.
//!
//! Every git run is isolated and reproducible: no system configuration
//! (`GIT_CONFIG_NOSYSTEM=1`), `HOME` the directory holding the repository (no user
//! configuration), author and committer `t <t@t>`, both dated `2024-01-01T00:00:00Z`.
//!
//! ```no_run
//! use std::path::Path;
//! use tstore_test_support::GitRepo;
//!
//! let base = Path::new("/tmp/t/git");
//! // `<base>/mod-src` holding main.tf, committed, tagged v1, cloned bare to `<base>/mod.git`.
//! let work = GitRepo::init(base.join("mod-src"), &[("main.tf", "output \"x\" {\n  value = 1\n}\n")]);
//! let bare = work.commit("init").tag("v1").clone_bare(base.join("mod.git"));
//! let source = bare.source("v1"); // git::file://<base>/mod.git?ref=v1
//! // Later: move the tag to new content, in the working copy and the bare repository.
//! work.write(&[("main.tf", "output \"x\" {\n  value = 2\n}\n")])
//!     .commit("moved")
//!     .move_tag("v1")
//!     .force_push(bare.path(), &["main", "refs/tags/v1"]);
//! ```

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::run_ok;

/// The date of every commit and tag a [`GitRepo`] makes.
pub const GIT_DATE: &str = "2024-01-01T00:00:00Z";

/// A git repository (a working copy, or a bare repository) at [`GitRepo::path`]. Its
/// methods run git there with the isolation described in [the module docs](self), and
/// panic with git's output unless it succeeds. Commands chain: each returns `&self`.
#[derive(Debug, Clone)]
pub struct GitRepo {
    dir: PathBuf,
    file_protocol: bool,
}

impl GitRepo {
    /// Create `dir` (and its parents), write `files` into it (relative path → content;
    /// parent dirs are created) and `git init -q -b main` there. Nothing is committed.
    #[track_caller]
    pub fn init(dir: impl Into<PathBuf>, files: &[(&str, &str)]) -> GitRepo {
        let repo = GitRepo::open(dir);
        fs_err::create_dir_all(&repo.dir).expect("create the repository's dir");
        repo.write(files);
        repo.git(["init", "-q", "-b", "main", "."]);
        repo
    }

    /// The repository already at `dir` (a working copy or a bare repository).
    pub fn open(dir: impl Into<PathBuf>) -> GitRepo {
        GitRepo {
            dir: dir.into(),
            file_protocol: false,
        }
    }

    /// Allow `file://` submodules (`protocol.file.allow=always`, which git refuses by
    /// default) in every later git run of this handle.
    pub fn allow_file_protocol(mut self) -> GitRepo {
        self.file_protocol = true;
        self
    }

    /// The repository's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The `git::file://` source of this repository at `reference`:
    /// `git::file://<path>?ref=<reference>`.
    pub fn source(&self, reference: &str) -> String {
        format!("git::file://{}?ref={reference}", self.dir.display())
    }

    /// Write `files` into the working copy (relative path → content; parent dirs are
    /// created). Nothing is staged.
    #[track_caller]
    pub fn write(&self, files: &[(&str, &str)]) -> &GitRepo {
        for (path, contents) in files {
            let path = self.dir.join(path);
            if let Some(parent) = path.parent() {
                fs_err::create_dir_all(parent).expect("create a dir in the repository");
            }
            fs_err::write(&path, contents).expect("write a file of the repository");
        }
        self
    }

    /// `git add -A && git commit -qm MESSAGE`: everything in the working copy.
    #[track_caller]
    pub fn commit(&self, message: &str) -> &GitRepo {
        self.git(["add", "-A"]);
        self.git(["commit", "-qm", message]);
        self
    }

    /// `git tag NAME` (a lightweight tag of `HEAD`).
    #[track_caller]
    pub fn tag(&self, name: &str) -> &GitRepo {
        self.git(["tag", name]);
        self
    }

    /// `git tag -f NAME`: the tag moves to `HEAD`.
    #[track_caller]
    pub fn move_tag(&self, name: &str) -> &GitRepo {
        self.git(["tag", "-f", name]);
        self
    }

    /// `git tag -d NAME`.
    #[track_caller]
    pub fn delete_tag(&self, name: &str) -> &GitRepo {
        self.git(["tag", "-d", name]);
        self
    }

    /// `git checkout -q -b NAME`: a new branch at `HEAD`, checked out.
    #[track_caller]
    pub fn branch(&self, name: &str) -> &GitRepo {
        self.git(["checkout", "-q", "-b", name]);
        self
    }

    /// `git checkout -q NAME`.
    #[track_caller]
    pub fn checkout(&self, name: &str) -> &GitRepo {
        self.git(["checkout", "-q", name]);
        self
    }

    /// A module repository with one commit of `files`, tagged `v1`: the working copy at
    /// `BASE/NAME`, and the bare repository `BASE/NAME.git` a call's source names (returned).
    #[track_caller]
    pub fn tagged_module(base: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
        GitRepo::init(base.join(name), files)
            .commit("one")
            .tag("v1")
            .clone_bare(base.join(format!("{name}.git")))
            .path()
            .to_owned()
    }

    /// `git clone -q --bare . TO`; the bare repository.
    #[track_caller]
    pub fn clone_bare(&self, to: impl Into<PathBuf>) -> GitRepo {
        let to = to.into();
        let mut args = vec![
            OsStr::new("clone"),
            OsStr::new("-q"),
            OsStr::new("--bare"),
            OsStr::new("."),
        ];
        args.push(to.as_os_str());
        self.git(args);
        GitRepo {
            dir: to,
            file_protocol: self.file_protocol,
        }
    }

    /// `git push -q TO REFS...`.
    #[track_caller]
    pub fn push(&self, to: &Path, refs: &[&str]) -> &GitRepo {
        let mut args = vec![OsStr::new("push"), OsStr::new("-q"), to.as_os_str()];
        args.extend(refs.iter().map(OsStr::new));
        self.git(args);
        self
    }

    /// `git push -q --force TO REFS...`.
    #[track_caller]
    pub fn force_push(&self, to: &Path, refs: &[&str]) -> &GitRepo {
        let mut args = vec![
            OsStr::new("push"),
            OsStr::new("-q"),
            OsStr::new("--force"),
            to.as_os_str(),
        ];
        args.extend(refs.iter().map(OsStr::new));
        self.git(args);
        self
    }

    /// The commit `name` (a ref, a tag or `HEAD`) resolves to: `git rev-parse NAME`.
    #[track_caller]
    pub fn rev(&self, name: &str) -> String {
        self.git(["rev-parse", name]).trim().to_owned()
    }

    /// The commit `HEAD` resolves to.
    #[track_caller]
    pub fn head(&self) -> String {
        self.rev("HEAD")
    }

    /// Run `git ARGS...` in the repository; panics with its output unless it succeeds.
    /// Returns its stdout.
    #[track_caller]
    pub fn git<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = run_ok(self.command().args(args));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A `git` command run in the repository, isolated (see [the module docs](self)).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        // `HOME` is the directory holding the repository: no user configuration.
        let home = self.dir.parent().unwrap_or(&self.dir);
        cmd.current_dir(&self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", home)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .env("GIT_AUTHOR_DATE", GIT_DATE)
            .env("GIT_COMMITTER_DATE", GIT_DATE);
        if self.file_protocol {
            cmd.env("GIT_CONFIG_COUNT", "1")
                .env("GIT_CONFIG_KEY_0", "protocol.file.allow")
                .env("GIT_CONFIG_VALUE_0", "always");
        }
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_tag_clone_move_and_push() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let work = GitRepo::init(
            base.join("src"),
            &[("main.tf", "one\n"), ("a/b.txt", "b\n")],
        );
        let bare = work
            .commit("one")
            .tag("v1")
            .clone_bare(base.join("src.git"));
        assert_eq!(
            bare.source("v1"),
            format!("git::file://{}/src.git?ref=v1", base.display())
        );
        let first = bare.rev("v1");
        assert_eq!(first, work.head());
        assert_eq!(first.len(), 40);
        // The same contents, message and dates: the same commit, wherever it is made.
        let again = GitRepo::init(
            base.join("again"),
            &[("main.tf", "one\n"), ("a/b.txt", "b\n")],
        );
        assert_eq!(again.commit("one").head(), first);

        work.write(&[("main.tf", "two\n")])
            .commit("two")
            .move_tag("v1")
            .force_push(bare.path(), &["main", "refs/tags/v1"]);
        assert_ne!(bare.rev("v1"), first);
        assert_eq!(bare.rev("v1"), bare.rev("main"));
        bare.delete_tag("v1");
        assert!(run_ok(bare.command().args(["tag", "-l"])).stdout.is_empty());

        work.branch("feature").write(&[("x", "x\n")]).commit("x");
        work.checkout("main");
        assert_ne!(work.rev("feature"), work.rev("main"));
        let log = work.git(["log", "-1", "--format=%an <%ae> %aI %cI"]);
        assert_eq!(
            log.trim(),
            "t <t@t> 2024-01-01T00:00:00Z 2024-01-01T00:00:00Z"
        );
    }
}
