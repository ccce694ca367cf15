//! A checkout where terraform ran first: its `terraform init` copied each module package
//! into `.terraform/modules/KEY`. `tstore init` then fills those slots with its links; a
//! copy holding nothing more than its package goes, one holding more (a file the module
//! wrote into its own directory, an edit) is moved aside, never deleted, and said.

use std::path::Path;

use tstore_test_support::{run_ok, stderr, TestEnv};

use crate::common::tstore;
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
    let tstore_init = |dir: &Path| {
        run_ok(
            tstore(&env, None)
                .env("TSTORE_NO_FUSE", "1")
                .arg("init")
                .arg(dir),
        )
    };

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
