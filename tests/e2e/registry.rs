//! The origin registry protocol, against a loopback server started by each test, judged by
//! the real terraform 1.0.3: an install byte for byte as terraform's, and what is refused.
//! The synthetic registry package and its expected hashes are shared with
//! `registry_locks.rs` (lock files over time) and `registry_words.rs` (what init says).

use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{lock_file, run_ok, snapshot, stderr, stdout, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;

/// A synthetic two-file package; terraform 1.0.3 records its `h1:` as
/// `h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=` from any source.
pub(crate) const FAKE_FILES: [PkgFile<'static>; 2] = [
    PkgFile {
        path: "terraform-provider-fake",
        contents: b"hello\n",
        executable: true,
    },
    PkgFile {
        path: "sub/data.txt",
        contents: b"world\n",
        executable: false,
    },
];

pub(crate) const CONFIG: &str = r#"terraform {
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = "~> 2.1"
    }
    fake = {
      source  = "tstore.test/test/fake"
      version = ">= 1.0.0"
    }
  }
}
"#;

pub(crate) const FAKE_CONFIG: &str = r#"terraform {
  required_providers {
    fake = {
      source = "tstore.test/test/fake"
    }
  }
}
"#;

/// null 2.1.2 (real binary; a second platform with other bytes) and fake 1.0.0 for two
/// platforms, on a registry reached through `host` blocks: a new [`TestEnv`], the registry and
/// the CLI config.
pub(crate) fn registry_with_providers() -> (TestEnv, TestRegistry, std::path::PathBuf) {
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    reg.publish_null();
    let mut fake_darwin = FAKE_FILES;
    fake_darwin[1].contents = b"world (darwin)\n";
    reg.publish(
        "test/fake",
        "1.0.0",
        &[
            ("linux_amd64", mirror::zip_bytes(&FAKE_FILES)),
            ("darwin_amd64", mirror::zip_bytes(&fake_darwin)),
        ],
    );
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["registry.terraform.io", "tstore.test"],
        "  direct {}",
    );
    (env, reg, cfg)
}

#[test]
fn registry_install_lock_file_is_byte_identical_to_terraform() {
    let (env, reg, cfg) = registry_with_providers();
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", CONFIG)]);

    let out = env
        .tstore()
        .cli_config(&cfg)
        .env("TF_TOKEN_tstore_test", "s3cret")
        .arg("init")
        .arg(&ours)
        .ok();
    let text = stdout(&out);
    let signed = format!("(self-signed, key ID {})", reg.key.key_id);
    assert!(
        text.contains(&format!("- Installed hashicorp/null v2.1.2 {signed}")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "- Installed tstore.test/test/fake v1.0.0 {signed}"
        )),
        "{text}"
    );
    // Off a terminal, each download is one plain line on stderr.
    let progress = stderr(&out);
    assert!(
        progress.contains("- Downloading hashicorp/null v2.1.2 from http://127.0.0.1:"),
        "{progress}"
    );
    // The provider host's token goes to its registry API, and no other host's.
    let requests = reg.server.requests();
    let fake_versions = requests
        .iter()
        .find(|r| r.path == "/v1/providers/test/fake/versions")
        .expect("versions were listed");
    assert_eq!(
        fake_versions.authorization.as_deref(),
        Some("Bearer s3cret")
    );
    let null_versions = requests
        .iter()
        .find(|r| r.path == "/v1/providers/hashicorp/null/versions")
        .unwrap();
    assert_eq!(null_versions.authorization, None);

    run_ok(&mut env.terraform_init(&theirs, &cfg));
    let ours_lock = lock_file(&ours);
    let theirs_lock = lock_file(&theirs);
    assert_eq!(ours_lock, theirs_lock, "lock files differ");
    assert_eq!(ours_lock.matches("zh:").count(), 4, "{ours_lock}");

    // terraform works with what tstore linked, without any init of its own.
    run_ok(env.terraform(&ours).args(["providers", "-no-color"]));

    // A second checkout: the signed zh: is in the store, so no archive is downloaded.
    let again = env.checkout("again", &[("main.tf", CONFIG)]);
    let before = reg.server.requests().len();
    let report = json(
        &env.tstore()
            .cli_config(&cfg)
            .args(["init", "--json"])
            .arg(&again)
            .ok(),
    );
    let zips = reg.server.requests()[before..]
        .iter()
        .filter(|r| r.path.ends_with(".zip"))
        .count();
    assert_eq!(zips, 0, "{report}");
    for p in report["providers"].as_array().unwrap() {
        assert_eq!(p["obtained"], "in_store", "{report}");
        assert!(p["source"]
            .as_str()
            .unwrap()
            .starts_with("registry:http://127.0.0.1:"));
        let signed_zh = p["hashes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| {
                h["hash"].as_str().unwrap().starts_with("zh:")
                    && h["disposition"]["reported_by_registry"] == true
                    && h["disposition"]["signed_by_key_ids"][0] == reg.key.key_id.as_str()
            })
            .count();
        assert_eq!(signed_zh, 2, "{report}");
    }
    assert_eq!(lock_file(&again), theirs_lock);
}

