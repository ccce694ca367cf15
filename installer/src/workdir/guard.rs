//! Which names read back from a working directory's state tstore may act on. A checkout is
//! input from whoever prepared it: a crafted key in tstore's own state files must never
//! name a path outside the entry it stands for.
//!
//! Rule enforced here: a module key read back from state is a call path tstore itself
//! could have written ([`is_module_key`]): identifiers joined by `.`, so it names exactly
//! one plain entry of `.terraform/modules`. How such an entry is then changed (never
//! through a symlink) is [`safe_fs`](super::safe_fs)'s rule.

/// Whether `key` is a module call path tstore writes: HCL identifiers (a letter or `_`,
/// then letters, digits, `_` and `-`) joined by `.`. Such a key is one plain file name.
pub(crate) fn is_module_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_keys() {
        for ok in ["a", "vpc", "a.b", "a_b-c.d2", "_x"] {
            assert!(is_module_key(ok), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "/etc",
            "a/b",
            ".",
            "..",
            "a..b",
            "1a",
            "a.",
            ".a",
            "a b",
            "a\0b",
            "é",
            "a/../../x",
        ] {
            assert!(!is_module_key(bad), "{bad}");
        }
    }
}
