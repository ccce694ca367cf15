//! Permissions are explicit, never the umask's: the store is private to its owner (0700
//! directories, its mount served to its owner only), a store another user owns or others can
//! write is refused with a hint, and a private file of a local module stays private in its
//! copy. Runs as root (the suite does) to create the second user's view with `setpriv`.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use tstore_test_support::{mirror, run_ok, stderr, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

/// `nobody`: a user that owns nothing here.
const OTHER_UID: u32 = 65534;

fn as_other_user(args: &[&str]) -> std::process::Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(args)
        .output()
        .expect("setpriv (util-linux) runs")
}

fn assert_root() {
    let uid = String::from_utf8_lossy(&Command::new("id").arg("-u").output().unwrap().stdout)
        .trim()
        .to_owned();
    assert_eq!(
        uid, "0",
        "this test needs root to act as a second user (scripts/test runs as root in CI)"
    );
}

/// Every directory and file of the store (links aside) writable by its owner only.
fn assert_nothing_writable_by_others(store: &Path) {
    for entry in walkdir::WalkDir::new(store).follow_links(false) {
        let entry = entry.unwrap();
        if entry.file_type().is_symlink() {
            continue;
        }
        let mode = entry.metadata().unwrap().mode() & 0o7777;
        assert_eq!(
            mode & 0o022,
            0,
            "{} has mode {mode:o}",
            entry.path().display()
        );
    }
}

#[test]
fn the_store_is_private_whatever_the_umask_and_other_users_get_nothing() {
    assert_root();
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    fs_err::remove_dir_all(&env.store).unwrap();
    // The whole path down to the store is traversable, so only the store's own modes
    // protect it.
    fs_err::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    // The store is created and a provider ingested and linked under umask 000: the same
    // command line and environment as `tstore`, through a shell that clears the umask.
    let template = env.tstore().cli_config(&cfg).command();
    let mut cmd = Command::new("sh");
    cmd.env_clear()
        .arg("-c")
        .arg("umask 000; exec \"$0\" \"$@\"")
        .arg(template.get_program());
    for (k, v) in template.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    run_ok(cmd.arg("init").arg(&dir));
    let root_mode = fs_err::metadata(&env.store).unwrap().mode() & 0o7777;
    assert_eq!(root_mode, 0o700);
    assert_nothing_writable_by_others(&env.store);

    // A second user can neither read nor write the store, nor read through its mount.
    let index = env.store.join("index.sqlite");
    let out = as_other_user(&["cat", &index.to_string_lossy()]);
    assert!(!out.status.success(), "the other user read the index");
    let out = as_other_user(&["touch", &env.store.join("x").to_string_lossy()]);
    assert!(!out.status.success(), "the other user wrote into the store");
    let provider = env
        .mount
        .join("providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64");
    assert!(provider.is_dir(), "the owner reads through the mount");
    let out = as_other_user(&["ls", &provider.to_string_lossy()]);
    assert!(!out.status.success(), "the other user listed the mount");
}

#[test]
fn a_store_of_another_user_or_open_to_others_is_refused_with_a_hint() {
    assert_root();
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();

    // `sudo tstore init` against a user's store is this case seen from the other side.
    std::os::unix::fs::chown(&env.store, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    let again = env.checkout("again", &[("main.tf", NULL_CONFIG)]);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .arg("init")
        .arg(&again)
        .fails();
    let err = stderr(&out);
    assert!(
        err.contains("belongs to user id 65534") && err.contains("chown -R 0"),
        "{err}"
    );
    assert!(!again.join(".terraform").exists());
    assert!(!again.join(".terraform.lock.hcl").exists());
    std::os::unix::fs::chown(&env.store, Some(0), Some(0)).unwrap();

    fs_err::set_permissions(&env.store, std::fs::Permissions::from_mode(0o775)).unwrap();
    let out = env.tstore().cli_config(&cfg).args(["store", "ls"]).fails();
    let err = stderr(&out);
    assert!(
        err.contains("can be written by other users") && err.contains("chmod 700"),
        "{err}"
    );
    fs_err::set_permissions(&env.store, std::fs::Permissions::from_mode(0o700)).unwrap();
    env.tstore().cli_config(&cfg).args(["store", "ls"]).ok();
}

#[test]
fn a_private_file_of_a_local_module_stays_private_in_its_copy() {
    let env = TestEnv::new();
    let dir = env.checkout(
        "stack",
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            ("m/secret.txt", "private\n"),
            (
                "module-package.meta.hcl",
                "module \"m\" {\n  path = \"./m\"\n  read-only = { self = false }\n}\n",
            ),
        ],
    );
    fs_err::set_permissions(
        dir.join("m/secret.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    env.tstore().no_fuse().arg("init").arg(&dir).ok();
    let copy = dir.join(".terraform/modules/m");
    let mode = |p: &Path| fs_err::metadata(p).unwrap().mode() & 0o777;
    assert!(
        fs_err::symlink_metadata(&copy).unwrap().is_dir(),
        "a private copy"
    );
    assert_eq!(mode(&copy.join("secret.txt")), 0o600);
    assert_eq!(mode(&copy.join("main.tf")) & 0o644, 0o644);
}
