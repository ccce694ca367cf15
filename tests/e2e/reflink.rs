//! A private copy of a module package costs (almost) no blocks on a filesystem with
//! reflinks: on a real XFS (`mkfs.xfs -m reflink=1` on a loop file, mounted by the test as
//! root), a second checkout's copy of a 32 MiB package shares the store's extents (tstore
//! asks for a reflink, and the kernel's `copy_file_range` shares extents there too), while a
//! copy without sharing costs the file's size.

use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::{GitRepo, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;

/// A loop-mounted XFS with reflinks, unmounted on drop.
struct Xfs {
    mount: PathBuf,
}

impl Xfs {
    fn new(base: &Path) -> Xfs {
        assert!(
            nix_is_root(),
            "the reflink test mounts a loop file system and must run as root (scripts/test does)"
        );
        let image = base.join("xfs.img");
        let mount = base.join("xfs");
        fs_err::create_dir_all(&mount).unwrap();
        sh(&format!(
            "truncate -s 400M {0} && mkfs.xfs -q -m reflink=1 {0}",
            image.display()
        ));
        sh(&format!(
            "mount -o loop {} {}",
            image.display(),
            mount.display()
        ));
        Xfs { mount }
    }

    /// Blocks in use, in KiB, after a sync.
    fn used_kib(&self) -> u64 {
        sh("sync");
        let out = Command::new("df")
            .args(["-k", "--output=used"])
            .arg(&self.mount)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .expect("df prints the used KiB")
    }
}

impl Drop for Xfs {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+w")
            .arg(&self.mount)
            .status();
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}

fn nix_is_root() -> bool {
    String::from_utf8_lossy(&Command::new("id").arg("-u").output().unwrap().stdout).trim() == "0"
}

fn sh(script: &str) {
    let out = Command::new("sh").arg("-ec").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_private_copy_shares_the_stores_extents_on_a_reflink_filesystem() {
    let env = TestEnv::new();
    let xfs = Xfs::new(env.root.path());
    let on_xfs = |p: &str| xfs.mount.join(p);

    // A git module of one 32 MiB file, copied by the repository's policy.
    fs_err::write(
        on_xfs(".tstore.hcl"),
        "modules {\n  default = \"copy\"\n}\n",
    )
    .unwrap();
    let src = on_xfs("src");
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("main.tf"), "output \"x\" {\n  value = 1\n}\n").unwrap();
    sh(&format!(
        "head -c 33554432 /dev/urandom > {}/big.bin",
        src.display()
    ));
    GitRepo::init(&src, &[])
        .commit("init")
        .tag("v1")
        .clone_bare(xfs.mount.join("mod.git"));
    fs_err::remove_dir_all(&src).unwrap();
    let main = format!(
        "module \"m\" {{\n  source = \"git::file://{}/mod.git?ref=v1\"\n}}\n",
        xfs.mount.display()
    );
    let init = |name: &str| -> (PathBuf, serde_json::Value) {
        let dir = on_xfs(name);
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(dir.join("main.tf"), &main).unwrap();
        let out = env
            .tstore()
            .env("TSTORE_HOME", on_xfs("store"))
            .env("TSTORE_MOUNT", on_xfs("mount"))
            .no_fuse()
            .args(["init", "--json"])
            .arg(&dir)
            .ok();
        (dir, json(&out))
    };
    let (first, report) = init("first");
    assert_eq!(report["modules"][0]["action"], "copy", "{report}");
    let before = xfs.used_kib();
    let (second, _) = init("second");
    let after = xfs.used_kib();

    let copy = second.join(".terraform/modules/m/big.bin");
    assert_eq!(fs_err::metadata(&copy).unwrap().len(), 33554432);
    assert_eq!(
        fs_err::read(&copy).unwrap(),
        fs_err::read(first.join(".terraform/modules/m/big.bin")).unwrap()
    );
    // A full copy would use 32768 KiB more; the reflink copy uses metadata only.
    assert!(
        after.saturating_sub(before) < 2048,
        "the second checkout's copy used {} KiB",
        after.saturating_sub(before)
    );
    // And it is a private, writable copy.
    fs_err::write(second.join(".terraform/modules/m/scratch"), "x").unwrap();
    // The measure sees a real copy: one without shared extents costs the whole file.
    let before = xfs.used_kib();
    sh(&format!(
        "cp --reflink=never {} {}",
        copy.display(),
        on_xfs("plain.bin").display()
    ));
    assert!(
        xfs.used_kib() - before >= 32000,
        "a plain copy must use the file's size"
    );
}
