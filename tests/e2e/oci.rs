//! Providers from an OCI registry (`oci_mirror` installation method): a real registry
//! (Debian's `docker-registry`) over HTTPS on loopback, holding the real null provider in
//! OpenTofu's layout; `tstore init` installs from it, the lock file records the hashes it
//! verified, and the real terraform plans the result.

use std::path::Path;

use tstore_test_support::oci_registry::{sha256_digest, OciRegistry};
use tstore_test_support::{lock_file, mirror, run_fail, run_ok, stderr, TestEnv, NULL_H1};

use crate::common::{json, tstore, NULL_CONFIG};

/// A CLI config with one `oci_mirror` whose repositories are `REGISTRY/mirror/NS/TYPE` for
/// the providers of the terraform flavor's default host (the template may leave out
/// `${hostname}` because `include` fixes it).
pub(crate) fn oci_cli_config(env: &TestEnv, host: &str) -> std::path::PathBuf {
    let path = env.root.path().join("oci.tfrc");
    fs_err::write(
        &path,
        format!(
            "provider_installation {{\n  oci_mirror {{\n    repository_template = \"{}/mirror/${{namespace}}/${{type}}\"\n    include = [\"registry.terraform.io/*/*\"]\n  }}\n}}\n",
            host
        ),
    )
    .unwrap();
    path
}

pub(crate) fn null_zips() -> Vec<(&'static str, Vec<u8>)> {
    let other = mirror::zip_bytes(&[mirror::PkgFile {
        path: tstore_test_support::NULL_PROVIDER_FILE,
        contents: b"not for this platform",
        executable: true,
    }]);
    vec![
        ("linux_amd64", mirror::zip_bytes(&mirror::null_files())),
        ("darwin_amd64", other),
    ]
}

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
    let mut init = tstore(&env, Some(&cfg));
    init.env("SSL_CERT_FILE", &ca)
        .args(["init", "--json"])
        .arg(&dir);
    let report = json(&run_ok(&mut init));
    let lock = lock_file(&dir);
    assert!(lock.contains("version     = \"2.1.2\""), "{lock}");
    assert!(lock.contains(NULL_H1), "{lock}");
    assert!(lock.contains(&zh), "the zip's digest is its zh: {lock}");
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
    let mut fresh = tstore(&env, Some(&cfg));
    fresh.env("SSL_CERT_FILE", &ca).arg("init").arg(&unlocked);
    run_ok(&mut fresh);
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
    let mut again = tstore(&env, Some(&cfg));
    again.env("SSL_CERT_FILE", &ca).arg("init").arg(&dir2);
    run_ok(&mut again);
    assert_eq!(lock_file(&dir2), lock);
}

#[test]
fn an_oci_mirror_without_the_provider_says_where_it_looked() {
    let env = TestEnv::new();
    let registry = OciRegistry::start();
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let cfg = oci_cli_config(&env, &registry.host());
    let dir = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let mut init = tstore(&env, Some(&cfg));
    init.env("SSL_CERT_FILE", &ca).arg("init").arg(&dir);
    let out = run_fail(&mut init);
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
    let mut init = tstore(&env, Some(&cfg));
    init.arg("init").arg(&dir);
    let err = stderr(&run_fail(&mut init));
    assert!(err.contains("must use ${hostname}"), "{err}");
    assert!(!Path::new(&dir.join(".terraform")).exists());

    // Each include pattern names a namespace, but not the same one: hashicorp/null and
    // other/null would share a repository, and each version's tag.
    fs_err::write(
        &cfg,
        "provider_installation {\n  oci_mirror {\n    repository_template = \"r.example.test/mirror/${type}\"\n    include = [\"example.test/hashicorp/*\", \"example.test/other/*\"]\n  }\n}\n",
    )
    .unwrap();
    let mut init = tstore(&env, Some(&cfg));
    init.arg("init").arg(&dir);
    let err = stderr(&run_fail(&mut init));
    assert!(err.contains("must use ${namespace}"), "{err}");
    assert!(!Path::new(&dir.join(".terraform")).exists());
}

