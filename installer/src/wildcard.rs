//! Wildcard patterns as users write them in tstore's settings and as Go's `filepath.Match`
//! reads a path component: `*` any run of characters, `?` one character, anything else
//! itself (no classes, no escapes).

/// Whether `text` matches `pattern`.
pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Iterative wildcard matching with one backtrack point: linear in practice.
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_and_question_marks() {
        for (pattern, text, want) in [
            ("*", "pkg-1.0", true),
            ("pkg-?.0", "pkg-1.0", true),
            ("pkg-?", "pkg-1.0", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b", "ac", false),
            ("*notify*", "x/notify-slack/aws", true),
            ("", "", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(matches(pattern, text), want, "{pattern} ~ {text}");
        }
    }
}
