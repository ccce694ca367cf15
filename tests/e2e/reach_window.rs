//! How long this machine's record of a ref's reach is believed, and what is said when it is
//! not checked (`modules/getters/git_reach.rs`):
//!
//! - a record younger than the window (an hour) is believed without asking the remote;
//! - an older one is asked again, once per repository and ref per run: a branch rewritten
//!   past the locked commit is then refused on a warm runner exactly as on an empty one, and
//!   the record is dropped; a remote that cannot be asked leaves the old record believed, and
//!   that is said;
//! - under `TSTORE_TRUST_LOCK=1`, each ref left unchecked is said in one line, once per run,
//!   whatever the number of roots of an `init --recursive` that call it.

use std::path::{Path, PathBuf};

use tstore_test_support::{stderr, GitRepo, TestEnv};

use crate::common::TstoreEnv;
use crate::lock_reach::{call, installed, output_tf, repository, rev, LOCK};

/// More than the window in which a record is believed without asking (an hour).
const STALE: u64 = 2 * 3600;

/// This machine's reach records in `env` (`XDG_STATE_HOME` unset: under `HOME`).
fn records_path(env: &TestEnv) -> PathBuf {
    env.home.join(".local/state/tstore/git-reach.json")
}

/// The records of `env`, by key: the time each check was made.
fn records(env: &TestEnv) -> serde_json::Map<String, serde_json::Value> {
    serde_json::from_str(&fs_err::read_to_string(records_path(env)).unwrap()).unwrap()
}

/// Every record of `env` made `by` seconds older, as if the checks were made then.
fn age_records(env: &TestEnv, by: u64) {
    let mut known = records(env);
    assert!(!known.is_empty());
    for time in known.values_mut() {
        *time = serde_json::json!(time.as_u64().unwrap().saturating_sub(by));
    }
    fs_err::write(
        records_path(env),
        serde_json::to_string(&known).unwrap().as_bytes(),
    )
    .unwrap();
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// How many `git ls-remote` git's trace `trace` (`GIT_TRACE=FILE`) logged.
fn ls_remotes(trace: &Path) -> usize {
    fs_err::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("built-in: git ls-remote"))
        .count()
}

/// A call `name` of `repo` at `reference`.
fn named_call(name: &str, repo: &Path, reference: &str) -> String {
    format!(
        "module \"{name}\" {{\n  source = \"git::file://{}?ref={reference}\"\n}}\n",
        repo.display()
    )
}

