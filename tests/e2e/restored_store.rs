//! A store restored from a CI cache is data, not instructions. Each test builds a store on
//! one "machine" (a [`TestEnv`]), restores a copy on another with `cp -a` as a cache restore
//! does, plants what a cache writer could, and shows that tstore neither follows it out of
//! the store nor runs or believes it:
//!
//! - a layout entry (`tmp/`, `git-cache/`, `quarantine/`, `roots.lock.d/`) that is a link is
//!   refused before anything is deleted, chmod-ed or written through it;
//! - the git cache is dropped on adoption: a hook or `config` planted in a cached
//!   repository never runs, and the repository is fetched again;
//! - the registry of `cli-config --out` files is not read from the store;
//! - whatever the umask, the git cache is private.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::{run_ok, stderr, GitRepo, Layout, TestEnv};

use tstore_test_support::Tstore;

use crate::common::{TstoreEnv, NULL_CONFIG};

fn tstore_nf(env: &TestEnv) -> Tstore {
    env.tstore().no_fuse()
}

/// A bare repository `pkg.git` under `base` whose `v1` holds one output; its working copy
/// is `<base>/pkg`.
fn git_package(base: &Path) -> PathBuf {
    GitRepo::init(
        base.join("pkg"),
        &[("main.tf", "output \"v\" {\n  value = 1\n}\n")],
    )
    .commit("one")
    .tag("v1")
    .clone_bare(base.join("pkg.git"))
    .path()
    .to_owned()
}

fn git_root(env: &TestEnv, name: &str, repo: &Path) -> PathBuf {
    env.checkout(
        name,
        &[(
            "main.tf",
            format!(
                "module \"m\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
                repo.display()
            )
            .as_str(),
        )],
    )
}

/// A store made on machine `a` (one git module installed), restored into machine `b`'s.
fn restored(a: &TestEnv, b: &TestEnv, repo: &Path) {
    let dir = git_root(a, "stack", repo);
    let out = a.tstore().no_fuse().init(&dir).output();
    assert!(out.status.success(), "{}", stderr(&out));
    run_ok(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", a.store.display()))
            .arg(&b.store),
    );
}

/// A victim directory outside the store with an old file and an old directory in it.
fn victim(env: &TestEnv) -> PathBuf {
    let dir = env.root.path().join("victim");
    fs_err::create_dir_all(dir.join("sub")).unwrap();
    fs_err::write(dir.join("notes.txt"), "mine").unwrap();
    fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    run_ok(
        Command::new("touch")
            .args(["-h", "-d", "2000-01-01"])
            .arg(dir.join("notes.txt"))
            .arg(dir.join("sub")),
    );
    dir
}

fn assert_untouched(victim: &Path) {
    assert_eq!(
        fs_err::read_to_string(victim.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(victim.join("sub").is_dir());
    let mode = fs_err::metadata(victim).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755, "the victim was chmod-ed");
}

#[test]
fn a_layout_entry_that_is_a_link_is_refused_and_nothing_behind_it_is_touched() {
    let a = TestEnv::new();
    let base = a.root.path().join("git");
    let repo = git_package(&base);
    for entry in ["tmp", "git-cache", "quarantine", "roots.lock.d"] {
        let b = TestEnv::new();
        restored(&a, &b, &repo);
        let victim = victim(&b);
        let planted = b.store.join(entry);
        if planted.exists() {
            fs_err::remove_dir_all(&planted).unwrap();
        }
        std::os::unix::fs::symlink(&victim, &planted).unwrap();

        let out = tstore_nf(&b).args(["gc", "--min-age", "0"]).output();
        assert!(!out.status.success(), "{entry}: gc followed the link");
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{entry} in the store is a symbolic link")),
            "{entry}: {err}"
        );
        assert_untouched(&victim);

        let dir = git_root(&b, "stack", &repo);
        let out = b.tstore().no_fuse().init(&dir).output();
        assert!(!out.status.success(), "{entry}: init followed the link");
        assert!(stderr(&out).contains("a symbolic link"), "{}", stderr(&out));
        assert_untouched(&victim);
        assert_eq!(
            fs_err::read_dir(&victim).unwrap().count(),
            2,
            "{entry}: init wrote into the victim"
        );
        // Removing the link (what the hint says) makes the store usable again.
        fs_err::remove_file(&planted).unwrap();
        let out = b.tstore().no_fuse().init(&dir).output();
        assert!(out.status.success(), "{entry}: {}", stderr(&out));
        assert_untouched(&victim);
    }
}

