//! Provider versions and "Ruby-style" version constraints.
//!
//! This reproduces the semantics OpenTofu gets from apparentlymart/go-versions
//! for provider installation (`ParseVersionConstraints`, `VersionConstraintsString` in
//! <https://github.com/opentofu/opentofu/blob/main/internal/getproviders/types.go>). Terraform core's `required_version` and module
//! versions use hashicorp/go-version, which has different rules; do not use
//! this module for those.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use self::scan::{parse_num, scan, NUM_NAMES};

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

mod constraint;
mod module;
mod scan;
pub use self::constraint::{newest_matching, Constraint, Op, VersionConstraints};
pub use self::module::{ExactPrerelease, ModuleVersionConstraints};

#[cfg(test)]
mod tests;
