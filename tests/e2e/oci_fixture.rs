//! The fixture the `oci_*` tests (and `bake`, `oci_trust`) share: a CLI config with an
//! `oci_mirror`, the null provider's zips, and the two runners of the push-then-install
//! tests ([`RunnerA`] installs from an origin registry, [`RunnerB`] from the OCI registry).

use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{mirror, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

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
        let init_b = runner_b
            .tstore()
            .cli_config(&cfg_b)
            .env("SSL_CERT_FILE", &ca_b)
            .arg("init")
            .arg(&dir_b);
        init_b.ok();
        RunnerB {
            runner_b,
            cfg_b,
            ca_b,
            dir_b,
        }
    }
}