#[test]
fn a_warm_runner_refuses_a_rewritten_branch_as_an_empty_one_once_its_record_is_stale() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = repository(&base);
    let locked = rev(&repo, "main");
    let dir = env.checkout("w", &[("main.tf", &call(&repo, "main"))]);
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();

    // Upstream rewrites main: its one commit amended and force-pushed, so main's history no
    // longer holds the locked commit.
    let work = GitRepo::open(base.join("pkg"));
    work.write(&[("main.tf", &output_tf("rewritten"))]);
    work.git(["commit", "-qa", "--amend", "-m", "rewritten"]);
    work.force_push(&repo, &["main"]);
    assert_ne!(rev(&repo, "main"), locked);

    // Within the window this machine's check (made moments ago) is believed: the documented
    // bound of the disagreement.
    env.tstore()
        .no_fuse()
        .init(&dir)
        .arg("-lockfile=readonly")
        .ok();

    // An empty runner refuses.
    let fresh = TestEnv::new();
    let copy = fresh.checkout("w", &[("main.tf", &call(&repo, "main")), (LOCK, &lock)]);
    let empty = fresh
        .tstore()
        .no_fuse()
        .init(&copy)
        .arg("-lockfile=readonly")
        .fails();

    // Past the window the warm runner asks again, and refuses with the same words.
    age_records(&env, STALE);
    let warm = env
        .tstore()
        .no_fuse()
        .init(&dir)
        .arg("-lockfile=readonly")
        .fails();
    assert_eq!(warm.status.code(), empty.status.code());
    // (The root-without-FUSE line is said once per machine: the fresh one says it.)
    let shown = |out: &std::process::Output, dir: &Path| {
        stderr(out)
            .lines()
            .filter(|l| !l.contains("without FUSE"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(&dir.display().to_string(), "DIR")
    };
    assert_eq!(shown(&warm, &dir), shown(&empty, &copy));
    let err = stderr(&warm);
    assert!(
        err.contains("does not reach") && err.contains(&locked),
        "{err}"
    );
    assert!(!err.contains("on every runner alike"), "{err}");
    assert!(
        installed(&dir).contains("\"one\""),
        "the old install was kept"
    );

    // The stale record is gone: with the remote unreachable now, nothing vouches for the
    // locked commit any more.
    assert!(
        records(&env).keys().all(|k| !k.contains(&locked)),
        "{:?}",
        records(&env)
    );
    fs_err::rename(&repo, base.join("gone.git")).unwrap();
    let err = stderr(&env.tstore().no_fuse().init(&dir).fails());
    assert!(err.contains("TSTORE_TRUST_LOCK"), "{err}");
}

#[test]
fn a_fresh_record_is_believed_without_asking_and_a_stale_one_is_asked_once_per_run() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = repository(&base);
    // Two calls of one repository and ref: one question.
    let dir = env.checkout(
        "w",
        &[(
            "main.tf",
            &(named_call("a", &repo, "main") + &named_call("b", &repo, "main")),
        )],
    );
    env.tstore().no_fuse().init(&dir).ok();
    let gone = base.join("gone.git");
    let trace = |name: &str| env.root.path().join(format!("{name}.trace"));

    // Fresh: believed, the remote not asked (it is not even there).
    fs_err::rename(&repo, &gone).unwrap();
    let out = env
        .tstore()
        .no_fuse()
        .init(&dir)
        .env("GIT_TRACE", trace("fresh"))
        .ok();
    assert_eq!(ls_remotes(&trace("fresh")), 0);
    assert!(!stderr(&out).contains("\"main\""), "{}", stderr(&out));

    // Stale, and the remote cannot be asked (an outage): the earlier check is still
    // believed, and that is said, once for the ref.
    age_records(&env, STALE);
    let out = env
        .tstore()
        .no_fuse()
        .init(&dir)
        .env("GIT_TRACE", trace("outage"))
        .ok();
    assert_eq!(ls_remotes(&trace("outage")), 1);
    let err = stderr(&out);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("\"main\"")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("not checked again") && said[0].contains("TSTORE_TRUST_LOCK"),
        "{err}"
    );
    let a = fs_err::read_to_string(dir.join(".terraform/modules/a/main.tf")).unwrap();
    assert!(a.contains("\"one\""), "{a}");

    // Stale, and the remote answers: asked once for both calls, the record fresh again.
    fs_err::rename(&gone, &repo).unwrap();
    let out = env
        .tstore()
        .no_fuse()
        .init(&dir)
        .env("GIT_TRACE", trace("recheck"))
        .ok();
    assert_eq!(ls_remotes(&trace("recheck")), 1);
    assert!(!stderr(&out).contains("\"main\""), "{}", stderr(&out));
    let oldest = records(&env)
        .values()
        .map(|t| t.as_u64().unwrap())
        .min()
        .unwrap();
    assert!(oldest + 600 > now(), "{:?}", records(&env));
    env.tstore()
        .no_fuse()
        .init(&dir)
        .env("GIT_TRACE", trace("again"))
        .ok();
    assert_eq!(ls_remotes(&trace("again")), 0);
}

#[test]
fn trusted_unchecked_refs_are_said_in_one_line_each_once_per_run() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = repository(&base);
    let stacks = env.work.join("stacks");
    for root in ["a", "b", "c", "d"] {
        env.checkout(
            &format!("stacks/{root}"),
            &[(
                "main.tf",
                &(named_call("m", &repo, "main") + &named_call("n", &repo, "v1")),
            )],
        );
    }
    env.tstore()
        .no_fuse()
        .arg("init")
        .arg("--recursive")
        .arg(&stacks)
        .ok();
    // This runner never checked the refs (a restored cache), and the remote is down.
    fs_err::remove_file(records_path(&env)).unwrap();
    fs_err::rename(&repo, base.join("gone.git")).unwrap();
    let trace = env.root.path().join("trusted.trace");
    let out = env
        .tstore()
        .no_fuse()
        .env("TSTORE_TRUST_LOCK", "1")
        .env("GIT_TRACE", &trace)
        .arg("init")
        .arg("--recursive")
        .arg(&stacks)
        .ok();
    let err = stderr(&out);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("not checked")).collect();
    assert_eq!(said.len(), 2, "one line per ref: {err}");
    let shown_repo = format!("file://{}", repo.display());
    for reference in ["\"main\"", "\"v1\""] {
        assert_eq!(
            said.iter()
                .filter(|l| l.contains(reference) && l.contains(&shown_repo))
                .count(),
            1,
            "{reference}: {err}"
        );
    }
    assert!(!err.contains("\\n"), "a literal \\n: {err}");
    assert!(
        !err.contains("Could not read from remote repository") && !err.contains("Please make sure"),
        "git's whole stderr: {err}"
    );
    // One question per repository and ref for the whole run, never one per root.
    assert!(ls_remotes(&trace) <= 2, "{}", ls_remotes(&trace));
    for root in ["a", "b", "c", "d"] {
        assert!(installed(&stacks.join(root)).contains("\"one\""), "{root}");
    }
}
