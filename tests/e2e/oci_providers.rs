//! Providers from an OCI registry (`oci_mirror` installation method): a real registry
//! (Debian's `docker-registry`) over HTTPS on loopback, holding the real null provider in
//! OpenTofu's layout; `tstore init` installs from it, the lock file records the hashes it
//! verified, and the real terraform plans the result.

use std::path::Path;

use tstore_test_support::oci_registry::{sha256_digest, OciRegistry};
use tstore_test_support::{lock_file, mirror, run_ok, stderr, TestEnv, NULL_H1};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};
use crate::oci_fixture::{null_zips, oci_cli_config};

#[test]
fn init_installs_from_an_oci_mirror_and_terraform_plans() {
    let env = TestEnv::new();
    let registry = OciRegistry::start();
    let zips = null_zips();
    registry.push_provider("mirror/hashicorp/null", "2.1.2", &zips);
    // An older version, so selection has something to choose from.
    registry.push_provider("mirror/hashicorp/null", "2.0.0", &zips[..1]);
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let cfg = oci_cli_config(&env, &registry.host());
    let zh = format!(
        "zh:{}",
        sha256_digest(&zips[0].1).trim_start_matches("sha256:")
    );

    let dir = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let init = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .args(["init", "--json"])
        .arg(&dir);
    let report = json(&init.ok());
    let lock = lock_file(&dir);
    assert!(lock.contains("version     = \"2.1.2\""), "{lock}");
    assert!(lock.contains(NULL_H1), "{lock}");
    // The terraform flavor locks what terraform locks from a mirror: the h1: only.
    assert!(!lock.contains(&zh), "{lock}");
    let text = report.to_string();
    assert!(text.contains("oci_mirror:"), "{text}");

    let entry = dir.join(format!(
        ".terraform/providers/{}/{}/{}",
        mirror::NULL_ADDR,
        mirror::NULL_VERSION,
        mirror::PLATFORM
    ));
    assert!(fs_err::symlink_metadata(&entry).unwrap().is_symlink());
    let mut plan = env.terraform(&dir);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);

    // A checkout without a lock file lists the registry's versions and reads the
    // manifests, but the zip's digest is a zh: the store verified: no blob download.
    let zip_get = format!(
        "GET /v2/mirror/hashicorp/null/blobs/{}",
        sha256_digest(&zips[0].1)
    );
    let count = |r: &OciRegistry| {
        r.requests()
            .iter()
            .filter(|l| l.starts_with(&zip_get))
            .count()
    };
    assert_eq!(count(&registry), 1, "{:#?}", registry.requests());
    let unlocked = env.checkout("c", &[("main.tf", NULL_CONFIG)]);
    let fresh = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&unlocked);
    fresh.ok();
    assert_eq!(lock_file(&unlocked), lock);
    assert_eq!(count(&registry), 1, "the zip was downloaded again");
    assert!(registry.requests().iter().any(|l| l.contains("/tags/list")));

    // With the lock file, the store alone serves the locked package: the registry can be
    // gone.
    drop(registry);
    let dir2 = env.checkout("b", &[("main.tf", NULL_CONFIG)]);
    fs_err::copy(
        dir.join(".terraform.lock.hcl"),
        dir2.join(".terraform.lock.hcl"),
    )
    .unwrap();
    let again = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&dir2);
    again.ok();
    assert_eq!(lock_file(&dir2), lock);
}

#[test]
fn an_oci_mirror_without_the_provider_says_where_it_looked() {
    let env = TestEnv::new();
    let registry = OciRegistry::start();
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let cfg = oci_cli_config(&env, &registry.host());
    let dir = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let init = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&dir);
    let out = init.fails();
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}/mirror/hashicorp/null", registry.host())),
        "{err}"
    );
    assert!(!dir.join(".terraform.lock.hcl").exists());
}

#[test]
fn an_oci_mirror_template_must_name_each_provider() {
    let env = TestEnv::new();
    let cfg = env.root.path().join("bad.tfrc");
    fs_err::write(
        &cfg,
        "provider_installation {\n  oci_mirror {\n    repository_template = \"r.example.test/mirror/${type}\"\n  }\n}\n",
    )
    .unwrap();
    let dir = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let init = env.tstore().cli_config(&cfg).arg("init").arg(&dir);
    let err = stderr(&init.fails());
    assert!(err.contains("must use ${hostname}"), "{err}");
    assert!(!Path::new(&dir.join(".terraform")).exists());

    // Each include pattern names a namespace, but not the same one: hashicorp/null and
    // other/null would share a repository, and each version's tag.
    fs_err::write(
        &cfg,
        "provider_installation {\n  oci_mirror {\n    repository_template = \"r.example.test/mirror/${type}\"\n    include = [\"example.test/hashicorp/*\", \"example.test/other/*\"]\n  }\n}\n",
    )
    .unwrap();
    let init = env.tstore().cli_config(&cfg).arg("init").arg(&dir);
    let err = stderr(&init.fails());
    assert!(err.contains("must use ${namespace}"), "{err}");
    assert!(!Path::new(&dir.join(".terraform")).exists());
}
