//! A locked git commit is installed only where the ref its call names reaches it: the ref's
//! commit, or an ancestor of it. Without this rule, a lock entry edited to keep its ref but
//! name a commit of another branch (with that commit's `h1:`) installs wherever a store
//! happens to hold that commit, and fails everywhere else.
//!
//! The answer comes from the remote (`ls-remote` of the ref, then the ref's history in the
//! git cache), or from this machine's own record of an earlier positive answer, kept in the
//! user's state directory (`$XDG_STATE_HOME/tstore/git-reach.json`), never in the store: a
//! restored cache's records never count. So one lock gives the same answer on every runner
//! that can ask the remote:
//!
//! - the ref's commit is the locked one: installed;
//! - the ref moved on and still reaches it (a branch with new commits): the locked commit
//!   is installed, and it is said; a tag that moved is said louder (tags should not move);
//! - the ref does not reach it, the remote lacks it, or the ref is gone: refused, naming
//!   both commits and `-upgrade`;
//! - the remote cannot be asked and no record exists (an outage): refused, naming
//!   `TSTORE_TRUST_LOCK=1` / `--trust-lock`; with that opt-in the lock's checksums alone
//!   decide, and the refs left unchecked are said.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::git::{self, GitAddress, RefKind};
use super::git_cache::{GitCache, Reached};
use crate::modules::FetchError;

/// How a locked commit's ref was found to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The ref names the commit: it is the ref's commit now, or the call names it by id.
    Same,
    /// This machine checked it before.
    Recorded,
    /// The ref moved on from the commit (to `tip`) and still reaches it.
    MovedOn { tip: String, kind: RefKind },
    /// Not checked: the remote could not be asked (`why`), and the user trusts the lock.
    Unchecked { why: String },
}

/// Whether `addr`'s ref reaches `locked` (module docs). `records` is the record file, if
/// the user has a state directory; `trust` is the outage opt-in.
pub(crate) fn check(
    addr: &GitAddress,
    locked: &str,
    cache: &GitCache,
    records: Option<&Path>,
    trust: bool,
) -> Result<Reach, FetchError> {
    let locked = locked.to_ascii_lowercase();
    let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
    // A call that names the commit by id (whole or abbreviated) reaches it by definition.
    let by_id = reference.len() >= 4
        && reference.bytes().all(|b| b.is_ascii_hexdigit())
        && locked.starts_with(&reference.to_ascii_lowercase());
    if by_id {
        return Ok(Reach::Same);
    }
    let key = record_key(&addr.repo, &reference, &locked);
    if records.is_some_and(|path| recorded(path, &key)) {
        return Ok(Reach::Recorded);
    }
    let unchecked = |why: String| {
        if trust {
            Ok(Reach::Unchecked { why })
        } else {
            Err(FetchError::LockedRefUnchecked {
                repo: addr.repo.clone(),
                reference: reference.clone(),
                locked: locked.clone(),
                why,
            })
        }
    };
    let (tip, kind) = match git::resolve_ref(addr) {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Err(FetchError::LockedRefGone {
                repo: addr.repo.clone(),
                reference,
                locked,
            })
        }
        Err(e) => return unchecked(crate::modules::chain(&e)),
    };
    let reach = if tip.eq_ignore_ascii_case(&locked) {
        Reach::Same
    } else {
        match cache.reaches(addr, &tip, &locked) {
            Ok(Reached::Yes { tip }) => Reach::MovedOn { tip, kind },
            Ok(Reached::No { tip }) => {
                return Err(FetchError::LockedCommitNotReached {
                    repo: addr.repo.clone(),
                    reference,
                    locked,
                    tip,
                })
            }
            Ok(Reached::Gone { tip }) => {
                return Err(FetchError::LockedCommitGone {
                    repo: addr.repo.clone(),
                    reference,
                    locked,
                    tip,
                })
            }
            Err(e) => return unchecked(crate::modules::chain(&e)),
        }
    };
    if let Some(path) = records {
        if let Err(e) = record(path, key) {
            tracing::debug!("cannot record the ref check in {}: {e}", path.display());
        }
    }
    Ok(reach)
}

/// Record that `addr`'s ref names `commit` now: tstore resolved it itself (an unlocked
/// call, or `-upgrade`), so a lock entry it writes from it is reached here without asking
/// again.
pub(crate) fn record_resolved(addr: &GitAddress, commit: &str, records: Option<&Path>) {
    let Some(path) = records else { return };
    let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
    let key = record_key(&addr.repo, &reference, &commit.to_ascii_lowercase());
    if recorded(path, &key) {
        return;
    }
    if let Err(e) = record(path, key) {
        tracing::debug!("cannot record the ref check in {}: {e}", path.display());
    }
}

/// The records of this process, by file: read once, added to as checks succeed.
static RECORDS: Mutex<Option<(PathBuf, BTreeMap<String, u64>)>> = Mutex::new(None);

/// A record's key: the repository's identity (no credentials), the ref, the commit.
fn record_key(repo: &str, reference: &str, commit: &str) -> String {
    format!(
        "{}\u{0}{reference}\u{0}{commit}",
        crate::redact::url_identity(repo)
    )
}

/// The most of the record file that is read (it is the user's own file, but a cache).
const MAX_RECORDS_BYTES: u64 = 16 << 20;

fn with_records<T>(path: &Path, f: impl FnOnce(&mut BTreeMap<String, u64>) -> T) -> T {
    let mut guard = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_none_or(|(p, _)| p != path) {
        let known = tstore_tofu::read::read_own_capped(path, MAX_RECORDS_BYTES)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        *guard = Some((path.to_owned(), known));
    }
    let (_, known) = guard.as_mut().expect("just filled");
    f(known)
}

fn recorded(path: &Path, key: &str) -> bool {
    with_records(path, |known| known.contains_key(key))
}

/// Add `key` (checked now) to the record file: written whole to a temporary file in its
/// private directory, then renamed over it.
fn record(path: &Path, key: String) -> std::io::Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let text = with_records(path, |known| {
        known.insert(key, now);
        serde_json::to_string_pretty(known)
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut temp = tempfile::Builder::new()
        .prefix(".git-reach-")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut temp, text.as_bytes())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
