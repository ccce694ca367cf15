//! A run: one command in a process of its own, or one request of the init server. What a
//! run learns lives in its [`Run`], made when the run starts and dropped when it ends, and
//! no `static` holds it: so a served init believes nothing an earlier request found (a
//! ref's commit, a registry's versions, a reach check), as a process of its own would not,
//! and two runs in one process (tests, the server) never see each other's answers.
//!
//! What a run keeps: the remotes' answers it asked once (git refs, registry version lists,
//! reach checks and the refs' tips behind them), this machine's reach records as the run
//! read and changed them, and the things said once per run (a warning that every root of
//! `init DIR...` would repeat).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use crate::modules::getters::{git, git_reach, reach_records, registry};

/// What one run learns, and what it has said.
#[derive(Default)]
pub struct Run {
    /// What `git ls-remote` answered, by (repository, ref).
    pub(crate) refs: git::RefAnswers,
    /// The checks that locked commits are reached by their refs.
    pub(crate) reach: git_reach::RunChecks,
    /// The reach record file, read once in this run and changed as checks end.
    pub(crate) records: reach_records::RunRecords,
    /// This machine's first sightings of git tags naming commits (the cooldown), read once.
    pub(crate) first_seen: reach_records::RunRecords,
    /// The versions each registry listed, by URL.
    pub(crate) listings: registry::Listings,
    /// What was said once in this run, by a key its sayer chooses.
    said: Mutex<BTreeSet<String>>,
}

impl Run {
    /// A new run: nothing asked, nothing said.
    pub fn new() -> Run {
        Run::default()
    }

    /// Whether `key` is said for the first time in this run (then it is recorded as said).
    pub fn first_time(&self, key: &str) -> bool {
        self.said
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned())
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_said_once_per_run() {
        let run = Run::new();
        assert!(run.first_time("a"));
        assert!(run.first_time("b"));
        assert!(!run.first_time("a"));
        let next = Run::new();
        assert!(next.first_time("a"));
    }
}
