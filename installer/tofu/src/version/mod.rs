//! Provider versions and "Ruby-style" version constraints (spec §5).
//!
//! This reproduces the semantics OpenTofu gets from apparentlymart/go-versions
//! for provider installation. Terraform core's `required_version` and module
//! versions use hashicorp/go-version, which has different rules; do not use
//! this module for those.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Errors from parsing a version or a constraint string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// An exact version string that does not parse.
    #[error("invalid version {given:?}: {reason}")]
    Version {
        /// The string as given.
        given: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A constraint string that does not parse.
    #[error("invalid version constraints {given:?}: {reason}")]
    Constraints {
        /// The whole constraint string as given.
        given: String,
        /// What is wrong with it, naming the offending term.
        reason: String,
    },
}

impl VersionError {
    /// The reason alone, without the string it is about (for messages that
    /// already quote the string, like the lock file's).
    pub fn reason(&self) -> &str {
        match self {
            VersionError::Version { reason, .. } | VersionError::Constraints { reason, .. } => {
                reason
            }
        }
    }
}

/// A semantic version `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`.
///
/// Ordering is semver precedence; build metadata does not affect precedence
/// and only breaks ties so that `Ord` stays consistent with `Eq`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Version {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Pre-release label without the leading `-`, empty for a release.
    pub prerelease: String,
    /// Build metadata without the leading `+`, usually empty.
    pub build: String,
}

impl Version {
    /// A release version with no pre-release or build parts.
    pub fn new(major: u64, minor: u64, patch: u64) -> Self {
        Version {
            major,
            minor,
            patch,
            ..Default::default()
        }
    }

    /// Parse an exact version, strictly (the lock file form): no `v` prefix,
    /// no spaces. Missing minor or patch parts are taken as zero, as
    /// go-versions does; the lock file parser then insists on the normalized
    /// spelling separately.
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let err = |reason: &str| VersionError::Version {
            given: s.to_owned(),
            reason: reason.to_owned(),
        };
        if s.trim().is_empty() {
            return Err(err("empty specification"));
        }
        let raw = scan(s);
        match raw.op.trim() {
            "" => {
                if !raw.sep.is_empty() {
                    if raw.sep.contains('v') {
                        return Err(err("a \"v\" prefix should not be used"));
                    }
                    return Err(err("extraneous spaces at start of specification"));
                }
            }
            ">" | ">=" | "<" | "<=" | "!" | "!=" | "~>" | "^" | "~" => {
                return Err(err(&format!(
                    "can't use constraint operator {:?}; an exact version is required",
                    raw.op
                )))
            }
            other => {
                return Err(err(&format!(
                    "invalid sequence {other:?} at start of specification"
                )))
            }
        }
        if !raw.rest.is_empty() {
            let rest = raw.rest.trim();
            let reason = if rest.is_empty() {
                "extraneous spaces at end of specification".to_owned()
            } else if rest.starts_with(',') || rest.starts_with('|') {
                "can't specify multiple versions; a single exact version is required".to_owned()
            } else if rest.starts_with('-') {
                "can't specify version range; a single exact version is required".to_owned()
            } else if raw.nums.is_empty() {
                "invalid specification; required format is three positive integers separated by periods".to_owned()
            } else {
                format!("invalid characters {rest:?}")
            };
            return Err(err(&reason));
        }
        if raw.nums.len() > 3 {
            return Err(err(
                "too many numbered portions; only three are allowed (major, minor, patch)",
            ));
        }
        let mut nums = [0u64; 3];
        for (i, n) in raw.nums.iter().enumerate() {
            nums[i] = parse_num(n).ok_or_else(|| {
                err(&format!(
                    "can't use wildcard for {} number; an exact version is required",
                    NUM_NAMES[i]
                ))
            })?;
        }
        Ok(Version {
            major: nums[0],
            minor: nums[1],
            patch: nums[2],
            prerelease: raw.pre.to_owned(),
            build: raw.meta.to_owned(),
        })
    }

    /// Parse a version as registries and humans sometimes write it: leading
    /// and trailing spaces and a `v` prefix are tolerated.
    pub fn parse_lenient(s: &str) -> Result<Self, VersionError> {
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        Self::parse(t).map_err(|e| VersionError::Version {
            given: s.to_owned(),
            reason: e.reason().to_owned(),
        })
    }

    /// Whether this is a pre-release (has a `-label`).
    pub fn is_prerelease(&self) -> bool {
        !self.prerelease.is_empty()
    }

    /// Compare by semver precedence only, ignoring build metadata.
    pub fn cmp_precedence(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| cmp_prerelease(&self.prerelease, &other.prerelease))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_precedence(other)
            .then_with(|| self.build.cmp(&other.build))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.prerelease.is_empty() {
            write!(f, "-{}", self.prerelease)?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build)?;
        }
        Ok(())
    }
}

