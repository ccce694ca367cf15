//! Where tstore meets CI: a pull request's author controls the checkout, the job's
//! environment holds secrets, and the job log is readable by that author. Each test plays
//! one attack with the real binary and asserts what must hold.

use std::os::unix::fs::symlink;
use std::path::Path;

use tstore_test_support::{stderr, stdout, TestEnv};

use crate::common::tstore;

/// A value that must never reach a job log.
const SECRET: &str = "tok-5ecret-do-not-print-7f3a";

fn init(env: &TestEnv, dir: &Path) -> std::process::Output {
    tstore(env, None)
        .env("TSTORE_NO_FUSE", "1")
        .env("TF_TOKEN_private_example", SECRET)
        .arg("init")
        .arg(dir)
        .output()
        .expect("run tstore")
}

#[track_caller]
fn assert_no_secret(out: &std::process::Output, case: &str) {
    let all = format!("{}{}", stdout(out), stderr(out));
    assert!(
        !all.contains(SECRET) && !all.contains("KEY-MATERIAL") && !all.contains("KEYMATERIAL"),
        "{case}: the output holds a secret:\n{all}"
    );
}

/// tstore's own files committed as symlinks to the process environment, or to a private
/// key outside the checkout, are refused as links; nothing of their targets is printed.
#[test]
fn own_files_linked_to_secrets_are_not_read_or_printed() {
    let env = TestEnv::new();
    let key = env.root.path().join("private/id_key");
    fs_err::create_dir_all(key.parent().unwrap()).unwrap();
    fs_err::write(&key, "KEY-MATERIAL = \"\n-----BEGIN KEY-----\n").unwrap();
    for target in [Path::new("/proc/self/environ"), key.as_path()] {
        for (name, own_file) in [
            ("policy", ".tstore.hcl"),
            ("root-meta", "module-package.meta.hcl"),
        ] {
            let case = format!("{own_file} -> {}", target.display());
            let dir = env.checkout(
                &format!("{name}-{}", target.file_name().unwrap().to_string_lossy()),
                &[
                    ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
                    ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
                ],
            );
            symlink(target, dir.join(own_file)).unwrap();
            let out = init(&env, &dir);
            assert_no_secret(&out, &case);
            assert!(!out.status.success(), "{case}: init succeeded");
            assert!(
                stderr(&out).contains("symbolic link"),
                "{case}: the error does not say why:\n{}",
                stderr(&out)
            );
            assert!(
                !dir.join(".terraform").exists(),
                "{case}: a failed init changed the checkout"
            );
        }
    }
}

/// A syntax error in a regular `.tstore.hcl` says where, not what the line holds; a
/// `terraform.tfvars` linked to the environment (tofu reads it for early evaluation) fails
/// without printing it.
#[test]
fn syntax_errors_of_hostile_files_quote_nothing() {
    let env = TestEnv::new();
    let dir = env.checkout(
        "bad-policy",
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            (
                ".tstore.hcl",
                &format!("modules {{\n  x = {SECRET} ! \n}}\n"),
            ),
        ],
    );
    let out = init(&env, &dir);
    assert!(!out.status.success(), "init succeeded: {}", stderr(&out));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    assert_no_secret(&out, "a .tstore.hcl with a syntax error");

    let dir = env.checkout(
        "tfvars",
        &[
            (
                "main.tf",
                "variable \"v\" {\n  type = string\n}\nmodule \"m\" {\n  source = \"./m/${var.v}\"\n}\n",
            ),
            ("m/a/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    );
    // An identifier-shaped secret parses as a variable reference, so only evaluation fails.
    let outside = env.root.path().join("private/credentials");
    fs_err::create_dir_all(outside.parent().unwrap()).unwrap();
    fs_err::write(&outside, "v = KEYMATERIAL_abc123\n").unwrap();
    for target in [Path::new("/proc/self/environ"), outside.as_path()] {
        let link = dir.join("terraform.tfvars");
        let _ = fs_err::remove_file(&link);
        symlink(target, &link).unwrap();
        let out = tstore(&env, None)
            .env("TSTORE_NO_FUSE", "1")
            .env("TSTORE_FLAVOR", "tofu")
            .env("TF_TOKEN_private_example", SECRET)
            .arg("init")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(!out.status.success(), "init succeeded: {}", stderr(&out));
        let case = format!("terraform.tfvars -> {}", target.display());
        assert_no_secret(&out, &case);
        assert!(
            !stderr(&out).contains("KEYMATERIAL"),
            "{case}: {}",
            stderr(&out)
        );
    }
}

/// A module named by absolute path or `file://` is the user's own directory, as a local
/// module outside the checkout is: `.terraform/modules/KEY` links to it (terraform's file
/// getter links it too), nothing of it enters the store or is copied into the checkout, so
/// a 0600 key in a 0700 directory is never made readable to others. Even a policy that asks
/// for private copies does not copy it.
#[test]
fn absolute_path_modules_are_read_in_place_never_copied() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let private = env.root.path().join("private-modules/net");
    fs_err::create_dir_all(private.join("sub")).unwrap();
    fs_err::write(private.join("main.tf"), "output \"x\" {\n  value = 1\n}\n").unwrap();
    fs_err::write(
        private.join("sub/main.tf"),
        "output \"y\" {\n  value = 2\n}\n",
    )
    .unwrap();
    fs_err::write(private.join("deploy.key"), "KEY-MATERIAL\n").unwrap();
    fs_err::set_permissions(
        private.join("deploy.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    fs_err::set_permissions(
        private.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let p = private.display();
    let dir = env.checkout(
        "abs",
        &[
            (
                "main.tf",
                &format!(
                    "module \"a\" {{\n  source = \"{p}\"\n}}\nmodule \"b\" {{\n  source = \"file://{p}\"\n}}\nmodule \"c\" {{\n  source = \"{p}//sub\"\n}}\n"
                ),
            ),
            (".tstore.hcl", "modules {\n  default = \"copy\"\n}\n"),
        ],
    );
    let out = init(&env, &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    for key in ["a", "b", "c"] {
        let slot = dir.join(".terraform/modules").join(key);
        assert_eq!(
            fs_err::read_link(&slot).unwrap(),
            private,
            "{key} does not link to the directory"
        );
    }
    let records = crate::common::module_records(&dir, &["Key", "Dir"]);
    assert!(
        records.contains(&vec!["c".into(), ".terraform/modules/c/sub".into()]),
        "{records:?}"
    );
    // Nothing of the directory was copied anywhere: not into the checkout, not the store.
    for root in [dir.join(".terraform"), env.store.clone()] {
        for entry in walkdir::WalkDir::new(&root).follow_links(false) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                let text = fs_err::read(entry.path()).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&text).contains("KEY-MATERIAL"),
                    "{} holds the key",
                    entry.path().display()
                );
            }
        }
    }
    // The judge reads the same modules through the links.
    let plan = env
        .terraform(&dir)
        .args(["validate", "-no-color"])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    // A call removed later takes its link with it, and the directory is untouched.
    fs_err::write(
        dir.join("main.tf"),
        format!("module \"a\" {{\n  source = \"{p}\"\n}}\n"),
    )
    .unwrap();
    let out = init(&env, &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs_err::symlink_metadata(dir.join(".terraform/modules/b")).is_err());
    assert!(private.join("deploy.key").exists());
    assert_eq!(
        fs_err::metadata(private.join("deploy.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}
