//! Source positions for diagnostics: `path:line`, as tofu names the place a problem is.

use std::fmt;
use std::path::{Path, PathBuf};

/// A position in a configuration file, shown as `path:line` (or `path` for
/// JSON files, whose values carry no line numbers once parsed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePos {
    /// The file.
    pub file: PathBuf,
    /// One-based line, when known.
    pub line: Option<usize>,
}

thread_local! {
    /// The file the positions being decoded on this thread are in.
    static DECODING: std::cell::RefCell<PathBuf> = std::cell::RefCell::new(PathBuf::new());
}

/// Run `decode` with every position it decodes in `file`.
pub(crate) fn decoding_in<T>(file: &Path, decode: impl FnOnce() -> T) -> T {
    DECODING.with(|f| *f.borrow_mut() = file.to_owned());
    let decoded = decode();
    DECODING.with(|f| f.borrow_mut().clear());
    decoded
}

/// A position is recorded (in a file's facts, `config/facts.rs`) as its line alone, and read
/// back in the file whose facts are being read ([`decoding_in`]).
impl serde::Serialize for SourcePos {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        self.line.serialize(ser)
    }
}

impl<'de> serde::Deserialize<'de> for SourcePos {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Ok(SourcePos {
            file: DECODING.with(|f| f.borrow().clone()),
            line: Option::<usize>::deserialize(de)?,
        })
    }
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

/// The one-based line and column of byte `offset` in `src`; the column counts characters,
/// not bytes, from the start of the line (offsets past the end count as the end, offsets
/// inside a character as its start).
pub fn line_column_at(src: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(src.len());
    while !src.is_char_boundary(end) {
        end -= 1;
    }
    let before = &src[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line_at(src, end), before[line_start..].chars().count() + 1)
}

/// The lines of a source, for many [`line_at`] questions about it: built lazily in one pass
/// over the text, then each answer is a binary search (asking [`line_at`] once per node of a
/// file with thousands of blocks counted its newlines thousands of times).
#[derive(Debug)]
pub struct LineIndex<'a> {
    src: &'a str,
    /// Offsets of every `\n`, once asked.
    newlines: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> LineIndex<'a> {
    /// An index of `src` (nothing is read until the first question).
    pub fn new(src: &'a str) -> Self {
        LineIndex {
            src,
            newlines: std::cell::OnceCell::new(),
        }
    }

    /// The one-based line of byte `offset`, as [`line_at`] answers it.
    pub fn line(&self, offset: usize) -> usize {
        let newlines = self.newlines.get_or_init(|| {
            self.src
                .bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i)
                .collect()
        });
        let end = offset.min(self.src.len());
        newlines.partition_point(|&nl| nl < end) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_index_answers_as_line_at() {
        let src = "a\nbc\n\nd";
        let index = LineIndex::new(src);
        for offset in 0..=src.len() + 2 {
            assert_eq!(index.line(offset), line_at(src, offset), "offset {offset}");
        }
        assert_eq!(LineIndex::new("").line(0), 1);
    }

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
    fn line_column_at_counts_characters_from_the_line_start() {
        let src = "ab\n\u{e9}x\r\ny";
        for (offset, at) in [
            (0, (1, 1)),
            (1, (1, 2)),
            (3, (2, 1)),
            (5, (2, 2)),
            (4, (2, 1)), // inside the two-byte character
            (6, (2, 3)),
            (8, (3, 1)),
            (99, (3, 2)),
        ] {
            assert_eq!(line_column_at(src, offset), at, "offset {offset}");
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
