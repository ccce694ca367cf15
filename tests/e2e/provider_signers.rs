//! Who signed a registry provider, in terraform's words (internal/getproviders/
//! package_authentication.go, `signatureAuthentication`): "signed by HashiCorp" when
//! HashiCorp's own release key verifies the `SHA256SUMS` signature; "signed by a HashiCorp
//! partner, key ID K" when the registry's signing key carries a trust signature that
//! HashiCorp's partners key verifies (one that does not verify fails the install);
//! "self-signed, key ID K" otherwise. Test key pairs stand in for HashiCorp's two keys
//! (`TSTORE_TEST_TRUST_ROOTS`); the real keys are embedded for every other run.

use std::path::{Path, PathBuf};

use tstore_test_support::gpg::GpgKey;
use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{stdout, TestEnv};

use crate::common::TstoreEnv as _;

const CONFIG: &str = "terraform {\n  required_providers {\n    thing = {\n      source = \"hashicorp/thing\"\n    }\n  }\n}\n";

/// A registry serving `hashicorp/thing` 1.0.0 as `registry.terraform.io`, its key given
/// `trust_signature` (empty: none); the CLI configuration.
fn registry(
    env: &TestEnv,
    trust_signature: impl FnOnce(&GpgKey) -> String,
) -> (TestRegistry, PathBuf) {
    let reg = TestRegistry::start();
    reg.set_trust_signature(&trust_signature(&reg.key));
    let files = [PkgFile {
        path: "terraform-provider-thing_v1.0.0",
        contents: b"thing\n",
        executable: true,
    }];
    reg.publish(
        "hashicorp/thing",
        "1.0.0",
        &[("linux_amd64", mirror::zip_bytes(&files))],
    );
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["registry.terraform.io"],
        "  direct {}",
    );
    (reg, cfg)
}

/// A directory of stand-ins for HashiCorp's release key and partners key.
fn trust_roots(env: &TestEnv, official: &GpgKey, partners: &GpgKey) -> PathBuf {
    let dir = env.root.path().join("trust-roots");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("official.asc"), &official.armor).unwrap();
    fs_err::write(dir.join("partners.asc"), &partners.armor).unwrap();
    dir
}

fn init(env: &TestEnv, cfg: &Path, roots: Option<&Path>, dir: &Path) -> std::process::Output {
    let mut tstore = env
        .tstore()
        .cli_config(cfg)
        .no_fuse()
        .env("TSTORE_FLAVOR", "terraform")
        .arg("init")
        .arg(dir);
    if let Some(roots) = roots {
        tstore = tstore.env("TSTORE_TEST_TRUST_ROOTS", roots);
    }
    tstore.output()
}

/// The init succeeded and its install line says `auth`, in terraform's words.
fn installed(out: &std::process::Output, auth: &str) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = stdout(out);
    assert!(
        said.contains(&format!("- Installed hashicorp/thing v1.0.0 ({auth})")),
        "{said}"
    );
}

#[test]
fn hashicorps_own_key_partners_and_everyone_else_are_named_as_terraform_names_them() {
    let partners = GpgKey::generate();
    let unrelated = GpgKey::generate();

    // The registry's key is (the stand-in for) HashiCorp's release key.
    let env = TestEnv::new();
    let (reg, cfg) = registry(&env, |_| String::new());
    let roots = trust_roots(&env, &reg.key, &partners);
    let dir = env.checkout("official", &[("main.tf", CONFIG)]);
    installed(&init(&env, &cfg, Some(&roots), &dir), "signed by HashiCorp");
    // Without the stand-ins, the embedded HashiCorp keys: the same key is a third party's
    // (an empty store, so the package is downloaded and its signature judged again).
    let other = TestEnv::new();
    let dir = other.checkout("embedded", &[("main.tf", CONFIG)]);
    installed(
        &init(&other, &cfg, None, &dir),
        &format!("self-signed, key ID {}", reg.key.key_id),
    );

    // A partner: the registry's key carries a trust signature by the partners key.
    let env = TestEnv::new();
    let (reg, cfg) = registry(&env, |key| partners.sign_armored(&key.export_binary()));
    let roots = trust_roots(&env, &unrelated, &partners);
    let dir = env.checkout("partner", &[("main.tf", CONFIG)]);
    installed(
        &init(&env, &cfg, Some(&roots), &dir),
        &format!("signed by a HashiCorp partner, key ID {}", reg.key.key_id),
    );

    // A trust signature the partners key did not make fails the install, as in terraform.
    let env = TestEnv::new();
    let (_reg, cfg) = registry(&env, |key| unrelated.sign_armored(&key.export_binary()));
    let roots = trust_roots(&env, &unrelated, &partners);
    let dir = env.checkout("forged", &[("main.tf", CONFIG)]);
    let out = init(&env, &cfg, Some(&roots), &dir);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("trust signature"), "{said}");
    assert!(!dir.join(".terraform/providers").exists());
}
