//! A locked git commit is installed only where the ref its call names reaches it: the ref's
//! commit, or an ancestor of it. Without this rule, a lock entry edited to keep its ref but
//! name a commit of another branch (with that commit's `h1:`) installs wherever a store
//! happens to hold that commit, and fails everywhere else.
//!
//! The answer comes from the remote (`ls-remote` of the ref, then the ref's history in the
//! git cache), or from this machine's own record of an earlier positive answer
//! ([`reach_records`](super::reach_records): in the user's state directory, never in the
//! store, so a restored cache's records never count). A record is believed for
//! [`RECHECK_AFTER`] (an hour); an older one is asked again. So one lock gives the same
//! answer on every runner that can ask the remote, except for that window: a runner that
//! checked a ref within it still installs the locked commit after the ref's history was
//! rewritten past it, where an empty runner refuses.
//!
//! - the ref's commit is the locked one: installed;
//! - the ref moved on and still reaches it (a branch with new commits): the locked commit
//!   is installed, and it is said; a tag that moved is said louder (tags should not move);
//! - the ref does not reach it, the remote lacks it, or the ref is gone: refused, naming
//!   both commits and `-upgrade`, and the record that said otherwise is dropped;
//! - the remote cannot be asked, and a record older than the window exists: the record is
//!   believed (it was the remote's answer once, and an outage must not stop a machine that
//!   checked), and it is said, since an empty runner refuses there;
//! - the remote cannot be asked, no record exists, and the module mirror records that its
//!   pusher checked it (an air-gapped runner): the mirror's record is believed for the run,
//!   and it is said;
//! - the remote cannot be asked and no record exists (an outage): refused, naming
//!   `TSTORE_TRUST_LOCK=1` / `--trust-lock`; with that opt-in the lock's checksums alone
//!   decide, and the refs left unchecked are said.
//!
//! Each (repository, ref, commit) is checked once per run, whatever the number of calls and
//! roots (`init --recursive`), and the remote is asked for a ref's commit once per run even
//! when it cannot be reached ([`asked_once`](super::asked_once)).

use std::convert::Infallible;
use std::path::Path;

use super::asked_once::AskedOnce;
use super::git::{self, GitAddress, RefKind};
use super::git_cache::{GitCache, Reached};
use super::reach_records::{self, Age};
use crate::modules::FetchError;

pub(crate) use super::reach_records::RECHECK_AFTER;

/// How a locked commit's ref was found to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The ref names the commit: it is the ref's commit now, or the call names it by id.
    Same,
    /// This machine checked it within [`RECHECK_AFTER`].
    Recorded,
    /// This machine checked it longer ago (`ago` seconds; `None`: when is not known), and
    /// the remote could not be asked again (`why`): that check is believed.
    RecordedLongAgo { ago: Option<u64>, why: String },
    /// The ref moved on from the commit (to `tip`) and still reaches it.
    MovedOn { tip: String, kind: RefKind },
    /// The remote could not be asked (`why`), and this machine has no check of its own; the
    /// module mirror `mirror` records that its pusher found the ref reaching the commit
    /// `ago` seconds ago (`None`: a time ahead of this machine's clock). Believed for this
    /// run only.
    MirrorRecorded {
        mirror: String,
        ago: Option<u64>,
        why: String,
    },
    /// Not checked: the remote could not be asked (`why`), and the user trusts the lock.
    Unchecked { why: String },
}

/// A module mirror's record of a reach, as [`AskMirror`] finds it.
#[derive(Clone, Debug)]
pub(crate) struct MirrorRecord {
    /// The mirror, as messages show it (with where it was set).
    pub(crate) mirror: String,
    /// When its pusher made the check (seconds since the epoch).
    pub(crate) checked: u64,
    /// When the mirror first held the claim (its first-seen stamp), if stamped.
    pub(crate) first_seen: Option<u64>,
}

/// Asks the module mirror, if there is one, for its record that a ref (of a repository)
/// reaches a commit: `Ok(None)` without a mirror, `Err(why)` when the mirror has none that
/// counts.
pub(crate) type AskMirror<'a> =
    &'a mut dyn FnMut(&str, &str, &str) -> Result<Option<MirrorRecord>, String>;

/// What one check found, kept for the run: an answer or a refusal, or that the remote
/// could not be asked (the opt-in decides that one per call).
#[derive(Clone, Debug)]
enum Found {
    Reach(Reach),
    Unasked {
        why: String,
        mirror_miss: Option<String>,
    },
    NotReached {
        tip: String,
    },
    CommitGone {
        tip: String,
    },
    RefGone,
}

/// The checks of one run.
#[derive(Default)]
pub(crate) struct RunChecks {
    /// By record key.
    found: AskedOnce<String, Found>,
    /// The remote's answer for a ref's commit, by (repository, ref): a failure is kept
    /// too, so that an unreachable remote is asked once per run, not once per root.
    tips: AskedOnce<(String, String), Tip>,
}

/// The remote's answer for a ref: its commit and kind, no such ref, or why it could not be
/// asked.
type Tip = Result<Option<(String, RefKind)>, String>;

