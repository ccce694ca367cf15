//! The store mounted read-only with FUSE, served from blobs; mount management and
//! the views-symlink fallback.

use std::path::PathBuf;

use tstore_test_support::{
    mirror, run_ok, stderr, stdout, Layout, NullMirror, TestEnv, Tstore, NULL_PROVIDER_FILE,
};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};

const NULL_REL: &str = "providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";
const NULL_LINK: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";

/// A packed null mirror and a checkout with the null provider, initialized by `tstore init`
/// (which mounts).
fn init_null(no_fuse: bool) -> (NullMirror, PathBuf) {
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let dir = fixture.env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let mut tstore = fixture.env.tstore().cli_config(&fixture.cfg);
    if no_fuse {
        tstore = tstore.no_fuse();
    }
    tstore.arg("init").arg(&dir).ok();
    (fixture, dir)
}

/// `mount --status --json`, checking that the exit status agrees with the state (0 when the
/// mount path serves the store, 32 otherwise).
fn status_of(tstore: Tstore) -> serde_json::Value {
    let out = tstore.args(["mount", "--status", "--json"]).output();
    let st = json(&out);
    let serving = st["state"] == "mounted" || st["state"] == "views-link";
    assert_eq!(
        out.status.code(),
        Some(if serving { 0 } else { 32 }),
        "{st}"
    );
    st
}

fn status(env: &TestEnv) -> serde_json::Value {
    status_of(env.tstore())
}

fn assert_erofs<T: std::fmt::Debug>(what: &str, result: std::io::Result<T>) {
    let err = result.expect_err(what);
    assert_eq!(err.raw_os_error(), Some(30), "{what}: {err}"); // EROFS
}

#[test]
fn init_mounts_fuse_files_match_blobs_mutations_fail_and_terraform_plans() {
    let (NullMirror { env, .. }, dir) = init_null(false);
    let st = status(&env);
    assert_eq!(st["state"], "mounted", "{st}");
    assert!(st["pid"].is_u64(), "{st}");

    let link = std::fs::read_link(dir.join(NULL_LINK)).unwrap();
    assert_eq!(link, env.mount.join(NULL_REL));
    let file = env.mount.join(NULL_REL).join(NULL_PROVIDER_FILE);
    // Byte-identical to the blob (the view file is a hardlink to it) and to the source.
    let served = std::fs::read(&file).unwrap();
    let blob = std::fs::read(
        env.store
            .join("views")
            .join(NULL_REL)
            .join(NULL_PROVIDER_FILE),
    )
    .unwrap();
    assert!(served == blob, "served bytes differ from the blob");
    assert!(served == mirror::null_provider_bytes());
    let meta = std::fs::metadata(&file).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o555);
    assert_eq!(meta.len(), served.len() as u64);

    // As root: every mutation fails with EROFS.
    let pkg = env.mount.join(NULL_REL);
    assert_erofs("create", std::fs::write(pkg.join("new"), "x"));
    assert_erofs(
        "write",
        std::fs::OpenOptions::new().append(true).open(&file),
    );
    assert_erofs("rm", std::fs::remove_file(&file));
    assert_erofs(
        "chmod",
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o777)),
    );
    assert_erofs("mv", std::fs::rename(&file, pkg.join("moved")));
    assert_erofs("mkdir", std::fs::create_dir(pkg.join("d")));
    assert_erofs("ln", std::fs::hard_link(&file, pkg.join("h")));
    assert_erofs("ln -s", std::os::unix::fs::symlink("x", pkg.join("s")));
    assert_erofs("rmdir", std::fs::remove_dir(&pkg));
    let touch = std::process::Command::new("touch")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!touch.status.success());
    assert!(
        stderr(&touch).contains("Read-only file system"),
        "{}",
        stderr(&touch)
    );
    assert!(std::fs::read(&file).unwrap() == served);

    // terraform executes the provider straight from the mount.
    env.assert_terraform_validates_and_plans_null(&dir);
}

#[test]
fn package_ingested_while_mounted_is_visible_at_once() {
    let env = TestEnv::new();
    let out = env.tstore().arg("mount").ok();
    assert!(
        stdout(&out).contains("Mounted the store"),
        "{}",
        stdout(&out)
    );
    let providers = env.mount.join("providers");
    assert_eq!(std::fs::read_dir(&providers).unwrap().count(), 0);
    assert!(env.mount.join("modules").is_dir());

    let mirror_dir = env.root.path().join("mirror");
    let files = [mirror::PkgFile {
        path: "terraform-provider-thing_v1.0.0",
        contents: b"#!/bin/sh\necho thing\n",
        executable: true,
    }];
    mirror::write_unpacked(
        &mirror_dir,
        "example.com/acme/thing",
        "1.0.0",
        "linux_amd64",
        &files,
    );
    env.tstore().args(["store", "import"]).arg(&mirror_dir).ok();
    let file =
        providers.join("example.com/acme/thing/1.0.0/linux_amd64/terraform-provider-thing_v1.0.0");
    assert_eq!(std::fs::read(&file).unwrap(), files[0].contents);
    let names: Vec<_> = std::fs::read_dir(&providers)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["example.com"]);
    let ran = std::process::Command::new(&file).output().unwrap();
    assert_eq!(stdout(&ran), "thing\n");

    let out = env.tstore().arg("umount").ok();
    assert!(stdout(&out).contains("Unmounted"), "{}", stdout(&out));
    assert_eq!(status(&env)["state"], "not-mounted");
    assert!(!env.store.join("mount.pid").exists());
}

