//! Backing out: `tstore store rm` deletes a store its owner cannot `rm -rf` (read-only
//! directories), takes its mount down, refuses anything that is not a tstore store, and the
//! working directory goes back to plain `terraform init`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use tstore_test_support::{run_ok, stderr, Layout, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};

#[test]
fn store_rm_removes_the_store_and_the_mount_and_terraform_init_takes_over() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = m.env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    m.env.tstore().cli_config(&m.cfg).arg("init").arg(&dir).ok();
    assert!(m.env.store.join("views").is_dir());

    // Without --yes: says what would go, removes nothing, exits 1.
    let out = m.env.tstore().args(["store", "rm"]).output();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("Nothing was removed"), "{said}");
    assert!(
        said.contains(&dir.canonicalize().unwrap().display().to_string()),
        "the linking working directory is not named: {said}"
    );
    assert!(m.env.store.join("index.sqlite").is_file());

    let out = m.env.tstore().args(["store", "rm", "--yes", "--json"]).ok();
    let report = json(&out);
    assert_eq!(
        report["roots"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert!(!m.env.store.exists(), "the store is still there");
    assert!(
        fs_err::symlink_metadata(&m.env.mount).is_err(),
        "the mount path is still there"
    );
    // Again: nothing to do, success.
    m.env.tstore().args(["store", "rm", "--yes"]).ok();

    // Back to plain terraform: drop the links, terraform init installs its own copy.
    fs_err::remove_dir_all(dir.join(".terraform")).unwrap();
    run_ok(&mut m.env.terraform_init(&dir, &m.cfg));
    m.env.assert_terraform_plans_null(&dir);
}

#[test]
fn store_rm_refuses_what_is_not_a_store() {
    let env = TestEnv::new();
    let precious = env.root.path().join("not-a-store");
    fs_err::create_dir_all(&precious).unwrap();
    fs_err::write(precious.join("notes.txt"), "keep\n").unwrap();
    let out = env
        .tstore()
        .env("TSTORE_HOME", &precious)
        .args(["store", "rm", "--yes"])
        .output();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not a tstore store"),
        "{}",
        stderr(&out)
    );
    assert!(precious.join("notes.txt").is_file());
}

/// As its (non-root) owner: `rm -rf` of a store fails half way on its read-only
/// directories; `tstore store rm --yes` removes it whole.
#[test]
fn store_rm_removes_what_rm_rf_cannot_for_a_non_root_owner() {
    let uid = String::from_utf8_lossy(&Command::new("id").arg("-u").output().unwrap().stdout)
        .trim()
        .to_owned();
    assert_eq!(uid, "0", "this test needs root to act as a second user");
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = m.env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    m.env
        .tstore()
        .cli_config(&m.cfg)
        .no_fuse()
        .arg("init")
        .arg(&dir)
        .ok();
    // A place the other user can reach, with two copies of the store they own.
    let shared = tempfile::Builder::new()
        .prefix("tstore-rm-")
        .tempdir_in("/tmp")
        .unwrap();
    fs_err::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for copy in ["by-rm", "by-tstore"] {
        let ok = Command::new("cp")
            .arg("-a")
            .arg(&m.env.store)
            .arg(shared.path().join(copy))
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    let ok = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(shared.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let as_owner = |args: &[&str], store: &Path| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg("env")
            .arg("-i")
            .arg(format!("HOME={}", shared.path().display()))
            .arg(format!("TSTORE_HOME={}", store.display()))
            .arg(format!(
                "TSTORE_MOUNT={}",
                shared.path().join("mount").display()
            ))
            .arg("TSTORE_NO_FUSE=1")
            .args(args)
            .output()
            .unwrap()
    };
    let by_rm = shared.path().join("by-rm");
    let out = as_owner(&["rm", "-rf", &by_rm.display().to_string()], &by_rm);
    assert!(
        !out.status.success(),
        "rm -rf removed a store with read-only views"
    );
    assert!(by_rm.exists());
    let by_tstore = shared.path().join("by-tstore");
    let bin = crate::common::tstore_bin();
    let out = as_owner(
        &[&bin.display().to_string(), "store", "rm", "--yes"],
        &by_tstore,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!by_tstore.exists(), "the store is still there");
    // Leave the half-removed copy removable for the temp dir's cleanup.
    let _ = Command::new("chmod")
        .args(["-R", "u+w"])
        .arg(&by_rm)
        .status();
}

/// A store deleted half way (`git clean -ffdx` or `rm -rf` by its non-root owner removes the
/// index and the blobs but stops at the read-only views) is rebuilt by the next init without
/// keeping the provider twice: the stale view is replaced by one that links the new blobs.
#[test]
fn a_half_deleted_store_is_rebuilt_without_a_second_copy() {
    use std::os::unix::fs::MetadataExt as _;
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = m.env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let init = || {
        m.env
            .tstore()
            .cli_config(&m.cfg)
            .no_fuse()
            .arg("init")
            .arg(&dir)
            .ok()
    };
    init();
    for gone in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = fs_err::remove_file(m.env.store.join(gone));
    }
    fs_err::remove_dir_all(m.env.store.join("blobs-v1")).unwrap();
    init();
    let view = m
        .env
        .store
        .join("views/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64");
    let mut files = 0;
    for entry in walkdir::WalkDir::new(&view) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            files += 1;
            assert!(
                entry.metadata().unwrap().nlink() >= 2,
                "{} is a copy the blobs do not share",
                entry.path().display()
            );
        }
    }
    assert!(files > 0);
    let out = m.env.tstore().args(["store", "verify", "--json"]).ok();
    assert_eq!(json(&out)["clean"], true, "{}", json(&out));
    m.env.assert_terraform_plans_null(&dir);
}

/// `store rm --yes` deletes only a directory with the store's marks: a mistaken
/// `TSTORE_HOME` naming a directory that holds an `index.sqlite` among other files (or an
/// index of another program) removes nothing.
#[test]
fn store_rm_refuses_a_directory_that_is_not_a_store() {
    let env = TestEnv::new();
    let home = env.root.path().join("not-a-store");
    fs_err::create_dir_all(home.join("projects")).unwrap();
    fs_err::write(home.join("notes.txt"), "mine").unwrap();
    fs_err::write(home.join("index.sqlite"), "SQLite format 3\0").unwrap();
    let out = env
        .tstore()
        .env("TSTORE_HOME", &home)
        .args(["store", "rm", "--yes"])
        .output();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a tstore store"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs_err::read_to_string(home.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(home.join("projects").is_dir() && home.join("index.sqlite").is_file());
}