/// Whether `addr`'s ref reaches `locked` (module docs). `records` is the record file, if
/// the user has a state directory; `mirror` asks the module mirror where neither the
/// remote nor this machine can answer; `trust` is the outage opt-in.
pub(crate) fn check(
    run: &crate::Run,
    addr: &GitAddress,
    locked: &str,
    cache: &GitCache,
    records: Option<&Path>,
    mirror: AskMirror<'_>,
    trust: bool,
) -> Result<Reach, FetchError> {
    let locked = locked.to_ascii_lowercase();
    let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
    if names_by_id(&reference, &locked) {
        return Ok(Reach::Same);
    }
    let key = reach_records::key(&addr.repo, &reference, &locked);
    let found = run
        .reach
        .found
        .get_or_ask(key.clone(), || {
            Ok::<_, Infallible>(find(
                run, addr, &reference, &locked, cache, records, mirror, &key,
            ))
        })
        .unwrap_or_else(|never| match never {});
    let repo = addr.repo.clone();
    match found {
        Found::Reach(reach) => Ok(reach),
        Found::Unasked { why, .. } if trust => Ok(Reach::Unchecked { why }),
        Found::Unasked { why, mirror_miss } => Err(FetchError::LockedRefUnchecked {
            repo,
            reference,
            locked,
            why,
            mirror_miss,
        }),
        Found::NotReached { tip } => Err(FetchError::LockedCommitNotReached {
            repo,
            reference,
            locked,
            tip,
        }),
        Found::CommitGone { tip } => Err(FetchError::LockedCommitGone {
            repo,
            reference,
            locked,
            tip,
        }),
        Found::RefGone => Err(FetchError::LockedRefGone {
            repo,
            reference,
            locked,
        }),
    }
}

/// Whether a call's `reference` names the commit `locked` by id (whole or abbreviated):
/// then it reaches it by definition.
fn names_by_id(reference: &str, locked: &str) -> bool {
    reference.len() >= 4
        && reference.bytes().all(|b| b.is_ascii_hexdigit())
        && locked.starts_with(&reference.to_ascii_lowercase())
}

/// When this machine found `addr`'s ref reaching `locked`, for a push that publishes the
/// check to a module mirror: the check is made as [`check`] makes it without a mirror or
/// the outage opt-in (a fresh record, else the remote; a stale record where the remote
/// cannot be asked), and its time read back (now, without a record file). `Ok(None)`: the
/// call names the commit by id, and there is nothing to publish.
pub(crate) fn checked_at(
    run: &crate::Run,
    addr: &GitAddress,
    locked: &str,
    cache: &GitCache,
    records: Option<&Path>,
) -> Result<Option<u64>, FetchError> {
    let locked = locked.to_ascii_lowercase();
    let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
    if names_by_id(&reference, &locked) {
        return Ok(None);
    }
    check(
        run,
        addr,
        &locked,
        cache,
        records,
        &mut |_, _, _| Ok(None),
        false,
    )?;
    let key = reach_records::key(&addr.repo, &reference, &locked);
    Ok(Some(
        records
            .and_then(|path| reach_records::checked(&run.records, path, &key))
            .unwrap_or_else(reach_records::now),
    ))
}

/// This machine's records of refs found reaching commits, for a push that publishes them:
/// (repository identity, ref, commit, when), those whose time is known.
pub(crate) fn all_records(run: &crate::Run, records: &Path) -> Vec<(String, String, String, u64)> {
    reach_records::all(&run.records, records)
}

/// The check of record `key`: a fresh record, else the remote, whose answer renews or
/// drops the record; where the remote cannot be asked, a stale record, else the module
/// mirror's record (for this run: it is never written to this machine's records).
#[allow(clippy::too_many_arguments)]
fn find(
    run: &crate::Run,
    addr: &GitAddress,
    reference: &str,
    locked: &str,
    cache: &GitCache,
    records: Option<&Path>,
    mirror: AskMirror<'_>,
    key: &str,
) -> Found {
    let age = records.and_then(|path| reach_records::age(&run.records, path, key));
    if age == Some(Age::Fresh) {
        return Found::Reach(Reach::Recorded);
    }
    let found = ask_remote(run, addr, reference, locked, cache);
    if let Some(path) = records {
        match &found {
            Found::Reach(_) => reach_records::record(&run.records, path, key),
            Found::NotReached { .. } | Found::CommitGone { .. } | Found::RefGone => {
                reach_records::forget(&run.records, path, key)
            }
            Found::Unasked { .. } => {}
        }
    }
    match (found, age) {
        (Found::Unasked { why, .. }, Some(Age::Stale { ago })) => {
            Found::Reach(Reach::RecordedLongAgo { ago, why })
        }
        (Found::Unasked { why, .. }, _) => match mirror(&addr.repo, reference, locked) {
            Ok(Some(record)) => Found::Reach(Reach::MirrorRecorded {
                mirror: record.mirror,
                ago: reach_records::now().checked_sub(record.checked),
                why,
            }),
            Ok(None) => Found::Unasked {
                why,
                mirror_miss: None,
            },
            Err(miss) => Found::Unasked {
                why,
                mirror_miss: Some(miss),
            },
        },
        (found, _) => found,
    }
}