#[test]
fn killed_daemon_is_detected_and_the_next_init_remounts() {
    let (NullMirror { env, cfg, .. }, dir) = init_null(false);
    let pid = status(&env)["pid"].as_u64().expect("daemon pid");
    run_ok(std::process::Command::new("kill").args(["-9", &pid.to_string()]));
    let start = std::time::Instant::now();
    while status(&env)["state"] != "stale" {
        assert!(start.elapsed().as_secs() < 10, "mount never went stale");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    assert!(stderr(&out).contains("remounted"), "{}", stderr(&out));
    assert_eq!(status(&env)["state"], "mounted");
    assert!(dir.join(NULL_LINK).join(NULL_PROVIDER_FILE).is_file());
    env.assert_terraform_plans_null(&dir);
}

#[test]
fn fallback_without_fuse_gives_the_same_links_and_switching_keeps_them_valid() {
    let (NullMirror { env, cfg, .. }, dir) = init_null(true);
    assert!(env.mount.is_symlink());
    assert_eq!(
        std::fs::read_link(&env.mount).unwrap(),
        env.store.join("views")
    );
    let st = status_of(env.tstore().no_fuse());
    assert_eq!(st["state"], "views-link", "{st}");
    let link = std::fs::read_link(dir.join(NULL_LINK)).unwrap();
    assert_eq!(link, env.mount.join(NULL_REL));
    env.assert_terraform_plans_null(&dir);

    // Fallback → FUSE: the symlink becomes the mount; the link is unchanged and resolves.
    env.tstore().arg("mount").ok();
    assert_eq!(status(&env)["state"], "mounted");
    assert_eq!(std::fs::read_link(dir.join(NULL_LINK)).unwrap(), link);
    env.assert_terraform_plans_null(&dir);

    // FUSE → fallback.
    env.tstore().arg("umount").ok();
    env.tstore()
        .cli_config(&cfg)
        .arg("--no-fuse")
        .arg("init")
        .arg(&dir)
        .ok();
    assert!(env.mount.is_symlink());
    assert_eq!(std::fs::read_link(dir.join(NULL_LINK)).unwrap(), link);
    env.assert_terraform_plans_null(&dir);
}

/// A mount path belongs to one store: an init with another store (another `TSTORE_HOME`)
/// and the same `TSTORE_MOUNT` is refused with a clear error instead of linking into the
/// first store's packages, and `mount --status` tells the two apart.
#[test]
fn a_mount_path_serves_one_store_only() {
    let (fixture, _dir) = init_null(false);
    let env = &fixture.env;
    assert_eq!(status(env)["state"], "mounted");

    let other_store = env.root.path().join("store-b");
    let dir = env.checkout("other", &[("main.tf", NULL_CONFIG)]);
    let before = tstore_test_support::snapshot(&dir);
    let out = env
        .tstore()
        .cli_config(&fixture.cfg)
        .env("TSTORE_HOME", &other_store)
        .arg("init")
        .arg(&dir)
        .output();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("serves another store"), "{err}");
    assert_eq!(tstore_test_support::snapshot(&dir), before);

    let other = status_of(env.tstore().env("TSTORE_HOME", &other_store));
    assert_eq!(other["state"], "other-store", "{other}");
}

/// A blob damaged while mounted and then repaired by init is
/// served with its good bytes through the mount: the daemon drops its descriptor of the
/// replaced file and the kernel's cached pages.
#[test]
fn a_repaired_blob_is_served_fresh_through_the_mount() {
    use std::os::unix::fs::PermissionsExt;

    let (fixture, dir) = init_null(false);
    let env = &fixture.env;
    let through_mount = env.mount.join(NULL_REL).join(NULL_PROVIDER_FILE);
    let good = mirror::null_provider_bytes();

    // Damage the blob behind the view's hardlink (same size; its mtime changes, which is
    // how init notices: bit rot that keeps the mtime is `store verify`'s to find).
    let view_file = env
        .store
        .join("views")
        .join(NULL_REL)
        .join(NULL_PROVIDER_FILE);
    let meta = std::fs::metadata(&view_file).unwrap();
    let mut damaged = good.to_vec();
    damaged[1000] ^= 0xff;
    std::fs::set_permissions(&view_file, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(&view_file, &damaged).unwrap();
    std::fs::set_permissions(&view_file, meta.permissions()).unwrap();

    // Read through the mount: the daemon opens the damaged blob, the kernel caches its pages.
    assert!(
        std::fs::read(&through_mount).unwrap() != good,
        "the damage is not visible"
    );

    // init notices (its freshness check re-hashes a file whose ctime changed) and repairs.
    env.tstore()
        .cli_config(&fixture.cfg)
        .arg("init")
        .arg(&dir)
        .ok();
    assert!(
        std::fs::read(&view_file).unwrap() == good,
        "init did not repair the store's copy"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let served = std::fs::read(&through_mount).unwrap();
        if served == good {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the mount still serves the damaged bytes after the repair"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
