//! Answers a run asks a remote for once: a git ref's commit, a registry's version list, a
//! ref's reach of a locked commit. One slot per question, held while it is asked, so that
//! threads asking the same question at once (roots fetched in parallel, calls prefetched
//! together) wait for the first asker instead of asking again. A failed question is not
//! remembered (a caller that must not ask again after a failure keeps the failure as its
//! answer).
//!
//! A run is a command of one process, or one request of the init server ([`new_run`]): the
//! answers of one request are never believed by the next, as they would not be by a process
//! of its own.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The run in progress.
static RUN: AtomicU64 = AtomicU64::new(0);

/// Start a new run: every question is asked again.
pub(crate) fn new_run() {
    RUN.fetch_add(1, Ordering::Relaxed);
}

/// The run in progress, for state kept per run outside an [`AskedOnce`].
pub(crate) fn current_run() -> u64 {
    RUN.load(Ordering::Relaxed)
}

/// One question's answer, once asked; locked while it is being asked.
type Slot<V> = Arc<Mutex<Option<V>>>;

/// The slots of one run: the run, then its questions' slots.
type RunSlots<K, V> = (u64, HashMap<K, Slot<V>>);

/// The answers to one kind of question in one run, by question.
pub(crate) struct AskedOnce<K, V> {
    slots: Mutex<Option<RunSlots<K, V>>>,
}

impl<K: Eq + Hash, V: Clone> AskedOnce<K, V> {
    pub(crate) const fn new() -> Self {
        AskedOnce {
            slots: Mutex::new(None),
        }
    }

    /// The answer to `key`: remembered, or asked now with `ask` (and remembered when it
    /// succeeds).
    pub(crate) fn get_or_ask<E>(&self, key: K, ask: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        self.get_or_ask_in(current_run(), key, ask)
    }

    /// [`AskedOnce::get_or_ask`] in the run `run`: the answers of another run are dropped.
    fn get_or_ask_in<E>(
        &self,
        run: u64,
        key: K,
        ask: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            if slots.as_ref().is_none_or(|(asked_in, _)| *asked_in != run) {
                *slots = Some((run, HashMap::new()));
            }
            let (_, slots) = slots.as_mut().expect("just filled");
            slots.entry(key).or_default().clone()
        };
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = &*slot {
            return Ok(known.clone());
        }
        let answer = ask()?;
        *slot = Some(answer.clone());
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_question_asked_by_many_threads_at_once_is_asked_once_and_a_failure_again() {
        static ANSWERS: AskedOnce<&str, u32> = AskedOnce::new();
        let asked = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let got = ANSWERS.get_or_ask("q", || -> Result<u32, ()> {
                        asked.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        Ok(42)
                    });
                    assert_eq!(got, Ok(42));
                });
            }
        });
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(ANSWERS.get_or_ask("bad", || Err::<u32, _>("no")), Err("no"));
        assert_eq!(ANSWERS.get_or_ask("bad", || Ok::<_, &str>(7)), Ok(7));
    }

    #[test]
    fn a_new_run_asks_again() {
        static ANSWERS: AskedOnce<&str, u32> = AskedOnce::new();
        assert_eq!(ANSWERS.get_or_ask_in(7, "q", || Ok::<_, ()>(1)), Ok(1));
        assert_eq!(ANSWERS.get_or_ask_in(7, "q", || Ok::<_, ()>(2)), Ok(1));
        assert_eq!(ANSWERS.get_or_ask_in(8, "q", || Ok::<_, ()>(3)), Ok(3));
    }
}
