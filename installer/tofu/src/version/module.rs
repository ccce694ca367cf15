//! Module version constraints, as terraform reads a module call's `version` with
//! hashicorp/go-version (not the provider rules of [`VersionConstraints`](super::VersionConstraints)):
//! a `v` prefix is allowed, `~> 1` allows any `1.x` *and later* (only the segments before
//! the last written one are fixed), and the registry selection takes a pre-release only
//! when the constraint text is exactly that version.

use std::cmp::Ordering;

use super::{Version, VersionError};

/// The operators go-version knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Pessimistic,
}

/// One term: an operator and a version, with how many numeric segments were written.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    op: Op,
    version: Version,
    segments: usize,
    /// The term as written, trimmed (go-version's `String()` of a constraint).
    original: String,
}

/// A module call's `version` constraint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleVersionConstraints {
    terms: Vec<Term>,
    /// The spellings that name a pre-release exactly, beside its bare version.
    prerelease: ExactPrerelease,
}

/// How a constraint may name a registry module's pre-release exactly, beside its bare
/// version text (the tool and release decide: `tool_version`'s `EXACT_PRERELEASE_*` rules).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExactPrerelease {
    /// `=1.2.0-rc.1` (no space after `=`).
    pub equals: bool,
    /// `v1.2.0-rc.1` and `=v1.2.0-rc.1`.
    pub v_prefix: bool,
}

impl ModuleVersionConstraints {
    /// Parse `1.2`, `>= v1.0.0, < 2`, `~> 1.2.0-beta` … (comma-separated terms).
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let bad = |reason: &str| VersionError::Constraints {
            given: text.to_owned(),
            reason: reason.to_owned(),
        };
        let mut terms = Vec::new();
        for raw in text.split(',') {
            let original = raw.trim();
            let (op, rest) = [
                ("~>", Op::Pessimistic),
                (">=", Op::Ge),
                ("=>", Op::Ge),
                ("<=", Op::Le),
                ("=<", Op::Le),
                ("!=", Op::Ne),
                (">", Op::Gt),
                ("<", Op::Lt),
                ("=", Op::Eq),
            ]
            .into_iter()
            .find_map(|(s, op)| original.strip_prefix(s).map(|r| (op, r)))
            .unwrap_or((Op::Eq, original));
            let v = rest.trim();
            let v = v.strip_prefix('v').unwrap_or(v);
            let numbers = v.split(['-', '+']).next().unwrap_or("");
            let segments = numbers.split('.').count();
            if numbers.is_empty()
                || segments > 3
                || !numbers
                    .split('.')
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(bad(&format!("malformed constraint {original:?}")));
            }
            let version = Version::parse(v).map_err(|e| bad(e.reason()))?;
            terms.push(Term {
                op,
                version,
                segments,
                original: original.to_owned(),
            });
        }
        Ok(ModuleVersionConstraints {
            terms,
            prerelease: ExactPrerelease::default(),
        })
    }

    /// The constraint, naming pre-releases exactly in the spellings `prerelease` allows.
    pub fn naming_prereleases(self, prerelease: ExactPrerelease) -> Self {
        ModuleVersionConstraints { prerelease, ..self }
    }

    /// Whether the constraint's text names the pre-release `v` exactly: its bare version,
    /// or a spelling the tool and release accept (`=X`, `vX`, `=vX`).
    fn names_exactly(&self, v: &Version) -> bool {
        let text = self.to_go_string();
        let bare = v.to_string();
        text == bare
            || (self.prerelease.equals && text == format!("={bare}"))
            || (self.prerelease.v_prefix
                && (text == format!("v{bare}")
                    || (self.prerelease.equals && text == format!("=v{bare}"))))
    }

    /// Whether `v` satisfies every term (go-version's `Check`).
    pub fn matches(&self, v: &Version) -> bool {
        self.terms.iter().all(|t| t.matches(v))
    }

    /// The constraint as go-version prints it: each term as written, joined by `,`.
    pub fn to_go_string(&self) -> String {
        self.terms
            .iter()
            .map(|t| t.original.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The one version this constraint allows, when it names exactly one: every term is
    /// `= X.Y.Z` (or a bare `X.Y.Z`) with all three segments written, no build metadata,
    /// and the same version, which [`Self::select`] would take (a pre-release only when the
    /// text is exactly its version: `v1.2.0-beta` selects nothing). Selection from any
    /// registry list can then only pick it, or nothing when the list lacks it.
    pub fn exact(&self) -> Option<&Version> {
        let first = &self.terms.first()?.version;
        let one = self.terms.iter().all(|t| {
            t.op == Op::Eq && t.segments == 3 && t.version.build.is_empty() && t.version == *first
        });
        (one && self.select(std::iter::once(first)).is_some()).then_some(first)
    }

    /// The version terraform's module installer selects from a registry's list: the
    /// newest one that matches, skipping every pre-release the constraint does not name
    /// exactly ([`ExactPrerelease`]).
    pub fn select<'a>(
        &self,
        available: impl IntoIterator<Item = &'a Version>,
    ) -> Option<&'a Version> {
        available
            .into_iter()
            .filter(|v| !v.is_prerelease() || self.names_exactly(v))
            .filter(|v| self.matches(v))
            .max_by(|a, b| a.cmp_precedence(b))
    }
}

