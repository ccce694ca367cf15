//! The module mirror keeps the reach rule on runners that reach only the mirror: `tstore
//! push --modules` carries the pushing machine's own checks that each locked git call's ref
//! reaches its commit, and a runner whose remote cannot be asked believes the mirror's
//! record for that run, and says so (`modules/getters/git_reach.rs`,
//! `publish/reach.rs`):
//!
//! - every locked call installs with no `TSTORE_TRUST_LOCK`;
//! - a lock edited to a commit the pushed records do not cover (another branch's, whose
//!   package the mirror holds) is refused, and nothing of it is installed;
//! - what the mirror said dies with the run: the runner keeps no record of it, and without
//!   the mirror the next init refuses again;
//! - a push that cannot check a pinned call's reach fails before anything is uploaded.

use std::path::{Path, PathBuf};

use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{stderr, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::{first_h1, json, said};
use crate::lock_reach::{output_tf, repository, rev, LOCK};
use tstore_test_support::Tstore;

/// Calls `m` (`?ref=main`) and `t` (`?ref=v1`, a tag) of `repo`.
fn two_calls(repo: &Path) -> String {
    format!(
        "module \"m\" {{\n  source = \"git::file://{0}?ref=main\"\n}}\n\
         module \"t\" {{\n  source = \"git::file://{0}?ref=v1\"\n}}\n",
        repo.display()
    )
}

/// `tstore` on `env`, trusting `mirror`'s certificate (`ca`), without FUSE.
fn on(env: &TestEnv, ca: &Path) -> Tstore {
    env.tstore().env("SSL_CERT_FILE", ca).no_fuse()
}

fn installed(dir: &Path, call: &str) -> String {
    fs_err::read_to_string(dir.join(format!(".terraform/modules/{call}/main.tf")))
        .unwrap_or_default()
}

/// This machine's reach records (empty when there are none).
fn own_records(env: &TestEnv) -> String {
    fs_err::read_to_string(env.home.join(".local/state/tstore/git-reach.json")).unwrap_or_default()
}

struct Setup {
    oci: OciRegistry,
    mirror: String,
    /// The origin's bare repository (`main` at "one", tagged v1; `feature` at "evil").
    repo: PathBuf,
    /// The pushing machine's checkout of the two calls, locked.
    pushed: PathBuf,
    pusher: TestEnv,
    pusher_ca: PathBuf,
}

/// The pushing machine: inits the two calls and a call of `feature` (so its store, and then
/// the mirror, hold the "evil" package too), and pushes the store, then the lock's checks.
fn setup() -> Setup {
    let oci = OciRegistry::start();
    let mirror = format!("oci://{}/team/modules", oci.host());
    let pusher = TestEnv::new();
    let pusher_ca = oci.write_ca(&pusher.root.path().join("ca.pem"));
    let repo = repository(&pusher.root.path().join("git"));
    let pushed = pusher.checkout("stack", &[("main.tf", &two_calls(&repo))]);
    on(&pusher, &pusher_ca).arg("init").arg(&pushed).ok();
    let feature = pusher.checkout(
        "feature",
        &[(
            "main.tf",
            &format!(
                "module \"m\" {{\n  source = \"git::file://{}?ref=feature\"\n}}\n",
                repo.display()
            ),
        )],
    );
    on(&pusher, &pusher_ca).arg("init").arg(&feature).ok();
    // Every package of the store, then what the stack's lock pins with its reach checks.
    on(&pusher, &pusher_ca)
        .args(["push", "--modules", &mirror])
        .ok();
    Setup {
        oci,
        mirror,
        repo,
        pushed,
        pusher,
        pusher_ca,
    }
}

#[test]
fn a_runner_that_reaches_only_the_mirror_keeps_the_reach_rule() {
    let s = setup();
    let out = on(&s.pusher, &s.pusher_ca)
        .args(["push", "--json", "--modules", "--recursive", &s.mirror])
        .arg(&s.pushed)
        .ok();
    let pushed = json(&out);
    let records = pushed["pushed_modules"]["reach_records"]
        .as_array()
        .unwrap();
    let main = rev(&s.repo, "main");
    let mut refs: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["git_ref"].as_str().unwrap(),
                r["commit"].as_str().unwrap(),
            )
        })
        .collect();
    refs.sort();
    assert_eq!(
        refs,
        [("main", main.as_str()), ("v1", main.as_str())],
        "{pushed}"
    );
    let lock = fs_err::read_to_string(s.pushed.join(LOCK)).unwrap();

    // The runner: the checkout and its lock, the mirror, and no way to the origin.
    let runner = TestEnv::new();
    let ca = s.oci.write_ca(&runner.root.path().join("ca.pem"));
    fs_err::rename(&s.repo, s.repo.with_extension("away")).unwrap();
    let dir = runner.checkout("stack", &[("main.tf", &two_calls(&s.repo)), (LOCK, &lock)]);
    let init = |dir: &Path, mirror: &str| {
        on(&runner, &ca)
            .env("TSTORE_MODULE_MIRROR", mirror)
            .args(["init", "-lockfile=readonly"])
            .arg(dir)
            .output()
    };
    let out = init(&dir, &s.mirror);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(installed(&dir, "m"), output_tf("one"));
    assert_eq!(installed(&dir, "t"), output_tf("one"));
    let err = stderr(&out);
    let by_mirror: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("module mirror") && l.contains("believed for this run"))
        .collect();
    assert_eq!(by_mirror.len(), 2, "one line per ref: {err}");
    assert!(!err.contains("TSTORE_TRUST_LOCK"), "{err}");

    // What the mirror said is not this machine's record: without the mirror, refused.
    assert!(
        !own_records(&runner).contains(&main),
        "{}",
        own_records(&runner)
    );
    let again = runner.checkout("again", &[("main.tf", &two_calls(&s.repo)), (LOCK, &lock)]);
    let out = init(&again, "");
    assert!(!out.status.success(), "{}", said(&out));
    assert!(stderr(&out).contains("TSTORE_TRUST_LOCK"), "{}", said(&out));

    // A lock edited to name `feature`'s commit (with its package's h1:, which the mirror
    // holds) for `main`: the pushed checks do not cover it.
    let evil = rev(&s.repo.with_extension("away"), "feature");
    let feature_lock = fs_err::read_to_string(s.pusher.work.join("feature").join(LOCK)).unwrap();
    let evil_h1 = first_h1(&feature_lock);
    let forged = forge(&lock, "m", &main, &evil, &evil_h1);
    let edited = runner.checkout(
        "edited",
        &[("main.tf", &two_calls(&s.repo)), (LOCK, &forged)],
    );
    let out = init(&edited, &s.mirror);
    assert!(!out.status.success(), "{}", said(&out));
    let err = stderr(&out);
    assert!(err.contains(&evil) && err.contains("no record"), "{err}");
    assert!(err.contains("tstore push --modules"), "{err}");
    assert_ne!(installed(&edited, "m"), output_tf("evil"));
    assert!(
        !edited.join(".terraform/modules").exists(),
        "{}",
        said(&out)
    );
}

