//! The module lock file `.tstore.lock.hcl`: written by init, pinning every remote call by
//! version, commit and hash; a moved tag, a re-published registry version, a changed
//! archive and an OCI tag pushed again refused with nothing changed; `-upgrade` and
//! `-lockfile=readonly`; a lock verified on another store. The workflow around it:
//! `module_lock_workflow.rs`.

use std::path::{Path, PathBuf};

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{mirror, run_ok, stderr, GitRepo, TestEnv};

use tstore_test_support::Tstore;

use crate::common::{json, sh, TstoreEnv};

pub(crate) const LOCK: &str = ".tstore.lock.hcl";

/// A module repository `<base>/NAME.git` whose `main.tf` outputs `value`, tagged `v1`, and
/// its working copy `<base>/NAME` (to commit and move the tag later).
pub(crate) fn module_repo(base: &Path, name: &str, value: &str) -> PathBuf {
    GitRepo::init(base.join(name), &[("main.tf", &output_tf(value))])
        .commit("one")
        .tag("v1")
        .clone_bare(base.join(format!("{name}.git")))
        .path()
        .to_owned()
}

pub(crate) fn output_tf(value: &str) -> String {
    format!("output \"v\" {{\n  value = \"{value}\"\n}}\n")
}

/// Commit `value` in the working copy of `NAME` and move tag `v1` of its bare repository
/// to that commit.
pub(crate) fn move_tag(base: &Path, name: &str, value: &str) {
    GitRepo::open(base.join(name))
        .write(&[("main.tf", &output_tf(value))])
        .commit("moved")
        .move_tag("v1")
        .force_push(&base.join(format!("{name}.git")), &["main", "refs/tags/v1"]);
}

/// A `.tar.gz` whose one `main.tf` outputs `value` (made in `env`'s root).
pub(crate) fn output_tarball(env: &TestEnv, value: &str) -> Vec<u8> {
    let src = env.root.path().join("src");
    let _ = fs_err::remove_dir_all(&src);
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("main.tf"), output_tf(value)).unwrap();
    sh(&src, "tar czf ../m.tar.gz main.tf");
    fs_err::read(env.root.path().join("m.tar.gz")).unwrap()
}

pub(crate) fn modules_lock(env: &TestEnv, dir: &Path, args: &[&str]) -> Tstore {
    env.tstore()
        .no_fuse()
        .args(["modules", "lock"])
        .args(args)
        .arg(dir)
}

