//! The module lock file `.tstore.lock.hcl`: written by init, pinning every remote call by
//! version, commit and hash; a moved tag, a re-published registry version and a changed
//! archive refused with nothing changed; `-upgrade` and `-lockfile=readonly`; a warm store
//! installs a locked checkout with its sources gone.

use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{mirror, run_fail, run_ok, stderr, stdout, GitRepo, TestEnv};

use crate::common::{json, sh, tstore, TstoreEnv};

const LOCK: &str = ".tstore.lock.hcl";

/// A module repository `<base>/NAME.git` whose `main.tf` outputs `value`, tagged `v1`, and
/// its working copy `<base>/NAME` (to commit and move the tag later).
fn module_repo(base: &Path, name: &str, value: &str) -> PathBuf {
    GitRepo::init(base.join(name), &[("main.tf", &output_tf(value))])
        .commit("one")
        .tag("v1")
        .clone_bare(base.join(format!("{name}.git")))
        .path()
        .to_owned()
}

fn output_tf(value: &str) -> String {
    format!("output \"v\" {{\n  value = \"{value}\"\n}}\n")
}

/// Commit `value` in the working copy of `NAME` and move tag `v1` of its bare repository
/// to that commit.
fn move_tag(base: &Path, name: &str, value: &str) {
    GitRepo::open(base.join(name))
        .write(&[("main.tf", &output_tf(value))])
        .commit("moved")
        .move_tag("v1")
        .force_push(&base.join(format!("{name}.git")), &["main", "refs/tags/v1"]);
}

/// A `.tar.gz` whose one `main.tf` outputs `value` (made in `env`'s root).
fn output_tarball(env: &TestEnv, value: &str) -> Vec<u8> {
    let src = env.root.path().join("src");
    let _ = fs_err::remove_dir_all(&src);
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("main.tf"), output_tf(value)).unwrap();
    sh(&src, "tar czf ../m.tar.gz main.tf");
    fs_err::read(env.root.path().join("m.tar.gz")).unwrap()
}

fn modules_lock(env: &TestEnv, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = tstore(env, None);
    cmd.env("TSTORE_NO_FUSE", "1")
        .args(["modules", "lock"])
        .args(args)
        .arg(dir);
    cmd
}

