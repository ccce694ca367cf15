use std::path::Path;

use super::*;

const H1_A: &str = "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=";
const H1_B: &str = "h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE=";
const ZH_A: &str = "zh:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const ZH_B: &str = "zh:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
const SHA1_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const SHA256_COMMIT: &str = "89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567";

fn path() -> &'static Path {
    Path::new(".tstore.lock.hcl")
}

fn entry(
    source: &str,
    version: Option<&str>,
    constraints: Option<&str>,
    commit: Option<&str>,
    hashes: &[&str],
) -> ModuleLockEntry {
    ModuleLockEntry {
        source: source.to_owned(),
        version: version.map(str::to_owned),
        constraints: constraints.map(str::to_owned),
        commit: commit.map(str::to_owned),
        hashes: hashes.iter().map(|h| h.to_string()).collect(),
    }
}

/// One entry of every kind the installer locks.
fn every_kind() -> Vec<(&'static str, ModuleLockEntry)> {
    vec![
        (
            "vpc",
            entry(
                "registry.terraform.io/terraform-aws-modules/vpc/aws",
                Some("5.5.3"),
                Some("~> 5.5"),
                None,
                &[H1_A, ZH_A],
            ),
        ),
        (
            "git_sha1",
            entry(
                "git::https://example.com/acme/net.git?ref=v1.2.0",
                Some("v1.2.0"),
                None,
                Some(SHA1_COMMIT),
                &[H1_B],
            ),
        ),
        (
            "git_sha256",
            entry(
                "git::https://example.com/acme/net.git?ref=main",
                Some("main"),
                None,
                Some(SHA256_COMMIT),
                &[H1_A],
            ),
        ),
        (
            "archive",
            entry(
                "https://example.com/modules/net-1.0.0.zip",
                None,
                None,
                None,
                &[ZH_B, H1_B],
            ),
        ),
        (
            "oci",
            entry(
                "oci://ghcr.io/acme/net?tag=1.0.0",
                None,
                None,
                None,
                &[H1_A, ZH_B],
            ),
        ),
        (
            "a.b.c",
            entry(
                "registry.opentofu.org/acme/net/aws",
                Some("1.0.0"),
                None,
                None,
                &[H1_B, ZH_A, "xx:unknown-scheme"],
            ),
        ),
        (
            "bare",
            entry("https://example.com/m.tgz", None, None, None, &[]),
        ),
    ]
}