/// `text` with every run of spaces as one space (the lock aligns `=` per block).
pub(crate) fn squash(text: &str) -> String {
    text.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn calls(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["lock"].is_null())
        .map(|c| {
            (
                c["key"].as_str().unwrap().to_owned(),
                c["lock"].as_str().unwrap().to_owned(),
                c["selected_by"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Everything init may change in `dir`, to show a refusal changed nothing.
pub(crate) fn state(dir: &Path) -> (String, String, Option<String>) {
    let read = |p: &str| fs_err::read_to_string(dir.join(p)).unwrap_or_default();
    let installed = fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).ok();
    (
        read(LOCK),
        read(".terraform/modules/modules.json"),
        installed,
    )
}

/// A checkout `w` whose one call `m` names tag `v1` of the repository `pkg` (`main.tf`
/// outputs "one"): the environment, the repositories' directory, the repository, the
/// checkout's `main.tf` and the checkout.
pub(crate) fn one_git_call() -> (TestEnv, PathBuf, PathBuf, String, PathBuf) {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = module_repo(&base, "pkg", "one");
    let main = format!(
        "module \"m\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
        repo.display()
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    (env, base, repo, main, dir)
}

#[test]
fn a_moved_git_tag_installs_the_locked_commit_loudly_and_upgrade_accepts_it() {
    let (env, base, repo, main, dir) = one_git_call();
    let first = env.tstore().no_fuse().init(&dir).json();
    assert_eq!(first["module_lock_file"], "created");
    assert_eq!(
        calls(&first),
        [("m".into(), "added".into(), "constraint".into())]
    );
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let commit = GitRepo::open(&repo).rev("v1");
    assert!(
        squash(&lock).contains(&format!("commit = \"{}\"", commit.trim())),
        "{lock}"
    );
    assert!(squash(&lock).contains("version = \"v1\""), "{lock}");
    assert!(lock.contains("\"h1:"), "{lock}");
    assert!(
        !lock.contains("ref="),
        "the ref is the entry's version: {lock}"
    );

    // The tag moves to other content.
    move_tag(&base, "pkg", "two");

    // This machine's store holds the locked commit: installed as locked, without asking the
    // remote (moved away).
    let moved = base.join("moved.git");
    fs_err::rename(&repo, &moved).unwrap();
    let again = env.tstore().no_fuse().init(&dir).json();
    assert_eq!(
        calls(&again),
        [("m".into(), "verified".into(), "lock".into())]
    );
    assert_eq!(again["module_lock_file"], "unchanged");
    assert_eq!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), lock);
    assert!(state(&dir).2.unwrap().contains("\"one\""));
    fs_err::rename(&moved, &repo).unwrap();

    // A new machine (its own store) finds the tag at another commit, which descends from
    // the locked one: the locked commit is installed, and the moved tag said loudly.
    let other = TestEnv::new();
    let copy = other.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let out = other.tstore().no_fuse().init(&copy).ok();
    let err = stderr(&out);
    assert!(
        err.contains("\"m\"") && err.contains("MOVED") && err.contains("-upgrade"),
        "{err}"
    );
    assert!(state(&copy).2.unwrap().contains("\"one\""));
    assert_eq!(fs_err::read_to_string(copy.join(LOCK)).unwrap(), lock);

    // -upgrade accepts the move and rewrites the entry.
    let upgraded = json(
        &other
            .tstore()
            .no_fuse()
            .init(&copy)
            .args(["--json", "-upgrade"])
            .ok(),
    );
    assert_eq!(
        calls(&upgraded),
        [("m".into(), "changed".into(), "upgrade".into())]
    );
    assert_eq!(upgraded["module_lock_file"], "updated");
    let rewritten = fs_err::read_to_string(copy.join(LOCK)).unwrap();
    assert_ne!(rewritten, lock);
    assert!(state(&copy).2.unwrap().contains("\"two\""));
}

#[test]
fn a_republished_registry_version_and_a_changed_archive_are_refused() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let tarball = |value: &str| output_tarball(&env, value);
    let first = reg.archive("v1.tar.gz", tarball("one"));
    reg.publish("acme/mod/null", "1.0.0", &first);
    let plain = reg.archive("plain.tar.gz", tarball("plain"));
    let cfg = reg.write_cli_config(&env.root.path().join("cli.tfrc"), "");
    let main = format!(
        "module \"m\" {{\n  source  = \"{}/acme/mod/null\"\n  version = \"~> 1.0\"\n}}\n\
         module \"a\" {{\n  source = \"{plain}\"\n}}\n",
        reg.host()
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    let run = |env: &TestEnv, dir: &Path, args: &[&str]| {
        env.tstore().no_fuse().init(dir).args(args).cli_config(&cfg)
    };
    run(&env, &dir, &[]).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    assert!(squash(&lock).contains("version = \"1.0.0\""), "{lock}");
    assert!(squash(&lock).contains("constraints = \"~> 1.0\""), "{lock}");
    assert_eq!(
        lock.matches("\"zh:").count(),
        2,
        "each archive's SHA-256: {lock}"
    );

    // Version 1.0.0 re-published with other bytes, and other bytes at the archive URL:
    // a new machine refuses each, naming the call.
    reg.publish(
        "acme/mod/null",
        "1.0.0",
        &reg.archive("v1b.tar.gz", tarball("evil")),
    );
    let other = TestEnv::new();
    let copy = other.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let err = stderr(&run(&other, &copy, &[]).fails());
    assert!(
        err.contains("\"m\"") && err.contains("checksum") && err.contains("h1:"),
        "{err}"
    );
    assert!(
        !copy.join(".terraform/modules").exists(),
        "nothing installed"
    );

    reg.publish("acme/mod/null", "1.0.0", &first);
    reg.archive("plain.tar.gz", tarball("changed"));
    let other = TestEnv::new();
    let copy = other.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let err = stderr(&run(&other, &copy, &[]).fails());
    assert!(err.contains("\"a\"") && err.contains("checksum"), "{err}");
    assert_eq!(fs_err::read_to_string(copy.join(LOCK)).unwrap(), lock);
}

#[test]
fn readonly_fails_on_any_change_and_entries_follow_the_calls() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let one = module_repo(&base, "one", "one");
    let two = module_repo(&base, "two", "two");
    let call = |name: &str, repo: &Path| {
        format!(
            "module \"{name}\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
            repo.display()
        )
    };
    let dir = env.checkout("w", &[("main.tf", call("a", &one).as_str())]);
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();

    // Unchanged: readonly installs; byte-identical lock on every run.
    env.tstore()
        .no_fuse()
        .init(&dir)
        .arg("-lockfile=readonly")
        .ok();
    env.tstore().no_fuse().init(&dir).ok();
    assert_eq!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), lock);

    // A new call: readonly refuses and changes nothing; plain init adds it.
    fs_err::write(
        dir.join("main.tf"),
        format!("{}{}", call("a", &one), call("b", &two)),
    )
    .unwrap();
    let err = stderr(
        &env.tstore()
            .no_fuse()
            .init(&dir)
            .arg("-lockfile=readonly")
            .fails(),
    );
    assert!(err.contains("module \"b\" would be added"), "{err}");
    assert_eq!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), lock);
    assert!(!dir.join(".terraform/modules/b").exists());
    env.tstore().no_fuse().init(&dir).ok();
    let both = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    assert!(
        both.contains("module \"a\"") && both.contains("module \"b\""),
        "{both}"
    );

    // A removed call: the terraform flavor keeps its entry (as terraform keeps a provider's
    // it no longer needs), the tofu flavor drops it (readonly refuses that).
    fs_err::write(dir.join("main.tf"), call("b", &two)).unwrap();
    env.tstore()
        .no_fuse()
        .init(&dir)
        .arg("-lockfile=readonly")
        .ok();
    assert_eq!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), both);
    let tofu = |args: &[&str]| {
        env.tstore()
            .no_fuse()
            .init(&dir)
            .args(args)
            .env("TSTORE_FLAVOR", "tofu")
    };
    let err = stderr(&tofu(&["-lockfile=readonly"]).fails());
    assert!(err.contains("module \"a\" would be removed"), "{err}");
    tofu(&[]).ok();
    let only_b = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    assert!(
        !only_b.contains("module \"a\"") && only_b.contains("module \"b\""),
        "{only_b}"
    );
}

