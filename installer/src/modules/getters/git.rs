//! Git packages (`URL[?ref=…&depth=…]`) through the real `git` command, as tofu's go-getter
//! `git` getter does
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getmodules/getter.go>).
//!
//! A package is a repository at one commit. The ref is resolved with `git ls-remote` (cheap,
//! and it re-resolves branches and moved tags every init); a full commit id is taken as is.
//! Only when the store lacks that commit's package is the repository cloned.

use crate::modules::FetchError;
use crate::redact::{display_url, scrub};
use std::path::Path;
use tstore_process::Command;

/// The query parameters of a git address that tstore understands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GitAddress {
    /// The repository URL without `ref`/`depth`/`sshkey`.
    pub repo: String,
    /// `?ref=`.
    pub reference: Option<String>,
    /// `?depth=`.
    pub depth: Option<u32>,
}

impl GitAddress {
    /// Parse `URL[?ref=…&depth=…]`.
    pub(crate) fn parse(url: &str) -> Result<GitAddress, FetchError> {
        let (repo, query) = match url.split_once('?') {
            Some((r, q)) => (r, q),
            None => (url, ""),
        };
        let mut out = GitAddress {
            repo: repo.to_owned(),
            ..GitAddress::default()
        };
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "ref" => out.reference = Some(v.to_owned()),
                "depth" => {
                    out.depth = Some(v.parse().map_err(|_| {
                        FetchError::Address(format!("depth {v:?} is not a number"))
                    })?);
                }
                "sshkey" => {
                    return Err(FetchError::Address(
                        "sshkey= is not supported by tstore".into(),
                    ))
                }
                _ => rest.push(pair),
            }
        }
        if !rest.is_empty() {
            out.repo = format!("{}?{}", out.repo, rest.join("&"));
        }
        Ok(out)
    }
}

/// The address of commit `commit` of the repository `url` names (its other query
/// parameters kept, `ref` replaced, `depth` dropped: a commit below a shallow clone's depth
/// could not be checked out).
pub(crate) fn at_commit(url: &str, commit: &str) -> Result<String, FetchError> {
    let addr = GitAddress::parse(url)?;
    let sep = if addr.repo.contains('?') { '&' } else { '?' };
    Ok(format!("{}{sep}ref={commit}", addr.repo))
}

/// A full 40-hex commit id.
pub(crate) fn is_full_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The transports tstore lets git use for a source address: go-getter's git getter's own
/// (`git::fd::0`, `git::ext::…` are refused by git at once, never run or waited on).
pub(super) const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";

/// `git` under the process runner's isolation (a private empty directory, no repository
/// discovery, no hooks), never prompting, limited to the getter's transports.
pub(super) fn git() -> Command {
    let mut c = Command::git();
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        // A stalled HTTP(S) remote fails as a stalled download does (under 1 KiB in 30 s,
        // `net::http`'s rule), instead of holding the init forever.
        .env("GIT_HTTP_LOW_SPEED_LIMIT", "35")
        .env("GIT_HTTP_LOW_SPEED_TIME", "30")
        .arg("-c")
        .arg("advice.detachedHead=false")
        // A package's bytes are the repository's, whatever this machine's git settings:
        // line-ending conversion would change its files and so its `h1:` from one machine
        // to the next (the repository's own `.gitattributes` still apply, everywhere alike).
        .arg("-c")
        .arg("core.autocrlf=false");
    c
}

