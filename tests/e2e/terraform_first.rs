//! A checkout where terraform ran first: its `terraform init` copied each module package
//! into `.terraform/modules/KEY`. `tstore init` then fills those slots with its links; a
//! copy holding nothing more than its package goes, one holding more (a file the module
//! wrote into its own directory, an edit) is moved aside, never deleted, and said.

use std::path::Path;

use tstore_test_support::{run_ok, stderr, TestEnv};

use crate::common::TstoreEnv as _;
use crate::config_loader::module_repo;

fn slot(dir: &Path) -> std::path::PathBuf {
    dir.join(".terraform/modules/m")
}

/// The entries of `.terraform/modules` tstore moved aside (`.m.tstore-….kept`).
fn kept(dir: &Path) -> Vec<std::path::PathBuf> {
    fs_err::read_dir(dir.join(".terraform/modules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".kept"))
        .collect()
}

#[test]
fn a_terraform_copy_with_more_than_its_package_is_kept_aside() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let source = module_repo(&base);
    let main = format!("module \"m\" {{\n  source = \"{source}\"\n}}\n");
    let tstore_init = |dir: &Path| env.tstore().no_fuse().arg("init").arg(dir).ok();

    // terraform's copy, as it left it: replaced by the link, nothing kept, nothing said.
    let plain = env.checkout("plain", &[("main.tf", main.as_str())]);
    run_ok(
        env.terraform(&plain)
            .args(["init", "-backend=false", "-no-color"]),
    );
    assert!(slot(&plain).join("main.tf").is_file());
    let out = tstore_init(&plain);
    assert!(fs_err::symlink_metadata(slot(&plain)).unwrap().is_symlink());
    assert!(kept(&plain).is_empty());
    assert!(!stderr(&out).contains("moved to"), "{}", stderr(&out));

    // A file written into terraform's copy: the directory is moved aside with it.
    let wrote = env.checkout("wrote", &[("main.tf", main.as_str())]);
    run_ok(
        env.terraform(&wrote)
            .args(["init", "-backend=false", "-no-color"]),
    );
    fs_err::write(slot(&wrote).join("out.txt"), "generated").unwrap();
    let out = tstore_init(&wrote);
    assert!(fs_err::symlink_metadata(slot(&wrote)).unwrap().is_symlink());
    let aside = kept(&wrote);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        fs_err::read_to_string(aside[0].join("out.txt")).unwrap(),
        "generated"
    );
    let err = stderr(&out);
    assert!(
        err.contains(".terraform/modules/m") && err.contains(&*aside[0].to_string_lossy()),
        "{err}"
    );
    // The next init leaves it where it is, and terraform works with tstore's install.
    tstore_init(&wrote);
    assert_eq!(kept(&wrote), aside);
    run_ok(env.terraform(&wrote).args(["validate", "-no-color"]));
}

/// `tstore init`, then `terraform init -upgrade` (which replaces tstore's link with its own
/// copy), then a module writes a file into that copy, then `tstore init`: the copy and the
/// file are kept aside, because a directory where tstore recorded a link is not tstore's.
/// And a name alone allows no removal: a directory under tstore's temporary copy name, or
/// a link under its temporary link name pointing elsewhere, is left as it is.
#[test]
fn terraform_upgrade_after_tstore_then_a_written_file_is_kept_not_deleted() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let source = module_repo(&base);
    let main = format!("module \"m\" {{\n  source = \"{source}\"\n}}\n");
    let dir = env.checkout("stack", &[("main.tf", main.as_str())]);
    let tstore_init = |dir: &Path| env.tstore().no_fuse().arg("init").arg(dir).ok();
    tstore_init(&dir);
    assert!(fs_err::symlink_metadata(slot(&dir)).unwrap().is_symlink());
    run_ok(
        env.terraform(&dir)
            .args(["init", "-upgrade", "-backend=false", "-no-color"]),
    );
    assert!(fs_err::symlink_metadata(slot(&dir)).unwrap().is_dir());
    fs_err::write(slot(&dir).join("out.txt"), "generated").unwrap();
    // Entries under tstore's temporary names that tstore did not make.
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(modules.join(".m.tstore-copy/keep")).unwrap();
    fs_err::write(modules.join(".m.tstore-copy/keep/notes"), "mine").unwrap();
    std::os::unix::fs::symlink(&base, modules.join(".m.tstore-1-1.tmp")).unwrap();

    let out = tstore_init(&dir);
    assert!(fs_err::symlink_metadata(slot(&dir)).unwrap().is_symlink());
    let aside = kept(&dir);
    assert_eq!(aside.len(), 1, "{aside:?}\n{}", stderr(&out));
    assert_eq!(
        fs_err::read_to_string(aside[0].join("out.txt")).unwrap(),
        "generated"
    );
    assert_eq!(
        fs_err::read_to_string(modules.join(".m.tstore-copy/keep/notes")).unwrap(),
        "mine"
    );
    assert!(fs_err::symlink_metadata(modules.join(".m.tstore-1-1.tmp"))
        .unwrap()
        .is_symlink());
}