/// What the remote says of `reference` and `locked` now.
fn ask_remote(
    run: &crate::Run,
    addr: &GitAddress,
    reference: &str,
    locked: &str,
    cache: &GitCache,
) -> Found {
    let tip = run
        .reach
        .tips
        .get_or_ask((addr.repo.clone(), reference.to_owned()), || {
            Ok::<_, Infallible>(git::resolve_ref(run, addr).map_err(|e| short_reason(&e)))
        })
        .unwrap_or_else(|never| match never {});
    let (tip, kind) = match tip {
        Ok(Some(found)) => found,
        Ok(None) => return Found::RefGone,
        Err(why) => {
            return Found::Unasked {
                why,
                mirror_miss: None,
            }
        }
    };
    if tip.eq_ignore_ascii_case(locked) {
        return Found::Reach(Reach::Same);
    }
    match cache.reaches(addr, &tip, locked) {
        Ok(Reached::Yes { tip }) => Found::Reach(Reach::MovedOn { tip, kind }),
        Ok(Reached::No { tip }) => Found::NotReached { tip },
        Ok(Reached::Gone { tip }) => Found::CommitGone { tip },
        Err(e) => Found::Unasked {
            why: short_reason(&e),
            mirror_miss: None,
        },
    }
}

/// Record that `addr`'s ref names `commit` now: tstore resolved it itself (an unlocked
/// call, or `-upgrade`), so a lock entry it writes from it is reached here without asking
/// again.
pub(crate) fn record_resolved(
    run: &crate::Run,
    addr: &GitAddress,
    commit: &str,
    records: Option<&Path>,
) {
    let Some(path) = records else { return };
    let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
    let key = reach_records::key(&addr.repo, &reference, &commit.to_ascii_lowercase());
    if reach_records::age(&run.records, path, &key) != Some(Age::Fresh) {
        reach_records::record(&run.records, path, &key);
    }
}

/// The most of a reason that is said.
const MAX_REASON_CHARS: usize = 200;

/// Why the remote could not be asked, in one line. git's stderr (already scrubbed of
/// credentials by `git::run`, through [`redact::scrub`](crate::redact)) is the cause and
/// then advice, over several lines: its first line is said, without git's `fatal:`, at
/// most [`MAX_REASON_CHARS`] characters, control characters as spaces.
pub(crate) fn short_reason(e: &FetchError) -> String {
    let text = match e {
        FetchError::Git { what, stderr } => {
            let verb = what.split_whitespace().next().unwrap_or("git");
            match stderr.lines().map(str::trim).find(|l| !l.is_empty()) {
                Some(line) => {
                    let line = ["fatal:", "error:"]
                        .iter()
                        .find_map(|p| line.strip_prefix(p))
                        .unwrap_or(line)
                        .trim_start();
                    format!("git {verb}: {line}")
                }
                None => format!("git {verb} failed"),
            }
        }
        other => crate::modules::chain(other),
    };
    let first = text.lines().next().unwrap_or_default();
    let mut out: String = first
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON_CHARS)
        .collect();
    if first.chars().count() > MAX_REASON_CHARS {
        out.push('…');
    }
    out
}

/// [`RECHECK_AFTER`] in words, as messages say it.
pub(crate) fn window_in_words() -> String {
    let minutes = RECHECK_AFTER.as_secs() / 60;
    match (minutes / 60, minutes % 60) {
        (1, 0) => "an hour".to_owned(),
        (hours, 0) => format!("{hours} hours"),
        _ => format!("{minutes} minutes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_failures_are_said_in_one_short_line() {
        let e = FetchError::Git {
            what: "ls-remote file:///r/pkg.git".into(),
            stderr: "fatal: '/r/pkg.git' does not appear to be a git repository\nfatal: Could \
                     not read from remote repository.\n\nPlease make sure you have the correct \
                     access rights\nand the repository exists."
                .into(),
        };
        assert_eq!(
            short_reason(&e),
            "git ls-remote: '/r/pkg.git' does not appear to be a git repository"
        );
        let long = FetchError::Git {
            what: "fetch https://h/r.git".into(),
            stderr: format!("\n\nremote: {}\tx\nmore", "y".repeat(500)),
        };
        let said = short_reason(&long);
        assert!(said.starts_with("git fetch: remote: yyy"), "{said}");
        assert_eq!(said.chars().count(), MAX_REASON_CHARS + 1);
        assert!(!said.contains('\n') && !said.contains('\t'), "{said}");
        let silent = FetchError::Git {
            what: "ls-remote x".into(),
            stderr: String::new(),
        };
        assert_eq!(short_reason(&silent), "git ls-remote failed");
    }

    #[test]
    fn the_window_is_said_in_words() {
        assert_eq!(window_in_words(), "an hour");
    }
}
