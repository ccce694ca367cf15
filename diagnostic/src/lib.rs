//! What an error tells the person who ran the command, in the parts tofu's diagnostics
//! have. The trait is a crate of its own at the bottom of the dependency graph, below the
//! store (`tstore-store`) and the language (`tstore-tofu`), so that every library's errors
//! can implement it and the binary renders all of them one way.

/// An error as tofu shows one: `Error: SUMMARY`, a blank line and the detail, then a hint
/// when there is an obvious next step.
///
/// The message ([`Display`](std::fmt::Display)) says what happened and where; the hint,
/// what to do about it, is never part of it. A binary renders every library error through
/// this trait, the same way.
pub trait Diagnostic: std::error::Error {
    /// The line after `Error: `: tofu's summary for this kind of failure, or else the
    /// message itself.
    fn summary(&self) -> String {
        self.to_string()
    }

    /// The paragraph below the summary: the message, when the summary is a headline that
    /// does not say what happened; `None` when the summary is the message.
    fn detail(&self) -> Option<String> {
        None
    }

    /// What to do about it, when there is an obvious next step.
    fn hint(&self) -> Option<String> {
        None
    }
}
