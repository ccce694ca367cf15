//! Native HCL syntax: every case under `tests/hcl-syntax/accept` must parse and every
//! case under `reject` must fail, both in tstore's configuration loader and in the real
//! terraform 1.0.3 (`terraform fmt`, which parses without needing providers). terraform
//! judging each case first proves the case is what its folder says; the cases are the
//! constructs the public-module corpus check (`scripts/corpus-check`) found.

use std::path::{Path, PathBuf};

use tstore_test_support::TestEnv;

fn cases(verdict: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/hcl-syntax")
        .join(verdict);
    let mut cases: Vec<PathBuf> = fs_err::read_dir(&dir)
        .expect("list syntax cases")
        .map(|e| e.expect("read syntax case dir").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tf"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "too few cases in {}", dir.display());
    cases
}

/// terraform's verdict: `fmt -check` exits 0 (formatted) or 3 (would reformat) for valid
/// syntax and 2 for a syntax error.
fn terraform_accepts(env: &TestEnv, case: &Path) -> Result<(), String> {
    let out = env
        .terraform(env.root.path())
        .args(["fmt", "-check", "-list=false", "-no-color"])
        .arg(case)
        .output()
        .expect("run terraform fmt");
    match out.status.code() {
        Some(0 | 3) => Ok(()),
        Some(2) => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        other => panic!(
            "terraform fmt {}: unexpected exit {other:?}: {}",
            case.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn tstore_accepts_exactly_what_terraform_accepts() {
    let env = TestEnv::new();
    let mut disagreements = Vec::new();
    for (verdict, should_parse) in [("accept", true), ("reject", false)] {
        for case in cases(verdict) {
            let name = case.file_name().unwrap().to_string_lossy().into_owned();
            match terraform_accepts(&env, &case) {
                Ok(()) if !should_parse => {
                    panic!("case {verdict}/{name} is accepted by terraform: move it to accept/")
                }
                Err(e) if should_parse => {
                    panic!("case {verdict}/{name} is rejected by terraform: {e}")
                }
                _ => {}
            }
            match (tstore_tofu::config::check_file(&case), should_parse) {
                (Ok(()), true) | (Err(_), false) => {}
                (Ok(()), false) => disagreements.push(format!("{verdict}/{name}: tstore accepts")),
                (Err(e), true) => {
                    disagreements.push(format!("{verdict}/{name}: tstore rejects: {e}"))
                }
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// A syntax error names the file, and the line terraform names.
#[test]
fn syntax_errors_name_file_and_terraforms_line() {
    let env = TestEnv::new();
    let mut mismatches = Vec::new();
    for case in cases("reject") {
        let tf = terraform_accepts(&env, &case).unwrap_err();
        let tf_line = tf
            .split(" line ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or_else(|| panic!("no line in terraform's error: {tf}"));
        let err = tstore_tofu::config::check_file(&case)
            .unwrap_err()
            .to_string();
        let want = format!("{}:{tf_line}:", case.display());
        if !err.starts_with(&want) {
            mismatches.push(format!("{err:?} does not start with {want:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
