//! The provider registry and network mirror protocols over real HTTPS: a loopback origin
//! registry (service discovery included) and a network mirror with a certificate from a CA
//! made at test time, trusted by tstore and the real terraform 1.0.3 through
//! `SSL_CERT_FILE`. terraform judges the lock file; then `terraform validate` and `plan` run
//! with the server stopped.

use tstore_test_support::mirror;
use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{lock_file, run_ok, snapshot, stderr, stdout, TestEnv, NULL_H1};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

/// The real null 2.1.2 for linux_amd64 and a stand-in for darwin_amd64, published on an
/// HTTPS registry under `localhost:PORT/hashicorp/null` (real service discovery).
#[test]
fn https_registry_lock_is_byte_identical_to_terraform_then_validate_and_plan_offline() {
    let env = TestEnv::new();
    let reg = TestRegistry::start_tls();
    let ca = reg.write_ca(&env.root.path().join("ca.pem"));
    reg.publish_null();
    let host = reg.host();
    let config = NULL_CONFIG.replace(
        "source  = \"hashicorp/null\"",
        &format!("source  = \"{host}/hashicorp/null\""),
    );
    // No host block: discovery goes to https://localhost:PORT/.well-known/terraform.json.
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/direct.tfrc"),
        &[],
        "  direct {}",
    );
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", config.as_str())]);

    // Without the CA the server is not trusted: a clear error, nothing changes.
    let before = snapshot(&ours);
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&ours).fails();
    let err = stderr(&out);
    for expect in [
        format!("cannot list the versions of {host}/hashicorp/null"),
        "invalid peer certificate: UnknownIssuer".to_owned(),
        "SSL_CERT_FILE".to_owned(),
    ] {
        assert!(err.contains(&expect), "expected {expect:?} in:\n{err}");
    }
    assert_eq!(
        before,
        snapshot(&ours),
        "a failed init changed the checkout"
    );

    let out = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&ours)
        .ok();
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "- Installed {host}/hashicorp/null v2.1.2 (self-signed, key ID {})",
            reg.key.key_id
        )),
        "{text}"
    );
    let discovered = reg
        .server
        .requests()
        .iter()
        .any(|r| r.path == "/.well-known/terraform.json");
    assert!(discovered, "tstore did not use service discovery");

    run_ok(env.terraform_init(&theirs, &cfg).env("SSL_CERT_FILE", &ca));
    let ours_lock = lock_file(&ours);
    let theirs_lock = lock_file(&theirs);
    assert_eq!(ours_lock, theirs_lock, "lock files differ");
    assert!(ours_lock.contains(NULL_H1), "{ours_lock}");
    assert_eq!(ours_lock.matches("zh:").count(), 2, "{ours_lock}");

    // With no CLI config and no server: everything terraform needs is what tstore linked.
    drop(reg);
    env.assert_terraform_validates_and_plans_null(&ours);
}

/// `hashicorp/null` (default host, never contacted) from an HTTPS network mirror at
/// `https://127.0.0.1:PORT/mirror/`: tstore's lock is terraform's plus exactly one line, the
/// `zh:` of the zip tstore verified (the documented difference from terraform 1.0.3).
#[test]
fn https_network_mirror_lock_is_terraforms_then_validate_and_plan_offline() {
    let env = TestEnv::new();
    let reg = TestRegistry::start_tls();
    let ca = reg.write_ca(&env.root.path().join("ca.pem"));
    let zip = mirror::zip_bytes(&mirror::null_files());
    let zip_path = env.root.path().join("null.zip");
    std::fs::write(&zip_path, &zip).unwrap();
    let zh = mirror::zh(&zip_path);
    reg.publish_mirror(
        mirror::NULL_ADDR,
        mirror::NULL_VERSION,
        &[("linux_amd64", zip, vec![NULL_H1.to_owned()])],
    );
    assert!(reg.mirror_url().starts_with("https://127.0.0.1:"));
    let cfg = reg.write_mirror_cli_config(&env.root.path().join("cli-config/mirror.tfrc"));
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", NULL_CONFIG)]);

    let out = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&ours)
        .ok();
    assert!(
        stdout(&out).contains("- Installed hashicorp/null v2.1.2 (verified checksum)"),
        "{}",
        stdout(&out)
    );
    let out = run_ok(env.terraform_init(&theirs, &cfg).env("SSL_CERT_FILE", &ca));
    assert!(
        stdout(&out).contains("Installed hashicorp/null v2.1.2 (verified checksum)"),
        "{}",
        stdout(&out)
    );

    let ours_lock = lock_file(&ours);
    let theirs_lock = lock_file(&theirs);
    let h1_line = format!("    \"{NULL_H1}\",\n");
    assert!(
        theirs_lock.contains(&h1_line) && !theirs_lock.contains("zh:"),
        "{theirs_lock}"
    );
    // The terraform flavor writes what terraform writes: no zh: from a mirror.
    assert_eq!(ours_lock, theirs_lock);
    assert!(!ours_lock.contains(&zh));

    drop(reg);
    env.assert_terraform_validates_and_plans_null(&ours);
}