#[test]
fn nested_calls_are_locked_per_call_path_and_a_lock_verifies_on_another_store() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let leaf = module_repo(&base, "leaf", "leaf");
    let outer = GitRepo::init(
        base.join("outer"),
        &[(
            "main.tf",
            &format!(
                "module \"inner\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
                leaf.display()
            ),
        )],
    )
    .commit("one")
    .tag("v1")
    .clone_bare(base.join("outer.git"))
    .path()
    .to_owned();
    let main = format!(
        "module \"x\" {{\n  source = \"git::file://{o}?ref=v1\"\n}}\n\
         module \"y\" {{\n  source = \"git::file://{o}?ref=v1\"\n}}\n",
        o = outer.display()
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    for key in ["x", "x.inner", "y", "y.inner"] {
        assert!(
            lock.contains(&format!("module \"{key}\" {{")),
            "{key}: {lock}"
        );
    }

    // Another store, another umask: the same lock verifies, nothing changes.
    let other = TestEnv::new();
    let copy = other.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let mut cmd = other.command(Path::new("sh"));
    cmd.env("TSTORE_FLAVOR", "terraform")
        .env("TSTORE_NO_FUSE", "1")
        .args(["-c", "umask 077 && exec \"$@\"", "sh"])
        .arg(crate::common::tstore_bin())
        .args(["init", "--json"])
        .arg(&copy);
    let report = json(&run_ok(&mut cmd));
    assert_eq!(report["module_lock_file"], "unchanged");
    assert!(
        calls(&report)
            .iter()
            .all(|(_, lock, by)| lock == "verified" && by == "lock"),
        "{:?}",
        calls(&report)
    );
    assert_eq!(fs_err::read_to_string(copy.join(LOCK)).unwrap(), lock);
}

#[test]
fn an_oci_tag_pushed_again_with_other_content_is_refused() {
    let env = TestEnv::new();
    let registry = OciRegistry::start();
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let zip = |value: &str| {
        let main = output_tf(value);
        mirror::zip_bytes(&[mirror::PkgFile {
            path: "main.tf",
            contents: main.as_bytes(),
            executable: false,
        }])
    };
    registry.push_module("modules/m", "1.0.0", &zip("one"));
    let main = format!(
        "module \"m\" {{\n  source = \"oci://{}/modules/m?tag=1.0.0\"\n}}\n",
        registry.host()
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    let run = |args: &[&str]| {
        env.tstore()
            .no_fuse()
            .init(&dir)
            .args(args)
            .env("SSL_CERT_FILE", &ca)
            .env("TSTORE_FLAVOR", "tofu")
    };
    run(&[]).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    assert!(lock.contains("oci://") && lock.contains("\"h1:"), "{lock}");
    assert!(lock.contains("\"zh:"), "the layer's digest: {lock}");

    registry.push_module("modules/m", "1.0.0", &zip("two"));
    let before = state(&dir);
    let err = stderr(&run(&[]).fails());
    assert!(err.contains("\"m\"") && err.contains("checksum"), "{err}");
    assert_eq!(state(&dir), before, "a refusal changes nothing");

    run(&["-upgrade"]).ok();
    assert!(state(&dir).2.unwrap().contains("\"two\""));
    assert_ne!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), lock);
}
