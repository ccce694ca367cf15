//! Running a module's fetches in parallel, bounded: at most [`MAX_FETCHES`] at once in all,
//! and at most [`MAX_PER_HOST`] against one host (a registry or git server sees a few
//! connections from one init, not one per call of a large module).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Fetches of one module's calls running at once.
pub(super) const MAX_FETCHES: usize = 8;
/// Fetches against one host running at once.
pub(super) const MAX_PER_HOST: usize = 4;

/// Run `work` on every job, on up to `max` threads, with at most `per_host` jobs of one
/// host (`host_of`) running at a time; the results in the jobs' order.
pub(super) fn run_bounded<J: Sync, R: Send>(
    jobs: &[J],
    max: usize,
    per_host: usize,
    host_of: impl Fn(&J) -> String + Sync,
    work: impl Fn(&J) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let running: Mutex<HashMap<String, usize>> = Mutex::default();
    let freed = Condvar::new();
    let results: Mutex<Vec<Option<R>>> = Mutex::new(jobs.iter().map(|_| None).collect());
    // The workers log to the run's log (the server's request has its own).
    let log = tracing::dispatcher::get_default(Clone::clone);
    std::thread::scope(|scope| {
        for _ in 0..max.min(jobs.len()).max(1) {
            scope.spawn(|| {
                tracing::dispatcher::with_default(&log, || loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let host = host_of(job);
                    {
                        let mut hosts = running.lock().unwrap_or_else(PoisonError::into_inner);
                        while hosts.get(&host).copied().unwrap_or(0) >= per_host {
                            hosts = freed.wait(hosts).unwrap_or_else(PoisonError::into_inner);
                        }
                        *hosts.entry(host.clone()).or_default() += 1;
                    }
                    let result = work(job);
                    {
                        let mut hosts = running.lock().unwrap_or_else(PoisonError::into_inner);
                        if let Some(n) = hosts.get_mut(&host) {
                            *n -= 1;
                        }
                    }
                    freed.notify_all();
                    results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(result);
                })
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn jobs_run_bounded_in_all_and_per_host_and_keep_their_order() {
        let jobs: Vec<(String, usize)> = (0..20).map(|i| (format!("h{}", i % 2), i)).collect();
        let now: Mutex<HashMap<String, usize>> = Mutex::default();
        let peak_host = AtomicUsize::new(0);
        let total = AtomicUsize::new(0);
        let peak_total = AtomicUsize::new(0);
        let out = run_bounded(
            &jobs,
            5,
            2,
            |(h, _)| h.clone(),
            |(h, i)| {
                let t = total.fetch_add(1, Ordering::SeqCst) + 1;
                peak_total.fetch_max(t, Ordering::SeqCst);
                {
                    let mut m = now.lock().unwrap();
                    let n = m.entry(h.clone()).or_default();
                    *n += 1;
                    peak_host.fetch_max(*n, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(5));
                *now.lock().unwrap().get_mut(h).unwrap() -= 1;
                total.fetch_sub(1, Ordering::SeqCst);
                *i * 10
            },
        );
        assert_eq!(out, (0..20).map(|i| i * 10).collect::<Vec<_>>());
        assert!(peak_host.load(Ordering::SeqCst) <= 2);
        assert!(
            peak_total.load(Ordering::SeqCst) <= 4,
            "two hosts of two each"
        );
        assert!(peak_total.load(Ordering::SeqCst) >= 2, "ran in parallel");
    }
}