fn lock_of(entries: impl IntoIterator<Item = (&'static str, ModuleLockEntry)>) -> ModuleLock {
    ModuleLock {
        entries: entries
            .into_iter()
            .map(|(k, e)| (k.to_owned(), e))
            .collect(),
    }
}

/// The error for `body` placed after the header and a blank line (so its first line is 4).
fn err_of(body: &str) -> ModuleLockError {
    parse(&format!("{HEADER}\n{body}"), path()).expect_err(body)
}

#[test]
fn every_kind_of_entry_round_trips() {
    let lock = lock_of(every_kind());
    let text = render(&lock);
    assert_eq!(parse(&text, path()).unwrap(), lock, "{text}");
    // And rendering what was read gives the same bytes.
    assert_eq!(render(&parse(&text, path()).unwrap()), text);
}

#[test]
fn strings_that_need_escaping_round_trip() {
    let lock = lock_of([(
        "odd",
        entry(
            "git::https://example.com/a b.git?ref=x\"y\\z",
            Some("${not_a_template}%{neither}"),
            Some(">= 1.0, < 2.0"),
            None,
            &[],
        ),
    )]);
    assert_eq!(parse(&render(&lock), path()).unwrap(), lock);
}

#[test]
fn render_does_not_depend_on_insertion_order() {
    let forward = lock_of(every_kind());
    let mut backward = ModuleLock::default();
    for (key, mut e) in every_kind().into_iter().rev() {
        // Hashes inserted in the other order too.
        let hashes: Vec<String> = e.hashes.iter().rev().cloned().collect();
        e.hashes.clear();
        e.hashes.extend(hashes);
        backward.entries.insert(key.to_owned(), e);
    }
    assert_eq!(render(&forward), render(&backward));
}

#[test]
fn golden_layout() {
    let lock = lock_of([
        (
            "vpc",
            entry(
                "registry.terraform.io/terraform-aws-modules/vpc/aws",
                Some("5.5.3"),
                Some("~> 5.5"),
                None,
                &[ZH_A, H1_A],
            ),
        ),
        (
            "net.git",
            entry(
                "git::https://example.com/net.git?ref=v1",
                Some("v1"),
                None,
                Some(SHA1_COMMIT),
                &[H1_B],
            ),
        ),
        (
            "plain",
            entry("https://example.com/m.zip", None, None, None, &[]),
        ),
    ]);
    let expected = format!(
        r#"# This file is maintained automatically by "tstore init".
# Manual edits may be lost in future updates.

module "net.git" {{
  source  = "git::https://example.com/net.git?ref=v1"
  version = "v1"
  commit  = "{SHA1_COMMIT}"
  hashes = [
    "{H1_B}",
  ]
}}

module "plain" {{
  source = "https://example.com/m.zip"
}}

module "vpc" {{
  source      = "registry.terraform.io/terraform-aws-modules/vpc/aws"
  version     = "5.5.3"
  constraints = "~> 5.5"
  hashes = [
    "{H1_A}",
    "{ZH_A}",
  ]
}}
"#
    );
    assert_eq!(render(&lock), expected);
}

#[test]
fn an_empty_lock_renders_to_the_header_alone() {
    let text = render(&ModuleLock::default());
    assert_eq!(text, HEADER);
    assert_eq!(parse(&text, path()).unwrap(), ModuleLock::default());
    assert_eq!(parse("", path()).unwrap(), ModuleLock::default());
}

#[test]
fn crlf_input_parses_and_render_writes_lf() {
    let lock = lock_of(every_kind());
    let text = render(&lock);
    assert!(!text.contains('\r'));
    let windows = text.replace('\n', "\r\n");
    let read = parse(&windows, path()).unwrap();
    assert_eq!(read, lock);
    assert_eq!(render(&read), text);
}

#[test]
fn comments_bare_labels_and_duplicate_hashes_are_accepted() {
    let text = format!(
        "// another header\n/* block comment */\nmodule vpc {{\n  # why\n  source = \"x/y/z\"\n  hashes = [\"{H1_A}\", \"{H1_A}\"]\n}}\n"
    );
    let lock = parse(&text, path()).unwrap();
    assert_eq!(
        lock,
        lock_of([("vpc", entry("x/y/z", None, None, None, &[H1_A]))])
    );
}

/// Each rule of the reader: the body (after a two-line header and a blank line), the line
/// and column the error must name, and a piece of its message.
#[test]
fn rejections_name_the_position_and_the_rule() {
    let ok = "  source = \"x/y/z\"\n";
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!("module \"vpc\" {{\n{ok}  sourse = \"x\"\n}}\n"),
            "6:3",
            "unsupported argument \"sourse\" in a module block",
        ),
        (
            format!("module \"vpc\" {{\n{ok}}}\n\nmodule \"vpc\" {{\n{ok}}}\n"),
            "8:8",
            "duplicate module block \"vpc\"; the first is at line 4",
        ),
        (
            format!("module \"registry/vpc\" {{\n{ok}}}\n"),
            "4:8",
            "not a module call path",
        ),
        (
            format!("module \"a..b\" {{\n{ok}}}\n"),
            "4:8",
            "not a module call path",
        ),
        (
            format!("module \"a b\" {{\n{ok}}}\n"),
            "4:8",
            "not a module call path",
        ),
        (
            format!("module \"\" {{\n{ok}}}\n"),
            "4:8",
            "not a module call path",
        ),
        (
            format!("module {{\n{ok}}}\n"),
            "4:1",
            "takes one label, the module call path; found 0",
        ),
        (
            format!("module \"a\" \"b\" {{\n{ok}}}\n"),
            "4:1",
            "found 2",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = [\n    \"{H1_A}\",\n    \"sha256-abc\",\n  ]\n}}\n"),
            "8:5",
            "a hash must start with a scheme keyword followed by a colon",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = [\"h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5J=\"]\n}}\n"),
            "6:13",
            "invalid h1: hash",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = [\"h1:abc=\"]\n}}\n"),
            "6:13",
            "invalid h1: hash",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = [\"{}\"]\n}}\n", ZH_A.to_uppercase().replace("ZH:", "zh:")),
            "6:13",
            "invalid zh: hash: expected 64 lowercase hexadecimal digits",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = [\"zh:abc\"]\n}}\n"),
            "6:13",
            "invalid zh: hash",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = []\n}}\n"),
            "6:12",
            "must either be omitted or list at least one hash",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = \"{H1_A}\"\n}}\n"),
            "6:12",
            "must be a list of string literals",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  hashes = [1]\n}}\n"),
            "6:13",
            "each hash must be a string literal",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  commit = \"0123abc\"\n}}\n"),
            "6:12",
            "must be a full commit id: 40 or 64 lowercase hexadecimal digits",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  commit = \"{}\"\n}}\n", SHA1_COMMIT.to_uppercase()),
            "6:12",
            "must be a full commit id",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  commit = \"{SHA1_COMMIT}0\"\n}}\n"),
            "6:12",
            "must be a full commit id",
        ),
        (
            "module \"vpc\" {\n  version = \"1.0.0\"\n}\n".to_owned(),
            "4:1",
            "the argument \"source\" is required",
        ),
        (
            "module \"vpc\" {\n  source = \"\"\n}\n".to_owned(),
            "5:12",
            "\"source\" must not be empty",
        ),
        (
            format!("module \"vpc\" {{\n{ok}{ok}}}\n"),
            "6:3",
            "invalid HCL syntax: invalid attribute; expected unique attribute key; found redefined attribute",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  version = 1\n}}\n"),
            "6:13",
            "the argument \"version\" must be a string literal",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  constraints = \"${{var.x}}\"\n}}\n"),
            "6:17",
            "the argument \"constraints\" must be a string literal",
        ),
        (
            format!("module \"vpc\" {{\n{ok}  meta {{}}\n}}\n"),
            "6:3",
            "unsupported block type \"meta\"",
        ),
        (
            format!("provider \"x\" {{\n{ok}}}\n"),
            "4:1",
            "unsupported block type \"provider\"",
        ),
        (
            "source = \"x/y/z\"\n".to_owned(),
            "4:1",
            "unexpected argument \"source\" at the top level",
        ),
        (
            "module \"vpc\" {\n  source = \"x\"\n".to_owned(),
            "5:16",
            "invalid HCL syntax: invalid block body",
        ),
    ];
    let mut wrong = Vec::new();
    for (body, at, needle) in &cases {
        let e = err_of(body);
        assert!(e.problem().is_some(), "{body}");
        let msg = e.to_string();
        if !msg.starts_with(&format!(".tstore.lock.hcl:{at}: ")) || !msg.contains(needle) {
            wrong.push(format!("{body}wants {at} and {needle:?}, got: {msg}\n"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn problems_are_typed() {
    let e =
        err_of("module \"vpc\" {\n  source = \"x\"\n}\nmodule \"vpc\" {\n  source = \"x\"\n}\n");
    assert_eq!(
        e.problem(),
        Some(&ModuleLockProblem::DuplicateCallPath {
            key: "vpc".to_owned(),
            first_line: 4,
        })
    );
    let e = err_of("module \"vpc\" {\n  source = \"x\"\n  commit = \"no\"\n}\n");
    assert_eq!(e.problem(), Some(&ModuleLockProblem::InvalidCommit));
}

/// An error names the position and the rule, never the text of the file: a credential a
/// hand edit left in a value must not reach a CI log through an error message.
#[test]
fn errors_never_quote_the_files_values() {
    const SECRET: &str = "TF_TOKEN_secret123";
    let ok = "  source = \"x/y/z\"\n";
    let bodies = [
        format!("module \"vpc\" {{\n{ok}  commit = \"{SECRET}\"\n}}\n"),
        format!("module \"vpc\" {{\n{ok}  hashes = [\"{SECRET}\"]\n}}\n"),
        format!("module \"vpc\" {{\n{ok}  hashes = [\"h1:{SECRET}\"]\n}}\n"),
        format!("module \"vpc\" {{\n{ok}  hashes = [\"zh:{SECRET}\"]\n}}\n"),
        format!("module \"vpc\" {{\n  source = {SECRET}\n}}\n"),
        format!("module \"vpc\" {{\n  source = \"https://${{{SECRET}}}@example.com/m.zip\"\n}}\n"),
        format!("module \"vpc\" {{\n  source = \"https://{SECRET}@example.com/m.zip\n}}\n"),
        format!("module \"vpc\" {{\n  source = \"x\" {SECRET}\n}}\n"),
        format!("module \"https://{SECRET}@example.com\" {{\n{ok}}}\n"),
        format!("module \"vpc\" {{\n{ok}  version = [\"{SECRET}\"]\n}}\n"),
    ];
    for body in &bodies {
        let msg = err_of(body).to_string();
        assert!(!msg.contains(SECRET), "{body}\nleaks: {msg}");
        assert!(!msg.contains("secret123"), "{body}\nleaks: {msg}");
    }
}

#[test]
fn diff_names_each_added_removed_and_changed_call() {
    let old = lock_of(every_kind());
    let mut new = old.clone();
    new.entries.remove("oci");
    new.entries
        .insert("zz".to_owned(), entry("x/y/z", None, None, None, &[]));
    let vpc = new.entries.get_mut("vpc").unwrap();
    vpc.version = Some("5.6.0".to_owned());
    vpc.hashes = [H1_B.to_owned()].into();
    new.entries.get_mut("git_sha1").unwrap().commit = Some(SHA256_COMMIT[..40].to_owned());
    new.entries.get_mut("archive").unwrap().source = "https://example.com/other.zip".to_owned();

    assert_eq!(
        diff(&old, &new),
        vec![
            Change::Changed {
                key: "archive".to_owned(),
                fields: vec![Field::Source],
            },
            Change::Changed {
                key: "git_sha1".to_owned(),
                fields: vec![Field::Commit],
            },
            Change::Removed("oci".to_owned()),
            Change::Changed {
                key: "vpc".to_owned(),
                fields: vec![Field::Version, Field::Hashes],
            },
            Change::Added("zz".to_owned()),
        ]
    );
    assert!(diff(&old, &old).is_empty());
    assert_eq!(
        diff(&ModuleLock::default(), &old)
            .iter()
            .map(Change::key)
            .collect::<Vec<_>>(),
        old.entries.keys().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(Field::Constraints.to_string(), "constraints");
}

#[test]
fn load_reads_the_file_or_says_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE_NAME);
    assert!(load(&file).unwrap().is_none());
    let lock = lock_of(every_kind());
    fs_err::write(&file, render(&lock)).unwrap();
    assert_eq!(load(&file).unwrap(), Some(lock));
    assert!(matches!(
        load(dir.path()),
        Err(ModuleLockError::Read { .. })
    ));
}

#[test]
fn test_file_call_paths_round_trip() {
    // A call in a test file is keyed by the file's directory and stem, which may start with
    // a digit: what the writer writes, the reader reads back.
    let key = "test.tests.001_basic.setup";
    assert!(is_call_path(key));
    let lock = lock_of([(
        key,
        entry(
            "git::https://example.com/a.git",
            Some("v1"),
            None,
            Some(SHA1_COMMIT),
            &[H1_A],
        ),
    )]);
    assert_eq!(parse(&render(&lock), path()).unwrap(), lock);
    for bad in ["", ".", "..", "a..b", "a.", ".a", "a/b", "a b", "a\0b", "é"] {
        assert!(!is_call_path(bad), "{bad:?}");
    }
}

#[test]
fn a_duplicate_far_down_names_the_first_block_line() {
    // Block positions are kept as offsets and turned into a line only for the error.
    let ok = "  source = \"x\"\n";
    let mut body = String::new();
    for i in 0..2000 {
        body.push_str(&format!("module \"m{i}\" {{\n{ok}}}\n"));
    }
    body.push_str(&format!("module \"m1500\" {{\n{ok}}}\n"));
    let err = err_of(&body).to_string();
    assert!(
        err.contains("duplicate module block \"m1500\"; the first is at line 4504"),
        "{err}"
    );
}

#[test]
fn module_lock_hosts_decide_when_they_agree() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join(crate::module_lock::FILE_NAME);
    assert_eq!(flavor_evidence(&lock), None, "no file");
    let entry = |key: &str, source: &str| {
        format!(
            "module \"{key}\" {{\n  source  = \"{source}\"\n  version = \"1.0.0\"\n  hashes  = [\"h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=\"]\n}}\n"
        )
    };
    for (sources, want) in [
        (
            &[
                "registry.terraform.io/acme/vpc/aws",
                "git::https://example.com/x.git",
            ][..],
            Some(Flavor::Terraform),
        ),
        (
            &["registry.opentofu.org/acme/vpc/aws"][..],
            Some(Flavor::Tofu),
        ),
        (
            &[
                "registry.opentofu.org/acme/a/aws",
                "registry.terraform.io/acme/b/aws",
            ][..],
            None,
        ),
        (&["example.com/acme/vpc/aws"][..], None),
    ] {
        let text: String = sources
            .iter()
            .enumerate()
            .map(|(i, s)| entry(&format!("m{i}"), s))
            .collect();
        fs_err::write(&lock, text).unwrap();
        let got = flavor_evidence(&lock);
        assert_eq!(got.as_ref().map(|c| c.flavor), want, "{sources:?}");
        if let Some(c) = got {
            assert_eq!(c.decided_by, DecidedBy::ModuleLockHosts(lock.clone()));
            assert_eq!(c.decided_by.rule(), "module lock file hosts");
        }
    }
    fs_err::write(&lock, "module {").unwrap();
    assert_eq!(flavor_evidence(&lock), None);
}
