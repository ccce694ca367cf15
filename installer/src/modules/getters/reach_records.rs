//! This machine's record of git refs found to reach locked commits
//! (`$XDG_STATE_HOME/tstore/git-reach.json`, never in the store): for a repository (its
//! identity, without credentials), a ref and a commit, when a check last found that the ref
//! reaches the commit. [`git_reach`](super::git_reach) believes a record younger than
//! [`RECHECK_AFTER`] without asking the remote, and asks again about an older one.
//!
//! Rules:
//! - The file is read once per run ([`RunRecords`]; each request of the init server reads
//!   it again), at most 16 MiB, never through a link; an unreadable or malformed file counts as no records.
//! - A record whose time cannot be read (none, not a number: hand-edited, or written by
//!   another program) or that lies ahead of the clock is stale: asked again, never believed
//!   fresh.
//! - The file is written whole to a temporary file in its private (0700) directory, then
//!   renamed over the old one. A failure to write is logged and changes nothing else: the
//!   check is made again next time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// How long a record is believed without asking the remote again. Within it, a runner that
/// checked a ref still installs the locked commit after the ref's history was rewritten
/// past it (an empty runner refuses at once); past it, the next init asks the remote (one
/// `ls-remote` per repository and ref per run) and gives the empty runner's answer. An hour
/// keeps a CI pipeline's jobs, or a day's inits on one machine, from asking again and again
/// for what rarely changes (a rewritten branch that a lock pins), and bounds how long the
/// two can disagree.
pub(crate) const RECHECK_AFTER: Duration = Duration::from_secs(60 * 60);

/// How old a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Age {
    /// Younger than [`RECHECK_AFTER`]: believed.
    Fresh,
    /// Older: asked again. `ago`: seconds since the check, `None` when that is not known.
    Stale { ago: Option<u64> },
}

/// A record's key: the repository's identity (no credentials), the ref, the commit.
pub(crate) fn key(repo: &str, reference: &str, commit: &str) -> String {
    format!(
        "{}\u{0}{reference}\u{0}{commit}",
        crate::redact::url_identity(repo)
    )
}

/// The age of the record `key` in the file `path`; `None`: there is none.
pub(crate) fn age(run: &RunRecords, path: &Path, key: &str) -> Option<Age> {
    let checked = run.with(path, |known| known.get(key).copied())?;
    Some(age_at(checked, now()))
}

/// When the record `key` was made (seconds since the epoch); `None`: there is none, or its
/// time is not known.
pub(crate) fn checked(run: &RunRecords, path: &Path, key: &str) -> Option<u64> {
    run.with(path, |known| known.get(key).copied())
        .filter(|t| *t > 0)
}

/// Every record whose time is known: (repository identity, ref, commit, when).
pub(crate) fn all(run: &RunRecords, path: &Path) -> Vec<(String, String, String, u64)> {
    run.with(path, |known| {
        known
            .iter()
            .filter(|(_, t)| **t > 0)
            .filter_map(|(key, t)| {
                let mut parts = key.split('\u{0}');
                match (parts.next(), parts.next(), parts.next(), parts.next()) {
                    (Some(repo), Some(reference), Some(commit), None) => {
                        Some((repo.to_owned(), reference.to_owned(), commit.to_owned(), *t))
                    }
                    _ => None,
                }
            })
            .collect()
    })
}

/// Record that `key` was found reached now (a record there already is made fresh).
pub(crate) fn record(run: &RunRecords, path: &Path, key: &str) {
    let now = now();
    let written = write(run, path, |known| {
        known.insert(key.to_owned(), now);
    });
    if let Err(e) = written {
        tracing::debug!("cannot record the ref check in {}: {e}", path.display());
    }
}

/// When `key` was first recorded in `path`: recorded now if it never was. A first sighting
/// is never renewed (the cooldown of a git tag: when this machine first saw the tag name
/// its commit).
pub(crate) fn first_seen(run: &RunRecords, path: &Path, key: &str) -> u64 {
    if let Some(at) = run
        .with(path, |known| known.get(key).copied())
        .filter(|t| *t > 0)
    {
        return at;
    }
    let now = now();
    let written = write(run, path, |known| {
        known.insert(key.to_owned(), now);
    });
    if let Err(e) = written {
        tracing::debug!(
            "cannot record the first sighting in {}: {e}",
            path.display()
        );
    }
    now
}

