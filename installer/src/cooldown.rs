//! The cooldown: no module or provider version younger than the team allows is chosen
//! (`min_release_age` in `.tstore.hcl`, `TSTORE_MIN_RELEASE_AGE`, `--min-release-age`).
//!
//! Rules:
//! - It governs choosing: a call or provider without a lock entry, `-upgrade`, `modules
//!   lock`, `providers lock`. A version a lock names is installed as locked (the lock's
//!   review is that version's gate).
//! - A version's age is the time it was published, from the strongest source at hand: the
//!   team's module mirror's first sighting (`tstore push --modules` stamps it; a mirror a
//!   checkout names counts only under that checkout's own policy), then the registry's own
//!   date where its answer carries one (`published_at`, `published-at`, `discovered`,
//!   `published`, as the public registries' APIs name it; the protocols have none), and for
//!   a git tag this machine's first sighting of it naming the commit. No date known: the
//!   version is not chosen (never "old enough by default").
//! - The newest version the constraints allow that is old enough is chosen; if none is,
//!   the choice is refused, naming the versions held back and until when.
//! - A source an exclusion pattern matches (`min_release_age_exclude`: your own
//!   organisation's modules, a provider taken at once for a security fix) is chosen as
//!   without the policy.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

/// The policy in force for a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseAge {
    /// How old a version must be.
    pub min_age: Duration,
    /// Patterns of sources the policy does not hold back (`*` any run, `?` one character).
    pub exclude: Vec<String>,
    /// Who set it: `--min-release-age`, `TSTORE_MIN_RELEASE_AGE`, or the file.
    pub set_by: String,
}

/// Where a version's publish time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgeSource {
    /// The registry's own answer.
    Registry,
    /// When this machine first saw a git tag name the commit (its state directory's
    /// `git-first-seen.json`).
    FirstSeen,
    /// When the team's module mirror first held the version (the first-seen stamp `tstore
    /// push --modules` writes on a registry resolution or a git tag's reach record).
    Mirror,
}

impl std::fmt::Display for AgeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AgeSource::Registry => "the registry",
            AgeSource::FirstSeen => "this machine's first sighting of the tag at that commit",
            AgeSource::Mirror => "the module mirror's first sighting",
        })
    }
}

impl AgeSource {
    /// Who saw the version first, for a sentence: "the registry", "this machine", "the
    /// module mirror".
    pub fn who(self) -> &'static str {
        match self {
            AgeSource::Registry => "the registry",
            AgeSource::FirstSeen => "this machine",
            AgeSource::Mirror => "the module mirror",
        }
    }
}

/// When a version was published (seconds since the epoch), and who says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Published {
    /// Seconds since the epoch.
    pub at: u64,
    /// The source of that time.
    pub source: AgeSource,
}

impl Published {
    /// Published at `at`, by `source`'s word.
    pub fn by(at: u64, source: AgeSource) -> Published {
        Published { at, source }
    }
}

/// What the cooldown chose: the version, when it was published, and the newer versions it
/// passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen<T> {
    /// The version chosen.
    pub version: T,
    /// When it was published.
    pub published: Option<Published>,
    /// The newer versions held back, newest first.
    pub held_back: Vec<HeldBack>,
}

/// A version the policy held back, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeldBack {
    /// The version.
    pub version: String,
    /// When it was published, if known.
    pub published: Option<Published>,
    /// When it becomes old enough (seconds since the epoch); `None`: no date is known.
    pub eligible_at: Option<u64>,
}

impl std::fmt::Display for HeldBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.published, self.eligible_at) {
            (Some(p), Some(eligible)) => write!(
                f,
                "{} (published {} by {}, eligible from {})",
                self.version,
                day(p.at),
                p.source,
                day(eligible)
            ),
            _ => write!(f, "{} (no publish date known)", self.version),
        }
    }
}

/// An age in the policy's units: whole days, else hours, else minutes (`0`: off).
fn age_text(age: Duration) -> String {
    let s = age.as_secs();
    match s {
        0 => "0".to_owned(),
        _ if s.is_multiple_of(86_400) => format!("{}d", s / 86_400),
        _ if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ => format!("{}m", s / 60),
    }
}

/// A time as `YYYY-MM-DD HH:MM UTC`.
pub fn day(at: u64) -> String {
    let text = humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_secs(at))
        .to_string();
    // 2026-12-06T20:37:07Z → 2026-12-06 20:37 UTC
    format!("{} {} UTC", &text[..10], &text[11..16])
}

