//! A package's name is its origin's word: a lock entry's hash vouches for content, never for
//! the name of the commit, URL or registry version it sits beside. Each test plays the
//! attacker (a pull request's checkout on a shared runner) and checks the effect that
//! matters: what a teammate's later lock-free init of the trusted source installs.
//!
//! - a lock entry naming a trusted repository's real commit with the `h1:` of the author's
//!   own tree (which the store holds from an earlier job) installs that tree for the pull
//!   request alone, under the hash's name; the trusted name keeps the trusted files;
//! - a store an older tstore poisoned that way is found by `store verify` and repaired by
//!   the upgrade: the poisoned name answers no lookup by its origin, and the next lock-free
//!   init installs the trusted files.
//!
//! (The module mirror's variants of the attack are in `mirror_names.rs`.)

use std::path::{Path, PathBuf};

use tstore_test_support::{run_ok, stdout, GitRepo, TestEnv};

use crate::common::{first_h1, json, TstoreEnv};
use crate::lock_reach::{call, installed, output_tf, LOCK};

/// A bare repository `<name>.git` under `base` whose tag `v1` holds one output saying `who`.
fn repository(base: &Path, name: &str, who: &str) -> PathBuf {
    GitRepo::init(base.join(name), &[("main.tf", &output_tf(who))])
        .commit(who)
        .tag("v1")
        .clone_bare(base.join(format!("{name}.git")))
        .path()
        .to_owned()
}

/// A module lock for `git::…/trusted.git?ref=v1` naming the trusted repository's real v1
/// commit (so the ref reaches it) and the `h1:` of the author's own tree: written honestly
/// on the author's own machine, then one hash swapped.
fn forged_lock(trusted: &Path, attacker: &Path) -> String {
    let author = TestEnv::new();
    let theirs = author.checkout("theirs", &[("main.tf", &call(attacker, "v1"))]);
    author.tstore().no_fuse().init(&theirs).ok();
    let honest = author.checkout("honest", &[("main.tf", &call(trusted, "v1"))]);
    author.tstore().no_fuse().init(&honest).ok();
    let (theirs, honest) = (
        fs_err::read_to_string(theirs.join(LOCK)).unwrap(),
        fs_err::read_to_string(honest.join(LOCK)).unwrap(),
    );
    honest.replace(&first_h1(&honest), &first_h1(&theirs))
}