impl FromStr for Version {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::parse(s)
    }
}

/// Semver pre-release precedence: a release sorts after its pre-releases;
/// dot-separated identifiers compare numerically when both are numeric, and
/// numeric identifiers sort before alphanumeric ones.
fn cmp_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    let mut ai = a.split('.');
    let mut bi = b.split('.');
    loop {
        match (ai.next(), bi.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let xn = x
                    .parse::<u64>()
                    .ok()
                    .filter(|_| x.bytes().all(|c| c.is_ascii_digit()));
                let yn = y
                    .parse::<u64>()
                    .ok()
                    .filter(|_| y.bytes().all(|c| c.is_ascii_digit()));
                let ord = match (xn, yn) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => x.cmp(y),
                };
                if ord != Ordering::Equal {
                    return ord;
                }
            }
        }
    }
}

const NUM_NAMES: [&str; 3] = ["major", "minor", "patch"];

/// One constraint term, tokenized: `OP SEP NUM(.NUM)* [-PRE] [+META] REST`.
///
/// This mirrors the go-versions scanner so that the same inputs are
/// accepted and the same mistakes (a `v` prefix, two spaces) are caught.
struct RawTerm<'a> {
    op: &'a str,
    sep: &'a str,
    nums: Vec<&'a str>,
    pre: &'a str,
    meta: &'a str,
    rest: &'a str,
}

fn scan(s: &str) -> RawTerm<'_> {
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

fn parse_num(s: &str) -> Option<u64> {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// A constraint operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `=` or no operator: exactly this version.
    Eq,
    /// `!=`
    Neq,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `~>`: the last given part may increase (minimum two parts).
    Pessimistic,
}

/// One term of a constraint, e.g. `~> 2.1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Constraint {
    /// The operator.
    pub op: Op,
    /// The boundary version, with omitted parts set to zero.
    pub version: Version,
    /// How many numeric parts were written (1 to 3); decides what `~>` allows.
    pub given_parts: usize,
}

impl Constraint {
    /// `~>` with three parts pins the minor version; with fewer it pins the major.
    fn pessimistic_pins_minor(&self) -> bool {
        self.given_parts >= 3
    }

    fn matches_ignoring_prerelease_rule(&self, v: &Version) -> bool {
        let b = &self.version;
        let ord = v.cmp_precedence(b);
        match self.op {
            Op::Eq => ord == Ordering::Equal && (b.build.is_empty() || b.build == v.build),
            Op::Neq => !(ord == Ordering::Equal && (b.build.is_empty() || b.build == v.build)),
            Op::Gt => ord == Ordering::Greater,
            Op::Ge => ord != Ordering::Less,
            Op::Lt => ord == Ordering::Less,
            Op::Le => ord != Ordering::Greater,
            Op::Pessimistic => {
                let upper = if self.pessimistic_pins_minor() {
                    Version::new(b.major, b.minor + 1, 0)
                } else {
                    Version::new(b.major + 1, 0, 0)
                };
                ord != Ordering::Less && v.cmp_precedence(&upper) == Ordering::Less
            }
        }
    }

    /// Rank of the operator at an equal boundary in the canonical string,
    /// as in OpenTofu's VersionConstraintsString.
    fn canonical_rank(&self) -> u8 {
        match self.op {
            Op::Gt => 1,
            Op::Ge => 2,
            Op::Eq => 3,
            Op::Pessimistic if self.pessimistic_pins_minor() => 4,
            Op::Pessimistic => 5,
            Op::Le => 6,
            Op::Lt => 7,
            Op::Neq => 8,
        }
    }

    fn canonical(&self) -> String {
        let b = &self.version;
        let mut s = String::from(match self.op {
            Op::Gt => "> ",
            Op::Ge => ">= ",
            Op::Eq => "",
            Op::Pessimistic => "~> ",
            Op::Le => "<= ",
            Op::Lt => "< ",
            Op::Neq => "!= ",
        });
        if self.op == Op::Pessimistic && !self.pessimistic_pins_minor() {
            s.push_str(&format!("{}.{}", b.major, b.minor));
        } else {
            s.push_str(&format!("{}.{}.{}", b.major, b.minor, b.patch));
        }
        if !b.prerelease.is_empty() {
            s.push('-');
            s.push_str(&b.prerelease);
        }
        if !b.build.is_empty() {
            s.push('+');
            s.push_str(&b.build);
        }
        s
    }
}

