//! `tstore init -plugin-dir=DIR`: providers come only from those directories (filesystem
//! mirrors, packed or unpacked), never from the CLI configuration's methods, and the
//! directories are recorded in `.terraform/plugin_path` byte for byte as terraform records
//! them.

use tstore_test_support::{lock_file, mirror, run_ok, stderr, Layout, NullMirror, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};

/// The CLI configuration names a mirror that holds null; an empty `-plugin-dir` replaces
/// it, so init fails naming the directory it searched and writes nothing.
#[test]
fn plugin_dirs_replace_the_cli_configurations_methods() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let empty = env.root.path().join("empty-plugins");
    fs_err::create_dir_all(&empty).unwrap();
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .arg("init")
        .arg(format!("-plugin-dir={}", empty.display()))
        .arg(&dir)
        .fails();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("registry.terraform.io/hashicorp/null")
            && err.contains(&empty.display().to_string()),
        "{err}"
    );
    assert!(
        !err.contains(&env.root.path().join("mirror").display().to_string()),
        "{err}"
    );
    assert!(!dir.join(".terraform.lock.hcl").exists());
    assert!(!dir.join(".terraform/plugin_path").exists());

    // A relative directory is taken from the current directory, as tofu takes it.
    let plugins = mirror::null_unpacked(&env.root.path().join("plugins"));
    let report = json(
        &env.tstore()
            .cli_config(&cfg)
            .current_dir(&dir)
            .args(["init", "-plugin-dir=../../plugins", "-json"])
            .ok(),
    );
    let source = report["providers"][0]["source"]
        .as_str()
        .unwrap_or_default();
    assert!(
        source.starts_with(&format!("filesystem_mirror:{}/", plugins.display())),
        "{report}"
    );
    assert_eq!(
        fs_err::read_to_string(dir.join(".terraform/plugin_path")).unwrap(),
        "[\n  \"../../plugins\"\n]"
    );
}

/// Two `-plugin-dir`s, the second a packed mirror: null comes from it (and its `zh:` goes
/// into the lock file), although the CLI configuration names only an empty mirror; the
/// `plugin_path` written is terraform's for the same flags; a later init without the flag
/// keeps it, `-plugin-dir=` removes it.
#[test]
fn plugin_dirs_install_from_the_mirrors_given_and_are_recorded_as_terraform_does() {
    let env = TestEnv::new();
    let nothing = env.root.path().join("configured-mirror");
    fs_err::create_dir_all(&nothing).unwrap();
    let cfg = env.cli_config_fs_mirror(&nothing);
    let empty = env.root.path().join("plugins-a");
    fs_err::create_dir_all(&empty).unwrap();
    let packed = mirror::null_packed(&env.root.path().join("plugins-b"));
    let flags = [
        format!("-plugin-dir={}", empty.display()),
        format!("-plugin-dir={}", packed.display()),
    ];
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", NULL_CONFIG)]);

    let out = env
        .tstore()
        .cli_config(&cfg)
        .arg("init")
        .args(&flags)
        .arg("-json")
        .arg(&ours)
        .ok();
    let report = json(&out);
    let provider = &report["providers"][0];
    assert_eq!(provider["provider"], "registry.terraform.io/hashicorp/null");
    let source = provider["source"].as_str().unwrap_or_default();
    assert!(
        source.starts_with(&format!("filesystem_mirror:{}/", packed.display())),
        "{report}"
    );
    let lock = lock_file(&ours);
    // terraform locks the h1: alone from a mirror, and so does the terraform flavor.
    assert!(!lock.contains("zh:"), "{lock}");
    env.assert_terraform_plans_null(&ours);

    run_ok(env.terraform_init(&theirs, &cfg).args(&flags));
    let want = fs_err::read(theirs.join(".terraform/plugin_path")).unwrap();
    let got = fs_err::read(ours.join(".terraform/plugin_path")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );

    // Without the flag the record stays, and the CLI configuration is used again: the
    // lock file's package is in the store, so the empty configured mirror does not matter.
    env.tstore().cli_config(&cfg).arg("init").arg(&ours).ok();
    assert_eq!(
        fs_err::read(ours.join(".terraform/plugin_path")).unwrap(),
        want
    );
    env.tstore()
        .cli_config(&cfg)
        .args(["init", "-plugin-dir="])
        .arg(&ours)
        .ok();
    assert!(!ours.join(".terraform/plugin_path").exists());
}
