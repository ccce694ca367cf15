//! Things said once per run of a command. A process runs one command, except the init
//! server, which runs one per request: what a command says once it says once per request
//! too, as its own process would.

use std::sync::atomic::{AtomicU64, Ordering};

/// The run in progress (the init server starts a new one for each request).
static RUN: AtomicU64 = AtomicU64::new(1);

/// Start a new run: every [`OncePerRun`] may fire again, and the library asks its
/// remotes again ([`tstore_installer::new_run`]).
pub(crate) fn new_run() {
    RUN.fetch_add(1, Ordering::Relaxed);
    tstore_installer::new_run();
}

/// A flag that is first set once per run.
pub(crate) struct OncePerRun(AtomicU64);

impl OncePerRun {
    pub(crate) const fn new() -> OncePerRun {
        OncePerRun(AtomicU64::new(0))
    }

    /// Whether this is the first call in this run.
    pub(crate) fn first(&self) -> bool {
        let run = RUN.load(Ordering::Relaxed);
        self.0.swap(run, Ordering::Relaxed) != run
    }
}

/// Things said once per run each, by what they say (a key the sayer chooses).
pub(crate) struct SaidPerRun(std::sync::Mutex<(u64, std::collections::BTreeSet<String>)>);

impl SaidPerRun {
    pub(crate) const fn new() -> SaidPerRun {
        SaidPerRun(std::sync::Mutex::new((
            0,
            std::collections::BTreeSet::new(),
        )))
    }

    /// Whether `key` is said for the first time in this run.
    pub(crate) fn first(&self, key: &str) -> bool {
        self.first_in(RUN.load(Ordering::Relaxed), key)
    }

    fn first_in(&self, run: u64, key: &str) -> bool {
        let mut said = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if said.0 != run {
            *said = (run, std::collections::BTreeSet::new());
        }
        said.1.insert(key.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_once_per_run() {
        static SAID: OncePerRun = OncePerRun::new();
        assert!(SAID.first());
        assert!(!SAID.first());
        new_run();
        assert!(SAID.first());
        assert!(!SAID.first());
    }

    #[test]
    fn each_key_is_said_once_per_run() {
        static SAID: SaidPerRun = SaidPerRun::new();
        assert!(SAID.first_in(1, "a"));
        assert!(SAID.first_in(1, "b"));
        assert!(!SAID.first_in(1, "a"));
        assert!(SAID.first_in(2, "a"));
        assert!(!SAID.first_in(2, "a"));
    }
}