/// Runner A of the two-runner tests: an OCI registry (HTTPS, test CA written to `ca`), and an
/// origin registry serving the null provider that A's CLI configuration installs from.
pub(crate) struct RunnerA {
    pub(crate) oci: OciRegistry,
    pub(crate) runner_a: TestEnv,
    pub(crate) ca: std::path::PathBuf,
    pub(crate) origin: tstore_test_support::registry::TestRegistry,
    pub(crate) origin_cfg: std::path::PathBuf,
}

impl RunnerA {
    pub(crate) fn start() -> RunnerA {
        let oci = OciRegistry::start();
        let runner_a = TestEnv::new();
        let ca = oci.write_ca(&runner_a.root.path().join("ca.pem"));
        let origin = tstore_test_support::registry::TestRegistry::start();
        origin.publish_null();
        let origin_cfg = origin.write_cli_config(
            &runner_a.root.path().join("cli-config/origin.tfrc"),
            &["registry.terraform.io"],
            "  direct {}",
        );
        RunnerA {
            oci,
            runner_a,
            ca,
            origin,
            origin_cfg,
        }
    }
}

/// Runner B of the two-runner tests, after `tstore init` of a checkout `dir_b` (with A's lock
/// file) whose only provider source is the `oci_mirror` of `oci`.
pub(crate) struct RunnerB {
    pub(crate) runner_b: TestEnv,
    pub(crate) cfg_b: std::path::PathBuf,
    pub(crate) ca_b: std::path::PathBuf,
    pub(crate) dir_b: std::path::PathBuf,
}

