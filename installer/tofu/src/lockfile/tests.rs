use super::*;

/// A lock file exactly as Terraform 1.0.3 wrote it (two providers, constraints merged from
/// the root and a child module).
const EXAMPLE: &str = r#"# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "example.com/test/fake" {
  version     = "1.0.0"
  constraints = "1.0.0"
  hashes = [
    "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=",
  ]
}

provider "registry.terraform.io/hashicorp/null" {
  version     = "2.1.2"
  constraints = ">= 2.0.0, ~> 2.0, != 2.1.1, <= 2.9.0"
  hashes = [
    "h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE=",
  ]
}
"#;

fn parse(src: &str) -> Result<LockFile, LockFileError> {
    LockFile::parse(src, ".terraform.lock.hcl")
}

fn err_of(body: &str) -> LockFileError {
    let src = format!("# header\n\n{body}");
    parse(&src).expect_err(body)
}

#[test]
fn example_round_trips_byte_identically() {
    let lock = parse(EXAMPLE).unwrap();
    assert_eq!(lock.providers.len(), 2);
    let null = ProviderAddr::parse_normalized("registry.terraform.io/hashicorp/null").unwrap();
    assert_eq!(lock.providers[&null].version.to_string(), "2.1.2");
    assert!(lock.warnings.is_empty());
    // The existing header wins over the flavor's.
    assert_eq!(lock.to_string_with_header(Flavor::Tofu), EXAMPLE);
    assert_eq!(lock.to_string_with_header(Flavor::Terraform), EXAMPLE);
}

#[test]
fn fresh_header_names_the_flavor() {
    let mut lock = parse(EXAMPLE).unwrap();
    lock.header = None;
    let tf = lock.to_string_with_header(Flavor::Terraform);
    assert_eq!(tf, EXAMPLE);
    let tofu = lock.to_string_with_header(Flavor::Tofu);
    assert!(tofu.starts_with(
            "# This file is maintained automatically by \"tofu init\".\n# Manual edits may be lost in future updates.\n\nprovider"
        ));
    assert_eq!(
        LockFile::default()
            .to_string_with_header(Flavor::Tofu)
            .lines()
            .count(),
        2
    );
}

#[test]
fn writer_layout_without_constraints_and_hashes_sorted() {
    let addr = ProviderAddr::parse_normalized("registry.opentofu.org/hashicorp/null").unwrap();
    let mut lock = LockFile::default();
    lock.providers.insert(
        addr,
        LockedProvider {
            version: "3.2.1".parse().unwrap(),
            constraints: None,
            hashes: ["zh:9455", "h1:35PY=", "zh:4059", "h1:35PY="]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        },
    );
    let out = lock.to_string_with_header(Flavor::Tofu);
    let expected = "# This file is maintained automatically by \"tofu init\".\n# Manual edits may be lost in future updates.\n\nprovider \"registry.opentofu.org/hashicorp/null\" {\n  version = \"3.2.1\"\n  hashes = [\n    \"h1:35PY=\",\n    \"zh:4059\",\n    \"zh:9455\",\n  ]\n}\n";
    assert_eq!(out, expected);
    assert_eq!(
        parse(&out).unwrap(),
        LockFile {
            header: lock.header.clone().or(leading_comments(&out)),
            ..lock.clone()
        }
    );
    // No hashes: the attribute is omitted.
    let mut bare = lock.clone();
    bare.providers.values_mut().for_each(|p| p.hashes.clear());
    assert!(!bare.to_string_with_header(Flavor::Tofu).contains("hashes"));
}

#[test]
fn accepts_missing_hashes_unknown_schemes_and_warns_on_modules() {
    let lock = parse(
            "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n}\n\nmodule \"x\" {}\nmodule \"y\" {}\n\nprovider \"example.com/test/other\" {\n  version = \"1.0.0\"\n  hashes = [\"xx:abc\", \"zh:00\"]\n}\n",
        )
        .unwrap();
    assert_eq!(lock.header, None);
    assert_eq!(lock.providers.len(), 2);
    assert_eq!(lock.warnings.len(), 1);
    assert!(lock.warnings[0].contains("Dependency locks for modules are not yet supported"));
    let other = ProviderAddr::parse_normalized("example.com/test/other").unwrap();
    assert!(lock.providers[&other].hashes.contains("xx:abc"));
}

