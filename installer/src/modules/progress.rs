//! The progress bar of parallel module fetches: one indicatif bar on stderr counting finished
//! packages and naming the ones in flight. Drawn only when asked for and stderr is a terminal
//! (results stay on stdout; off a TTY nothing is drawn).

use std::io::IsTerminal as _;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of one batch of parallel fetches.
pub(crate) struct Progress {
    bar: ProgressBar,
    active: Mutex<Vec<String>>,
}

impl Progress {
    /// A bar for `total` fetches, hidden unless `enabled` and stderr is a terminal.
    pub(crate) fn new(enabled: bool, total: usize) -> Progress {
        let target = if enabled && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            ProgressStyle::with_template("Fetching module packages [{pos}/{len}] {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            active: Mutex::default(),
        }
    }

    /// `label` started.
    pub(crate) fn start(&self, label: &str) {
        let mut active = self
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        active.push(label.to_owned());
        self.bar.set_message(active.join(", "));
    }

    /// `label` finished (fetched, found in the store or failed).
    pub(crate) fn done(&self, label: &str) {
        let mut active = self
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = active.iter().position(|a| a == label) {
            active.remove(i);
        }
        self.bar.set_message(active.join(", "));
        self.bar.inc(1);
    }

    /// Remove the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
