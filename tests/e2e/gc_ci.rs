//! `tstore gc --ci` before a CI cache is saved: it keeps what the lock files of the roots
//! under the directory pin (and what checkouts link), drops an old branch's packages and
//! the git cache when every git call is pinned, says what it saved, and the next job
//! installs from the kept store with its origins gone. A root that calls git modules
//! without a module lock file keeps the git cache, and says why.

use std::path::Path;

use tstore_test_support::{mirror, stdout, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};
use crate::modules_fixture::{env_with_git_dir, one_module_repo};

fn git_cache_repos(store: &Path) -> usize {
    fs_err::read_dir(store.join("git-cache"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "git"))
            })
            .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_ci_cache_keeps_exactly_what_the_locks_pin_and_the_next_job_installs_offline() {
    let (env, base) = env_with_git_dir();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let current = one_module_repo(&base, "net", "output \"x\" {\n  value = 1\n}\n", None);
    let old = one_module_repo(&base, "old", "output \"x\" {\n  value = 2\n}\n", None);
    let call =
        |source: &str| format!("{NULL_CONFIG}\nmodule \"m\" {{\n  source = \"{source}\"\n}}\n");
    let init = |dir: &Path| {
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .arg("init")
            .arg(dir)
            .ok()
    };
    // A job on the main branch, and one on an old branch whose checkout is gone since.
    let job = env.checkout("job/stack", &[("main.tf", call(&current).as_str())]);
    init(&job);
    let branch = env.checkout("branch/stack", &[("main.tf", call(&old).as_str())]);
    init(&branch);
    fs_err::remove_dir_all(env.work.join("branch")).unwrap();
    assert_eq!(git_cache_repos(&env.store), 2);

    // The next job's checkout: the repository with its lock files, not initialized yet.
    let next = env.work.join("next");
    fs_err::create_dir_all(next.join("stack")).unwrap();
    for file in ["main.tf", ".terraform.lock.hcl", ".tstore.lock.hcl"] {
        fs_err::copy(job.join(file), next.join("stack").join(file)).unwrap();
    }
    fs_err::remove_dir_all(env.work.join("job")).unwrap();

    let gc = |args: &[&str]| {
        env.tstore()
            .no_fuse()
            .args(["gc", "--ci"])
            .args(args)
            .arg(&next)
            .ok()
    };
    let preview = json(&gc(&["--dry-run", "--json"]));
    assert_eq!(
        preview["ci"]["roots"].as_array().unwrap().len(),
        1,
        "{preview}"
    );
    let removed: Vec<String> = preview["packages_removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(removed.iter().any(|k| k.contains("old")), "{preview}");
    assert!(
        !removed
            .iter()
            .any(|k| k.contains("net") || k.contains("null")),
        "{preview}"
    );
    assert_eq!(git_cache_repos(&env.store), 2, "a dry run removes nothing");

    let out = gc(&[]);
    let said = stdout(&out);
    assert!(said.contains("ci: kept "), "{said}");
    assert!(said.contains("saved "), "{said}");
    assert!(said.contains("every git call is pinned"), "{said}");
    assert_eq!(git_cache_repos(&env.store), 0, "{said}");

    // The next job, with every origin gone: everything comes from the kept store.
    fs_err::rename(&base, env.root.path().join("gone")).unwrap();
    fs_err::remove_dir_all(&mirror_dir).unwrap();
    let report = json(
        &env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .args(["init", "--json"])
            .arg(next.join("stack"))
            .ok(),
    );
    assert!(
        report["module_packages"]["fetched"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{report}"
    );
    assert!(next.join("stack/.terraform/modules/m/main.tf").exists());
}

/// `tstore init` of `dir`, no FUSE, no server.
fn init(env: &TestEnv, dir: &Path) {
    env.tstore()
        .no_fuse()
        .env("TSTORE_NO_SERVER", "1")
        .arg("init")
        .arg(dir)
        .ok();
}

/// What `tstore gc --ci DIR` says.
fn gc_ci(env: &TestEnv, dir: &Path) -> String {
    stdout(&env.tstore().no_fuse().args(["gc", "--ci"]).arg(dir).ok())
}

#[test]
fn a_root_with_git_calls_and_no_module_lock_keeps_the_git_cache_and_says_why() {
    let (env, base) = env_with_git_dir();
    let module = one_module_repo(&base, "net", "output \"x\" {\n  value = 1\n}\n", None);
    let dir = env.checkout(
        "repo/stack",
        &[(
            "main.tf",
            &format!("module \"m\" {{\n  source = \"{module}\"\n}}\n"),
        )],
    );
    init(&env, &dir);
    fs_err::remove_file(dir.join(".tstore.lock.hcl")).unwrap();
    let said = gc_ci(&env, &env.work.join("repo"));
    assert!(said.contains("git cache kept: "), "{said}");
    assert!(
        said.contains("has module calls but no .tstore.lock.hcl"),
        "{said}"
    );
    assert_eq!(git_cache_repos(&env.store), 1);
}

/// A root the job never initialized (no `.terraform`, no module lock) that calls a git
/// module keeps the git cache too: its configuration says so.
#[test]
fn a_root_never_initialized_with_git_calls_keeps_the_git_cache() {
    let (env, base) = env_with_git_dir();
    let module = one_module_repo(&base, "net", "output \"x\" {\n  value = 1\n}\n", None);
    let call = format!("module \"m\" {{\n  source = \"{module}\"\n}}\n");
    let dir = env.checkout("repo/stack", &[("main.tf", call.as_str())]);
    init(&env, &dir);
    env.checkout("repo/new", &[("main.tf", call.as_str())]);
    let said = gc_ci(&env, &env.work.join("repo"));
    assert!(said.contains("git cache kept: "), "{said}");
    assert!(said.contains("new has module calls"), "{said}");
    assert_eq!(git_cache_repos(&env.store), 1);
}