/// `text` with every run of spaces as one space (the lock aligns `=` per block).
fn squash(text: &str) -> String {
    text.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn calls(report: &serde_json::Value) -> Vec<(String, String, String)> {
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
fn state(dir: &Path) -> (String, String, Option<String>) {
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
fn one_git_call() -> (TestEnv, PathBuf, PathBuf, String, PathBuf) {
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

#[test]
fn modules_lock_writes_the_file_without_touching_terraform_dir() {
    let (env, base, _, _, dir) = one_git_call();
    let lock = |args: &[&str]| modules_lock(&env, &dir, args);
    let report = json(&run_ok(&mut lock(&["--json"])));
    assert_eq!(report["lock_file"], "created", "{report}");
    assert_eq!(report["calls"][0]["key"], "m");
    assert_eq!(report["calls"][0]["lock"], "added");
    assert!(dir.join(LOCK).is_file());
    assert!(!dir.join(".terraform").exists(), "nothing installed");

    // The lock then drives init, which fetches nothing.
    let installed = env.tstore().no_fuse().init(&dir).json();
    assert_eq!(
        calls(&installed),
        [("m".into(), "verified".into(), "lock".into())]
    );
    assert_eq!(
        installed["module_packages"]["fetched"],
        serde_json::json!([])
    );

    // readonly after the tag moved: -upgrade would change it, readonly says so.
    move_tag(&base, "pkg", "two");
    let err = stderr(&run_fail(&mut lock(&["-upgrade", "-lockfile=readonly"])));
    assert!(
        err.contains("module \"m\": commit, hashes would change"),
        "{err}"
    );
    let human = run_ok(&mut lock(&["-upgrade"]));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("Updated module \"m\""), "{text}");
}

#[test]
fn an_entry_does_not_depend_on_the_order_of_calls_of_one_package() {
    // A package with a dot entry: a second call of its address gets it without, as
    // terraform copies the first install; the lock pins the package as fetched.
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    GitRepo::init(
        base.join("pkg"),
        &[
            ("main.tf", &output_tf("one")),
            (".gitignore", "*.tfstate\n"),
        ],
    )
    .commit("one")
    .tag("v1")
    .clone_bare(base.join("pkg.git"));
    let call = |name: &str| {
        format!(
            "module \"{name}\" {{\n  source = \"git::file://{}/pkg.git?ref=v1\"\n}}\n",
            base.display()
        )
    };
    let dir = env.checkout(
        "w",
        &[("main.tf", format!("{}{}", call("b"), call("c")).as_str())],
    );
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let entry = |key: &str| {
        let start = lock.find(&format!("module \"{key}\"")).unwrap();
        let body = &lock[start..];
        body[body.find('{').unwrap()..=body.find('}').unwrap()].to_owned()
    };
    assert_eq!(
        entry("b"),
        entry("c"),
        "one package, one entry body: {lock}"
    );

    // A call of the same address that sorts first, then the first call removed: the other
    // entries still verify.
    fs_err::write(
        dir.join("main.tf"),
        format!("{}{}{}", call("a"), call("b"), call("c")),
    )
    .unwrap();
    env.tstore().no_fuse().init(&dir).ok();
    fs_err::write(dir.join("main.tf"), format!("{}{}", call("a"), call("c"))).unwrap();
    let report = env.tstore().no_fuse().init(&dir).json();
    assert!(
        calls(&report).iter().all(|(_, lock, _)| lock == "verified"),
        "{:?}",
        calls(&report)
    );
}

#[test]
fn a_locked_archive_without_validators_installs_with_its_server_gone() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let src = env.root.path().join("src");
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("main.tf"), output_tf("plain")).unwrap();
    sh(&src, "tar czf ../m.tar.gz main.tf");
    // No ETag, no Last-Modified.
    reg.server.route(
        "/plain/m.tar.gz",
        "application/octet-stream",
        fs_err::read(env.root.path().join("m.tar.gz")).unwrap(),
    );
    let main = format!(
        "module \"m\" {{\n  source = \"{}/plain/m.tar.gz\"\n}}\n",
        reg.server.url()
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    drop(reg);

    let copy = env.checkout("w2", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let report = env.tstore().no_fuse().init(&copy).json();
    assert_eq!(
        calls(&report),
        [("m".into(), "verified".into(), "lock".into())]
    );
    assert!(state(&copy).2.unwrap().contains("\"plain\""));
}

#[test]
fn a_deleted_tag_is_refused_on_a_new_store_naming_upgrade() {
    let (env, base, repo, main, dir) = one_git_call();
    env.tstore().no_fuse().init(&dir).ok();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    // The tag goes; its commit stays reachable from the branch. A later commit on the
    // branch is not what the lock names.
    move_tag(&base, "pkg", "two");
    GitRepo::open(&repo).delete_tag("v1");

    // A new machine (its own store) cannot tell that the ref reaches the locked commit:
    // the ref is gone, so the lock is refused, naming -upgrade, and nothing changes.
    let other = TestEnv::new();
    let copy = other.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let before = state(&copy);
    let err = stderr(&other.tstore().no_fuse().init(&copy).fails());
    assert!(
        err.contains("which the remote no longer has") && err.contains("-upgrade"),
        "{err}"
    );
    assert_eq!(state(&copy), before, "a refusal changes nothing");

    // Without a lock entry, the missing tag is an error naming the repository and the ref.
    let third = TestEnv::new();
    let unlocked = third.checkout("w", &[("main.tf", main.as_str())]);
    let err = stderr(&third.tstore().no_fuse().init(&unlocked).fails());
    assert!(err.contains("has no branch or tag \"v1\""), "{err}");
    assert!(!unlocked.join(LOCK).exists());
}

#[test]
fn an_upgrade_scoped_to_one_call_keeps_the_other_entries() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let a = module_repo(&base, "a", "a1");
    let b = module_repo(&base, "b", "b1");
    let main = format!(
        "module \"a\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n\
         module \"b\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
        a.display(),
        b.display()
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    let lock = |args: &[&str]| modules_lock(&env, &dir, args);
    run_ok(&mut lock(&[]));
    let before = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let entry = |text: &str, call: &str| {
        let start = text.find(&format!("module \"{call}\"")).unwrap();
        let end = text[start..].find('}').unwrap();
        text[start..start + end].to_owned()
    };
    move_tag(&base, "a", "a2");
    move_tag(&base, "b", "b2");

    // -module needs -upgrade; an unknown call is refused; neither writes anything.
    let err = stderr(&run_fail(&mut lock(&["-module=a"])));
    assert!(err.contains("needs -upgrade"), "{err}");
    let err = stderr(&run_fail(&mut lock(&["-upgrade", "-module=c"])));
    assert!(err.contains("no module call \"c\""), "{err}");
    assert_eq!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), before);

    let report = json(&run_ok(&mut lock(&["-upgrade", "-module=a", "--json"])));
    let by_call: Vec<(String, String)> = report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap().to_owned(),
                c["lock"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        by_call,
        [
            ("a".into(), "changed".into()),
            ("b".into(), "verified".into())
        ]
    );
    let after = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    assert_ne!(entry(&after, "a"), entry(&before, "a"));
    assert_eq!(entry(&after, "b"), entry(&before, "b"));

    // init follows the new file: a at the moved tag, b still at its locked commit.
    env.tstore().no_fuse().init(&dir).ok();
    let out = |call: &str| {
        fs_err::read_to_string(dir.join(format!(".terraform/modules/{call}/main.tf"))).unwrap()
    };
    assert!(out("a").contains("\"a2\""));
    assert!(out("b").contains("\"b1\""));
}

#[test]
fn a_store_memo_older_than_the_lock_is_asked_again_and_upgrade_refreshes_it() {
    // A store remembers which package a registry version gave. When that version is
    // published again and a teammate locks the new bytes, this store must not refuse the
    // lock on the strength of its memo: it asks the registry again, and what is served
    // now must match. `-upgrade` does not believe the memo either.
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let tarball = |value: &str| output_tarball(&env, value);
    let publish = |value: &str| {
        let archive = reg.archive(&format!("{value}.tar.gz"), tarball(value));
        reg.publish("acme/mod/null", "1.0.0", &archive);
    };
    publish("one");
    let cfg = reg.write_cli_config(&env.root.path().join("cli.tfrc"), "");
    let main = format!(
        "module \"m\" {{\n  source  = \"{}/acme/mod/null\"\n  version = \"1.0.0\"\n}}\n",
        reg.host()
    );
    let run = |env: &TestEnv, dir: &Path, args: &[&str]| {
        env.tstore().no_fuse().init(dir).args(args).cli_config(&cfg)
    };
    let installed =
        |dir: &Path| fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap();
    let first = env.checkout("first", &[("main.tf", main.as_str())]);
    run(&env, &first, &[]).ok();
    let old_lock = fs_err::read_to_string(first.join(LOCK)).unwrap();

    // Published again; a teammate's new store locks the new bytes.
    publish("two");
    let teammate = TestEnv::new();
    let theirs = teammate.checkout("w", &[("main.tf", main.as_str())]);
    run(&teammate, &theirs, &[]).ok();
    let new_lock = fs_err::read_to_string(theirs.join(LOCK)).unwrap();
    assert_ne!(new_lock, old_lock);

    // This store, the teammate's lock: installed from the registry's current bytes.
    let ours = env.checkout(
        "ours",
        &[("main.tf", main.as_str()), (LOCK, new_lock.as_str())],
    );
    run(&env, &ours, &[]).ok();
    assert!(installed(&ours).contains("two"), "{}", installed(&ours));
    assert_eq!(fs_err::read_to_string(ours.join(LOCK)).unwrap(), new_lock);

    // Published once more: -upgrade installs and locks what the registry serves now.
    publish("three");
    run(&env, &first, &["-upgrade"]).ok();
    assert!(installed(&first).contains("three"), "{}", installed(&first));
    let upgraded = fs_err::read_to_string(first.join(LOCK)).unwrap();
    assert!(upgraded != old_lock && upgraded != new_lock, "{upgraded}");
}

/// `.tstore.lock.hcl` is tstore's own file: a symlink under its name (to another file of
/// the machine, whose names a parse error would quote) is refused, never followed, and
/// nothing is written.
#[test]
fn a_symlinked_module_lock_is_refused_not_followed() {
    let env = TestEnv::new();
    let repo = module_repo(&env.root.path().join("git"), "m", "one");
    let dir = env.checkout(
        "stack",
        &[(
            "main.tf",
            format!(
                "module \"m\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
                repo.display()
            )
            .as_str(),
        )],
    );
    let private = env.root.path().join("private.hcl");
    fs_err::write(&private, "SECRET_BLOCK \"TOKEN_NAME\" {\n}\n").unwrap();
    std::os::unix::fs::symlink(&private, dir.join(LOCK)).unwrap();
    let out = env.tstore().no_fuse().init(&dir).output();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("symbolic link"), "{err}");
    assert!(
        !err.contains("SECRET_BLOCK") && !err.contains("TOKEN_NAME"),
        "{err}"
    );
    assert!(fs_err::symlink_metadata(dir.join(LOCK))
        .unwrap()
        .is_symlink());
    assert!(!dir.join(".terraform").exists());
}

