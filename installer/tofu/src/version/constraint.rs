//! Version constraints: parsing, canonical lock-file form and matching.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use super::scan::{parse_num, scan, NUM_NAMES};
use super::{Version, VersionError};

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
