//! One lock, the same bytes on every runner: a locked git commit is installed only where
//! the ref its call names reaches it (the ref's commit or an ancestor), checked against the
//! remote or this machine's own record of such a check, whatever the store already holds.
//!
//! - a lock-only edit that keeps the ref but names a commit of another branch (with that
//!   commit's `h1:`) is refused on a warm runner whose store holds that commit, as on a
//!   fresh one;
//! - a branch that moved on installs the locked commit, and says so; a tag that moved says
//!   so louder;
//! - with the remote unreachable and no record, init refuses, naming `TSTORE_TRUST_LOCK`;
//!   with it, the lock's checksums decide and the unchecked ref is said; a record of an
//!   earlier check on this machine lets init run offline.

use std::path::{Path, PathBuf};

use tstore_test_support::{stderr, GitRepo, TestEnv};

use crate::common::{json, TstoreEnv};

pub(crate) const LOCK: &str = ".tstore.lock.hcl";

pub(crate) fn rev(repo: &Path, name: &str) -> String {
    GitRepo::open(repo).rev(name)
}

/// `<base>/pkg.git`: `main` at "one" (tagged `v1`), and a branch `feature` at "evil" that
/// `main` does not contain; the working copy is `<base>/pkg`.
pub(crate) fn repository(base: &Path) -> PathBuf {
    let work = GitRepo::init(base.join("pkg"), &[("main.tf", &output_tf("one"))]);
    work.commit("one")
        .tag("v1")
        .branch("feature")
        .write(&[("main.tf", &output_tf("evil"))])
        .commit("evil")
        .checkout("main");
    work.clone_bare(base.join("pkg.git")).path().to_owned()
}

/// `main.tf` of the package: one output, `value`.
pub(crate) fn output_tf(value: &str) -> String {
    format!("output \"v\" {{\n  value = \"{value}\"\n}}\n")
}

pub(crate) fn call(repo: &Path, reference: &str) -> String {
    format!(
        "module \"m\" {{\n  source = \"git::file://{}?ref={reference}\"\n}}\n",
        repo.display()
    )
}

pub(crate) fn installed(dir: &Path) -> String {
    fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap_or_default()
}

#[test]
fn a_lock_naming_a_commit_of_another_branch_is_refused_on_warm_and_fresh_runners() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = repository(&base);
    // The author's earlier job on this runner installed the feature branch: its commit and
    // its lock entry (with that commit's h1:) are now at hand.
    let feature = env.checkout("feature", &[("main.tf", &call(&repo, "feature"))]);
    env.tstore().no_fuse().init(&feature).ok();
    let feature_lock = fs_err::read_to_string(feature.join(LOCK)).unwrap();
    // The pull request edits only the lock of a root that calls `main`: same ref, the
    // feature branch's commit and hash.
    let main_dir = env.checkout("main", &[("main.tf", &call(&repo, "main"))]);
    env.tstore().no_fuse().init(&main_dir).ok();
    let honest = fs_err::read_to_string(main_dir.join(LOCK)).unwrap();
    let forged = honest
        .replace(&rev(&repo, "main"), &rev(&repo, "feature"))
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("\"h1:") {
                let h1 = feature_lock
                    .lines()
                    .find(|f| f.trim_start().starts_with("\"h1:"))
                    .unwrap();
                h1.to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_ne!(forged, honest);
    fs_err::write(main_dir.join(LOCK), &forged).unwrap();

    // Warm runner (its store holds the feature commit): refused, nothing installed.
    let out = env
        .tstore()
        .no_fuse()
        .init(&main_dir)
        .arg("-lockfile=readonly")
        .fails();
    let err = stderr(&out);
    assert!(
        err.contains(&rev(&repo, "feature")) && err.contains(&rev(&repo, "main")),
        "{err}"
    );
    assert!(
        err.contains("does not reach") && err.contains("-upgrade"),
        "{err}"
    );
    assert!(
        installed(&main_dir).contains("\"one\""),
        "the old install was replaced"
    );

    // A fresh runner gives the same answer.
    let fresh = TestEnv::new();
    let copy = fresh.checkout(
        "main",
        &[("main.tf", &call(&repo, "main")), (LOCK, &forged)],
    );
    let err = stderr(
        &fresh
            .tstore()
            .no_fuse()
            .init(&copy)
            .arg("-lockfile=readonly")
            .fails(),
    );
    assert!(err.contains("does not reach"), "{err}");
    assert!(!copy.join(".terraform/modules/m").exists());
}