#[test]
fn a_push_that_cannot_check_a_pinned_ref_uploads_nothing() {
    let s = setup();
    let before = s.oci.requests().len();
    // The origin gone from the pushing machine, and its own check of `main` forgotten.
    fs_err::rename(&s.repo, s.repo.with_extension("away")).unwrap();
    fs_err::remove_file(s.pusher.home.join(".local/state/tstore/git-reach.json")).unwrap();
    let out = on(&s.pusher, &s.pusher_ca)
        .args(["push", "--modules", "--recursive", &s.mirror])
        .arg(&s.pushed)
        .output();
    assert!(!out.status.success(), "{}", said(&out));
    let err = stderr(&out);
    assert!(err.contains("cannot check that the ref of module"), "{err}");
    let writes = s.oci.requests()[before..]
        .iter()
        .filter(|r| r.starts_with("PUT ") || r.starts_with("POST ") || r.starts_with("PATCH "))
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(writes, Vec::<String>::new());
}

/// `lock` with the entry of call `call` naming `commit` (instead of `was`) and only `h1`.
fn forge(lock: &str, call: &str, was: &str, commit: &str, h1: &str) -> String {
    let start = lock
        .find(&format!("module \"{call}\""))
        .unwrap_or_else(|| panic!("no entry {call} in\n{lock}"));
    let end = start + lock[start..].find("\n}\n").unwrap() + 3;
    let entry = &lock[start..end];
    let hashes_start = entry.find("hashes").unwrap();
    let hashes_end = hashes_start + entry[hashes_start..].find(']').unwrap() + 1;
    let forged = format!(
        "{}hashes = [\n    \"{h1}\",\n  ]{}",
        &entry[..hashes_start],
        &entry[hashes_end..]
    )
    .replace(was, commit);
    assert_ne!(forged, entry);
    format!("{}{forged}{}", &lock[..start], &lock[end..])
}
