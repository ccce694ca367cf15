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
use std::process::Command;

use tstore_test_support::{run_fail, run_ok, stderr, TestEnv};

use crate::common::{json, sh, tstore};

const LOCK: &str = ".tstore.lock.hcl";

fn init(env: &TestEnv, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = tstore(env, None);
    cmd.env("TSTORE_NO_FUSE", "1")
        .arg("init")
        .args(args)
        .arg(dir);
    cmd
}

fn rev(repo: &Path, name: &str) -> String {
    let out = run_ok(
        Command::new("git")
            .args(["rev-parse", name])
            .current_dir(repo),
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `<base>/pkg.git`: `main` at "one" (tagged `v1`), and a branch `feature` at "evil" that
/// `main` does not contain; the working copy is `<base>/pkg`.
fn repository(base: &Path) -> PathBuf {
    let src = base.join("pkg");
    fs_err::create_dir_all(&src).unwrap();
    sh(
        &src,
        "git init -q -b main .
         printf 'output \"v\" {\\n  value = \"one\"\\n}\\n' > main.tf
         git add -A && git commit -qm one && git tag v1
         git checkout -q -b feature
         printf 'output \"v\" {\\n  value = \"evil\"\\n}\\n' > main.tf
         git commit -qam evil
         git checkout -q main
         git clone -q --bare . ../pkg.git",
    );
    base.join("pkg.git")
}

fn call(repo: &Path, reference: &str) -> String {
    format!(
        "module \"m\" {{\n  source = \"git::file://{}?ref={reference}\"\n}}\n",
        repo.display()
    )
}

fn installed(dir: &Path) -> String {
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
    run_ok(&mut init(&env, &feature, &[]));
    let feature_lock = fs_err::read_to_string(feature.join(LOCK)).unwrap();
    // The pull request edits only the lock of a root that calls `main`: same ref, the
    // feature branch's commit and hash.
    let main_dir = env.checkout("main", &[("main.tf", &call(&repo, "main"))]);
    run_ok(&mut init(&env, &main_dir, &[]));
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
    let out = run_fail(&mut init(&env, &main_dir, &["-lockfile=readonly"]));
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
    let err = stderr(&run_fail(&mut init(&fresh, &copy, &["-lockfile=readonly"])));
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
        run_ok(&mut init(&env, &dir, &[]));
        locks.push(fs_err::read_to_string(dir.join(LOCK)).unwrap());
    }
    // main gets a new commit upstream, and the tag v1 is moved to it.
    sh(
        &base.join("pkg"),
        "printf 'output \"v\" {\\n  value = \"two\"\\n}\\n' > main.tf
         git commit -qam two && git tag -f v1 >/dev/null
         git push -q ../pkg.git main && git push -q --force ../pkg.git refs/tags/v1",
    );
    let tip = rev(&repo, "main");
    assert_ne!(tip, locked);
    // Every fresh runner installs the locked commit, with a warning naming both commits;
    // the tag's is louder.
    for (reference, lock, said) in [("main", &locks[0], "moved on"), ("v1", &locks[1], "MOVED")] {
        let fresh = TestEnv::new();
        let copy = fresh.checkout("w", &[("main.tf", &call(&repo, reference)), (LOCK, lock)]);
        let out = run_ok(&mut init(&fresh, &copy, &["-lockfile=readonly"]));
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
    run_ok(&mut init(&env, &dir, &[]));
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let gone = base.join("gone.git");
    fs_err::rename(&repo, &gone).unwrap();

    // This machine resolved the ref itself when it wrote the lock: offline, no warning.
    let out = run_ok(&mut init(&env, &dir, &["--json"]));
    let report = json(&out);
    assert_eq!(report["modules"][0]["lock"], "verified", "{report}");

    // Another machine whose store holds the package (a restored cache) but that never
    // checked the ref: refused, naming the opt-in.
    let other = TestEnv::new();
    fs_err::rename(&gone, &repo).unwrap();
    let warm = other.checkout("warm", &[("main.tf", &call(&repo, "main")), (LOCK, &lock)]);
    run_ok(&mut init(&other, &warm, &[]));
    fs_err::remove_file(other.home.join(".local/state/tstore/git-reach.json")).unwrap();
    fs_err::rename(&repo, &gone).unwrap();
    let copy = other.checkout("copy", &[("main.tf", &call(&repo, "main")), (LOCK, &lock)]);
    let err = stderr(&run_fail(&mut init(&other, &copy, &[])));
    assert!(err.contains("TSTORE_TRUST_LOCK"), "{err}");
    assert!(!copy.join(".terraform/modules/m").exists());

    // Trusted: installed from the store on the lock's checksums, and the unchecked ref said.
    let out = run_ok(init(&other, &copy, &[]).env("TSTORE_TRUST_LOCK", "1"));
    assert!(installed(&copy).contains("\"one\""));
    assert!(stderr(&out).contains("not checked"), "{}", stderr(&out));
}