#[test]
fn a_hook_or_config_planted_in_the_restored_git_cache_never_runs() {
    let a = TestEnv::new();
    let b = TestEnv::new();
    let repo = git_package(&a.root.path().join("git"));
    restored(&a, &b, &repo);
    let marker = b.root.path().join("pwned");
    let run = format!("sh -c 'touch {}' x", marker.display());
    let cached: Vec<PathBuf> = fs_err::read_dir(b.store.join("git-cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "git"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let cached = &cached[0];
    for hook in ["reference-transaction", "post-checkout", "pre-auto-gc"] {
        let path = cached.join("hooks").join(hook);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, format!("#!/bin/sh\n{run}\n")).unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = cached.join("config");
    let mut text = fs_err::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[core]\n\tfsmonitor = {run}\n[filter \"x\"]\n\tsmudge = {run}\n\tclean = {run}\n\
         [url \"file:///nowhere/\"]\n\tinsteadOf = file://\n"
    ));
    fs_err::write(&config, text).unwrap();

    // A new tag, so that the next init must fetch into the cached repository.
    GitRepo::open(a.root.path().join("git/pkg"))
        .write(&[(".gitattributes", "* filter=x\n")])
        .commit("two")
        .tag("v2")
        .push(&a.root.path().join("git/pkg.git"), &["v2"]);
    let dir = b.checkout(
        "next",
        &[(
            "main.tf",
            format!(
                "module \"m\" {{\n  source = \"git::file://{}?ref=v2\"\n}}\n",
                repo.display()
            )
            .as_str(),
        )],
    );
    let out = b.tstore().no_fuse().init(&dir).output();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!marker.exists(), "a planted hook or config ran");
    // The cache was rebuilt: the planted hooks are gone.
    for entry in walkdir::WalkDir::new(b.store.join("git-cache")) {
        let entry = entry.unwrap();
        assert!(
            !entry.path().ends_with("hooks/reference-transaction"),
            "{}",
            entry.path().display()
        );
    }
}

#[test]
fn the_registry_of_generated_cli_configs_is_never_read_from_the_store() {
    let a = TestEnv::new();
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let b = &fixture.env;
    let repo = git_package(&a.root.path().join("git"));
    // The user keeps ~/.tstore.tfrc current with tstore.
    let target = b.home.join(".tstore.tfrc");
    let out = b
        .tstore()
        .cli_config(&fixture.cfg)
        .args(["cli-config", "--out"])
        .arg(&target)
        .output();
    assert!(out.status.success(), "{}", stderr(&out));
    restored(&a, b, &repo);
    // The cache writer's instructions: rewrite the user's ~/.tstore.tfrc from its file.
    let evil = b.root.path().join("evil.tfrc");
    fs_err::write(
        &evil,
        "provider_installation {\n  dev_overrides {\n    \"hashicorp/null\" = \"/tmp/evil\"\n  }\n}\n",
    )
    .unwrap();
    fs_err::write(
        b.store.join("cli-config-outputs.json"),
        serde_json::json!({
            target.to_str().unwrap(): {"source": evil, "providers": ["x/y/z"], "flavor": "terraform"}
        })
        .to_string(),
    )
    .unwrap();
    // A provider entering the store is what makes init rewrite the registered files.
    let dir = b.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let out = b
        .tstore()
        .cli_config(&fixture.cfg)
        .no_fuse()
        .init(&dir)
        .output();
    assert!(out.status.success(), "{}", stderr(&out));
    let written = fs_err::read_to_string(&target).unwrap();
    assert!(
        !written.contains("dev_overrides") && !written.contains("/tmp/evil"),
        "init made the user's CLI configuration from the cache writer's file:\n{written}"
    );
}

