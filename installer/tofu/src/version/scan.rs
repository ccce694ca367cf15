//! The constraint-term scanner shared by version and constraint parsing.

pub(super) const NUM_NAMES: [&str; 3] = ["major", "minor", "patch"];

/// One constraint term, tokenized: `OP SEP NUM(.NUM)* [-PRE] [+META] REST`.
///
/// This mirrors the go-versions scanner so that the same inputs are
/// accepted and the same mistakes (a `v` prefix, two spaces) are caught.
pub(super) struct RawTerm<'a> {
    pub(super) op: &'a str,
    pub(super) sep: &'a str,
    pub(super) nums: Vec<&'a str>,
    pub(super) pre: &'a str,
    pub(super) meta: &'a str,
    pub(super) rest: &'a str,
}

pub(super) fn scan(s: &str) -> RawTerm<'_> {
    let is_op = |c: char| {
        !(c.is_ascii_digit() || c.is_whitespace() || c.is_alphabetic() || c == '.' || c == '*')
    };
    let op_end = s.find(|c: char| !is_op(c)).unwrap_or(s.len());
    let op = &s[..op_end];
    let after_op = &s[op_end..];
    let sep_len = after_op
        .find(|c: char| !(c.is_whitespace() || c == 'v'))
        .unwrap_or(after_op.len());
    let sep = &after_op[..sep_len];
    let mut rest = &after_op[sep_len..];

    let take_num = |r: &str| -> usize {
        if r.starts_with(['*', 'x', 'X']) {
            1
        } else {
            r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len())
        }
    };
    let mut nums = Vec::new();
    let n = take_num(rest);
    if n > 0 {
        nums.push(&rest[..n]);
        rest = &rest[n..];
        while let Some(r) = rest.strip_prefix('.') {
            let n = take_num(r);
            if n == 0 {
                break;
            }
            nums.push(&r[..n]);
            rest = &r[n..];
        }
    }
    let take_extra = |r: &str, lead: char| -> usize {
        match r.strip_prefix(lead) {
            Some(t) => {
                let n = t
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
                    .unwrap_or(t.len());
                if n == 0 {
                    0
                } else {
                    n + 1
                }
            }
            None => 0,
        }
    };
    let mut pre = "";
    let mut meta = "";
    if !nums.is_empty() {
        let n = take_extra(rest, '-');
        if n > 0 {
            pre = &rest[1..n];
            rest = &rest[n..];
        }
        let n = take_extra(rest, '+');
        if n > 0 {
            meta = &rest[1..n];
            rest = &rest[n..];
        }
    }
    RawTerm {
        op,
        sep,
        nums,
        pre,
        meta,
        rest,
    }
}

pub(super) fn parse_num(s: &str) -> Option<u64> {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}
