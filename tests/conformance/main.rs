//! Conformance: `tstore --flavor terraform init` against `terraform init -backend=false`
//! (terraform 1.0.3), case by case. Each directory under `tests/conformance/cases/` is one
//! working directory plus a `case.json`; the harness runs both tools on twin copies, in one
//! shared world of loopback peers, and compares what a user would notice:
//!
//! - the same success or failure (and, on failure, tstore names terraform's summary);
//! - byte-identical lock files;
//! - the same `modules.json` records, and the same files in every installed module (a git
//!   clone's `.git` aside);
//! - `terraform validate` succeeding after both, when the case asks for it.
//!
//! `case.json`: `{"about": "...", "expect": "success"|"failure", "error": "summary",
//! "args": ["-upgrade", ...], "validate": true, "known_gap": "why tstore differs today"}`.
//! A known gap is reported, not failed; once it passes, the harness fails until the
//! `known_gap` is removed. File contents and symlink targets may name the world:
//! `@@REGISTRY@@` (module registry host), `@@HTTP@@` (its base URL), `@@GIT@@` (the
//! directory of git repositories), `@@LOCAL@@` (a directory of plain module directories).
//! The last line printed is `conformance: N passed, N failed, N known gaps`.

mod world;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use tstore_test_support::TestEnv;

use crate::world::World;

#[derive(serde::Deserialize)]
struct Case {
    about: String,
    expect: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    validate: bool,
    #[serde(default)]
    known_gap: Option<String>,
}

/// A case and how it went.
type Outcome = (Case, Result<(), String>);

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/cases")
}

/// Copy the case's files (all but `case.json`) into `dest`, filling in the world.
fn materialize(src: &Path, dest: &Path, world: &World) {
    for entry in walkdir::WalkDir::new(src).min_depth(1) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(src).unwrap();
        if rel == Path::new("case.json") {
            continue;
        }
        let out = dest.join(rel);
        if entry.file_type().is_dir() {
            fs_err::create_dir_all(&out).unwrap();
        } else if entry.file_type().is_symlink() {
            let target = fs_err::read_link(entry.path()).unwrap();
            let target = world.fill(&target.to_string_lossy());
            std::os::unix::fs::symlink(target, &out).unwrap();
        } else {
            let text = fs_err::read_to_string(entry.path()).unwrap();
            fs_err::create_dir_all(out.parent().unwrap()).unwrap();
            fs_err::write(&out, world.fill(&text)).unwrap();
        }
    }
}

/// `modules.json` records with sorted keys, and the files of each installed module.
fn modules_state(dir: &Path) -> (Vec<String>, BTreeMap<String, Vec<u8>>) {
    let Ok(text) = fs_err::read_to_string(dir.join(".terraform/modules/modules.json")) else {
        return (Vec::new(), BTreeMap::new());
    };
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut records = Vec::new();
    let mut files = BTreeMap::new();
    for m in json["Modules"].as_array().unwrap() {
        let sorted: BTreeMap<_, _> = m.as_object().unwrap().iter().collect();
        records.push(serde_json::to_string(&sorted).unwrap());
        let module_dir = m["Dir"].as_str().unwrap_or_default();
        if !module_dir.starts_with(".terraform/modules/") {
            continue;
        }
        let root = dir.join(module_dir);
        // A git clone's `.git` is not part of the package: tstore stores the checked-out
        // tree only (a deliberate difference, ARCHITECTURE.md).
        for f in walkdir::WalkDir::new(&root)
            .follow_links(true)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
        {
            let rel = f.path().strip_prefix(dir).unwrap().display().to_string();
            files.insert(rel, fs_err::read(f.path()).unwrap());
        }
    }
    records.sort();
    (records, files)
}