#[test]
fn spec_error_cases() {
    let cases: &[(&str, LockErrorKind, &str)] = &[
            ("foo \"x\" {}\n", LockErrorKind::UnsupportedBlockType, "Blocks of type \"foo\" are not expected here."),
            (
                "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n  foo = 1\n}\n",
                LockErrorKind::UnsupportedArgument,
                "An argument named \"foo\" is not expected here.",
            ),
            (
                "provider \"EXAMPLE.com/test/fake\" {\n  version = \"1.0.0\"\n}\n",
                LockErrorKind::NonNormalizedAddress,
                "must be written as \"example.com/test/fake\", the fully-qualified and normalized form.",
            ),
            (
                "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n  constraints = \"~>1.0\"\n}\n",
                LockErrorKind::InvalidConstraints,
                "must be written in normalized form: \"~> 1.0\".",
            ),
            (
                "provider \"example.com/test/fake\" {\n  version = \"v1.0.0\"\n}\n",
                LockErrorKind::InvalidVersion,
                "a \"v\" prefix should not be used",
            ),
            (
                "provider \"example.com/test/fake\" {\n  version = \"1.0\"\n}\n",
                LockErrorKind::InvalidVersion,
                "must be written in normalized form: \"1.0.0\"",
            ),
            (
                "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n  hashes = [\n    \"nocolon\",\n  ]\n}\n",
                LockErrorKind::InvalidHash,
                "Cannot interpret \"nocolon\" as a provider hash: hash string must start with a scheme keyword followed by a colon.",
            ),
            (
                "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n}\nprovider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n}\n",
                LockErrorKind::DuplicateProvider,
                "already declared a lock for provider example.com/test/fake",
            ),
            (
                "provider \"terraform.io/builtin/terraform\" {\n  version = \"1.0.0\"\n}\n",
                LockErrorKind::BuiltinProvider,
                "Cannot lock a version for built-in provider terraform.io/builtin/terraform",
            ),
            (
                "provider \"example.com/test/fake\" {\n  hashes = [\"h1:x\"]\n}\n",
                LockErrorKind::MissingArgument,
                "\"version\" is required",
            ),
            (
                "provider \"hashicorp/null\" {\n  version = \"1.0.0\"\n}\n",
                LockErrorKind::InvalidSourceAddress,
                "fully-qualified address",
            ),
            (
                "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n  hashes = []\n}\n",
                LockErrorKind::InvalidHashSet,
                "at least one hash value",
            ),
            ("provider \"example.com/test/fake\" {\n", LockErrorKind::Syntax, ""),
            ("version = \"1\"\n", LockErrorKind::UnsupportedArgument, "\"version\""),
        ];
    for (body, kind, needle) in cases {
        let e = err_of(body);
        assert_eq!(e.kind(), Some(*kind), "{body}: {e}");
        let msg = e.to_string();
        assert!(msg.contains(needle), "{body}: {msg}");
        assert!(msg.starts_with(".terraform.lock.hcl:"), "{msg}");
    }
}

#[test]
fn error_lines_point_at_the_construct() {
    let e = err_of("provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n  hashes = [\n    \"h1:ok\",\n    \"nocolon\",\n  ]\n}\n");
    // Two header lines precede the body: the bad hash is on line 7.
    assert!(
        e.to_string()
            .starts_with(".terraform.lock.hcl:7: Invalid provider hash string"),
        "{e}"
    );
    let e = err_of("\n\nfoo {}\n");
    assert!(
        e.to_string()
            .starts_with(".terraform.lock.hcl:5: Unsupported block type"),
        "{e}"
    );
}

#[test]
fn load_missing_is_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(LockFile::load(&dir.path().join(".terraform.lock.hcl"))
        .unwrap()
        .is_none());
    let path = dir.path().join(".terraform.lock.hcl");
    fs_err::write(&path, EXAMPLE).unwrap();
    assert_eq!(LockFile::load(&path).unwrap().unwrap().providers.len(), 2);
}

/// OpenTofu's upgrade of terraform's entries: `registry.terraform.io/hashicorp/*` gains a
/// `registry.opentofu.org` twin with the same version and constraints and no hashes; other
/// namespaces and hosts, and a twin already there, are left alone.
#[test]
fn upgrade_from_predecessor_adds_a_twin_for_hashicorp_entries() {
    let mut lock = LockFile::parse(
        &format!(
            "{EXAMPLE}\nprovider \"registry.terraform.io/acme/thing\" {{\n  version = \"1.0.0\"\n}}\n"
        ),
        "x",
    )
    .unwrap();
    let before = lock.clone();
    let changed = lock.upgrade_from_predecessor();
    let null_old = ProviderAddr::parse_normalized("registry.terraform.io/hashicorp/null").unwrap();
    let null_new = ProviderAddr::parse_normalized("registry.opentofu.org/hashicorp/null").unwrap();
    assert_eq!(changed, vec![(null_old.clone(), null_new.clone())]);
    assert_eq!(lock.providers.len(), before.providers.len() + 1);
    assert_eq!(
        lock.providers[&null_old], before.providers[&null_old],
        "kept"
    );
    let twin = &lock.providers[&null_new];
    assert_eq!(twin.version, before.providers[&null_old].version);
    assert_eq!(twin.constraints, before.providers[&null_old].constraints);
    assert!(twin.hashes.is_empty());
    // Once the twin is there, nothing more changes.
    assert!(lock.clone().upgrade_from_predecessor().is_empty());
}

