//! One local bare repository per remote git URL (`git-cache/` in the store), from which
//! each package is checked out: a tag or branch is fetched shallow (`--depth 1`, or the
//! call's own `?depth=`), only its commit and what that commit needs, and a second tag of
//! the same repository fetches only what the first did not bring.
//!
//! Rules:
//! - A repository is named by the SHA-256 of its URL's identity
//!   (`redact::url_identity`: the exact URL as the `url` crate parses it, without user
//!   information; never the URL itself, which may carry a token), so two URLs of different
//!   hosts never share one; the URL is given to `git fetch` on the command line, never
//!   written into the repository's configuration.
//! - Fetches into one repository are serialized by a lock file beside it (inits of several
//!   checkouts may fetch the same URL at once); a fetched commit gets a ref of its own
//!   (`refs/tstore/COMMIT`), so git never prunes it, and automatic `git gc` is off.
//! - A package is checked out with its own index file (`read-tree` + `checkout-index`, the
//!   repository's attributes applied as a clone applies them); a commit with submodules is
//!   cloned instead (`git::checkout`), as go-getter fetches them.
//! - A full commit id is fetched directly where the server allows it; an abbreviated one,
//!   or a server that refuses, fetches every branch and tag.
//! - The cache may be dropped at any time: `gc` removes repositories unused for its grace
//!   period (the mtime of `tstore-used`, touched by every use).

use std::fs::File;
use std::os::unix::fs::DirBuilderExt as _;

use fs_err::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::git::{self, GitAddress};
use crate::modules::FetchError;
use crate::redact::display_url;

/// The directory of cached repositories.
pub(crate) struct GitCache {
    dir: PathBuf,
}

/// What [`GitCache::reaches`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reached {
    /// The ref's commit `tip` is the commit or descends from it.
    Yes { tip: String },
    /// The commit exists at the remote but the ref (at `tip`) does not reach it.
    No { tip: String },
    /// The remote has no such commit (the ref is at `tip`).
    Gone { tip: String },
}

/// What marks a cached repository's last use (gc drops repositories unused for a while).
pub(crate) const USED_STAMP: &str = "tstore-used";

impl GitCache {
    pub(crate) fn new(dir: PathBuf) -> GitCache {
        GitCache { dir }
    }

    /// The cached repository of `url` (credentials left out of its name).
    fn repo_for(&self, url: &str) -> PathBuf {
        let key = crate::redact::url_identity(url);
        let digest = Sha256::digest(key.as_bytes());
        self.dir.join(format!("{}.git", &hex::encode(digest)[..32]))
    }

    /// Check `addr` out into `dest` (which must not exist) through the cached repository
    /// of its URL; returns the commit checked out.
    pub(crate) fn checkout(&self, addr: &GitAddress, dest: &Path) -> Result<String, FetchError> {
        let repo = self.repo_for(&addr.repo);
        let _lock = self.lock(&repo)?;
        self.ensure_repo(&repo)?;
        let commit = fetch(&repo, addr)?;
        let mut keep = git_in(&repo);
        keep.args(["update-ref", &format!("refs/tstore/{commit}"), &commit]);
        git::run(keep, "update-ref")?;
        touch(&repo.join(USED_STAMP))?;
        drop(_lock);
        let mut has_submodules = git_in(&repo);
        has_submodules.args(["cat-file", "-e", &format!("{commit}:.gitmodules")]);
        if git::run(has_submodules, "cat-file").is_ok() {
            // Submodules need a repository of their own in the package's checkout.
            return git::checkout(addr, dest);
        }
        check_out(&repo, &commit, dest)?;
        Ok(commit)
    }

