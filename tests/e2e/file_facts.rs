//! Configuration files' facts recorded in the store: an init records what each file it
//! parses says, by content; a later process reads them instead of parsing (shown here by a
//! recorded fact changed in the index: the next init of another checkout follows it, with
//! positions in the file as that checkout shows it); `tstore store facts` derives every
//! recorded fact again and names the one that differs; a restored store drops them all
//! (adoption), and they are derived again from the bytes.

use std::path::Path;
use std::process::Command;

use tstore_test_support::{run_ok, stderr, GitRepo, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;
use tstore_test_support::Tstore;

/// A module package with several files of every kind of fact the walk and the provider
/// phase read.
const MODULE_MAIN: &str = "terraform {\n  required_version = \">= 0.13\"\n}\n\nvariable \"names\" {\n  type    = list(string)\n  default = [\"a\"]\n}\n\nmodule \"inner\" {\n  source = \"./inner\"\n}\n\noutput \"v\" {\n  value = module.inner.v\n}\n";
const MODULE_INNER: &str = "output \"v\" {\n  value = \"inner\"\n}\n";

fn init(env: &TestEnv, dir: &Path) -> Tstore {
    env.tstore().no_fuse().arg("init").arg(dir)
}

fn facts(env: &TestEnv) -> (bool, serde_json::Value) {
    let out = env.tstore().args(["store", "facts", "--json"]).output();
    (out.status.success(), json(&out))
}

#[test]
fn facts_are_recorded_by_content_read_back_checked_and_dropped_on_adoption() {
    let env = TestEnv::new();
    let repo = GitRepo::tagged_module(
        env.root.path(),
        "pkg",
        &[("main.tf", MODULE_MAIN), ("inner/main.tf", MODULE_INNER)],
    );
    let main = format!(
        "module \"m\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
        repo.display()
    );
    let first = env.checkout("first", &[("main.tf", main.as_str())]);
    init(&env, &first).ok();
    let (ok, report) = facts(&env);
    assert!(ok, "{report}");
    // The package's two files, checked again from their bytes; the root's own file, and
    // the self-writes of the package's two module directories (keyed by all their files),
    // are not content the store holds as one blob.
    assert_eq!(report["matching"], 2, "{report}");
    assert_eq!(report["not_held"], 3, "{report}");
    assert_eq!(report["mismatched"], serde_json::json!([]));

    // A recorded fact is what the next process reads: the package main.tf's facts changed
    // in the index to require another core version; another checkout's init follows them,
    // naming the file as that checkout shows it.
    let blob = tstore_store::BlobId::of(MODULE_MAIN.as_bytes()).to_string();
    let conn = rusqlite::Connection::open(env.store.join("index.sqlite")).unwrap();
    let (rules, recorded): (String, Vec<u8>) = conn
        .query_row(
            "SELECT rules, facts FROM file_facts WHERE blob = ?1",
            [&blob],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut changed: serde_json::Value = serde_json::from_slice(&recorded).unwrap();
    changed["required_versions"][0]["constraint"] = "< 0.1".into();
    conn.execute(
        "UPDATE file_facts SET facts = ?1 WHERE blob = ?2 AND rules = ?3",
        rusqlite::params![serde_json::to_vec(&changed).unwrap(), blob, rules],
    )
    .unwrap();
    drop(conn);
    let second = env.checkout("second", &[("main.tf", main.as_str())]);
    let refused = stderr(&init(&env, &second).fails());
    assert!(
        refused.contains(".terraform/modules/m/main.tf:2")
            && refused.contains("required_version = \"< 0.1\""),
        "{refused}"
    );
    let (ok, report) = facts(&env);
    assert!(!ok);
    assert_eq!(report["mismatched"][0]["blob"], blob.as_str(), "{report}");

    // A restored copy of the store is adopted: its facts are dropped, and derived again
    // from the bytes by the next init.
    let restored = TestEnv::new();
    fs_err::remove_dir_all(&restored.store).ok();
    fs_err::create_dir_all(&restored.store).unwrap();
    run_ok(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", env.store.display()))
            .arg(&restored.store),
    );
    let third = restored.checkout("third", &[("main.tf", main.as_str())]);
    init(&restored, &third).ok();
    let (ok, report) = facts(&restored);
    assert!(ok, "{report}");
    assert_eq!(report["mismatched"], serde_json::json!([]));
    assert_eq!(report["matching"], 2, "{report}");
}