impl ModuleVersionConstraints {
    /// Every version [`Self::select`] would consider, newest first (the first is the one it
    /// selects): for a choice that may pass over the newest (the cooldown).
    pub fn selectable<'a>(
        &self,
        available: impl IntoIterator<Item = &'a Version>,
    ) -> Vec<&'a Version> {
        let mut versions: Vec<&Version> = available
            .into_iter()
            .filter(|v| !v.is_prerelease() || self.names_exactly(v))
            .filter(|v| self.matches(v))
            .collect();
        versions.sort_by(|a, b| b.cmp_precedence(a));
        versions
    }
}

impl Term {
    fn matches(&self, v: &Version) -> bool {
        let c = &self.version;
        let ord = v.cmp_precedence(c);
        match self.op {
            Op::Eq => ord == Ordering::Equal,
            Op::Ne => ord != Ordering::Equal,
            Op::Gt => prerelease_check(v, c) && ord == Ordering::Greater,
            Op::Lt => prerelease_check(v, c) && ord == Ordering::Less,
            Op::Ge => prerelease_check(v, c) && ord != Ordering::Less,
            Op::Le => prerelease_check(v, c) && ord != Ordering::Greater,
            Op::Pessimistic => {
                if !prerelease_check(v, c) || (c.is_prerelease() && !v.is_prerelease()) {
                    return false;
                }
                if ord == Ordering::Less {
                    return false;
                }
                let (vs, cs) = ([v.major, v.minor, v.patch], [c.major, c.minor, c.patch]);
                // Segments before the last written one are fixed; the last may grow.
                vs[..self.segments - 1] == cs[..self.segments - 1]
                    && vs[self.segments - 1] >= cs[self.segments - 1]
            }
        }
    }
}

