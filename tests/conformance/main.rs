//! Conformance: `tstore --flavor terraform init` against `terraform init -backend=false`,
//! case by case, for each of two judges: terraform 1.0.3 (PyPI) and terraform 1.11.4 (the
//! machine image's), tstore told which with `TSTORE_TOOL_VERSION`. Each directory under
//! `tests/conformance/cases/` is one working directory plus a `case.json`; the harness runs
//! both tools on twin copies, in one shared world of loopback peers, and compares what a
//! user would notice:
//!
//! - the same success or failure (and, on failure, tstore names terraform's summary);
//! - byte-identical lock files;
//! - the same `modules.json` records, and the same files in every installed module (a git
//!   clone's `.git` aside);
//! - `terraform validate` succeeding after both, when the case asks for it.
//!
//! `case.json`: `{"about": "...", "expect": "success"|"failure", "error": "summary",
//! "args": ["-upgrade", ...], "validate": true, "known_gap": "why tstore differs today",
//! "by_judge": {"1.11.4": {"expect": …, "error": …, "known_gap": …}}}`: `by_judge` replaces
//! the fields it names for that judge (`"known_gap": null` clears one).
//! A known gap is reported, not failed; once it passes, the harness fails until the
//! `known_gap` is removed. File contents and symlink targets may name the world:
//! `@@REGISTRY@@` (module registry host), `@@HTTP@@` (its base URL), `@@GIT@@` (the
//! directory of git repositories), `@@LOCAL@@` (a directory of plain module directories).
//! One line per judge ends the output: `conformance (terraform 1.0.3): N passed, N failed,
//! N known gaps`.

// Tests build their fixtures and judges with processes of their own; the product starts
// processes only through tstore_process::Command.
#![allow(clippy::disallowed_methods)]

mod world;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use tstore_test_support::TestEnv;

use crate::world::World;

#[derive(Clone, serde::Deserialize)]
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
    /// Fields that differ for one judge, by its version.
    #[serde(default)]
    by_judge: BTreeMap<String, JudgeOverride>,
    /// A fixture under `tests/` copied byte for byte as the case's `main.tf`: the HCL syntax
    /// cases are the files `tests/hcl-syntax/` holds for the e2e syntax test too.
    #[serde(default)]
    main_tf_from: Option<String>,
}

/// What a case expects of one judge where it differs from the case's own fields.
#[derive(Clone, Default, serde::Deserialize)]
struct JudgeOverride {
    expect: Option<String>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    known_gap: Option<Option<String>>,
}

/// A field given as `null` is `Some(None)` (cleared), an absent one `None` (kept).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    use serde::Deserialize as _;
    Option::<String>::deserialize(d).map(Some)
}

impl Case {
    /// The case as `judge` is to judge it.
    fn for_judge(&self, judge: &Judge) -> Case {
        let mut case = self.clone();
        if let Some(o) = self.by_judge.get(judge.version) {
            if let Some(expect) = &o.expect {
                case.expect = expect.clone();
            }
            if let Some(error) = &o.error {
                case.error = error.clone();
            }
            if let Some(gap) = &o.known_gap {
                case.known_gap = gap.clone();
            }
        }
        case
    }
}

/// A real terraform the cases are judged by, and the version tstore is told it stands in
/// for.
struct Judge {
    version: &'static str,
    binary: PathBuf,
}

