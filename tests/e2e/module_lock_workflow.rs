//! The module lock file in a team's workflow: `tstore modules lock` without `.terraform`,
//! entries independent of the order of calls, a locked archive whose server is gone, an
//! upgrade scoped to one call, a store memo older than the lock, a symlinked lock refused,
//! secrets kept out, and `modules outdated`. The helpers are `module_lock.rs`'s.

use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{stderr, stdout, GitRepo, TestEnv};

use crate::common::{json, sh, TstoreEnv};

use crate::module_lock::{
    calls, module_repo, modules_lock, move_tag, one_git_call, output_tarball, output_tf, state,
    LOCK,
};

#[test]
fn modules_lock_writes_the_file_without_touching_terraform_dir() {
    let (env, base, _, _, dir) = one_git_call();
    let lock = |args: &[&str]| modules_lock(&env, &dir, args);
    let report = json(&lock(&["--json"]).ok());
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
    let err = stderr(&lock(&["-upgrade", "-lockfile=readonly"]).fails());
    assert!(
        err.contains("module \"m\": commit, hashes would change"),
        "{err}"
    );
    let human = lock(&["-upgrade"]).ok();
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
    lock(&[]).ok();
    let before = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let entry = |text: &str, call: &str| {
        let start = text.find(&format!("module \"{call}\"")).unwrap();
        let end = text[start..].find('}').unwrap();
        text[start..start + end].to_owned()
    };
    move_tag(&base, "a", "a2");
    move_tag(&base, "b", "b2");

    // -module needs -upgrade; an unknown call is refused; neither writes anything.
    let err = stderr(&lock(&["-module=a"]).fails());
    assert!(err.contains("needs -upgrade"), "{err}");
    let err = stderr(&lock(&["-upgrade", "-module=c"]).fails());
    assert!(err.contains("no module call \"c\""), "{err}");
    assert_eq!(fs_err::read_to_string(dir.join(LOCK)).unwrap(), before);

    let report = json(&lock(&["-upgrade", "-module=a", "--json"]).ok());
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
        let cmd = env
            .tstore()
            .no_fuse()
            .args(["modules", "outdated"])
            .args(args)
            .arg(&dir);
        cmd.output()
    };
    let none = outdated(&[]);
    assert!(
        !none.status.success() && stderr(&none).contains("tstore modules lock"),
        "{}",
        stderr(&none)
    );

    modules_lock(&env, &dir, &[]).ok();
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
