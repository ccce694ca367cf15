//! Text from a checkout, a lock file or a server, as tstore prints it for people.
//!
//! A directory named with a newline and terminal escape codes (`ESC[2K`, a carriage return)
//! would otherwise forge lines of a CI log: a root reported as initialised, an error erased.
//! So every value that did not come from tstore itself is printed with its control
//! characters escaped as Rust writes them (`\n`, `\r`, `\u{1b}`): [`line`] for what must
//! stay on one line (summaries, paths, progress lines), [`text`] for multi-line text whose
//! own line breaks are kept (an error's detail). JSON output needs none of this: serde
//! escapes control characters in strings.

use std::borrow::Cow;

/// `s` on one line: every control character escaped.
pub(crate) fn line(s: &str) -> Cow<'_, str> {
    escape(s, |_| true)
}

/// `s` with its line breaks and tabs kept and every other control character escaped.
pub(crate) fn text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c != '\n' && c != '\t')
}

fn escape(s: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && escaped(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() && escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_line_breaks_kept_where_asked() {
        let forged = "stacks/app\n[2/2] ok\u{1b}[2K\rdone";
        assert_eq!(line(forged), "stacks/app\\n[2/2] ok\\u{1b}[2K\\rdone");
        assert_eq!(text("a\nb\u{7}\tc"), "a\nb\\u{7}\tc");
        assert!(matches!(line("plain/path ü"), Cow::Borrowed(_)));
    }
}