impl ReleaseAge {
    /// `text` as a duration: a number and a unit (`7d`, `36h`, `2w`, `90m`), or `0` (off).
    /// The error does not quote the text (it comes from a file or a variable).
    pub fn parse_age(text: &str) -> Result<Duration, String> {
        const FORM: &str = "an age is a number and a unit (m, h, d or w), as 7d, 36h, 2w or \
                            90m, or 0 for none";
        let text = text.trim();
        if text == "0" {
            return Ok(Duration::ZERO);
        }
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .filter(|at| *at > 0)
            .ok_or_else(|| FORM.to_owned())?;
        let (number, unit) = text.split_at(split);
        let n: u64 = number
            .parse()
            .map_err(|_| "the age is too long".to_owned())?;
        let seconds = match unit {
            "m" | "min" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return Err(FORM.to_owned()),
        };
        n.checked_mul(seconds)
            .map(Duration::from_secs)
            .ok_or_else(|| "the age is too long".to_owned())
    }

    /// Whether the policy holds back versions of a source known by `forms` (as written,
    /// and in full): off, or an exclusion pattern matches one of them.
    pub fn applies_to(&self, forms: &[String]) -> bool {
        !self.min_age.is_zero()
            && !self
                .exclude
                .iter()
                .any(|p| forms.iter().any(|f| crate::wildcard::matches(p, f)))
    }

    /// Whether a version published at `published` is old enough at `now`.
    pub fn is_old_enough(&self, published: u64, now: u64) -> bool {
        self.eligible_at(published) <= now
    }

    /// When a version published at `published` becomes old enough.
    fn eligible_at(&self, published: u64) -> u64 {
        published.saturating_add(self.min_age.as_secs())
    }

    /// The newest of `candidates` (newest first, each with its publish time if known) that
    /// is old enough at `now`, with the newer ones held back; or every candidate held back.
    pub fn choose<T: Clone + std::fmt::Display>(
        &self,
        candidates: &[(T, Option<Published>)],
        now: u64,
    ) -> Result<Chosen<T>, Vec<HeldBack>> {
        let mut held = Vec::new();
        for (version, published) in candidates {
            match published {
                Some(p) if self.is_old_enough(p.at, now) => {
                    return Ok(Chosen {
                        version: version.clone(),
                        published: Some(*p),
                        held_back: held,
                    });
                }
                Some(p) => held.push(HeldBack {
                    version: version.to_string(),
                    published: Some(*p),
                    eligible_at: Some(self.eligible_at(p.at)),
                }),
                None => held.push(HeldBack {
                    version: version.to_string(),
                    published: None,
                    eligible_at: None,
                }),
            }
        }
        Err(held)
    }

    /// The policy in words: `min_release_age 7d (set by …)`.
    pub fn describe(&self) -> String {
        format!(
            "min_release_age {} (set by {})",
            age_text(self.min_age),
            self.set_by
        )
    }

    /// An age as the policy writes it: `7d`, `36h`, `90m`, `0`.
    pub fn age_text(age: Duration) -> String {
        age_text(age)
    }
}

/// The publish date fields a registry may give on a listed version (the protocols have
/// none; OpenTofu's registry and the public registries' APIs name it `discovered`,
/// `published_at`, `published-at` or `published`): the first given is read. A value that
/// is not text is no date, never a failed listing.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub(crate) struct RegistryDates {
    #[serde(default)]
    discovered: Option<serde_json::Value>,
    #[serde(default)]
    published_at: Option<serde_json::Value>,
    #[serde(default, rename = "published-at")]
    published_hyphen: Option<serde_json::Value>,
    #[serde(default)]
    published: Option<serde_json::Value>,
}

impl RegistryDates {
    /// The publish time given, if any.
    pub(crate) fn published(&self) -> Option<u64> {
        [
            &self.discovered,
            &self.published_at,
            &self.published_hyphen,
            &self.published,
        ]
        .into_iter()
        .find_map(|v| v.as_ref()?.as_str().and_then(parse_time))
    }
}

/// Record that the repository file `file` sets `age` (`None`: no `min_release_age`), in
/// this machine's record `state_file` (`policy-seen.json` in the state directory, written
/// whole and renamed); the age the last init here saw, when it differs. So a checkout that
/// lowers or drops its team's cooldown (a pull request) is said on the machines that ran
/// under the old one. An unreadable record is no record; a failure to write changes
/// nothing else.
pub fn policy_seen_before(state_file: &Path, file: &Path, age: Option<Duration>) -> Option<String> {
    let mut known = crate::state_record::read(state_file);
    let now = age.map_or_else(|| "none".to_owned(), age_text);
    let key = file.display().to_string();
    let before = known.insert(key, now.clone());
    if before.as_deref() == Some(now.as_str()) {
        return None;
    }
    crate::state_record::write(state_file, &known);
    before
}