const TERRAFORM_HEADER: &str = "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n";

fn entry(addr: &str) -> String {
    format!("\nprovider \"{addr}\" {{\n  version = \"2.1.2\"\n}}\n")
}

#[test]
fn the_lock_file_header_then_its_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join(".terraform.lock.hcl");
    assert_eq!(flavor_evidence(&lock), None, "no lock file");

    // The header wins over the hosts.
    let text = format!(
        "{}{}",
        TERRAFORM_HEADER.replace("terraform init", "tofu init"),
        entry("registry.terraform.io/hashicorp/null")
    );
    fs_err::write(&lock, text).unwrap();
    let choice = flavor_evidence(&lock).unwrap();
    assert_eq!(choice.flavor, Flavor::Tofu);
    assert_eq!(choice.decided_by, DecidedBy::LockFileHeader(lock.clone()));
    assert_eq!(choice.decided_by.rule(), "lock file header");

    fs_err::write(
        &lock,
        format!("{TERRAFORM_HEADER}{}", entry("example.com/a/b")),
    )
    .unwrap();
    assert_eq!(flavor_evidence(&lock).unwrap().flavor, Flavor::Terraform);

    // No header: the hosts, when they agree.
    for (hosts, want) in [
        (
            &["registry.terraform.io/hashicorp/null", "example.com/a/b"][..],
            Some(Flavor::Terraform),
        ),
        (
            &["registry.opentofu.org/hashicorp/null"][..],
            Some(Flavor::Tofu),
        ),
        (
            &[
                "registry.opentofu.org/hashicorp/null",
                "registry.terraform.io/hashicorp/random",
            ][..],
            None,
        ),
        (&["example.com/a/b"][..], None),
    ] {
        let text: String = hosts.iter().map(|h| entry(h)).collect();
        fs_err::write(&lock, text).unwrap();
        let got = flavor_evidence(&lock);
        assert_eq!(got.as_ref().map(|c| c.flavor), want, "{hosts:?}");
        if let Some(c) = got {
            assert_eq!(c.decided_by, DecidedBy::LockFileHosts(lock.clone()));
        }
    }

    // A file that does not parse says nothing by its hosts.
    fs_err::write(&lock, "provider {").unwrap();
    assert_eq!(flavor_evidence(&lock), None);
}

/// What the tools compare before writing a lock file: providers, versions (build metadata
/// included) and hashes; never the constraints, the header or the layout.
#[test]
fn the_same_record_ignores_constraints_header_and_layout() {
    let parse = |text: &str| LockFile::parse(text, "test").unwrap();
    let entry = |version: &str, constraints: &str, hashes: &str| {
        format!(
            "provider \"registry.terraform.io/hashicorp/null\" {{\n  version = \"{version}\"\n  \
             constraints = \"{constraints}\"\n  hashes = [{hashes}]\n}}\n"
        )
    };
    let h1 = "\"h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE=\"";
    let zh = "\"zh:1895e10d93581677ccf9a6237d156df1608d8c5c15ada225ab0a2ab4497caadb\"";
    let base = parse(&entry("2.1.2", "2.1.2", h1));
    let looser = parse(&format!(
        "# This file is maintained automatically by \"tofu init\".\n\n{}",
        entry("2.1.2", ">= 2.0.0", h1)
    ));
    assert!(base.records_the_same(&looser));
    assert!(looser.records_the_same(&base));
    for other in [
        entry("2.1.3", "2.1.2", h1),
        entry("2.1.2+build.1", "2.1.2", h1),
        entry("2.1.2", "2.1.2", &format!("{h1}, {zh}")),
        String::new(),
    ] {
        let other = parse(&other);
        assert!(!base.records_the_same(&other), "{other:?}");
        assert!(!other.records_the_same(&base), "{other:?}");
    }
}
