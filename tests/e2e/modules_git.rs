//! Git module packages and `modules.json` as terraform writes it: the same records as
//! `terraform init` (git sources, `//subdir`, a package calling itself remotely), copies
//! terraform trusts; bad sources and syntax errors in a package name the call and the path
//! the user sees and write nothing; dangling module links are repaired by `tstore init`.

use tstore_test_support::{run_fail, run_ok, stderr, stdout, GitRepo, TestEnv, Tstore};

use crate::common::TstoreEnv as _;
use crate::common::{json, sh};
use crate::modules_fixture::{checkout, env_with_git_dir, package_repo, records};

/// The same records as `terraform init`, then `validate`/`plan` offline, and
/// a later plain `terraform init` trusts the install (nothing re-fetched).
#[test]
fn modules_json_has_terraforms_records_and_terraform_trusts_it() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);

    let theirs = checkout(&env, "theirs", &base, None);
    run_ok(env.terraform(&theirs).arg("init").arg("-no-color"));
    let ours = checkout(&env, "ours", &base, None);
    // The compatible setting: every package nobody made a statement about is copied.
    fs_err::write(
        ours.join(".tstore.hcl"),
        "modules {\n  default = \"copy\"\n}\n",
    )
    .unwrap();
    let out = env
        .tstore()
        .no_fuse()
        .arg("init")
        .arg("--explain")
        .arg(&ours)
        .ok();
    let text = stdout(&out);
    assert!(
        text.contains("- gitsub in .terraform/modules/gitsub/sub"),
        "{text}"
    );
    assert!(text.contains("private copy"), "{text}");
    assert_eq!(records(&ours), records(&theirs));

    run_ok(env.terraform(&ours).arg("validate").arg("-no-color"));
    let plan = stdout(&run_ok(env.terraform(&ours).arg("plan").arg("-no-color")));
    assert!(plan.contains("\"sub:inner:deep\""), "{plan}");
    // No meta file and default = "copy": private, writable copies.
    let gita = ours.join(".terraform/modules/gita");
    assert!(fs_err::symlink_metadata(&gita).unwrap().is_dir());
    fs_err::write(gita.join("scratch"), "x").unwrap();

    let again = stdout(&run_ok(env.terraform(&ours).arg("init").arg("-no-color")));
    assert!(!again.contains("Downloading"), "{again}");
}

/// Bad inputs name the call and file:line, and leave `.terraform/modules` alone.
#[test]
fn bad_module_sources_fail_clearly_and_write_nothing() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);
    let b = base.display().to_string();
    for (source, expect) in [
        (
            "s3::https://s3.example/b/x.zip",
            "s3:: getter is not supported",
        ),
        (
            &format!("git::file://{b}/repo.git?ref=v9.9.9") as &str,
            "no branch or tag",
        ),
        (
            &format!("git::file://{b}/missing.git?ref=v1.0.0"),
            "ls-remote",
        ),
    ] {
        let dir = env.checkout(
            &format!("bad{}", source.len()),
            &[(
                "main.tf",
                &format!("\n\nmodule \"m\" {{\n  source = \"{source}\"\n}}\n"),
            )],
        );
        let out = env.tstore().no_fuse().arg("init").arg(&dir).fails();
        let err = stderr(&out);
        assert!(err.contains("main.tf:3"), "{err}");
        assert!(err.contains("module \"m\""), "{err}");
        assert!(err.contains(expect), "{source}: {err}");
        assert!(!dir.join(".terraform/modules").exists());
    }
    let dir = checkout(&env, "badmeta", &base, Some("module \"x\" {\n"));
    let err = stderr(&env.tstore().no_fuse().arg("init").arg(&dir).fails());
    assert!(err.contains("module-package.meta.hcl"), "{err}");
}

/// A syntax error inside a module package names the file as the user sees it, under
/// `.terraform/modules/KEY/`, with terraform's line, and never the store's copy; the working
/// directory is left as it was.
#[test]
fn syntax_errors_in_module_packages_name_the_path_the_user_sees() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let source = GitRepo::init(
        base.join("pkg-src"),
        &[
            (
                "main.tf",
                "module \"inner\" {\n  source = \"./modules/inner\"\n}\n",
            ),
            (
                "modules/inner/main.tf",
                "locals {\n  x = true ? 1 :\n  2\n}\n",
            ),
        ],
    )
    .commit("init")
    .tag("v1")
    .clone_bare(base.join("pkg.git"))
    .source("v1");
    let dir = env.checkout(
        "syntax",
        &[(
            "main.tf",
            &format!("module \"net\" {{\n  source = \"{source}\"\n}}\n"),
        )],
    );
    let before = tstore_test_support::snapshot(&dir);
    let out = env.tstore().no_fuse().arg("init").arg(&dir).fails();
    let err = stderr(&out);
    let shown = dir.join(".terraform/modules/net/modules/inner/main.tf:2");
    assert!(
        err.contains(&shown.display().to_string()),
        "stderr does not name {}:\n{err}",
        shown.display()
    );
    assert!(
        !err.contains(&env.store.display().to_string()),
        "stderr names the store:\n{err}"
    );
    assert_eq!(tstore_test_support::snapshot(&dir), before);
}