/// Module packages whose id claims an origin (`git-`, `http-`, `oci-`) but whose provenance
/// is not that origin, as `store ls --json` lists them.
fn origin_names_not_of_their_origin(env: &TestEnv) -> Vec<String> {
    let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
    ls["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "module")
        .filter(|p| {
            let name = p["name"].as_str().unwrap();
            ["git-", "http-", "oci-"]
                .iter()
                .any(|k| name.starts_with(k))
                && p["provenance"] != "origin"
        })
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_lock_entry_alone_never_puts_other_files_under_a_trusted_commit() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let trusted = repository(&base, "trusted", "trusted");
    let attacker = repository(&base, "attacker", "attacker");
    let forged = forged_lock(&trusted, &attacker);

    // An earlier job on this runner installed the author's own module: the store holds
    // their tree.
    let earlier = env.checkout("earlier", &[("main.tf", &call(&attacker, "v1"))]);
    env.tstore().no_fuse().init(&earlier).ok();

    // The pull request: the trusted call, locked to the trusted commit and the author's tree.
    let pr = env.checkout(
        "pr",
        &[("main.tf", &call(&trusted, "v1")), (LOCK, forged.as_str())],
    );
    let pr_report = env.tstore().no_fuse().init(&pr).json();
    // The entry vouches for the author's tree in the author's own checkout.
    assert!(installed(&pr).contains("attacker"), "{pr_report}");

    // A teammate's first init of the trusted call, on the same store: the trusted files.
    let teammate = env.checkout("teammate", &[("main.tf", &call(&trusted, "v1"))]);
    let report = env.tstore().no_fuse().init(&teammate).json();
    assert!(installed(&teammate).contains("trusted"), "{report}");
    assert_eq!(report["modules"][0]["vouched_by"], "origin", "{report}");
    // The pull request's package was found by its hash, and named by it.
    let m = &pr_report["modules"][0];
    assert_eq!(m["vouched_by"], "lock", "{pr_report}");
    assert!(
        m["package"].as_str().unwrap().starts_with("lock-"),
        "{pr_report}"
    );
    // And `-upgrade` of the pull request's own checkout replaces the author's files.
    env.tstore().no_fuse().init(&pr).arg("-upgrade").ok();
    assert!(installed(&pr).contains("trusted"));
    assert_eq!(origin_names_not_of_their_origin(&env), Vec::<String>::new());
    env.tstore().args(["store", "verify"]).ok();
}

/// What an older tstore left after the attack above: the trusted commit's name holding the
/// author's tree, with every hash the index records consistent with those files, in the
/// index schema that tstore wrote (no provenance column).
fn poison_as_an_older_tstore_did(env: &TestEnv, trusted_id: &str, attacker_id: &str) {
    crate::store_trust::swap_package(
        &env.store,
        trusted_id,
        attacker_id,
        (
            &format!("modules/{trusted_id}"),
            &format!("modules/{attacker_id}"),
        ),
        true,
    );
    let conn = rusqlite::Connection::open(env.store.join("index.sqlite")).unwrap();
    // The lock-hash install never wrote the memo an origin's fetch writes.
    conn.execute(
        "DELETE FROM module_sources WHERE package = (SELECT id FROM packages WHERE name = ?1)",
        [trusted_id],
    )
    .unwrap();
    conn.execute_batch(
        "ALTER TABLE packages DROP COLUMN provenance;
         DROP INDEX blobs_unsynced;
         ALTER TABLE blobs DROP COLUMN written_boot;
         PRAGMA user_version = 13;",
    )
    .unwrap();
}

#[test]
fn a_store_an_older_tstore_poisoned_is_found_by_verify_and_repaired_by_the_upgrade() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let trusted = repository(&base, "trusted", "trusted");
    let attacker = repository(&base, "attacker", "attacker");
    let ids = |dir: &Path| {
        let report = env.tstore().no_fuse().init(dir).json();
        report["modules"][0]["package"].as_str().unwrap().to_owned()
    };
    let honest = env.checkout("honest", &[("main.tf", &call(&trusted, "v1"))]);
    let trusted_id = ids(&honest);
    let theirs = env.checkout("theirs", &[("main.tf", &call(&attacker, "v1"))]);
    let attacker_id = ids(&theirs);
    poison_as_an_older_tstore_did(&env, &trusted_id, &attacker_id);

    // The upgrade classifies the name: vouched for by a lock's hash only. `verify` says so
    // and fails; the poisoned name answers no lookup by its origin.
    let out = env.tstore().args(["store", "verify"]).fails();
    let said = stdout(&out);
    assert!(
        said.contains(&format!("unsupported name: module {trusted_id}")),
        "{said}"
    );
    let verify = json(&env.tstore().args(["store", "verify", "--json"]).fails());
    assert_eq!(
        verify["names_unsupported"][0]["package"],
        trusted_id.as_str()
    );
    assert_eq!(verify["names_unsupported"][0]["provenance"], "lock");

    let teammate = env.checkout("teammate", &[("main.tf", &call(&trusted, "v1"))]);
    env.tstore().no_fuse().init(&teammate).ok();
    assert!(installed(&teammate).contains("trusted"));
    // The origin's answer took the name back: the store is sound again.
    assert_eq!(origin_names_not_of_their_origin(&env), Vec::<String>::new());
    env.tstore().args(["store", "verify"]).ok();
    run_ok(env.terraform(&teammate).args(["validate", "-no-color"]));
}

#[test]
fn verify_repair_drops_a_name_no_origin_supports() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let trusted = repository(&base, "trusted", "trusted");
    let attacker = repository(&base, "attacker", "attacker");
    let init_id = |dir: &Path| {
        let report = env.tstore().no_fuse().init(dir).json();
        report["modules"][0]["package"].as_str().unwrap().to_owned()
    };
    let honest = env.checkout("honest", &[("main.tf", &call(&trusted, "v1"))]);
    let trusted_id = init_id(&honest);
    let theirs = env.checkout("theirs", &[("main.tf", &call(&attacker, "v1"))]);
    let attacker_id = init_id(&theirs);
    poison_as_an_older_tstore_did(&env, &trusted_id, &attacker_id);

    let repaired = json(
        &env.tstore()
            .args(["store", "verify", "--repair", "--json"])
            .ok(),
    );
    assert_eq!(
        repaired["names_unsupported"][0]["package"],
        trusted_id.as_str()
    );
    assert_eq!(repaired["repaired"], true);
    assert_eq!(origin_names_not_of_their_origin(&env), Vec::<String>::new());
    env.tstore().args(["store", "verify"]).ok();
    // With its origin gone, a lock-free init fails instead of finding the author's files.
    let moved = base.join("trusted-gone.git");
    fs_err::rename(&trusted, &moved).unwrap();
    let teammate = env.checkout("teammate", &[("main.tf", &call(&trusted, "v1"))]);
    env.tstore().no_fuse().init(&teammate).fails();
    assert!(!installed(&teammate).contains("attacker"));
    // With it back, the trusted files: the repair left nothing under the trusted name.
    fs_err::rename(&moved, &trusted).unwrap();
    env.tstore().no_fuse().init(&teammate).ok();
    let got = installed(&teammate);
    assert!(got.contains("\"trusted\""), "{got}");
}