/// An AND of constraint terms. Empty means "any released version".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionConstraints {
    terms: Vec<Constraint>,
}

impl VersionConstraints {
    /// Parse a comma-separated constraint string such as `~>2.0,   >=2.0.0 , !=2.1.1`.
    /// An empty (or all-space) string is no constraint.
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let fail = |reason: String| VersionError::Constraints {
            given: s.to_owned(),
            reason,
        };
        let mut terms = Vec::new();
        let mut remain = s.trim();
        while !remain.is_empty() {
            let (term, after) = parse_term(remain).map_err(&fail)?;
            let consumed = remain[..remain.len() - after.len()].trim_end();
            terms.push(term);
            remain = after.trim();
            if !remain.is_empty() {
                if remain.starts_with('v') {
                    return Err(fail(
                        "a \"v\" prefix should not be used when specifying versions".to_owned(),
                    ));
                }
                let Some(r) = remain.strip_prefix(',') else {
                    return Err(fail(format!("missing comma after {consumed:?}")));
                };
                remain = r.trim();
            }
        }
        Ok(VersionConstraints { terms })
    }

    /// The terms, in the order they were written or merged.
    pub fn terms(&self) -> &[Constraint] {
        &self.terms
    }

    /// Whether `v` is acceptable: every term matches, and a pre-release is
    /// acceptable only if an exact (`=` or bare) term names it.
    pub fn matches(&self, v: &Version) -> bool {
        if !self
            .terms
            .iter()
            .all(|t| t.matches_ignoring_prerelease_rule(v))
        {
            return false;
        }
        !v.is_prerelease()
            || self
                .terms
                .iter()
                .any(|t| t.op == Op::Eq && t.matches_ignoring_prerelease_rule(v))
    }

    /// AND `other` into `self`, as when several modules constrain one provider.
    pub fn merge(&mut self, other: &VersionConstraints) {
        self.terms.extend(other.terms.iter().cloned());
    }

    /// Whether there are no terms at all.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The canonical form written to a lock file's `constraints`: equivalent
    /// terms deduplicated, sorted by boundary version and then by operator
    /// (`>`, `>=`, exact, `~> x.y.z`, `~> x.y`, `<=`, `<`, `!=`), joined with `", "`.
    pub fn to_lock_string(&self) -> String {
        let mut terms: Vec<(&Constraint, String)> = Vec::new();
        for t in &self.terms {
            let text = t.canonical();
            if !terms.iter().any(|(_, seen)| *seen == text) {
                terms.push((t, text));
            }
        }
        terms.sort_by(|(a, _), (b, _)| {
            a.version
                .cmp_precedence(&b.version)
                .then_with(|| a.version.build.cmp(&b.version.build))
                .then_with(|| a.canonical_rank().cmp(&b.canonical_rank()))
        });
        terms
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for VersionConstraints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_lock_string())
    }
}

impl FromStr for VersionConstraints {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VersionConstraints::parse(s)
    }
}

/// Parse one term from the front of `s`; returns the term and what follows it.
fn parse_term(s: &str) -> Result<(Constraint, &str), String> {
    let raw = scan(s);
    let invalid = |reason: String| {
        let consumed = &s[..s.len() - raw.rest.len()];
        format!("invalid specification {consumed:?}: {reason}")
    };
    let op = match raw.op {
        "=" | "" => Op::Eq,
        "!=" => Op::Neq,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        "~>" => Op::Pessimistic,
        "=<" => {
            return Err(invalid(
                "invalid constraint operator \"=<\"; did you mean \"<=\"?".into(),
            ))
        }
        "=>" => {
            return Err(invalid(
                "invalid constraint operator \"=>\"; did you mean \">=\"?".into(),
            ))
        }
        other => return Err(invalid(format!("invalid constraint operator {other:?}"))),
    };
    match raw.sep {
        "" => {}
        " " if !raw.op.is_empty() => {}
        sep if sep.contains('v') => {
            return Err(invalid(
                "a \"v\" prefix should not be used when specifying versions".into(),
            ))
        }
        _ if raw.op.is_empty() => {
            return Err(invalid(
                "extraneous spaces at start of specification".into(),
            ))
        }
        _ => {
            return Err(invalid(format!(
                "only one space is expected after the operator {:?}",
                raw.op
            )))
        }
    }
    if raw.nums.is_empty() {
        return Err(invalid("a version number is required".into()));
    }
    if raw.nums.len() > 3 {
        return Err(invalid(
            "too many numbered portions; only three are allowed (major, minor, patch)".into(),
        ));
    }
    let mut nums = [0u64; 3];
    for (i, n) in raw.nums.iter().enumerate() {
        nums[i] = parse_num(n).ok_or_else(|| {
            invalid(format!(
                "can't use wildcard for {} number; omit segments that should be unconstrained",
                NUM_NAMES[i]
            ))
        })?;
    }
    let version = Version {
        major: nums[0],
        minor: nums[1],
        patch: nums[2],
        prerelease: raw.pre.to_owned(),
        build: raw.meta.to_owned(),
    };
    Ok((
        Constraint {
            op,
            version,
            given_parts: raw.nums.len(),
        },
        raw.rest,
    ))
}