#[test]
fn the_git_cache_is_private_whatever_the_umask() {
    let env = TestEnv::new();
    let repo = git_package(&env.root.path().join("git"));
    let dir = git_root(&env, "stack", &repo);
    // `tstore init DIR` run by a shell that set umask 000 first, same environment.
    let plain = tstore_nf(&env).command();
    let mut umasked = Command::new("sh");
    umasked
        .arg("-c")
        .arg("umask 000; exec \"$0\" init \"$1\"")
        .arg(plain.get_program())
        .arg(&dir)
        .env_clear()
        .current_dir(env.root.path());
    for (key, value) in plain.get_envs() {
        if let Some(value) = value {
            umasked.env(key, value);
        }
    }
    let out = umasked.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut open = Vec::new();
    for entry in walkdir::WalkDir::new(env.store.join("git-cache")) {
        let entry = entry.unwrap();
        if entry.file_type().is_symlink() {
            continue;
        }
        let mode = entry.metadata().unwrap().permissions().mode();
        if mode & 0o022 != 0 {
            open.push(format!("{:o} {}", mode & 0o777, entry.path().display()));
        }
    }
    assert!(open.is_empty(), "writable by others: {open:#?}");
}

/// Below the layout's own directories too, nothing is written through a link: a view's
/// parent directory planted as a link to another directory makes the install fail, with
/// nothing written there.
#[test]
fn a_link_below_the_layout_is_never_written_through() {
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let env = &fixture.env;
    // The store exists (its layout made), then a cache writer plants the link.
    let empty = env.checkout("empty", &[("main.tf", "")]);
    let out = env.tstore().no_fuse().init(&empty).output();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.store.join("index.sqlite").is_file());
    let victim = victim(env);
    let providers = env.store.join("views/providers");
    fs_err::create_dir_all(&providers).unwrap();
    std::os::unix::fs::symlink(&victim, providers.join("registry.terraform.io")).unwrap();
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let out = env
        .tstore()
        .cli_config(&fixture.cfg)
        .no_fuse()
        .init(&dir)
        .output();
    assert!(!out.status.success(), "installed through the link");
    assert!(stderr(&out).contains("a symbolic link"), "{}", stderr(&out));
    assert_untouched(&victim);
    assert_eq!(fs_err::read_dir(&victim).unwrap().count(), 2);
}

/// A restored CI cache carries the module packages a lock file pins: adoption forgets their
/// names (their bytes cannot confirm a source and commit) but keeps their re-verified trees,
/// and a locked call whose entry's `h1:` one of them has is installed from it, with the git
/// server unreachable. The ref's reach to the locked commit cannot be asked then: the run
/// opts in with `TSTORE_TRUST_LOCK=1`, and without it the error names the variable.
#[test]
fn a_restored_cache_installs_locked_modules_with_their_sources_unreachable() {
    let a = TestEnv::new();
    let b = TestEnv::new();
    let base = a.root.path().join("git");
    let repo = git_package(&base);
    restored(&a, &b, &repo);
    let lock = fs_err::read_to_string(a.work.join("stack/.tstore.lock.hcl")).unwrap();
    // The git server goes away.
    fs_err::rename(&repo, base.join("gone.git")).unwrap();

    let dir = git_root(&b, "stack", &repo);
    fs_err::write(dir.join(".tstore.lock.hcl"), &lock).unwrap();
    let refused = b.tstore().no_fuse().init(&dir).output();
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("TSTORE_TRUST_LOCK"),
        "{}",
        stderr(&refused)
    );

    let out = b
        .tstore()
        .no_fuse()
        .env("TSTORE_TRUST_LOCK", "1")
        .init(&dir)
        .output();
    assert!(out.status.success(), "{}", stderr(&out));
    let main = fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap();
    assert!(main.contains("value = 1"), "{main}");
    assert_eq!(
        fs_err::read_to_string(dir.join(".tstore.lock.hcl")).unwrap(),
        lock,
        "the lock is kept"
    );
}