impl Judge {
    fn all() -> Vec<Judge> {
        let peers = tstore_test_support::peers();
        vec![
            Judge {
                version: "1.0.3",
                binary: peers.terraform.clone(),
            },
            Judge {
                version: "1.11.4",
                binary: peers.terraform_current.clone(),
            },
        ]
    }
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
        // tree only (a deliberate difference, docs/decisions.md).
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

/// Run one case before `judge`; `Err` says how tstore differs from terraform.
fn run_case(
    env: &TestEnv,
    world: &World,
    judge: &Judge,
    name: &str,
    case: &Case,
) -> Result<(), String> {
    let src = cases_dir().join(name);
    let theirs = env.work.join(format!("{name}-terraform-{}", judge.version));
    let ours = env.work.join(format!("{name}-tstore-{}", judge.version));
    for dest in [&theirs, &ours] {
        materialize(&src, dest, world);
        if let Some(fixture) = &case.main_tf_from {
            let from = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests")
                .join(fixture);
            fs_err::create_dir_all(dest).unwrap();
            fs_err::copy(from, dest.join("main.tf")).unwrap();
        }
    }
    let terraform = |dir: &Path| {
        let mut cmd = env.command(&judge.binary);
        cmd.current_dir(dir);
        cmd
    };
    let tf = terraform(&theirs)
        .env("TF_CLI_CONFIG_FILE", &world.cli_config)
        .args(["init", "-backend=false", "-no-color"])
        .args(&case.args)
        .output()
        .unwrap();
    let us = env
        .command(Path::new(env!("CARGO_BIN_EXE_tstore")))
        .env("TSTORE_FLAVOR", "terraform")
        .env(
            "TSTORE_TOOL_VERSION",
            format!("terraform {}", judge.version),
        )
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
            let v = terraform(dir)
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
    let judges = Judge::all();
    let jobs: Vec<(&Judge, &String)> = judges
        .iter()
        .flat_map(|j| names.iter().map(move |n| (j, *n)))
        .collect();
    // Cases are independent: run them on a few threads, report in name order per judge.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<BTreeMap<(&str, String), Outcome>> = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((judge, name)) = jobs.get(i) else {
                    break;
                };
                let case: Case = serde_json::from_str(
                    &fs_err::read_to_string(cases_dir().join(name).join("case.json")).unwrap(),
                )
                .unwrap_or_else(|e| panic!("{name}/case.json: {e}"));
                if let Some(unknown) = case
                    .by_judge
                    .keys()
                    .find(|k| !judges.iter().any(|j| j.version == k.as_str()))
                {
                    panic!("{name}/case.json: by_judge names no judge: {unknown}");
                }
                let case = case.for_judge(judge);
                let result = run_case(&env, &world, judge, name, &case);
                results
                    .lock()
                    .unwrap()
                    .insert((judge.version, (*name).clone()), (case, result));
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut failed = Vec::new();
    let mut tallies = Vec::new();
    for judge in &judges {
        let (mut passed, mut gaps, mut judge_failed) = (0, 0, 0);
        for ((version, name), (case, result)) in &results {
            if *version != judge.version {
                continue;
            }
            let tag = format!("[{version}] {name}");
            match (result, &case.known_gap) {
                (Ok(()), None) => {
                    passed += 1;
                    println!("ok    {tag}: {}", case.about);
                }
                (Err(why), Some(gap)) => {
                    gaps += 1;
                    println!("gap   {tag}: {gap} ({why})");
                }
                (Ok(()), Some(_)) => {
                    println!("FIXED {tag}: passes now; remove its known_gap");
                    failed.push(tag);
                    judge_failed += 1;
                }
                (Err(why), None) => {
                    println!("FAIL  {tag}: {}: {why}", case.about);
                    failed.push(tag);
                    judge_failed += 1;
                }
            }
        }
        tallies.push(format!(
            "conformance (terraform {}): {passed} passed, {judge_failed} failed, {gaps} known gaps",
            judge.version
        ));
    }
    for line in &tallies {
        println!("{line}");
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
    // Every case's files were parsed once and their facts recorded in the one store the
    // cases share (the second judge's inits read them): each recorded fact whose content
    // the store holds must equal a fresh parse of its bytes.
    let out = env
        .command(Path::new(env!("CARGO_BIN_EXE_tstore")))
        .args(["store", "facts", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("store facts: {e}: {}", text(&out)));
    println!("conformance: facts {report}");
    assert!(
        out.status.success(),
        "recorded facts differ from a fresh parse: {report}"
    );
    if filter.is_none() {
        assert!(report["matching"].as_u64() > Some(0), "{report}");
    }
}
