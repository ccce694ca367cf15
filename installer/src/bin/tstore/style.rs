//! Colour as tofu uses it on a terminal: headings bold, `Error:` red and `Warning:` yellow,
//! each with its summary bold. Off when the stream is not a terminal, when `NO_COLOR` is set
//! (any non-empty value) or with `-no-color`; decided once per stream by [`init`].

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT: AtomicBool = AtomicBool::new(false);
static STDERR: AtomicBool = AtomicBool::new(false);

/// Decide for stdout and stderr whether to colour (`no_color`: `-no-color` or `NO_COLOR`).
pub(crate) fn init(no_color: bool) {
    let allowed = !no_color;
    STDOUT.store(
        allowed && std::io::stdout().is_terminal(),
        Ordering::Relaxed,
    );
    STDERR.store(
        allowed && std::io::stderr().is_terminal(),
        Ordering::Relaxed,
    );
}

/// Whether stderr is coloured (for the log subscriber).
pub(crate) fn stderr_coloured() -> bool {
    STDERR.load(Ordering::Relaxed)
}

fn paint(on: &AtomicBool, codes: &str, text: &str) -> String {
    if on.load(Ordering::Relaxed) {
        format!("\x1b[{codes}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// A heading on stdout (`Initializing provider plugins...`).
pub(crate) fn heading(text: &str) -> String {
    paint(&STDOUT, "1", &crate::escape::line(text))
}

/// `Error: SUMMARY` on stderr; the summary on one line, whatever it quotes.
pub(crate) fn error(summary: &str) -> String {
    format!(
        "{}{}",
        paint(&STDERR, "1;31", "Error: "),
        paint(&STDERR, "1", &crate::escape::line(summary))
    )
}

/// `Warning: SUMMARY` on stderr; the summary on one line, whatever it quotes.
pub(crate) fn warning(summary: &str) -> String {
    format!(
        "{}{}",
        paint(&STDERR, "1;33", "Warning: "),
        paint(&STDERR, "1", &crate::escape::line(summary))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_unless_a_terminal_allows_colour() {
        STDERR.store(false, Ordering::Relaxed);
        assert_eq!(error("Failed"), "Error: Failed");
        STDERR.store(true, Ordering::Relaxed);
        assert_eq!(
            warning("Careful"),
            "\x1b[1;33mWarning: \x1b[0m\x1b[1mCareful\x1b[0m"
        );
        STDERR.store(false, Ordering::Relaxed);
    }
}
