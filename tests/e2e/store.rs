//! The store commands: import, ls, du, verify; concurrency and hostile archives.

use tstore_test_support::hostile::HostileKind;
use tstore_test_support::{stderr, Layout, NullMirror, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;

/// Two separate processes importing the same package at the same time both succeed,
/// and the store ends with one package, one tree and one view.
#[test]
fn concurrent_imports_of_the_same_package_both_succeed() {
    let NullMirror { env, mirror, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let children: Vec<_> = (0..2)
        .map(|_| {
            env.tstore()
                .args(["store", "import"])
                .arg(&mirror)
                .command()
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "import failed: {}", stderr(&out));
    }
    let du = json(&env.tstore().args(["store", "du", "--json"]).ok());
    assert_eq!(du["packages"], 1, "{du}");
    assert_eq!(du["trees"], 1, "{du}");
    assert_eq!(du["blobs"], 1, "{du}");
    let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
    assert_eq!(ls["packages"].as_array().unwrap().len(), 1, "{ls}");
    let verify = json(&env.tstore().args(["store", "verify", "--json"]).ok());
    assert_eq!(verify["blobs_checked"], 1, "{verify}");
}

/// Every class of hostile archive is rejected with a clear error, and nothing new
/// becomes visible in the store.
#[test]
fn hostile_archives_are_rejected() {
    let env = TestEnv::new();
    for kind in HostileKind::ALL {
        let mirror_dir = env.root.path().join(format!("mirror-{}", kind.name()));
        let dir = mirror_dir.join("example.com/test/evil");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("terraform-provider-evil_1.0.0_linux_amd64.zip"),
            kind.zip_bytes(),
        )
        .unwrap();
        let out = env
            .tstore()
            .args(["store", "import"])
            .arg(&mirror_dir)
            .fails();
        let err = stderr(&out);
        assert!(
            err.contains("terraform-provider-evil_1.0.0_linux_amd64.zip"),
            "{}: error names the archive: {err}",
            kind.name()
        );
        let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
        assert_eq!(
            ls["packages"],
            serde_json::json!([]),
            "{}: {ls}",
            kind.name()
        );
        let views = env.store.join("views/providers/example.com");
        assert!(!views.exists(), "{}: a view appeared", kind.name());
    }
}

/// `store verify` reports a blob whose bytes changed on disk, and exits non-zero.
#[test]
fn verify_reports_a_corrupted_blob() {
    use std::os::unix::fs::PermissionsExt;
    let NullMirror { env, mirror, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    env.tstore().args(["store", "import"]).arg(&mirror).ok();
    let clean = json(&env.tstore().args(["store", "verify", "--json"]).ok());
    assert_eq!(clean["corrupt"], serde_json::json!([]), "{clean}");

    let blob = walkdir::WalkDir::new(env.store.join("blobs-v1"))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_type().is_file())
        .expect("a blob file")
        .into_path();
    std::fs::set_permissions(&blob, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();

    let out = env.tstore().args(["store", "verify", "--json"]).fails();
    let report = json(&out);
    assert_eq!(report["corrupt"].as_array().unwrap().len(), 1, "{report}");
}

/// The archive limits are configurable: a package over a lowered per-entry limit is
/// refused, and a bad value is a clear error.
#[test]
fn archive_limits_come_from_the_environment() {
    let NullMirror { env, mirror, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let out = env
        .tstore()
        .env("TSTORE_MAX_ENTRY_BYTES", "1000000")
        .args(["store", "import"])
        .arg(&mirror)
        .fails();
    assert!(
        stderr(&out).contains("terraform-provider-null_v2.1.2_x4"),
        "{}",
        stderr(&out)
    );
    let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
    assert_eq!(ls["packages"], serde_json::json!([]), "{ls}");

    let out = env
        .tstore()
        .env("TSTORE_MAX_RATIO", "lots")
        .args(["store", "ls"])
        .fails();
    assert!(
        stderr(&out).contains("TSTORE_MAX_RATIO"),
        "{}",
        stderr(&out)
    );
}