/// Drop the record `key`: the remote now says the ref does not reach the commit.
pub(crate) fn forget(run: &RunRecords, path: &Path, key: &str) {
    if run.with(path, |known| !known.contains_key(key)) {
        return;
    }
    let written = write(run, path, |known| {
        known.remove(key);
    });
    if let Err(e) = written {
        tracing::debug!("cannot drop the ref check from {}: {e}", path.display());
    }
}

/// The age of a record made at `checked` (seconds since the epoch; 0: not known), at `now`.
fn age_at(checked: u64, now: u64) -> Age {
    match now.checked_sub(checked) {
        Some(ago) if checked > 0 && ago < RECHECK_AFTER.as_secs() => Age::Fresh,
        Some(ago) if checked > 0 => Age::Stale { ago: Some(ago) },
        _ => Age::Stale { ago: None },
    }
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The records of this run, by file: each record's time (0: not known).
type Known = BTreeMap<String, u64>;

/// The records as one run read them (once per file) and changed them as its checks ended.
#[derive(Default)]
pub(crate) struct RunRecords(Mutex<Option<(PathBuf, Known)>>);

/// The most of the record file that is read (it is the user's own file, but a cache).
const MAX_RECORDS_BYTES: u64 = 16 << 20;

impl RunRecords {
    /// `f` of the records of `path`, read now if this run has not read that file yet.
    fn with<T>(&self, path: &Path, f: impl FnOnce(&mut Known) -> T) -> T {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|(p, _)| p != path) {
            *guard = Some((path.to_owned(), read(path)));
        }
        let (_, known) = guard.as_mut().expect("just filled");
        f(known)
    }
}

/// The record file's records; a time that is not a number is read as not known.
fn read(path: &Path) -> Known {
    let parsed: Option<BTreeMap<String, serde_json::Value>> =
        tstore_tofu::read::read_own_capped(path, MAX_RECORDS_BYTES)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
    parsed
        .unwrap_or_default()
        .into_iter()
        .map(|(key, time)| (key, time.as_u64().unwrap_or(0)))
        .collect()
}

/// Change the records with `change`, then write the file whole: to a temporary file in
/// its private directory, renamed over it.
fn write(run: &RunRecords, path: &Path, change: impl FnOnce(&mut Known)) -> std::io::Result<()> {
    let text = run.with(path, |known| {
        change(known);
        serde_json::to_string_pretty(known)
    })?;
    crate::state_record::replace(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_fresh_for_the_window_and_stale_after_or_without_a_time() {
        let window = RECHECK_AFTER.as_secs();
        let now = 10 * window;
        assert_eq!(age_at(now, now), Age::Fresh);
        assert_eq!(age_at(now - window + 1, now), Age::Fresh);
        assert_eq!(age_at(now - window, now), Age::Stale { ago: Some(window) });
        // No time, or a time ahead of the clock: stale, age unknown.
        assert_eq!(age_at(0, now), Age::Stale { ago: None });
        assert_eq!(age_at(now + 60, now), Age::Stale { ago: None });
    }

    #[test]
    fn records_without_a_time_are_read_as_stale_and_the_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/git-reach.json");
        let old = key("https://h/r.git", "main", "a");
        let untimed = key("https://h/r.git", "main", "b");
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(
            &path,
            serde_json::json!({ &old: 5, &untimed: null }).to_string(),
        )
        .unwrap();
        let run = RunRecords::default();
        assert!(matches!(
            age(&run, &path, &old),
            Some(Age::Stale { ago: Some(_) })
        ));
        assert_eq!(age(&run, &path, &untimed), Some(Age::Stale { ago: None }));
        assert_eq!(age(&run, &path, "other"), None);

        let new = key("https://user:secret@h/r.git", "v1", "c");
        assert!(!new.contains("secret"), "{new}");
        record(&run, &path, &new);
        record(&run, &path, &old);
        assert_eq!(age(&run, &path, &new), Some(Age::Fresh));
        assert_eq!(age(&run, &path, &old), Some(Age::Fresh));
        forget(&run, &path, &new);
        assert_eq!(age(&run, &path, &new), None);
        // Another run reads the file again.
        assert_eq!(age(&RunRecords::default(), &path, &old), Some(Age::Fresh));
        // What the file holds is what the next run reads.
        assert_eq!(read(&path).len(), 2);
        assert_eq!(read(&path).get(&untimed), Some(&0));
    }
}
