//! `tstore push` of providers to an OCI registry: one runner pushes its store and another
//! installs from the registry alone (skopeo, another OCI client, reads what was pushed);
//! the layer is the origin's or the mirror's own zip when it can be had, and a rebuilt one,
//! with a warning, when it cannot.

use tstore_test_support::oci_registry::{sha256_digest, OciRegistry};
use tstore_test_support::{lock_file, mirror, run_ok, TestEnv, NULL_H1};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};
use crate::oci_fixture::{RunnerA, RunnerB};

/// Two CI runners: A installs from the origin registry and pushes its store to an OCI
/// registry; the origin goes away; B, with its own store and an `oci_mirror`, installs from
/// the OCI registry alone, and terraform plans B's checkout.
#[test]
fn a_runner_pushes_its_store_and_another_installs_from_the_oci_registry_alone() {
    let RunnerA {
        oci,
        runner_a,
        ca,
        origin,
        origin_cfg,
    } = RunnerA::start();
    let dir_a = runner_a.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .arg("init")
        .arg(&dir_a)
        .ok();
    let lock_a = lock_file(&dir_a);

    let target = format!("oci://{}/mirror/${{namespace}}/${{type}}", oci.host());
    let push = |env: &TestEnv| {
        let cmd = env
            .tstore()
            .cli_config(&origin_cfg)
            .env("SSL_CERT_FILE", &ca)
            .args(["push", "--json", "--provider", "hashicorp/null"])
            .arg(&target);
        json(&cmd.ok())
    };
    let first = push(&runner_a);
    let pushed = &first["pushed"][0];
    assert_eq!(pushed["provider"], "registry.terraform.io/hashicorp/null");
    assert_eq!(pushed["version"], "2.1.2");
    assert_eq!(pushed["platforms"], serde_json::json!(["linux_amd64"]));
    assert_eq!(pushed["blobs_uploaded"], 2, "{first}");
    // skopeo, another OCI client, reads what was pushed: the index names the provider and
    // its platform manifest, and that manifest's one layer is the zip.
    // The store did not keep the origin's zip: the push fetched it from the origin (checked
    // against the signed zh: the store recorded), so nothing was rebuilt.
    assert_eq!(pushed["rebuilt"], serde_json::json!([]), "{first}");
    let skopeo_raw = |reference: &str| skopeo_raw(&oci, &runner_a, &ca, reference);
    let index = skopeo_raw(":2.1.2");
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    assert_eq!(index["artifactType"], "application/vnd.opentofu.provider");
    let entry = &index["manifests"][0];
    assert_eq!(entry["platform"]["os"], "linux");
    assert_eq!(entry["platform"]["architecture"], "amd64");
    let manifest = skopeo_raw(&format!("@{}", entry["digest"].as_str().unwrap()));
    assert_eq!(
        manifest["artifactType"],
        "application/vnd.opentofu.provider-target"
    );
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
    assert_eq!(manifest["layers"][0]["mediaType"], "archive/zip");
    // The layer is the origin's zip: its digest is a zh: of the lock written from the origin.
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let zh = format!("\"zh:{}\"", layer.strip_prefix("sha256:").unwrap());
    assert!(lock_a.contains(&zh), "{zh} not in A's lock:\n{lock_a}");
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );

    let again = push(&runner_a);
    assert_eq!(again["pushed"][0]["blobs_uploaded"], 0, "{again}");
    assert_eq!(
        again["pushed"][0]["digest"], pushed["digest"],
        "pushing is idempotent"
    );
    drop(origin);

    let RunnerB {
        runner_b,
        cfg_b,
        ca_b,
        dir_b,
    } = RunnerB::install_with_lock_of(&oci, &dir_a);
    // The layer was the origin's zip: B's lock is A's, byte for byte.
    assert_eq!(lock_file(&dir_b), lock_a, "B's lock is A's");
    let mut plan = runner_b.terraform(&dir_b);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);

    // A checkout without a lock file on B gets the same version and h1: from the OCI mirror.
    let fresh = runner_b.checkout("fresh", &[("main.tf", NULL_CONFIG)]);
    let init_fresh = runner_b
        .tstore()
        .cli_config(&cfg_b)
        .env("SSL_CERT_FILE", &ca_b)
        .arg("init")
        .arg(&fresh);
    init_fresh.ok();
    assert!(lock_file(&fresh).contains(NULL_H1));
}

/// `skopeo inspect --raw` of `mirror/hashicorp/null{reference}` in `oci`, trusting `ca`.
fn skopeo_raw(
    oci: &OciRegistry,
    env: &TestEnv,
    ca: &std::path::Path,
    reference: &str,
) -> serde_json::Value {
    let certs = env.root.path().join("certs");
    fs_err::create_dir_all(&certs).unwrap();
    fs_err::copy(ca, certs.join("ca.crt")).unwrap();
    let mut cmd = std::process::Command::new("skopeo");
    cmd.args(["inspect", "--raw", "--cert-dir"])
        .arg(&certs)
        .arg(format!(
            "docker://{}/mirror/hashicorp/null{reference}",
            oci.host()
        ));
    json(&run_ok(&mut cmd))
}