/// Run `cmd`; its stdout, or an error saying `what` failed and why. `what` names a URL as
/// [`display_url`] shows it; git's stderr, which quotes the URLs it was given, credentials
/// and all, is scrubbed of them before it goes into the error.
pub(super) fn run(mut cmd: Command, what: &str) -> Result<String, FetchError> {
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let what = scrub(what, &args);
    let out = cmd.output().map_err(|source| FetchError::GitSpawn {
        what: what.clone(),
        source,
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(FetchError::Git {
            what,
            stderr: scrub(stderr.trim(), &args),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What kind of ref a name resolved to at the remote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefKind {
    /// `HEAD` or a branch: it moves, forward as commits land.
    Branch,
    /// A tag: it should never move.
    Tag,
    /// A full commit id given as the ref: it names itself.
    Commit,
}

/// What `git ls-remote` answered a run, by (repository, ref): a run over many roots
/// (`init DIR...`, in parallel) asks each once.
pub(crate) type RefAnswers =
    super::asked_once::AskedOnce<(String, String), Option<(String, RefKind)>>;

/// The commit `reference` (default `HEAD`) names in `repo`, via `git ls-remote` (once per
/// run); `None` when no ref of that name exists (it may still be an abbreviated commit id).
pub(crate) fn resolve(run: &crate::Run, addr: &GitAddress) -> Result<Option<String>, FetchError> {
    Ok(resolve_ref(run, addr)?.map(|(commit, _)| commit))
}

/// [`resolve`], with the kind of ref the name is at the remote.
pub(crate) fn resolve_ref(
    run: &crate::Run,
    addr: &GitAddress,
) -> Result<Option<(String, RefKind)>, FetchError> {
    if let Some(r) = &addr.reference {
        if is_full_sha(r) {
            return Ok(Some((r.to_ascii_lowercase(), RefKind::Commit)));
        }
    }
    let key = (
        addr.repo.clone(),
        addr.reference.clone().unwrap_or_else(|| "HEAD".into()),
    );
    run.refs.get_or_ask(key, || ls_remote(addr))
}

/// [`resolve_ref`]'s question to the remote.
fn ls_remote(addr: &GitAddress) -> Result<Option<(String, RefKind)>, FetchError> {
    let name = addr.reference.as_deref().unwrap_or("HEAD");
    let mut cmd = git();
    cmd.arg("ls-remote").arg("--").arg(&addr.repo).arg(name);
    if name != "HEAD" {
        cmd.arg(format!("{name}^{{}}"));
    }
    let out = run(cmd, &format!("ls-remote {}", display_url(&addr.repo)))?;
    let mut refs = std::collections::BTreeMap::new();
    for line in out.lines() {
        if let Some((sha, r)) = line.split_once('\t') {
            refs.insert(r.to_owned(), sha.to_owned());
        }
    }
    let candidates = if name == "HEAD" {
        vec![("HEAD".to_owned(), RefKind::Branch)]
    } else {
        vec![
            (format!("refs/tags/{name}^{{}}"), RefKind::Tag),
            (format!("refs/tags/{name}"), RefKind::Tag),
            (format!("refs/heads/{name}"), RefKind::Branch),
            (name.to_owned(), RefKind::Branch),
        ]
    };
    Ok(candidates
        .iter()
        .find_map(|(c, kind)| refs.get(c).map(|sha| (sha.clone(), *kind))))
}

/// The tags of `addr`'s repository that are semantic versions newer than `than` (a tag
/// name, with or without `v`), newest first, each with the commit it names (an annotated
/// tag: the commit it points to). `than` not a version: none.
pub(crate) fn newer_version_tags(
    addr: &GitAddress,
    than: &str,
) -> Result<Vec<(String, String)>, FetchError> {
    let Ok(current) = tstore_tofu::version::Version::parse_lenient(than) else {
        return Ok(Vec::new());
    };
    let mut cmd = git();
    cmd.arg("ls-remote").arg("--tags").arg("--").arg(&addr.repo);
    let out = run(
        cmd,
        &format!("ls-remote --tags {}", display_url(&addr.repo)),
    )?;
    let mut tags: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for line in out.lines() {
        let Some((sha, r)) = line.split_once('\t') else {
            continue;
        };
        let Some(name) = r.strip_prefix("refs/tags/") else {
            continue;
        };
        match name.strip_suffix("^{}") {
            // The commit an annotated tag points to wins over the tag object.
            Some(peeled) => {
                tags.insert(peeled.to_owned(), sha.to_owned());
            }
            None => {
                tags.entry(name.to_owned())
                    .or_insert_with(|| sha.to_owned());
            }
        }
    }
    let mut newer: Vec<(tstore_tofu::version::Version, String, String)> = tags
        .into_iter()
        .filter_map(|(name, sha)| {
            let version = tstore_tofu::version::Version::parse_lenient(&name).ok()?;
            (!version.is_prerelease() && version.cmp_precedence(&current).is_gt())
                .then_some((version, name, sha))
        })
        .collect();
    newer.sort_by(|a, b| b.0.cmp_precedence(&a.0));
    Ok(newer
        .into_iter()
        .map(|(_, name, sha)| (name, sha))
        .collect())
}

/// Clone `addr` into `dest` (must not exist) at its ref; returns the checked-out commit.
pub(crate) fn checkout(addr: &GitAddress, dest: &Path) -> Result<String, FetchError> {
    let sha_ref = addr
        .reference
        .as_deref()
        .filter(|r| r.len() >= 4 && r.bytes().all(|b| b.is_ascii_hexdigit()) && !r.contains('.'));
    let mut cmd = git();
    cmd.arg("clone").arg("--quiet");
    if let Some(d) = addr.depth {
        cmd.arg(format!("--depth={d}"));
    }
    match (&addr.reference, sha_ref) {
        (Some(r), None) => {
            cmd.arg("--branch").arg(r);
        }
        (Some(_), Some(_)) => {
            cmd.arg("--no-checkout");
        }
        _ => {}
    }
    cmd.arg("--").arg(&addr.repo).arg(dest);
    run(cmd, &format!("clone {}", display_url(&addr.repo)))?;
    if let Some(sha) = sha_ref {
        let mut cmd = git();
        cmd.arg("-C")
            .arg(dest)
            .arg("checkout")
            .arg("--quiet")
            .arg("--detach")
            .arg(sha);
        run(cmd, &format!("checkout {sha}")).map_err(|e| match e {
            FetchError::Git { what, stderr } => FetchError::Git {
                what,
                stderr: format!("{stderr} (unknown revision {sha:?})"),
            },
            other => other,
        })?;
    }
    // Submodules belong to the package, as go-getter fetches them (`git submodule update
    // --init --recursive`). Their transports follow the user's git configuration: git
    // refuses `file://` submodules unless `protocol.file.allow` says otherwise.
    if dest.join(".gitmodules").is_file() {
        let mut cmd = git();
        // The submodules' URLs come from the repository, not from the user: git's own
        // policy for them (`file` refused unless `protocol.file.allow` says otherwise, `fd`
        // and `ext` refused) applies, not the list tstore allows the source address (a
        // `GIT_ALLOW_PROTOCOL` would replace that policy).
        cmd.env_remove("GIT_ALLOW_PROTOCOL");
        cmd.arg("-C")
            .arg(dest)
            .args(["submodule", "update", "--init", "--recursive"]);
        if let Some(d) = addr.depth {
            cmd.arg(format!("--depth={d}"));
        }
        run(
            cmd,
            &format!("submodule update in {}", display_url(&addr.repo)),
        )?;
    }
    let mut cmd = git();
    cmd.arg("-C").arg(dest).arg("rev-parse").arg("HEAD");
    Ok(run(cmd, "rev-parse HEAD")?.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_is_split() {
        let a = GitAddress::parse("file:///B/repo.git?ref=v1.0.0&depth=1").unwrap();
        assert_eq!(a.repo, "file:///B/repo.git");
        assert_eq!(a.reference.as_deref(), Some("v1.0.0"));
        assert_eq!(a.depth, Some(1));
        assert!(is_full_sha("3fbb99d1be850365f85d62321a7e5865d45ba643"));
    }

    fn env_of<'a>(cmd: &'a Command, name: &str) -> Option<&'a std::ffi::OsStr> {
        cmd.get_envs()
            .filter(|(k, _)| *k == name)
            .last()
            .and_then(|(_, v)| v)
    }

    #[test]
    fn git_commands_allow_only_the_getter_transports_and_never_prompt() {
        let cmd = git();
        assert_eq!(
            env_of(&cmd, "GIT_ALLOW_PROTOCOL"),
            Some(std::ffi::OsStr::new("file:git:http:https:ssh"))
        );
        assert_eq!(
            env_of(&cmd, "GIT_TERMINAL_PROMPT"),
            Some(std::ffi::OsStr::new("0"))
        );
        assert_eq!(
            env_of(&cmd, "GIT_HTTP_LOW_SPEED_TIME"),
            Some(std::ffi::OsStr::new("30"))
        );
    }

    #[test]
    fn fd_and_ext_transports_are_refused_at_once() {
        for repo in ["fd::0", "ext::sh -c true"] {
            let addr = GitAddress::parse(repo).unwrap();
            match ls_remote(&addr) {
                Err(FetchError::Git { stderr, .. }) => {
                    assert!(stderr.contains("not allowed"), "{repo}: {stderr}")
                }
                other => panic!("{repo}: {other:?}"),
            }
        }
    }

    #[test]
    fn git_errors_do_not_echo_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let repo = format!(
            "file://user:S3CRET@localhost{}/missing.git?private_token=T0KEN",
            dir.path().display()
        );
        let addr = GitAddress::parse(&repo).unwrap();
        let e = ls_remote(&addr).unwrap_err();
        let shown = format!("{e}");
        assert!(shown.contains("ls-remote file://user@localhost"), "{shown}");
        assert!(
            !shown.contains("S3CRET") && !shown.contains("T0KEN"),
            "{shown}"
        );
        let e = checkout(&addr, &dir.path().join("dest")).unwrap_err();
        let shown = format!("{e}");
        assert!(
            !shown.contains("S3CRET") && !shown.contains("T0KEN"),
            "{shown}"
        );
    }

    #[test]
    fn at_commit_replaces_the_ref_and_keeps_other_parameters() {
        let c = "3fbb99d1be850365f85d62321a7e5865d45ba643";
        assert_eq!(
            at_commit("https://h/r.git?ref=v1&depth=1", c).unwrap(),
            format!("https://h/r.git?ref={c}")
        );
        assert_eq!(
            at_commit("https://h/r.git?x=y&ref=v1", c).unwrap(),
            format!("https://h/r.git?x=y&ref={c}")
        );
    }
}
