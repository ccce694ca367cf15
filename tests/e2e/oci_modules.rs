//! Module packages in an OCI registry (`oci://` sources, tofu flavor): installed by tag and
//! by digest, the stored layer reused; pushed from one store and installed by another.

use std::path::Path;

use tstore_test_support::oci_registry::{sha256_digest, OciRegistry};
use tstore_test_support::{mirror, run_ok, stderr, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;

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
        env.tstore()
            .env("SSL_CERT_FILE", &ca)
            .env("TSTORE_FLAVOR", "tofu")
            .arg("init")
            .arg(dir)
            .ok()
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
    let records = tstore_test_support::module_records(&by_tag);
    assert!(
        records
            .iter()
            .any(|r| r.key == "greeting" && r.source.starts_with("oci://")),
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
    let cmd = env.tstore().env("SSL_CERT_FILE", &ca).arg("init").arg(&tf);
    let err = stderr(&cmd.fails());
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
        env.tstore()
            .env("SSL_CERT_FILE", ca)
            .env("TSTORE_FLAVOR", "tofu")
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
    tofu(&a, &ca_a).arg("init").arg(&dir_a).ok();
    let listed = json(&tofu(&a, &ca_a).args(["store", "ls", "--json"]).ok());
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
        json(
            &tofu(&a, &ca_a)
                .args(["push", "--json", "--module", &id])
                .arg(&target)
                .ok(),
        )
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
    let err = stderr(
        &tofu(&a, &ca_a)
            .args(["push", "--module", &id])
            .arg(&taken)
            .fails(),
    );
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
    tofu(&a, &ca_a)
        .args(["push", "--force", "--module", &id])
        .arg(&taken)
        .ok();
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
    tofu(&b, &ca_b).arg("init").arg(&dir_b).ok();
    assert_eq!(
        fs_err::read_to_string(dir_b.join(".terraform/modules/greeting/main.tf")).unwrap(),
        fs_err::read_to_string(dir_a.join(".terraform/modules/greeting/main.tf")).unwrap(),
    );
}