/// A publish time as a registry's answer writes it (RFC 3339), in seconds since the epoch.
pub(crate) fn parse_time(text: &str) -> Option<u64> {
    humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
        .ok()
        .or_else(|| humantime::parse_rfc3339(text).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
}

/// Seconds since the epoch now (`TSTORE_NOW` is not read: the clock is the machine's).
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(age: &str) -> ReleaseAge {
        ReleaseAge {
            min_age: ReleaseAge::parse_age(age).unwrap(),
            exclude: vec!["*/myorg/*".into()],
            set_by: "test".into(),
        }
    }

    #[test]
    fn ages_parse_with_a_unit_and_zero_turns_it_off() {
        assert_eq!(
            ReleaseAge::parse_age("7d"),
            Ok(Duration::from_secs(7 * 86_400))
        );
        assert_eq!(
            ReleaseAge::parse_age("36h"),
            Ok(Duration::from_secs(36 * 3600))
        );
        assert_eq!(
            ReleaseAge::parse_age("2w"),
            Ok(Duration::from_secs(14 * 86_400))
        );
        assert_eq!(
            ReleaseAge::parse_age("90m"),
            Ok(Duration::from_secs(90 * 60))
        );
        assert_eq!(ReleaseAge::parse_age("0"), Ok(Duration::ZERO));
        for bad in ["7", "d", "7y", "-1d", "", "99999999999999999999d", "s3cr3t"] {
            let err = ReleaseAge::parse_age(bad).unwrap_err();
            // The value is never quoted back.
            assert!(bad.len() < 3 || !err.contains(bad), "{err}");
        }
        assert!(!policy("0").applies_to(&["a/b/c".into()]));
        for text in ["7d", "36h", "90m", "0"] {
            assert_eq!(age_text(ReleaseAge::parse_age(text).unwrap()), text);
        }
        assert_eq!(age_text(ReleaseAge::parse_age("2w").unwrap()), "14d");
    }

    #[test]
    fn the_newest_old_enough_is_chosen_and_the_younger_and_undated_are_held_back() {
        let p = policy("7d");
        let now = 100 * 86_400;
        let published = |days_ago: u64| {
            Some(Published {
                at: now - days_ago * 86_400,
                source: AgeSource::Registry,
            })
        };
        let candidates = vec![
            ("1.2.0".to_owned(), published(1)),
            ("1.1.0".to_owned(), None),
            ("1.0.0".to_owned(), published(30)),
        ];
        let chosen = p.choose(&candidates, now).unwrap();
        assert_eq!(chosen.version, "1.0.0");
        assert_eq!(chosen.published, published(30));
        let passed: Vec<_> = chosen
            .held_back
            .iter()
            .map(|h| h.version.as_str())
            .collect();
        assert_eq!(passed, ["1.2.0", "1.1.0"]);
        let held = p.choose(&candidates[..2], now).unwrap_err();
        assert_eq!(held.len(), 2);
        assert_eq!(held[0].eligible_at, Some(now + 6 * 86_400));
        assert!(
            held[0].to_string().starts_with("1.2.0 (published "),
            "{}",
            held[0]
        );
        assert_eq!(held[1].to_string(), "1.1.0 (no publish date known)");
        // Exactly the age: eligible.
        assert!(p.choose(&[("x".to_owned(), published(7))], now).is_ok());
    }

    #[test]
    fn an_excluded_source_is_not_held_back() {
        let p = policy("7d");
        assert!(p.applies_to(&["registry.example/other/m/aws".into()]));
        assert!(!p.applies_to(&["registry.example/myorg/m/aws".into(), "myorg/m/aws".into()]));
    }

    #[test]
    fn a_registrys_dates_are_read_and_a_hostile_one_is_no_date_never_a_failed_listing() {
        let dates = |json: &str| {
            serde_json::from_str::<RegistryDates>(json)
                .unwrap()
                .published()
        };
        assert_eq!(
            dates(r#"{"published_at":"1970-01-02T00:00:00Z"}"#),
            Some(86_400)
        );
        assert_eq!(
            dates(r#"{"published-at":"1970-01-02T00:00:00Z"}"#),
            Some(86_400)
        );
        // The registry's own word first (discovered), then the other names.
        assert_eq!(
            dates(r#"{"discovered":"1970-01-03T00:00:00Z","published":"1970-01-02T00:00:00Z"}"#),
            Some(2 * 86_400)
        );
        // Not text, not a time, an object: no date (held back), and the listing stands.
        for hostile in [
            r#"{"published_at":5}"#,
            r#"{"published_at":"soon"}"#,
            r#"{"published_at":{"a":1}}"#,
            r#"{"published_at":null}"#,
            r#"{}"#,
        ] {
            assert_eq!(dates(hostile), None, "{hostile}");
        }
    }

    #[test]
    fn registry_times_parse() {
        assert_eq!(parse_time("1970-01-02T00:00:00Z"), Some(86_400));
        assert_eq!(parse_time("1970-01-02T00:00:00.5Z"), Some(86_400));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(day(86_400 + 3600 + 60), "1970-01-02 01:01 UTC");
    }
}
