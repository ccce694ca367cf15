//! Answers a run asks a remote for once: a git ref's commit, a registry's version list, a
//! ref's reach of a locked commit. One slot per question, held while it is asked, so that
//! threads asking the same question at once (roots fetched in parallel, calls prefetched
//! together) wait for the first asker instead of asking again. A failed question is not
//! remembered (a caller that must not ask again after a failure keeps the failure as its
//! answer).
//!
//! An `AskedOnce` lives in its run's [`Run`](crate::Run) and dies with it: the answers of
//! one run (one request of the init server) are never believed by the next.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

/// One question's answer, once asked; locked while it is being asked.
type Slot<V> = Arc<Mutex<Option<V>>>;

/// The answers to one kind of question in one run, by question.
pub(crate) struct AskedOnce<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K, V> Default for AskedOnce<K, V> {
    fn default() -> Self {
        AskedOnce {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> AskedOnce<K, V> {
    /// The answer to `key`: remembered, or asked now with `ask` (and remembered when it
    /// succeeds).
    pub(crate) fn get_or_ask<E>(&self, key: K, ask: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
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
        let answers: AskedOnce<&str, u32> = AskedOnce::default();
        let asked = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let got = answers.get_or_ask("q", || -> Result<u32, ()> {
                        asked.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        Ok(42)
                    });
                    assert_eq!(got, Ok(42));
                });
            }
        });
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(answers.get_or_ask("bad", || Err::<u32, _>("no")), Err("no"));
        assert_eq!(answers.get_or_ask("bad", || Ok::<_, &str>(7)), Ok(7));
    }

    #[test]
    fn another_run_asks_again() {
        let first: AskedOnce<&str, u32> = AskedOnce::default();
        assert_eq!(first.get_or_ask("q", || Ok::<_, ()>(1)), Ok(1));
        assert_eq!(first.get_or_ask("q", || Ok::<_, ()>(2)), Ok(1));
        let next: AskedOnce<&str, u32> = AskedOnce::default();
        assert_eq!(next.get_or_ask("q", || Ok::<_, ()>(3)), Ok(3));
    }
}