    /// Whether `reference` of `addr`'s repository, which names commit `tip` at the remote
    /// now, reaches `commit` (`tip` itself or an ancestor of it). The ref's whole history is
    /// fetched into the cached repository (only the repository's own branches and tags are
    /// ever fetched, never other refs); a commit not in that history is asked for by id, to
    /// tell a commit the ref does not reach ([`Reached::No`]) from one the remote does not
    /// have ([`Reached::Gone`]).
    pub(crate) fn reaches(
        &self,
        addr: &GitAddress,
        tip: &str,
        commit: &str,
    ) -> Result<Reached, FetchError> {
        let repo = self.repo_for(&addr.repo);
        let _lock = self.lock(&repo)?;
        self.ensure_repo(&repo)?;
        let reference = addr.reference.as_deref().unwrap_or("HEAD");
        // The whole history of the ref: a repository made shallow by earlier fetches is
        // deepened to the root along it.
        let mut cmd = git_in(&repo);
        cmd.args([
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--depth=2147483647",
            "--",
        ])
        .arg(&addr.repo)
        .arg(format!("+{reference}:refs/tstore/reach"));
        git::run(cmd, &format!("fetch {}", display_url(&addr.repo)))?;
        let fetched_tip = rev_parse(&repo, "refs/tstore/reach")?;
        if !fetched_tip.eq_ignore_ascii_case(tip) {
            // The ref moved between the question and the fetch: judged against what was
            // fetched.
            tracing::debug!("{reference} moved from {tip} to {fetched_tip} while it was checked");
        }
        let present = |commit: &str| {
            let mut cmd = git_in(&repo);
            cmd.args(["cat-file", "-e", &format!("{commit}^{{commit}}")]);
            git::run(cmd, "cat-file").is_ok()
        };
        if !present(commit) {
            let mut by_id = git_in(&repo);
            by_id
                .args([
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--depth=1",
                    "--",
                ])
                .arg(&addr.repo)
                .arg(commit);
            let _ = git::run(by_id, &format!("fetch {}", display_url(&addr.repo)));
            // Not in the ref's whole history: not reached, whatever else the remote has.
            return Ok(if present(commit) {
                Reached::No { tip: fetched_tip }
            } else {
                Reached::Gone { tip: fetched_tip }
            });
        }
        let mut ancestor = git_in(&repo);
        ancestor.args(["merge-base", "--is-ancestor", commit, &fetched_tip]);
        let reached = git::run(ancestor, "merge-base").is_ok();
        touch(&repo.join(USED_STAMP))?;
        Ok(if reached {
            Reached::Yes { tip: fetched_tip }
        } else {
            Reached::No { tip: fetched_tip }
        })
    }

    /// Hold the lock of `repo` while its refs and objects change.
    fn lock(&self, repo: &Path) -> Result<File, FetchError> {
        // Private whatever the umask, as every directory of the store.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(FetchError::from)?;
        let path = repo.with_extension("lock");
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(FetchError::from)?
            .into_parts()
            .0;
        file.lock().map_err(FetchError::from)?;
        Ok(file)
    }

    /// Create the bare repository `repo` if it does not exist yet (under a temporary name,
    /// renamed into place: a half-made repository is never used).
    fn ensure_repo(&self, repo: &Path) -> Result<(), FetchError> {
        if repo.join("HEAD").is_file() {
            return Ok(());
        }
        let temp = repo.with_extension("new");
        if temp.exists() {
            fs_err::remove_dir_all(&temp).map_err(FetchError::from)?;
        }
        let mut init = git::git();
        // `--shared=0600`: the repository's files 0600 and directories 0700, whatever the
        // umask, now and for every later fetch (git keeps it as `core.sharedRepository`).
        init.args(["init", "--bare", "--quiet", "--shared=0600"])
            .arg(&temp);
        git::run(init, "init --bare")?;
        let mut config = git_in(&temp);
        config.args(["config", "gc.auto", "0"]);
        git::run(config, "config")?;
        fs_err::rename(&temp, repo).map_err(FetchError::from)?;
        Ok(())
    }
}

/// `git` with `repo` as its repository.
fn git_in(repo: &Path) -> tstore_process::Command {
    let mut cmd = git::git();
    cmd.arg("--git-dir").arg(repo);
    cmd
}