/// Run a failing init and check nothing in the working directory changed.
pub(crate) fn refused(env: &TestEnv, cfg: &std::path::Path, expect: &[&str]) {
    let dir = env.checkout("refused", &[("main.tf", FAKE_CONFIG)]);
    let before = snapshot(&dir);
    let out = env.tstore().cli_config(cfg).arg("init").arg(&dir).fails();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for e in expect {
        assert!(err.contains(e), "expected {e:?} in:\n{err}");
    }
    assert_eq!(before, snapshot(&dir), "the working directory changed");
    assert!(!dir.join(".terraform").exists());
}

#[test]
fn registry_bad_signature_is_refused_and_nothing_changes() {
    let (env, reg, cfg) = registry_with_providers();
    let path = "/files/test/fake/1.0.0/SHA256SUMS.sig";
    // A valid signature by the right key, but over other bytes.
    reg.server.route(
        path,
        "application/octet-stream",
        reg.key.sign(b"something else\n"),
    );
    refused(
        &env,
        &cfg,
        &[
            "Error: Failed to install provider",
            "tstore.test/test/fake 1.0.0",
            "failed authentication",
            "does not verify",
        ],
    );
}

#[test]
fn registry_signature_by_unknown_key_is_refused() {
    let (env, reg, cfg) = registry_with_providers();
    let stranger = tstore_test_support::gpg::GpgKey::generate();
    let sums = reg
        .server
        .body("/files/test/fake/1.0.0/SHA256SUMS")
        .unwrap();
    reg.server.route(
        "/files/test/fake/1.0.0/SHA256SUMS.sig",
        "application/octet-stream",
        stranger.sign(&sums),
    );
    refused(
        &env,
        &cfg,
        &[
            "failed authentication",
            &format!("it was made by key ID {}", stranger.key_id),
        ],
    );
}

#[test]
fn registry_archive_not_matching_signed_shasum_is_refused() {
    let (env, reg, cfg) = registry_with_providers();
    reg.server.route(
        "/files/test/fake/1.0.0/terraform-provider-fake_1.0.0_linux_amd64.zip",
        "application/zip",
        mirror::zip_bytes(&[PkgFile {
            path: "terraform-provider-fake",
            contents: b"evil\n",
            executable: true,
        }]),
    );
    refused(
        &env,
        &cfg,
        &[
            "Error: Failed to install provider",
            "does not match the checksums",
        ],
    );
}

#[test]
fn registry_malformed_json_and_unreachable_are_clear_errors() {
    let (env, reg, cfg) = registry_with_providers();
    reg.server.route(
        "/v1/providers/test/fake/versions",
        "application/json",
        "{not json",
    );
    refused(
        &env,
        &cfg,
        &[
            "Failed to query available provider packages",
            "malformed response",
        ],
    );
    drop(reg);
    let (env, reg, cfg) = registry_with_providers();
    drop(reg); // the server is gone
    refused(
        &env,
        &cfg,
        &[
            "Failed to query available provider packages",
            "tstore.test/test/fake",
        ],
    );
}