#[test]
fn a_branch_that_moved_on_installs_the_locked_commit_and_says_so() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = repository(&base);
    let locked = rev(&repo, "main");
    let mut locks = Vec::new();
    for reference in ["main", "v1"] {
        let dir = env.checkout(reference, &[("main.tf", &call(&repo, reference))]);
        env.tstore().no_fuse().init(&dir).ok();
        locks.push(fs_err::read_to_string(dir.join(LOCK)).unwrap());
    }
    // main gets a new commit upstream, and the tag v1 is moved to it.
    GitRepo::open(base.join("pkg"))
        .write(&[("main.tf", &output_tf("two"))])
        .commit("two")
        .move_tag("v1")
        .push(&repo, &["main"])
        .force_push(&repo, &["refs/tags/v1"]);
    let tip = rev(&repo, "main");
    assert_ne!(tip, locked);
    // Every fresh runner installs the locked commit, with a warning naming both commits;
    // the tag's is louder.
    for (reference, lock, said) in [("main", &locks[0], "moved on"), ("v1", &locks[1], "MOVED")] {
        let fresh = TestEnv::new();
        let copy = fresh.checkout("w", &[("main.tf", &call(&repo, reference)), (LOCK, lock)]);
        let out = fresh
            .tstore()
            .no_fuse()
            .init(&copy)
            .arg("-lockfile=readonly")
            .ok();
        assert!(installed(&copy).contains("\"one\""), "{reference}");
        let err = stderr(&out);
        assert!(
            err.contains(said) && err.contains(&locked) && err.contains(&tip),
            "{reference}: {err}"
        );
        assert_eq!(&fs_err::read_to_string(copy.join(LOCK)).unwrap(), lock);
    }
}

#[test]
fn an_outage_is_refused_unless_trusted_and_a_record_lets_a_warm_runner_go_offline() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = repository(&base);
    let dir = env.checkout("w", &[("main.tf", &call(&repo, "main"))]);
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let gone = base.join("gone.git");
    fs_err::rename(&repo, &gone).unwrap();

    // This machine resolved the ref itself when it wrote the lock: offline, no warning.
    let out = env.tstore().no_fuse().init(&dir).arg("--json").ok();
    let report = json(&out);
    assert_eq!(report["modules"][0]["lock"], "verified", "{report}");

    // Another machine whose store holds the package (a restored cache) but that never
    // checked the ref: refused, naming the opt-in.
    let other = TestEnv::new();
    fs_err::rename(&gone, &repo).unwrap();
    let warm = other.checkout("warm", &[("main.tf", &call(&repo, "main")), (LOCK, &lock)]);
    other.tstore().no_fuse().init(&warm).ok();
    fs_err::remove_file(other.home.join(".local/state/tstore/git-reach.json")).unwrap();
    fs_err::rename(&repo, &gone).unwrap();
    let copy = other.checkout("copy", &[("main.tf", &call(&repo, "main")), (LOCK, &lock)]);
    let err = stderr(&other.tstore().no_fuse().init(&copy).fails());
    assert!(err.contains("TSTORE_TRUST_LOCK"), "{err}");
    assert!(!copy.join(".terraform/modules/m").exists());

    // Trusted: installed from the store on the lock's checksums, and the unchecked ref said.
    let out = other
        .tstore()
        .no_fuse()
        .init(&copy)
        .env("TSTORE_TRUST_LOCK", "1")
        .ok();
    assert!(installed(&copy).contains("\"one\""));
    assert!(stderr(&out).contains("not checked"), "{}", stderr(&out));
}
