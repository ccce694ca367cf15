//! Numbers for people: sizes in decimal units (as `du -h --si` and cargo print them) and
//! counted nouns.

/// `n` bytes as `512 B`, `20.4 MB`, `1.2 GB` (powers of 1000, one decimal from kB up).
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `n` and the noun, its irregular plural given (`1 working directory`, `2 working
/// directories`).
pub(crate) fn count_as(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `1 package`, `2 packages` (`what` is the singular; the plural adds `s`).
pub(crate) fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1000), "1.0 kB");
        assert_eq!(bytes(20_373_856), "20.4 MB");
        assert_eq!(bytes(999_960_000), "1.0 GB");
        assert_eq!(bytes(40_747_712), "40.7 MB");
    }

    #[test]
    fn nouns() {
        assert_eq!(count(1, "blob"), "1 blob");
        assert_eq!(count(0, "blob"), "0 blobs");
        assert_eq!(count(3, "package"), "3 packages");
    }
}