/// A store that keeps archives pushes the origin's own zip: the layer's digest is a `zh:`
/// the lock written from the origin already holds (plain tofu checks a layer against the
/// lock's `zh:` hashes before downloading it), nothing is rebuilt, and runner B's lock file
/// is A's, unchanged.
#[test]
fn a_store_that_keeps_archives_pushes_the_origins_zip() {
    let RunnerA {
        oci,
        runner_a,
        ca,
        origin,
        origin_cfg,
    } = RunnerA::start();
    let dir_a = runner_a.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let init_a = runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .env("TSTORE_KEEP_ARCHIVES", "1")
        .arg("init")
        .arg(&dir_a);
    init_a.ok();
    let lock_a = lock_file(&dir_a);
    let push = runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .env("SSL_CERT_FILE", &ca)
        .args(["push", "--json", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    let out = json(&push.ok());
    assert_eq!(out["pushed"][0]["rebuilt"], serde_json::json!([]), "{out}");
    let index = skopeo_raw(&oci, &runner_a, &ca, ":2.1.2");
    let manifest = skopeo_raw(
        &oci,
        &runner_a,
        &ca,
        &format!("@{}", index["manifests"][0]["digest"].as_str().unwrap()),
    );
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let zh = format!("\"zh:{}\"", layer.strip_prefix("sha256:").unwrap());
    assert!(lock_a.contains(&zh), "{zh} not in A's lock:\n{lock_a}");
    drop(origin);

    let RunnerB {
        runner_b, dir_b, ..
    } = RunnerB::install_with_lock_of(&oci, &dir_a);
    assert_eq!(lock_file(&dir_b), lock_a, "B's lock is A's");
    let mut plan = runner_b.terraform(&dir_b);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);
}

/// When the origin's zip cannot be had at push time (the origin is gone), or with
/// `--rebuild-layers`, the layer is built from the stored files: the push warns and lists
/// the platform as rebuilt, and runner B still installs it (through the `h1:`), keeping
/// every hash A locked beside the rebuilt zip's new `zh:`.
#[test]
fn a_zip_that_cannot_be_fetched_is_rebuilt_with_a_warning() {
    let RunnerA {
        oci,
        runner_a,
        ca,
        origin,
        origin_cfg,
    } = RunnerA::start();
    let dir_a = runner_a.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .arg("init")
        .arg(&dir_a)
        .ok();
    let lock_a = lock_file(&dir_a);
    let target = format!("oci://{}/mirror/${{namespace}}/${{type}}", oci.host());

    // --rebuild-layers asks no source, and says what it built.
    let rebuild = runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .env("SSL_CERT_FILE", &ca)
        .args([
            "push",
            "--json",
            "--rebuild-layers",
            "--provider",
            "hashicorp/null",
        ])
        .arg(&target);
    let out = rebuild.output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["pushed"][0]["rebuilt"],
        serde_json::json!(["linux_amd64"])
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--rebuild-layers was given"), "{stderr}");

    // Without the flag, but with the origin gone: a warning, and the same rebuilt layer.
    drop(origin);
    let push = runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(&target);
    let out = push.output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Cannot fetch the zip of registry.terraform.io/hashicorp/null 2.1.2"),
        "{stderr}"
    );
    assert!(stderr.contains("it could not be fetched"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 blobs uploaded"), "{stdout}");

    let RunnerB {
        runner_b, dir_b, ..
    } = RunnerB::install_with_lock_of(&oci, &dir_a);
    let lock_b = lock_file(&dir_b);
    for line in lock_a
        .lines()
        .filter(|l| l.contains("h1:") || l.contains("zh:"))
    {
        assert!(
            lock_b.contains(line.trim()),
            "{line}\nA:\n{lock_a}\nB:\n{lock_b}"
        );
    }
    // Under the terraform flavor a mirror's zip adds no zh:, so the rebuilt zip changes
    // nothing in the lock: the same lock on both runners.
    assert_eq!(lock_b, lock_a, "the rebuilt zip changes nothing");
    let mut plan = runner_b.terraform(&dir_b);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);
}

/// From a packed filesystem mirror, too, the push publishes the mirror's own zip: the
/// store's source memo would skip reading the zip again, but a store that keeps archives
/// reads it once more to keep it, and the layer's digest is the mirror zip's SHA-256.
#[test]
fn the_zip_of_a_packed_filesystem_mirror_is_published_as_it_is() {
    let tstore_test_support::NullMirror { env, mirror, cfg } =
        TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let oci = OciRegistry::start();
    let ca = oci.write_ca(&env.root.path().join("ca.pem"));
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let zip =
        mirror
            .join(mirror::NULL_ADDR)
            .join(mirror::packed_name("null", "2.1.2", "linux_amd64"));
    let mirror_digest = sha256_digest(&fs_err::read(&zip).unwrap());

    let push = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    let out = push.ok();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(
            "Fetching the source's zip of registry.terraform.io/hashicorp/null 2.1.2 (linux_amd64)"
        ),
        "{said}"
    );
    // Only push's own lines: none of init's ("- Reusing previous version ...").
    assert!(
        !said.contains("- Reusing") && !said.contains("- Using"),
        "{said}"
    );
    let index = skopeo_raw(&oci, &env, &ca, ":2.1.2");
    let manifest = skopeo_raw(
        &oci,
        &env,
        &ca,
        &format!("@{}", index["manifests"][0]["digest"].as_str().unwrap()),
    );
    assert_eq!(manifest["layers"][0]["digest"], mirror_digest.as_str());

    // Kept now: a second push fetches nothing and uploads nothing.
    let again = env
        .tstore()
        .cli_config(&cfg)
        .env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    let said = String::from_utf8_lossy(&again.ok().stdout).into_owned();
    assert!(!said.contains("Fetching"), "{said}");
    assert!(said.contains("0 blobs uploaded"), "{said}");
}