/// go-version's rule for pre-releases under ordering operators: a pre-release version
/// matches only a constraint with a pre-release on the same numbers.
fn prerelease_check(v: &Version, c: &Version) -> bool {
    match (v.is_prerelease(), c.is_prerelease()) {
        (true, true) => (v.major, v.minor, v.patch) == (c.major, c.minor, c.patch),
        (true, false) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How each tool and release names a pre-release exactly (judged: terraform 1.0.3 and
    /// 1.11.4 in the conformance cases; OpenTofu by its own fixtures).
    #[test]
    fn an_exact_prerelease_is_named_in_the_spellings_each_release_accepts() {
        let available: Vec<Version> = ["0.0.1", "0.0.2", "0.0.3-alpha.1"]
            .iter()
            .map(|v| Version::parse(v).unwrap())
            .collect();
        let terraform_1_0 = ExactPrerelease::default();
        let terraform_1_4 = ExactPrerelease {
            equals: true,
            v_prefix: false,
        };
        let tofu = ExactPrerelease {
            equals: true,
            v_prefix: true,
        };
        for (text, rules, selected) in [
            ("0.0.3-alpha.1", terraform_1_0, Some("0.0.3-alpha.1")),
            ("=0.0.3-alpha.1", terraform_1_0, None),
            ("=0.0.3-alpha.1", terraform_1_4, Some("0.0.3-alpha.1")),
            ("= 0.0.3-alpha.1", terraform_1_4, None),
            ("v0.0.3-alpha.1", terraform_1_4, None),
            ("=v0.0.3-alpha.1", terraform_1_4, None),
            ("v0.0.3-alpha.1", tofu, Some("0.0.3-alpha.1")),
            ("=v0.0.3-alpha.1", tofu, Some("0.0.3-alpha.1")),
            ("<=0.0.3-alpha.1", tofu, Some("0.0.2")),
            (">=0.0.3-alpha.1", tofu, None),
            ("0.0.3-alpha.1, >=0.0.2", tofu, None),
        ] {
            let c = ModuleVersionConstraints::parse(text)
                .unwrap()
                .naming_prereleases(rules);
            assert_eq!(
                c.select(&available).map(ToString::to_string).as_deref(),
                selected,
                "{text} under {rules:?}"
            );
        }
    }

    /// The versions a registry lists in the e2e judge, and what terraform 1.0.3 selects
    /// for each constraint (`None`: "Unresolvable module version constraint").
    #[test]
    fn selection_matches_terraform() {
        let available: Vec<Version> = [
            "0.9.0",
            "1.0.0",
            "1.1.0",
            "1.2.0-beta",
            "1.2.0-rc.1",
            "2.0.0",
            "2.1.0-alpha",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        for (constraint, want) in [
            ("1.0.0", Some("1.0.0")),
            ("v1.0.0", Some("1.0.0")),
            (">= v1.0.0, < v2.0.0", Some("1.1.0")),
            ("~> 1.0", Some("1.1.0")),
            ("~> 1", Some("2.0.0")),
            ("~> 1.1.0", Some("1.1.0")),
            ("1.2.0-beta", Some("1.2.0-beta")),
            ("= 1.2.0-rc.1", None),
            ("> 1.0, != 1.1.0", Some("2.0.0")),
            ("2.1.0-alpha", Some("2.1.0-alpha")),
            ("< 1", Some("0.9.0")),
            ("1.1", Some("1.1.0")),
            (">= 3.0", None),
        ] {
            let c = ModuleVersionConstraints::parse(constraint).unwrap();
            assert_eq!(
                c.select(&available).map(ToString::to_string).as_deref(),
                want,
                "{constraint}"
            );
        }
        for bad in ["", "1.x", "~>", ">= 1.0.0.0", "one"] {
            assert!(ModuleVersionConstraints::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn exact_versions() {
        let exact = |t: &str| {
            ModuleVersionConstraints::parse(t)
                .unwrap()
                .exact()
                .map(|v| v.to_string())
        };
        assert_eq!(exact("1.2.0").as_deref(), Some("1.2.0"));
        assert_eq!(exact("= v1.2.0").as_deref(), Some("1.2.0"));
        assert_eq!(exact("1.2.0-beta").as_deref(), Some("1.2.0-beta"));
        // terraform takes a pre-release only when the text is exactly its version.
        assert_eq!(exact("v1.2.0-beta"), None);
        assert_eq!(exact("= 1.2.0-beta"), None);
        assert_eq!(exact("1.2.0, = 1.2.0").as_deref(), Some("1.2.0"));
        for loose in [
            "1.2",
            "~> 1.2.0",
            ">= 1.2.0",
            "1.2.0, 1.3.0",
            "1.2.0+meta",
            "!= 1.2.0",
        ] {
            assert_eq!(exact(loose), None, "{loose}");
        }
    }
}
