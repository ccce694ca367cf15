//! HCL string literals: as tofu and terraform write them in HCL 2 files (the lock file), and
//! as the CLI configuration needs them, which tofu and terraform read as HCL 1.

use std::fmt::Write as _;

/// `s` as a double-quoted HCL 2 string literal that reads back as `s`, escaped as hclwrite
/// escapes it: `"` and `\`, newline, carriage return and tab by their short escapes, every
/// other control character as `\uXXXX`, and `${` and `%{` doubled (`$${`, `%%{`) so that
/// no template interpolation or directive starts in it.
pub fn quote(s: &str) -> String {
    quote_with(s, |c, out| {
        out.push(c);
        out.push(c);
    })
}

/// `s` as a double-quoted string literal of the CLI configuration, which reads back as `s`
/// both to tofu and terraform, which read the file as HCL 1, and to an HCL 2 reader (this
/// crate's [`cliconfig`](crate::cliconfig) parser). Escaped as [`quote`] escapes, except that
/// the `$` of `${` and the `%` of `%{` are written `\u0024` and `\u0025`: HCL 1 has no `$${`
/// escape (it keeps both dollars, and tofu then parses an `oci_mirror`'s
/// `repository_template` as an HCL 2 template, where `$${` is a literal `${`), nor any
/// template directive, while to both syntaxes `\u0024` is a `$` that starts nothing.
pub fn quote_for_cli_config(s: &str) -> String {
    quote_with(s, |c, out| {
        let _ = write!(out, "\\u{:04x}", c as u32);
    })
}

/// `s` quoted, with the `$` or `%` that starts a template sequence written by
/// `template_start`.
fn quote_with(s: &str, template_start: impl Fn(char, &mut String)) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if chars.peek() == Some(&'{') => template_start(c, &mut out),
            // The control characters are all in the Basic Multilingual Plane.
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &[&str] = &[
        "",
        "plain/path",
        "line\nbreak",
        "quote\"back\\slash",
        "${var.x} and %{ if true }",
        "$${escaped} %%{escaped}",
        "trailing $ and %",
        "ctl\r\t\u{0}\u{1b}\u{7f}\u{85}",
        "ünïcödé ✓ 𝄞",
    ];

    #[test]
    fn escapes() {
        assert_eq!(quote("a\"b\\c${x}%{y}$z"), r#""a\"b\\c$${x}%%{y}$z""#);
        assert_eq!(quote("a\nb\r\tc\u{1}\u{7f}"), r#""a\nb\r\tc\u0001\u007f""#);
        assert_eq!(quote("$${x}"), r#""$$${x}""#);
        assert_eq!(
            quote_for_cli_config("r.example/${namespace}/%{x}/$y\n\""),
            r#""r.example/\u0024{namespace}/\u0025{x}/$y\n\"""#
        );
    }

    /// What either function writes, an HCL 2 parser reads back as the same string.
    #[test]
    fn round_trips_through_the_parser() {
        for s in HOSTILE {
            for quoted in [quote(s), quote_for_cli_config(s)] {
                let src = format!("v = {quoted}\n");
                let body =
                    hcl::edit::parser::parse_body(&src).unwrap_or_else(|e| panic!("{src}: {e}"));
                let attr = body.get_attribute("v").expect("the attribute");
                let hcl::edit::expr::Expression::String(read) = &attr.value else {
                    panic!("{s:?} quoted as {src} reads as {:?}", attr.value);
                };
                assert_eq!(read.as_str(), *s, "quoted as {src}");
            }
        }
    }
}