/// A secret reaching a source from `TF_VAR_*` stays out of the committed lock and out of
/// `--json`, under any parameter name (an unknown one, a percent-escaped `token`): only the
/// values of known harmless parameters (`archive`, `ref`, …) are written. The redacted entry
/// still matches its call, with the same secret or a rotated one.
#[test]
fn secrets_from_variables_stay_out_of_the_lock_and_the_report() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let url = reg.archive("m.tar.gz", output_tarball(&env, "one"));
    let main = format!(
        "variable \"db_pw\" {{\n  type = string\n}}\n\
         module \"m\" {{\n  source = \"{url}?archive=tar.gz&db_pw=${{var.db_pw}}&%74oken=${{var.db_pw}}\"\n}}\n"
    );
    let dir = env.checkout("w", &[("main.tf", main.as_str())]);
    let tofu = |secret: &str, args: &[&str]| {
        env.tstore()
            .no_fuse()
            .init(&dir)
            .args(args)
            .env("TSTORE_FLAVOR", "tofu")
            .env("TF_VAR_db_pw", secret)
    };
    let out = tofu("HUNTER2-S3CRET", &["--json"]).ok();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    for (what, text) in [("lock", &lock), ("--json", &report)] {
        assert!(
            !text.contains("HUNTER2"),
            "{what} holds the secret:\n{text}"
        );
    }
    assert!(
        lock.contains("archive=tar.gz&db_pw=redacted&%74oken=redacted"),
        "{lock}"
    );
    // The same entry matches again, and after the secret rotated.
    for secret in ["HUNTER2-S3CRET", "ROTATED-S3CRET"] {
        let again = json(&tofu(secret, &["--json", "-lockfile=readonly"]).ok());
        assert_eq!(
            calls(&again),
            [("m".into(), "verified".into(), "lock".into())],
            "{secret}"
        );
    }
}

