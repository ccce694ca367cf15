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

/// Canonical lock-file terms, as terraform 1.0.3 wrote them in `constraints`.
#[test]
fn canonical_terms_as_terraform_writes_them() {
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

/// `~>` allows the last given part to grow: `~> 2.1` is `>= 2.1.0, < 3.0.0`, `~> 2.1.0` is
/// `>= 2.1.0, < 2.2.0`; `~> 2` is read as `~> 2.0`.
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

/// The newest version a constraint admits, of 2.0.0, 2.1.2, 2.2.0-beta1, 3.0.0: only an
/// exact term admits a pre-release. The results down to `>= 2.1.5, < 2.3` are what
/// terraform 1.0.3 installed.
#[test]
fn selection_of_the_newest_match() {
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