/// A dangling `.terraform/modules/KEY` link makes a plain `terraform init` fail (terraform
/// 1.0.3's `git clone` finds the link in its way), so `tstore init` must not leave one. The
/// store unmounted, or its view of the package removed: `tstore init` makes the link resolve
/// again (mount, or re-materialize the package).
#[test]
fn dangling_module_links_are_repaired_by_tstore_init() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, Some("# read-only\n"));
    let dir = checkout(&env, "c", &base, None);
    let init = |tstore: Tstore| {
        let report = json(&tstore.arg("init").arg("--json").arg(&dir).ok());
        report["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == "gita")
            .unwrap()["package"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let gita = dir.join(".terraform/modules/gita");

    // 1. The FUSE mount goes away (if this machine has FUSE).
    let id = init(env.tstore());
    if !fs_err::symlink_metadata(&env.mount)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        env.tstore().arg("umount").ok();
        assert!(!gita.join("main.tf").exists(), "dangling after umount");
        let err = stderr(&run_fail(env.terraform(&dir).arg("init").arg("-no-color")));
        assert!(err.contains("gita"), "{err}");
        assert_eq!(init(env.tstore()), id);
        assert!(gita.join("main.tf").is_file());
        run_ok(env.terraform(&dir).arg("validate").arg("-no-color"));
        env.tstore().arg("umount").ok();
    }

    // 2. Without FUSE: the package's view in the store is removed.
    assert_eq!(init(env.tstore().no_fuse()), id);
    assert!(gita.join("main.tf").is_file());
    let view = env.store.join("views/modules").join(&id);
    sh(
        env.root.path(),
        // Directories only: the files are hardlinks of the blobs and share their mode.
        &format!(
            "find {0} -type d -exec chmod u+w {{}} + && rm -rf {0}",
            view.display()
        ),
    );
    assert!(!gita.join("main.tf").exists(), "dangling without its view");
    assert_eq!(init(env.tstore().no_fuse()), id);
    assert!(gita.join("main.tf").is_file(), "re-materialized");
    run_ok(env.terraform(&dir).arg("validate").arg("-no-color"));
    env.tstore().no_fuse().args(["store", "verify"]).ok();
}

/// A module download is said before it happens, in terraform's words: "Initializing
/// modules..." when the phase begins, then "Downloading SOURCE for KEY..." for each call
/// whose package is fetched (terraform 1.11.4's lines, judged on the same configuration);
/// a second init that finds everything in the store downloads nothing and says none; with
/// `--json` stdout is the one report.
#[test]
fn module_downloads_are_said_before_they_happen() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = GitRepo::tagged_module(
        &base,
        "m",
        &[("main.tf", "output \"v\" {\n  value = 1\n}\n")],
    );
    let source = format!("git::file://{}?ref=v1", repo.display());
    let main = format!("module \"m\" {{\n  source = \"{source}\"\n}}\n");
    let said = format!("Downloading {source} for m...");
    let theirs = env.checkout("theirs", &[("main.tf", main.as_str())]);
    let judge = tstore_test_support::peers().terraform_current.clone();
    let mut cmd = env.command(&judge);
    cmd.current_dir(&theirs)
        .args(["init", "-backend=false", "-no-color"]);
    let out = stdout(&run_ok(&mut cmd));
    assert!(out.contains(&said), "terraform 1.11.4 says: {out}");

    let ours = env.checkout("ours", &[("main.tf", main.as_str())]);
    let init = || stdout(&env.tstore().no_fuse().arg("init").arg(&ours).ok());
    let out = init();
    let header = out.find("Initializing modules...").expect("the header");
    let downloading = out.find(&said).unwrap_or_else(|| panic!("{out}"));
    let installed = out.find("- m in .terraform/modules/m").unwrap();
    assert!(header < downloading && downloading < installed, "{out}");
    let again = init();
    assert!(!again.contains("Downloading"), "{again}");
    let other = env.checkout("json", &[("main.tf", main.as_str())]);
    let out = env
        .tstore()
        .no_fuse()
        .args(["init", "--json"])
        .arg(&other)
        .ok();
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is one JSON document");
}