fn text(out: &Output) -> String {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    all.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Run one case; `Err` says how tstore differs from terraform.
fn run_case(env: &TestEnv, world: &World, name: &str, case: &Case) -> Result<(), String> {
    let src = cases_dir().join(name);
    let theirs = env.work.join(format!("{name}-terraform"));
    let ours = env.work.join(format!("{name}-tstore"));
    materialize(&src, &theirs, world);
    materialize(&src, &ours, world);
    let tf = env
        .terraform(&theirs)
        .env("TF_CLI_CONFIG_FILE", &world.cli_config)
        .args(["init", "-backend=false", "-no-color"])
        .args(&case.args)
        .output()
        .unwrap();
    let us = env
        .command(Path::new(env!("CARGO_BIN_EXE_tstore")))
        .env("TSTORE_FLAVOR", "terraform")
        .env("TSTORE_NO_FUSE", "1")
        .env("TF_CLI_CONFIG_FILE", &world.cli_config)
        .arg("init")
        .args(&case.args)
        .arg(&ours)
        .output()
        .unwrap();
    let want_success = case.expect == "success";
    if tf.status.success() != want_success {
        return Err(format!(
            "the case is wrong: terraform {} ({})",
            if tf.status.success() {
                "succeeded"
            } else {
                "failed"
            },
            text(&tf)
        ));
    }
    if let Some(summary) = &case.error {
        if !text(&tf).contains(summary.as_str()) {
            return Err(format!(
                "the case is wrong: terraform did not say {summary:?}: {}",
                text(&tf)
            ));
        }
    }
    if us.status.success() != want_success {
        return Err(format!(
            "tstore {} where terraform {}: {}",
            if us.status.success() {
                "succeeded"
            } else {
                "failed"
            },
            if want_success { "succeeded" } else { "failed" },
            text(&us)
        ));
    }
    if !want_success {
        if let Some(summary) = &case.error {
            if !text(&us).contains(summary.as_str()) {
                return Err(format!("tstore does not say {summary:?}: {}", text(&us)));
            }
        }
        return Ok(());
    }
    let lock = |d: &Path| fs_err::read_to_string(d.join(".terraform.lock.hcl")).ok();
    if lock(&ours) != lock(&theirs) {
        return Err(format!(
            "lock files differ:\n--- terraform\n{}\n--- tstore\n{}",
            lock(&theirs).unwrap_or_default(),
            lock(&ours).unwrap_or_default()
        ));
    }
    let (their_records, their_files) = modules_state(&theirs);
    let (our_records, our_files) = modules_state(&ours);
    if our_records != their_records {
        return Err(format!(
            "modules.json differs: terraform {their_records:?}, tstore {our_records:?}"
        ));
    }
    if our_files != their_files {
        let a: Vec<_> = their_files.keys().collect();
        let b: Vec<_> = our_files.keys().collect();
        return Err(format!(
            "module files differ: terraform {a:?}, tstore {b:?}"
        ));
    }
    if case.validate {
        for (who, dir) in [("terraform", &theirs), ("tstore", &ours)] {
            let v = env
                .terraform(dir)
                .args(["validate", "-no-color"])
                .output()
                .unwrap();
            if !v.status.success() {
                return Err(format!(
                    "terraform validate fails after {who}'s init: {}",
                    text(&v)
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn tstore_init_conforms_to_terraform_init() {
    let env = TestEnv::new();
    let world = World::start(&env);
    let mut names: Vec<String> = fs_err::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let filter = std::env::var("CONFORMANCE_CASE").ok();
    let names: Vec<&String> = names
        .iter()
        .filter(|n| filter.as_ref().is_none_or(|f| n.contains(f.as_str())))
        .collect();
    // Cases are independent: run them on a few threads, report in name order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<BTreeMap<String, Outcome>> = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(name) = names.get(i) else { break };
                let case: Case = serde_json::from_str(
                    &fs_err::read_to_string(cases_dir().join(name).join("case.json")).unwrap(),
                )
                .unwrap_or_else(|e| panic!("{name}/case.json: {e}"));
                let result = run_case(&env, &world, name, &case);
                results
                    .lock()
                    .unwrap()
                    .insert((*name).clone(), (case, result));
            });
        }
    });
    let (mut passed, mut failed, mut gaps) = (0, Vec::new(), 0);
    for (name, (case, result)) in results.into_inner().unwrap() {
        match (&result, &case.known_gap) {
            (Ok(()), None) => {
                passed += 1;
                println!("ok    {name}: {}", case.about);
            }
            (Err(why), Some(gap)) => {
                gaps += 1;
                println!("gap   {name}: {gap} ({why})");
            }
            (Ok(()), Some(_)) => {
                println!("FIXED {name}: passes now; remove its known_gap");
                failed.push(name.clone());
            }
            (Err(why), None) => {
                println!("FAIL  {name}: {}: {why}", case.about);
                failed.push(name.clone());
            }
        }
    }
    println!(
        "conformance: {passed} passed, {} failed, {gaps} known gaps",
        failed.len()
    );
    assert!(failed.is_empty(), "failed: {failed:?}");
}