/// The newest version in `available` that `c` accepts (the version init selects).
pub fn newest_matching<'a>(
    available: impl IntoIterator<Item = &'a Version>,
    c: &VersionConstraints,
) -> Option<&'a Version> {
    available.into_iter().filter(|v| c.matches(v)).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    fn canon(s: &str) -> String {
        VersionConstraints::parse(s).unwrap().to_lock_string()
    }

    #[test]
    fn version_parse_and_display() {
        assert_eq!(v("1.2.3").to_string(), "1.2.3");
        assert_eq!(v("2.2.0-beta1").prerelease, "beta1");
        assert_eq!(v("1.0.0-rc.1+abc").to_string(), "1.0.0-rc.1+abc");
        // go-versions pads short versions; the lock file checks spelling separately.
        assert_eq!(v("1.0").to_string(), "1.0.0");
        let e = Version::parse("v1.0.0").unwrap_err();
        assert_eq!(e.reason(), "a \"v\" prefix should not be used");
        for bad in [
            "",
            " 1.0.0",
            "1.0.0 ",
            "1.0.0.0",
            ">= 1.0",
            "1.x",
            "abc",
            "1.0.0,2.0.0",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Version::parse_lenient(" v1.2.3 ").unwrap(), v("1.2.3"));
    }

    #[test]
    fn version_ordering() {
        let mut list = vec![
            v("1.0.0"),
            v("1.0.0-alpha"),
            v("1.0.0-alpha.1"),
            v("1.0.0-alpha.beta"),
            v("1.0.0-beta.11"),
            v("1.0.0-beta.2"),
            v("1.0.0-beta"),
            v("1.0.0-rc.1"),
            v("0.9.10"),
            v("0.10.0"),
        ];
        list.sort();
        let got: Vec<String> = list.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "0.9.10",
                "0.10.0",
                "1.0.0-alpha",
                "1.0.0-alpha.1",
                "1.0.0-alpha.beta",
                "1.0.0-beta",
                "1.0.0-beta.2",
                "1.0.0-beta.11",
                "1.0.0-rc.1",
                "1.0.0"
            ]
        );
        assert_eq!(v("1.0.0+a").cmp_precedence(&v("1.0.0+b")), Ordering::Equal);
    }

    /// Spec §2.1 table: canonical lock-file terms.
    #[test]
    fn canonical_terms_spec_table() {
        assert_eq!(canon("= 2.0.0"), "2.0.0");
        assert_eq!(canon("2.0.0"), "2.0.0");
        assert_eq!(canon(">= 2.0"), ">= 2.0.0");
        assert_eq!(canon("< 2.1"), "< 2.1.0");
        assert_eq!(canon("<3"), "< 3.0.0");
        assert_eq!(canon("~> 2"), "~> 2.0");
        assert_eq!(canon("~> 2.0"), "~> 2.0");
        assert_eq!(canon("~>2.0"), "~> 2.0");
        assert_eq!(canon("~> 2.1.2"), "~> 2.1.2");
        let mut merged = VersionConstraints::parse("~>2.0,   >=2.0.0 , !=2.1.1").unwrap();
        merged.merge(&VersionConstraints::parse("<= 2.9, >= 2.0.0").unwrap());
        assert_eq!(
            merged.to_lock_string(),
            ">= 2.0.0, ~> 2.0, != 2.1.1, <= 2.9.0"
        );
        assert_eq!(canon("!= 3.0.0, > 2.0.0"), "> 2.0.0, != 3.0.0");
    }

    #[test]
    fn canonical_dedupe_and_operator_order() {
        assert_eq!(canon("~> 2, ~> 2.0, >= 2, >=2.0.0"), ">= 2.0.0, ~> 2.0");
        assert_eq!(
            canon("!= 1.0.0, < 1.0.0, <= 1.0.0, ~> 1.0, ~> 1.0.0, 1.0.0, >= 1.0.0, > 1.0.0"),
            "> 1.0.0, >= 1.0.0, 1.0.0, ~> 1.0.0, ~> 1.0, <= 1.0.0, < 1.0.0, != 1.0.0"
        );
        assert_eq!(canon("1.0.0-beta1"), "1.0.0-beta1");
        assert_eq!(canon("~> 1.0-beta2"), "~> 1.0-beta2");
        assert_eq!(
            canon(">= 2.0.0-beta1, >= 2.0.0"),
            ">= 2.0.0-beta1, >= 2.0.0"
        );
        assert_eq!(canon(""), "");
        assert!(VersionConstraints::parse("  ").unwrap().is_empty());
        // Canonical output parses back to itself.
        let c = ">= 2.0.0, ~> 2.0, != 2.1.1, <= 2.9.0";
        assert_eq!(canon(c), c);
    }

    #[test]
    fn constraint_parse_errors() {
        for (bad, needle) in [
            ("v1.0.0", "\"v\" prefix"),
            (">= v1.0.0", "\"v\" prefix"),
            (">=  1.0", "only one space"),
            ("=> 1.0", "did you mean \">=\""),
            ("=< 1.0", "did you mean \"<=\""),
            ("1.0.0.0", "too many"),
            ("1.*", "wildcard"),
            ("~> 1.0 2.0", "missing comma"),
            ("^1.0", "invalid constraint operator"),
            (">=", "version number is required"),
        ] {
            let e = VersionConstraints::parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
        // A trailing comma is accepted, as in go-versions.
        assert_eq!(canon("1.0.0,"), "1.0.0");
    }

    fn range(c: &str, yes: &[&str], no: &[&str]) {
        let c = VersionConstraints::parse(c).unwrap();
        for y in yes {
            assert!(c.matches(&v(y)), "{c} should match {y}");
        }
        for n in no {
            assert!(!c.matches(&v(n)), "{c} should not match {n}");
        }
    }

    /// Spec §5 `~>` table.
    #[test]
    fn pessimistic_ranges() {
        range("~> 2", &["2.0.0", "2.9.9"], &["1.9.9", "3.0.0"]);
        range("~> 2.0", &["2.0.0", "2.9.9"], &["1.9.9", "3.0.0"]);
        range("~> 2.1.0", &["2.1.0", "2.1.9"], &["2.0.9", "2.2.0"]);
        range("~> 2.0.0", &["2.0.0", "2.0.9"], &["1.9.9", "2.1.0"]);
        range("~> 2.1", &["2.1.0", "2.9.0"], &["2.0.9", "3.0.0"]);
        range("= 2", &["2.0.0"], &["2.0.1"]);
        range("> 2", &["2.0.1"], &["2.0.0"]);
        range("!= 2.0.0", &["2.0.1", "1.0.0"], &["2.0.0", "2.1.0-beta"]);
    }

    /// Spec §5 selection table, available 2.0.0, 2.1.2, 2.2.0-beta1, 3.0.0.
    #[test]
    fn selection_spec_table() {
        let available: Vec<Version> = ["2.0.0", "2.1.2", "2.2.0-beta1", "3.0.0"]
            .iter()
            .map(|s| v(s))
            .collect();
        let cases = [
            ("~> 2", Some("2.1.2")),
            ("~> 2.0", Some("2.1.2")),
            ("~> 2.0.0", Some("2.0.0")),
            ("~> 2.1.0", Some("2.1.2")),
            (">= 2.0", Some("3.0.0")),
            ("!= 3.0.0, > 2.0.0", Some("2.1.2")),
            ("= 2.0.0", Some("2.0.0")),
            ("< 2.1", Some("2.0.0")),
            ("~>2.1.2,<3", Some("2.1.2")),
            ("2.2.0-beta1", Some("2.2.0-beta1")),
            (">= 2.2.0-beta1", Some("3.0.0")),
            ("~> 2.2.0-beta1", None),
            (">= 2.1.5, < 2.3", None),
            ("", Some("3.0.0")),
            // An exact pre-release term still has to satisfy the other terms.
            ("2.2.0-beta1, < 2.2.0-beta0", None),
            ("2.2.0-beta1, < 3", Some("2.2.0-beta1")),
        ];
        for (c, want) in cases {
            let parsed = VersionConstraints::parse(c).unwrap();
            let got = newest_matching(&available, &parsed).map(ToString::to_string);
            assert_eq!(got.as_deref(), want, "constraint {c:?}");
        }
    }
}