/// Fetch what `addr` names into `repo`; the commit it resolves to.
fn fetch(repo: &Path, addr: &GitAddress) -> Result<String, FetchError> {
    let depth = format!("--depth={}", addr.depth.unwrap_or(1));
    let reference = addr.reference.as_deref().unwrap_or("HEAD");
    let sha_like = reference.len() >= 4
        && reference.bytes().all(|b| b.is_ascii_hexdigit())
        && addr.reference.is_some();
    if !sha_like || git::is_full_sha(reference) {
        // A name (tag, branch, HEAD) or a full commit id: only it, shallow.
        let mut cmd = git_in(repo);
        cmd.args(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"])
            .arg(&depth)
            .arg("--")
            .arg(&addr.repo)
            .arg(format!("+{reference}:refs/tstore/fetched"));
        match git::run(cmd, &format!("fetch {}", display_url(&addr.repo))) {
            Ok(_) => return rev_parse(repo, "refs/tstore/fetched"),
            Err(e) if !sha_like => return Err(ref_error(addr, e)),
            Err(_) => {} // The server refuses a commit id: everything, below.
        }
    }
    let mut all = git_in(repo);
    all.args(["fetch", "--quiet", "--no-write-fetch-head"])
        .arg("--")
        .arg(&addr.repo)
        .args([
            "+refs/heads/*:refs/tstore/heads/*",
            "+refs/tags/*:refs/tstore/tags/*",
        ]);
    git::run(all, &format!("fetch {}", display_url(&addr.repo)))?;
    rev_parse(repo, reference).map_err(|e| match e {
        FetchError::Git { what, stderr } => FetchError::Git {
            what,
            stderr: format!("{stderr} (unknown revision {reference:?})"),
        },
        other => other,
    })
}

/// The commit `rev` names in `repo`.
fn rev_parse(repo: &Path, rev: &str) -> Result<String, FetchError> {
    let mut cmd = git_in(repo);
    cmd.args([
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{rev}^{{commit}}"),
    ]);
    Ok(git::run(cmd, &format!("rev-parse {rev}"))?
        .trim()
        .to_owned())
}

/// A ref the remote does not have, in the words of the clone this replaced.
fn ref_error(addr: &GitAddress, e: FetchError) -> FetchError {
    match (e, &addr.reference) {
        (FetchError::Git { stderr, .. }, Some(r))
            if stderr.contains("couldn't find remote ref") =>
        {
            FetchError::NoSuchRef {
                repo: addr.repo.clone(),
                reference: r.clone(),
            }
        }
        (e, _) => e,
    }
}

/// Write commit `commit` of `repo` into the new directory `dest`, with an index file of its
/// own (so concurrent checkouts of one repository never share one).
fn check_out(repo: &Path, commit: &str, dest: &Path) -> Result<(), FetchError> {
    fs_err::create_dir_all(dest).map_err(FetchError::from)?;
    let index = tempfile::NamedTempFile::new().map_err(FetchError::from)?;
    let index_path = index.path().to_owned();
    // git wants to create the index itself.
    drop(index);
    let with_tree = |args: &[&str]| {
        let mut cmd = git_in(repo);
        cmd.arg("--work-tree")
            .arg(dest)
            .env("GIT_INDEX_FILE", &index_path)
            .args(args);
        cmd
    };
    let result = git::run(with_tree(&["read-tree", commit]), "read-tree").and_then(|_| {
        git::run(
            with_tree(&["checkout-index", "--all", "--force"]),
            "checkout-index",
        )
    });
    let _ = std::fs::remove_file(&index_path);
    result.map(drop)
}

fn touch(path: &Path) -> Result<(), FetchError> {
    let file = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(FetchError::from)?;
    file.set_modified(std::time::SystemTime::now())
        .map_err(FetchError::from)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_whose_query_names_another_host_gets_a_repository_of_its_own() {
        let cache = GitCache::new(PathBuf::from("/cache"));
        let real = cache.repo_for("https://real.example/org/repo.git");
        // git (curl) fetches this one from evil.example: the authority ends at `?`.
        let hostile = cache.repo_for("https://evil.example?x=@real.example/org/repo.git");
        assert_ne!(real, hostile);
        assert_ne!(
            real,
            cache.repo_for("https://evil.example#@real.example/org/repo.git")
        );
        // Credentials are not part of the name; the rest of the URL is.
        assert_eq!(
            real,
            cache.repo_for("https://TOKEN@real.example/org/repo.git")
        );
        assert_ne!(real, cache.repo_for("https://real.example/org/other.git"));
    }

    #[test]
    fn fetch_errors_do_not_echo_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let cache = GitCache::new(dir.path().join("cache"));
        for reference in [None, Some("v1".to_owned()), Some("abc123".to_owned())] {
            let addr = GitAddress {
                repo: format!(
                    "file://git:S3CRET@localhost{}/missing.git?token=T0KEN",
                    dir.path().display()
                ),
                reference,
                depth: None,
            };
            let e = cache.checkout(&addr, &dir.path().join("dest")).unwrap_err();
            let shown = e.to_string();
            assert!(shown.contains("file://git@localhost"), "{shown}");
            assert!(
                !shown.contains("S3CRET") && !shown.contains("T0KEN"),
                "{shown}"
            );
        }
    }
}
