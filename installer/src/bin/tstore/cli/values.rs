//! The values of flags and arguments as users type them: durations, sizes, tofu's booleans,
//! flavors, platforms. Each parser's error names the text and what would be accepted.

use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::ValueEnum;
use tstore_tofu::addr::Platform;
use tstore_tofu::flavor::Flavor;

/// The flavors by the names users type (`tofu`, `terraform`).
pub(crate) fn flavor_parser() -> impl TypedValueParser<Value = Flavor> {
    PossibleValuesParser::new(["tofu", "terraform"]).map(|s| {
        s.parse::<Flavor>()
            .expect("every possible value is a flavor")
    })
}

/// A boolean flag's value as tofu reads `-flag=VALUE` (Go's `strconv.ParseBool`: `1`, `t`,
/// `T`, `TRUE`, `true`, `True`, and the same for false), so `-upgrade=true` and
/// `-get=0` mean what they mean to `tofu init`.
pub(crate) fn go_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("{text:?} is not a boolean; use true or false")),
    }
}

/// `90`, `90s`, `15m`, `1h`, `7d` (a bare number is seconds).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration like 30s, 15m, 1h or 7d");
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86400),
        _ => None,
    };
    secs.map(Duration::from_secs).ok_or_else(bad)
}

/// `1048576`, `512K`, `500M`, `20G`, `1T` (powers of 1024; `KiB`, `GB` … read alike).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a size like 500M, 20G or 1T");
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num.parse().map_err(|_| bad())?;
    let unit = unit.trim().to_ascii_uppercase();
    let shift = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1 << shift).ok_or_else(bad)
}

/// A target platform `OS_ARCH`.
pub(crate) fn parse_platform(text: &str) -> Result<Platform, String> {
    text.parse()
        .map_err(|e| format!("{e}; use OS_ARCH, e.g. linux_amd64"))
}

/// `-lockfile=MODE` of `tstore init`, as tofu names its modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LockfileMode {
    /// Fail instead of changing the lock file.
    Readonly,
}
