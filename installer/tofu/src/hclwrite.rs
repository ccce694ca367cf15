//! Writing HCL as Go's `hclwrite` formats it, for the files tstore writes (the dependency
//! lock file and the module lock file): the `=` of a run of one-line attributes aligned, a
//! list of strings one item per line, strings quoted by [`crate::string_literal::quote`].
//!
//! Nesting is two spaces per level, as `hclwrite.Format` indents.

use std::fmt::Write as _;

use crate::string_literal::quote;

/// Write a run of consecutive one-line attributes, `{indent}{key} = {value}` each, with the
/// `=` aligned one space past the longest key, as hclwrite aligns such a run. Values are
/// written as given: the caller quotes them.
pub(crate) fn write_aligned_attributes(out: &mut String, indent: &str, attrs: &[(&str, String)]) {
    let width = attrs.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
    for (key, value) in attrs {
        let _ = writeln!(out, "{indent}{key:<width$} = {value}");
    }
}

/// Write `{indent}{key} = [`, each item quoted on its own line one level deeper with a
/// trailing comma, then `{indent}]`. A multi-line value ends hclwrite's run of aligned
/// attributes, so its key is never padded.
pub(crate) fn write_string_list<'a>(
    out: &mut String,
    indent: &str,
    key: &str,
    items: impl IntoIterator<Item = &'a str>,
) {
    let _ = writeln!(out, "{indent}{key} = [");
    for item in items {
        let _ = writeln!(out, "{indent}  {},", quote(item));
    }
    let _ = writeln!(out, "{indent}]");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_attributes_aligns_on_the_longest_key() {
        let mut out = String::new();
        write_aligned_attributes(
            &mut out,
            "  ",
            &[
                ("version", quote("1.0.0")),
                ("constraints", quote("~> 1.0")),
            ],
        );
        assert_eq!(
            out,
            "  version     = \"1.0.0\"\n  constraints = \"~> 1.0\"\n"
        );
    }

    #[test]
    fn a_list_is_one_item_per_line_with_trailing_commas() {
        let mut out = String::new();
        write_string_list(&mut out, "  ", "hashes", ["h1:a", "zh:b"]);
        assert_eq!(out, "  hashes = [\n    \"h1:a\",\n    \"zh:b\",\n  ]\n");
    }
}
