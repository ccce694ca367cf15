//! Work over many roots, a few at a time (`fetch`, and the fetch phase of `init` over
//! several roots): the network is the floor of a cold fetch, and a few roots at once keep
//! it busy without opening a connection per root.

/// Roots worked on at once.
pub(super) const PARALLEL_ROOTS: usize = 4;

/// `work` on every item, on up to `max` threads; the results in the items' order.
pub(super) fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    max: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<R>>> =
        std::sync::Mutex::new(items.iter().map(|_| None).collect());
    // The workers log to the run's log (a served request has its own).
    let log = tracing::dispatcher::get_default(Clone::clone);
    std::thread::scope(|scope| {
        for _ in 0..max.min(items.len()) {
            scope.spawn(|| {
                tracing::dispatcher::with_default(&log, || loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(item) = items.get(i) else { break };
                    let result = work(item);
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(result);
                })
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}