/// `tstore modules outdated` asks the remotes and lists each locked call whose ref now names
/// another commit, changing nothing in the working directory; `-exit-code` makes a finding
/// exit 2; with no lock file it says what to run.
#[test]
fn modules_outdated_lists_a_moved_ref_and_changes_nothing() {
    let (env, base, repo, _main, dir) = one_git_call();
    let outdated = |args: &[&str]| {
        let mut cmd = tstore(&env, None);
        cmd.env("TSTORE_NO_FUSE", "1")
            .args(["modules", "outdated"])
            .args(args)
            .arg(&dir);
        cmd.output().unwrap()
    };
    let none = outdated(&[]);
    assert!(
        !none.status.success() && stderr(&none).contains("tstore modules lock"),
        "{}",
        stderr(&none)
    );

    run_ok(&mut modules_lock(&env, &dir, &[]));
    let locked = GitRepo::open(&repo).rev("v1").trim().to_owned();
    let out = outdated(&["-exit-code"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("0 of 1 locked call outdated"),
        "{}",
        stdout(&out)
    );

    move_tag(&base, "pkg", "two");
    let now = GitRepo::open(&repo).rev("v1").trim().to_owned();
    assert_ne!(locked, now);
    let before = tstore_test_support::snapshot(&dir);
    let out = outdated(&["--json", "-exit-code"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["checked"], 1, "{report}");
    let call = &report["calls"][0];
    assert_eq!(call["key"], "m", "{report}");
    assert_eq!(call["locked_commit"], locked.as_str(), "{report}");
    assert_eq!(call["latest_commit"], now.as_str(), "{report}");
    assert_eq!(
        tstore_test_support::snapshot(&dir),
        before,
        "nothing written"
    );
    let said = stdout(&outdated(&[]));
    assert!(
        said.contains("- module \"m\" (")
            && said.contains(&format!("locked v1 ({})", &locked[..12])),
        "{said}"
    );
}
