//! Things said once per run of a command. A process runs one command, except the init
//! server, which runs one per request: what a command says once it says once per request
//! too, as its own process would.

use std::sync::atomic::{AtomicU64, Ordering};

/// The run in progress (the init server starts a new one for each request).
static RUN: AtomicU64 = AtomicU64::new(1);

/// Start a new run: every [`OncePerRun`] may fire again.
pub(crate) fn new_run() {
    RUN.fetch_add(1, Ordering::Relaxed);
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
}
