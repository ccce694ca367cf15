//! Ctrl-C and working directories: the changes tstore makes to a working directory (links,
//! the lock file, `modules.json`) run inside a [`Writing`] section, and an interrupt waits
//! for the section to end, so a working directory is left as it was or as it should be,
//! never half-linked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static WRITING: AtomicUsize = AtomicUsize::new(0);

/// While alive, this process is changing a working directory.
#[must_use = "the section ends when the guard is dropped"]
pub struct Writing(());

impl Writing {
    /// Enter a section that changes a working directory.
    pub fn begin() -> Writing {
        WRITING.fetch_add(1, Ordering::SeqCst);
        Writing(())
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        WRITING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Wait until no section is open (at most `limit`); whether none is.
pub fn wait_for_writes(limit: Duration) -> bool {
    let start = Instant::now();
    while WRITING.load(Ordering::SeqCst) > 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_nest_and_end() {
        assert!(wait_for_writes(Duration::ZERO));
        let a = Writing::begin();
        let b = Writing::begin();
        assert!(!wait_for_writes(Duration::from_millis(20)));
        drop(a);
        drop(b);
        assert!(wait_for_writes(Duration::ZERO));
    }
}
