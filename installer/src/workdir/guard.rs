//! Which names read back from a working directory's state tstore may act on. A checkout is
//! input from whoever prepared it: a crafted key in tstore's own state files must never
//! name a path outside the entry it stands for.
//!
//! Rule enforced here: a module key read back from state is a call path tstore itself
//! could have written ([`is_module_key`]): names of letters, digits, `_` and `-` joined by
//! `.`, so it names exactly one plain entry of `.terraform/modules`. How such an entry is then changed (never
//! through a symlink) is [`safe_fs`](super::safe_fs)'s rule.

/// Whether `key` is a module call path tstore writes (the module lock's rule,
/// [`tstore_tofu::module_lock::is_call_path`]). Such a key is one plain file name.
pub(crate) fn is_module_key(key: &str) -> bool {
    tstore_tofu::module_lock::is_call_path(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_keys() {
        for ok in [
            "a",
            "vpc",
            "a.b",
            "a_b-c.d2",
            "_x",
            "test.tests.001_basic.setup",
        ] {
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