impl RunnerB {
    pub(crate) fn install_with_lock_of(oci: &OciRegistry, dir_a: &std::path::Path) -> RunnerB {
        let runner_b = TestEnv::new();
        let cfg_b = oci_cli_config(&runner_b, &oci.host());
        let ca_b = oci.write_ca(&runner_b.root.path().join("ca.pem"));
        let dir_b = runner_b.checkout("stack", &[("main.tf", NULL_CONFIG)]);
        fs_err::copy(
            dir_a.join(".terraform.lock.hcl"),
            dir_b.join(".terraform.lock.hcl"),
        )
        .unwrap();
        let mut init_b = tstore(&runner_b, Some(&cfg_b));
        init_b.env("SSL_CERT_FILE", &ca_b).arg("init").arg(&dir_b);
        run_ok(&mut init_b);
        RunnerB {
            runner_b,
            cfg_b,
            ca_b,
            dir_b,
        }
    }
}

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
    run_ok(tstore(&runner_a, Some(&origin_cfg)).arg("init").arg(&dir_a));
    let lock_a = lock_file(&dir_a);

    let target = format!("oci://{}/mirror/${{namespace}}/${{type}}", oci.host());
    let push = |env: &TestEnv| {
        let mut cmd = tstore(env, Some(&origin_cfg));
        cmd.env("SSL_CERT_FILE", &ca)
            .args(["push", "--json", "--provider", "hashicorp/null"])
            .arg(&target);
        json(&run_ok(&mut cmd))
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
    let mut init_fresh = tstore(&runner_b, Some(&cfg_b));
    init_fresh
        .env("SSL_CERT_FILE", &ca_b)
        .arg("init")
        .arg(&fresh);
    run_ok(&mut init_fresh);
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
    let mut init_a = tstore(&runner_a, Some(&origin_cfg));
    init_a
        .env("TSTORE_KEEP_ARCHIVES", "1")
        .arg("init")
        .arg(&dir_a);
    run_ok(&mut init_a);
    let lock_a = lock_file(&dir_a);
    let mut push = tstore(&runner_a, Some(&origin_cfg));
    push.env("SSL_CERT_FILE", &ca)
        .args(["push", "--json", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    let out = json(&run_ok(&mut push));
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
    run_ok(tstore(&runner_a, Some(&origin_cfg)).arg("init").arg(&dir_a));
    let lock_a = lock_file(&dir_a);
    let target = format!("oci://{}/mirror/${{namespace}}/${{type}}", oci.host());

    // --rebuild-layers asks no source, and says what it built.
    let mut rebuild = tstore(&runner_a, Some(&origin_cfg));
    rebuild
        .env("SSL_CERT_FILE", &ca)
        .args([
            "push",
            "--json",
            "--rebuild-layers",
            "--provider",
            "hashicorp/null",
        ])
        .arg(&target);
    let out = rebuild.output().unwrap();
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
    let mut push = tstore(&runner_a, Some(&origin_cfg));
    push.env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(&target);
    let out = push.output().unwrap();
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
    assert_ne!(lock_b, lock_a, "the rebuilt zip's zh: is new");
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
    run_ok(tstore(&env, Some(&cfg)).arg("init").arg(&dir));
    let zip =
        mirror
            .join(mirror::NULL_ADDR)
            .join(mirror::packed_name("null", "2.1.2", "linux_amd64"));
    let mirror_digest = sha256_digest(&fs_err::read(&zip).unwrap());

    let mut push = tstore(&env, Some(&cfg));
    push.env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    let out = run_ok(&mut push);
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
    let mut again = tstore(&env, Some(&cfg));
    again
        .env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    let said = String::from_utf8_lossy(&run_ok(&mut again).stdout).into_owned();
    assert!(!said.contains("Fetching"), "{said}");
    assert!(said.contains("0 blobs uploaded"), "{said}");
}

/// A module package as a zip: one file declaring an output.
fn greeting_module_zip(greeting: &str) -> Vec<u8> {
    let main = format!("output \"greeting\" {{\n  value = \"{greeting}\"\n}}\n");
    mirror::zip_bytes(&[mirror::PkgFile {
        path: "main.tf",
        contents: main.as_bytes(),
        executable: false,
    }])
}

fn module_root(source: &str) -> String {
    format!("module \"greeting\" {{\n  source = \"{source}\"\n}}\n\noutput \"greeting\" {{\n  value = module.greeting.greeting\n}}\n")
}

#[test]
fn oci_module_sources_install_by_tag_and_by_digest_and_reuse_the_stored_layer() {
    let env = TestEnv::new();
    let registry = OciRegistry::start();
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let zip = greeting_module_zip("hello");
    let digest = registry.push_module("modules/greeting", "1.0.0", &zip);
    let host = registry.host();
    let init = |dir: &Path| {
        let mut cmd = tstore(&env, None);
        cmd.env("SSL_CERT_FILE", &ca)
            .env("TSTORE_FLAVOR", "tofu")
            .arg("init")
            .arg(dir);
        run_ok(&mut cmd)
    };

    let by_tag = env.checkout(
        "tag",
        &[(
            "main.tf",
            &module_root(&format!("oci://{host}/modules/greeting?tag=1.0.0")),
        )],
    );
    init(&by_tag);
    let installed =
        fs_err::read_to_string(by_tag.join(".terraform/modules/greeting/main.tf")).unwrap();
    assert!(installed.contains("\"hello\""), "{installed}");
    let records = crate::common::module_records(&by_tag, &["Key", "Source"]);
    assert!(
        records
            .iter()
            .any(|r| r[0] == "greeting" && r[1].starts_with("oci://")),
        "{records:?}"
    );
    // terraform reads what was installed (modules.json, the package directory).
    let mut validate = env.terraform(&by_tag);
    validate.args(["validate", "-no-color"]);
    run_ok(&mut validate);

    // By digest: the same package, and its layer is not downloaded again.
    let blob_get = format!("GET /v2/modules/greeting/blobs/{}", sha256_digest(&zip));
    let blob_gets = || {
        registry
            .requests()
            .iter()
            .filter(|l| l.starts_with(&blob_get))
            .count()
    };
    assert_eq!(blob_gets(), 1);
    let by_digest = env.checkout(
        "digest",
        &[(
            "main.tf",
            &module_root(&format!("oci://{host}/modules/greeting?digest={digest}")),
        )],
    );
    init(&by_digest);
    assert_eq!(
        fs_err::read_to_string(by_digest.join(".terraform/modules/greeting/main.tf")).unwrap(),
        installed
    );
    assert_eq!(blob_gets(), 1, "the stored layer was downloaded again");

    // A tag moved to new content installs the new content.
    registry.push_module(
        "modules/greeting",
        "1.0.0",
        &greeting_module_zip("hi again"),
    );
    let moved = env.checkout(
        "moved",
        &[(
            "main.tf",
            &module_root(&format!("oci://{host}/modules/greeting?tag=1.0.0")),
        )],
    );
    init(&moved);
    assert!(
        fs_err::read_to_string(moved.join(".terraform/modules/greeting/main.tf"))
            .unwrap()
            .contains("hi again")
    );

    // terraform does not read oci:// sources: the terraform flavor says so.
    let tf = env.checkout(
        "tf",
        &[(
            "main.tf",
            &module_root(&format!("oci://{host}/modules/greeting?tag=1.0.0")),
        )],
    );
    let mut cmd = tstore(&env, None);
    cmd.env("SSL_CERT_FILE", &ca).arg("init").arg(&tf);
    let err = stderr(&run_fail(&mut cmd));
    assert!(err.contains("--flavor tofu"), "{err}");
}

/// A module package pushed from one store is installed by another from the OCI registry;
/// pushing it again uploads nothing.
#[test]
fn a_module_package_pushed_by_one_store_installs_in_another() {
    let registry = OciRegistry::start();
    let host = registry.host();
    registry.push_module("src/greeting", "1.0.0", &greeting_module_zip("pushed"));
    let tofu = |env: &TestEnv, ca: &Path| {
        let mut cmd = tstore(env, None);
        cmd.env("SSL_CERT_FILE", ca).env("TSTORE_FLAVOR", "tofu");
        cmd
    };

    let a = TestEnv::new();
    let ca_a = registry.write_ca(&a.root.path().join("ca.pem"));
    let dir_a = a.checkout(
        "a",
        &[(
            "main.tf",
            &module_root(&format!("oci://{host}/src/greeting?tag=1.0.0")),
        )],
    );
    run_ok(tofu(&a, &ca_a).arg("init").arg(&dir_a));
    let listed = json(&run_ok(tofu(&a, &ca_a).args(["store", "ls", "--json"])));
    let id = listed["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "module")
        .and_then(|p| p["name"].as_str())
        .expect("a module package in the store")
        .to_owned();
    let target = format!("oci://{host}/published/greeting?tag=2.0.0");
    let push = || {
        json(&run_ok(
            tofu(&a, &ca_a)
                .args(["push", "--json", "--module", &id])
                .arg(&target),
        ))
    };
    let first = push();
    assert_eq!(first["pushed_module"]["blobs_uploaded"], 2, "{first}");
    let second = push();
    assert_eq!(second["pushed_module"]["blobs_uploaded"], 0, "{second}");
    assert_eq!(
        second["pushed_module"]["digest"],
        first["pushed_module"]["digest"]
    );

    // A tag naming another module package is left alone without --force.
    let theirs = registry.push_module(
        "published/greeting",
        "3.0.0",
        &greeting_module_zip("someone else's"),
    );
    let taken = format!("oci://{host}/published/greeting?tag=3.0.0");
    let err = stderr(&run_fail(
        tofu(&a, &ca_a).args(["push", "--module", &id]).arg(&taken),
    ));
    assert!(
        err.contains("published/greeting:3.0.0 already names another manifest")
            && err.contains("--force"),
        "{err}"
    );
    let tagged = || {
        sha256_digest(&registry.get(
            "/v2/published/greeting/manifests/3.0.0",
            "application/vnd.oci.image.manifest.v1+json",
        ))
    };
    assert_eq!(tagged(), theirs);
    run_ok(
        tofu(&a, &ca_a)
            .args(["push", "--force", "--module", &id])
            .arg(&taken),
    );
    assert_eq!(tagged(), first["pushed_module"]["digest"].as_str().unwrap());

    let b = TestEnv::new();
    let ca_b = registry.write_ca(&b.root.path().join("ca.pem"));
    let dir_b = b.checkout(
        "b",
        &[(
            "main.tf",
            &module_root(&format!("oci://{host}/published/greeting?tag=2.0.0")),
        )],
    );
    run_ok(tofu(&b, &ca_b).arg("init").arg(&dir_b));
    assert_eq!(
        fs_err::read_to_string(dir_b.join(".terraform/modules/greeting/main.tf")).unwrap(),
        fs_err::read_to_string(dir_a.join(".terraform/modules/greeting/main.tf")).unwrap(),
    );
}

/// A registry behind htpasswd: the login comes from a docker-style config.json (as `docker
/// login` writes it); without it, init fails naming the registry, and nothing is written.
#[test]
fn a_registry_login_comes_from_the_docker_config() {
    use base64::Engine as _;

    let env = TestEnv::new();
    let registry = OciRegistry::start_with_login("ci", "s3cret");
    registry.push_provider("mirror/hashicorp/null", "2.1.2", &null_zips()[..1]);
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let cfg = oci_cli_config(&env, &registry.host());
    let init = |dir: &Path| {
        let mut cmd = tstore(&env, Some(&cfg));
        cmd.env("SSL_CERT_FILE", &ca).arg("init").arg(dir);
        cmd
    };

    // A file found by searching that is not valid is skipped with a warning: it belongs to
    // other programs too.
    let xdg_auth = env.root.path().join("xdg/config/containers/auth.json");
    fs_err::create_dir_all(xdg_auth.parent().unwrap()).unwrap();
    fs_err::write(&xdg_auth, "{not json").unwrap();
    let without = env.checkout("without", &[("main.tf", NULL_CONFIG)]);
    let err = stderr(&run_fail(&mut init(&without)));
    assert!(err.contains("requires authentication"), "{err}");
    assert!(
        err.contains("skipping registry credentials") && err.contains("auth.json"),
        "{err}"
    );
    assert!(err.contains(&registry.host()), "{err}");
    assert!(!without.join(".terraform.lock.hcl").exists());

    let auth = base64::engine::general_purpose::STANDARD.encode("ci:s3cret");
    fs_err::create_dir_all(env.home.join(".docker")).unwrap();
    fs_err::write(
        env.home.join(".docker/config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let with = env.checkout("with", &[("main.tf", NULL_CONFIG)]);
    run_ok(&mut init(&with));
    assert!(lock_file(&with).contains(NULL_H1));

    // A credential helper named for the registry (`credHelpers`), run from PATH with
    // `https://REGISTRY` on stdin, as OpenTofu runs it.
    let bin = env.root.path().join("helper-bin");
    fs_err::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-tstoretest");
    fs_err::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread host\n[ \"$host\" = \"https://{}\" ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\necho '{{\"ServerURL\":\"'$host'\",\"Username\":\"ci\",\"Secret\":\"s3cret\"}}'\n",
            registry.host()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    fs_err::write(
        env.home.join(".docker/config.json"),
        format!(
            r#"{{"credHelpers":{{"{}":"tstoretest"}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let by_helper = env.checkout("helper", &[("main.tf", NULL_CONFIG)]);
    run_ok(init(&by_helper).env("PATH", &path));
    assert!(lock_file(&by_helper).contains(NULL_H1));

    // The CLI configuration's oci_credentials block wins over the files: here the files
    // name a helper that is not on PATH, which would fail if it were asked.
    let with_block = env.root.path().join("oci-login.tfrc");
    fs_err::write(
        &with_block,
        format!(
            "{}\noci_credentials \"{}/mirror\" {{\n  username = \"ci\"\n  password = \"s3cret\"\n}}\n",
            fs_err::read_to_string(&cfg).unwrap(),
            registry.host()
        ),
    )
    .unwrap();
    let by_block = env.checkout("block", &[("main.tf", NULL_CONFIG)]);
    let mut cmd = tstore(&env, Some(&with_block));
    cmd.env("SSL_CERT_FILE", &ca).arg("init").arg(&by_block);
    run_ok(&mut cmd);
    assert!(lock_file(&by_block).contains(NULL_H1));

    // The oci_default_credentials block, as OpenTofu reads it. Each case is a CLI config
    // next to `ci-auth.json` (a login), with ~/.docker/config.json still naming the helper.
    fs_err::write(
        env.root.path().join("ci-auth.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let with_defaults = |name: &str, block: &str| {
        let file = env.root.path().join(format!("{name}.tfrc"));
        fs_err::write(
            &file,
            format!(
                "{}\noci_default_credentials {{\n{block}\n}}\n",
                fs_err::read_to_string(&cfg).unwrap()
            ),
        )
        .unwrap();
        let dir = env.checkout(name, &[("main.tf", NULL_CONFIG)]);
        let mut cmd = tstore(&env, Some(&file));
        cmd.env("SSL_CERT_FILE", &ca)
            .env("PATH", &path)
            .arg("init")
            .arg(&dir);
        cmd
    };
    // Discovery off: not even the helper the docker config names is asked.
    let err = stderr(&run_fail(&mut with_defaults(
        "off",
        "  discover_ambient_credentials = false",
    )));
    assert!(err.contains("requires authentication"), "{err}");
    // Named files replace the default search (a relative name is beside the CLI config).
    run_ok(&mut with_defaults(
        "named",
        "  docker_style_config_files = [\"ci-auth.json\"]",
    ));
    let err = stderr(&run_fail(&mut with_defaults(
        "missing",
        "  docker_style_config_files = [\"nowhere.json\"]",
    )));
    assert!(err.contains("nowhere.json"), "{err}");
    // A helper for every registry, with no file read at all.
    run_ok(&mut with_defaults(
        "global",
        "  docker_style_config_files = []\n  docker_credentials_helper = \"tstoretest\"",
    ));
}

/// The bearer flow against a real registry that trusts only a token service: runner A, with
/// a docker-style login, gets push tokens and publishes its store; runner B, anonymous, gets
/// pull tokens and installs, and its own push is refused with the registry's answer.
#[test]
fn the_bearer_flow_pushes_with_a_login_and_pulls_anonymously() {
    use base64::Engine as _;
    use tstore_test_support::oci_token::TokenService;
    use tstore_test_support::registry::TestRegistry;

    let tokens = TokenService::start("ci", "s3cret");
    let oci = OciRegistry::start_with_token_service(&tokens);
    // One trust file for both HTTPS servers.
    let trust = |env: &TestEnv| {
        let registry_ca = oci.write_ca(&env.root.path().join("registry-ca.pem"));
        let tokens_ca = env.root.path().join("tokens-ca.pem");
        tokens.write_https_ca(&tokens_ca);
        let both = env.root.path().join("ca.pem");
        let pem = fs_err::read_to_string(registry_ca).unwrap()
            + &fs_err::read_to_string(tokens_ca).unwrap();
        fs_err::write(&both, pem).unwrap();
        both
    };

    let runner_a = TestEnv::new();
    let ca_a = trust(&runner_a);
    let origin = TestRegistry::start();
    origin.publish_null();
    let origin_cfg = origin.write_cli_config(
        &runner_a.root.path().join("cli-config/origin.tfrc"),
        &["registry.terraform.io"],
        "  direct {}",
    );
    let dir_a = runner_a.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    run_ok(tstore(&runner_a, Some(&origin_cfg)).arg("init").arg(&dir_a));
    fs_err::create_dir_all(runner_a.home.join(".docker")).unwrap();
    fs_err::write(
        runner_a.home.join(".docker/config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
            oci.host(),
            base64::engine::general_purpose::STANDARD.encode("ci:s3cret")
        ),
    )
    .unwrap();
    let target = format!("oci://{}/mirror/${{namespace}}/${{type}}", oci.host());
    let mut push = tstore(&runner_a, Some(&origin_cfg));
    push.env("SSL_CERT_FILE", &ca_a)
        .args(["push", "--json", "--provider", "hashicorp/null"])
        .arg(&target);
    let pushed = json(&run_ok(&mut push));
    assert_eq!(pushed["pushed"][0]["blobs_uploaded"], 2, "{pushed}");
    let pushes: Vec<_> = tokens.requests();
    assert!(
        pushes.iter().any(|(anonymous, scope)| !anonymous
            && scope == "repository:mirror/hashicorp/null:pull,push"),
        "{pushes:?}"
    );
    drop(origin);

    let runner_b = TestEnv::new();
    let ca_b = trust(&runner_b);
    let cfg_b = oci_cli_config(&runner_b, &oci.host());
    let dir_b = runner_b.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let mut init_b = tstore(&runner_b, Some(&cfg_b));
    init_b.env("SSL_CERT_FILE", &ca_b).arg("init").arg(&dir_b);
    run_ok(&mut init_b);
    assert!(lock_file(&dir_b).contains(NULL_H1));
    let pulls = tokens.requests()[pushes.len()..].to_vec();
    assert!(
        !pulls.is_empty() && pulls.iter().all(|(anonymous, _)| *anonymous),
        "{pulls:?}"
    );
    let mut plan = runner_b.terraform(&dir_b);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);

    // An anonymous token carries no push: the registry refuses, and tstore says so.
    let mut push_b = tstore(&runner_b, Some(&cfg_b));
    push_b
        .env("SSL_CERT_FILE", &ca_b)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(&target);
    let err = stderr(&run_fail(&mut push_b));
    assert!(err.contains(&oci.host()), "{err}");
    assert!(
        err.contains("anonymous access does not allow this"),
        "{err}"
    );
}
