//! Source positions for diagnostics: `path:line`, as tofu names the place a problem is.

use std::fmt;
use std::path::PathBuf;

/// A position in a configuration file, shown as `path:line` (or `path` for
/// JSON files, whose values carry no line numbers once parsed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePos {
    /// The file.
    pub file: PathBuf,
    /// One-based line, when known.
    pub line: Option<usize>,
}

impl fmt::Display for SourcePos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

/// The one-based line of byte `offset` in `src` (offsets past the end count as the end).
pub fn line_at(src: &str, offset: usize) -> usize {
    let end = offset.min(src.len());
    src.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_at_counts_newlines_before_the_offset() {
        let src = "a\nbc\n\nd";
        for (offset, line) in [
            (0, 1),
            (1, 1),
            (2, 2),
            (4, 2),
            (5, 3),
            (6, 4),
            (7, 4),
            (99, 4),
        ] {
            assert_eq!(line_at(src, offset), line, "offset {offset}");
        }
    }

    #[test]
    fn display_with_and_without_line() {
        let with = SourcePos {
            file: "m/main.tf".into(),
            line: Some(3),
        };
        let without = SourcePos {
            file: "m/main.tf.json".into(),
            line: None,
        };
        assert_eq!(with.to_string(), "m/main.tf:3");
        assert_eq!(without.to_string(), "m/main.tf.json");
    }
}
