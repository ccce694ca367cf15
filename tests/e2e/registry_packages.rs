//! OpenTofu ≥ 1.12's registry `packages` (every platform's `h1:` and `zh:` in the download
//! metadata, RFC 20251027): under `tofu 1.12`, a provider of OpenTofu's registry (reached
//! through a `host` block) is locked for every platform after one init, byte for byte as tofu
//! writes it; the platform installed is checked against the field; older releases and
//! `OPENTOFU_ENFORCE_GPG_VALIDATION=true` lock as before.
//!
//! The expected bytes follow tofu's code (upstream: internal/providercache/installer.go@v1.12.0
//! builds the entry from the package's own `h1:`, the archive's `zh:`, every signed
//! SHA256SUMS line and, from OpenTofu's registry, every `packages` hash; upstream:
//! internal/depsfile/locks.go@v1.12.0 sorts them as strings and drops duplicates;
//! upstream: internal/depsfile/locks_file.go@v1.12.0 writes the block).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{lock_file, stderr, TestEnv, Tstore};

use crate::common::TstoreEnv;

const PLATFORMS: [&str; 4] = [
    "darwin_arm64",
    "linux_amd64",
    "linux_arm64",
    "windows_amd64",
];

const CONFIG: &str = r#"terraform {
  required_providers {
    thing = {
      source = "hashicorp/thing"
    }
  }
}
"#;

/// One package per platform: (platform, zip, `h1:` of its files).
fn packages() -> Vec<(&'static str, Vec<u8>, String)> {
    PLATFORMS
        .iter()
        .map(|p| {
            let contents = format!("thing for {p}\n");
            let files = [PkgFile {
                path: "terraform-provider-thing_v1.0.0",
                contents: contents.as_bytes(),
                executable: true,
            }];
            (*p, mirror::zip_bytes(&files), mirror::h1(&files))
        })
        .collect()
}

fn zh(zip: &[u8]) -> String {
    format!("zh:{}", hex::encode(Sha256::digest(zip)))
}

/// A registry serving `hashicorp/thing` 1.0.0 for four platforms with `packages` as
/// `edit` leaves it, reached as `registry.opentofu.org`; the CLI config.
fn registry(env: &TestEnv, edit: impl FnOnce(&mut serde_json::Value)) -> (TestRegistry, PathBuf) {
    let reg = TestRegistry::start();
    let pkgs = packages();
    let mut field = serde_json::json!({});
    for (platform, zip, h1) in &pkgs {
        field[*platform] = serde_json::json!({
            "hashes": [zh(zip), h1],
            "package_size": zip.len(),
        });
    }
    edit(&mut field);
    let zips: Vec<(&str, Vec<u8>)> = pkgs.iter().map(|(p, z, _)| (*p, z.clone())).collect();
    reg.publish_with_packages("hashicorp/thing", "1.0.0", &zips, Some(field));
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["registry.opentofu.org"],
        "  direct {}",
    );
    (reg, cfg)
}

/// `tstore init DIR` as tool version `tool` (`TSTORE_TOOL_VERSION`), no FUSE.
fn init(env: &TestEnv, cfg: &Path, tool: &str, dir: &Path) -> Tstore {
    let tool = env.tstore_plain().tool_version(tool);
    tool.no_fuse().cli_config(cfg).init(dir)
}

/// The lock file tofu writes for `hashicorp/thing` 1.0.0 with `hashes`.
fn expected_lock(mut hashes: Vec<String>) -> String {
    hashes.sort();
    hashes.dedup();
    let mut text = String::from(
        "# This file is maintained automatically by \"tofu init\".\n\
         # Manual edits may be lost in future updates.\n\n\
         provider \"registry.opentofu.org/hashicorp/thing\" {\n  version = \"1.0.0\"\n  hashes = [\n",
    );
    for h in hashes {
        text.push_str(&format!("    \"{h}\",\n"));
    }
    text.push_str("  ]\n}\n");
    text
}

#[test]
fn tofu_1_12_locks_every_platform_from_the_registrys_packages() {
    let env = TestEnv::new();
    let (_reg, cfg) = registry(&env, |_| {});
    let pkgs = packages();
    let installed = pkgs.iter().find(|(p, ..)| *p == "linux_amd64").unwrap();
    let signed_zh: Vec<String> = pkgs.iter().map(|(_, z, _)| zh(z)).collect();

    // tofu 1.12: the installed package's h1:, every signed zh:, every platform's h1:.
    let dir = env.checkout("w12", &[("main.tf", CONFIG)]);
    init(&env, &cfg, "tofu 1.12.2", &dir).ok();
    let every: Vec<String> = pkgs
        .iter()
        .flat_map(|(_, z, h1)| [zh(z), h1.clone()])
        .collect();
    assert_eq!(lock_file(&dir), expected_lock(every.clone()));
    assert_eq!(
        lock_file(&dir).matches("\"h1:").count(),
        4,
        "one h1: per platform"
    );

    // tofu 1.11 does not read the field: the installed h1: and the signed zh: lines.
    let dir = env.checkout("w11", &[("main.tf", CONFIG)]);
    init(&env, &cfg, "tofu 1.11.0", &dir).ok();
    let mut before = signed_zh.clone();
    before.push(installed.2.clone());
    assert_eq!(lock_file(&dir), expected_lock(before.clone()));

    // The field is not signed: with OPENTOFU_ENFORCE_GPG_VALIDATION=true, tofu 1.12 locks
    // only what the signature covers.
    let dir = env.checkout("wgpg", &[("main.tf", CONFIG)]);
    init(&env, &cfg, "tofu 1.12.2", &dir)
        .env("OPENTOFU_ENFORCE_GPG_VALIDATION", "true")
        .ok();
    assert_eq!(lock_file(&dir), expected_lock(before));
}

#[test]
fn a_package_the_registrys_packages_contradict_is_refused_by_tofu_1_12_only() {
    let env = TestEnv::new();
    // The installed platform's entry names another archive.
    let (_reg, cfg) = registry(&env, |field| {
        field["linux_amd64"]["hashes"] = serde_json::json!([format!("zh:{}", "0".repeat(64))]);
    });
    let dir = env.checkout("w", &[("main.tf", CONFIG)]);
    let err = stderr(&init(&env, &cfg, "tofu 1.12.2", &dir).fails());
    assert!(
        err.contains("registry response expected sha256sum is")
            && err.contains("which does not match the platform's value"),
        "{err}"
    );
    assert!(!dir.join(".terraform").exists() && !dir.join(".terraform.lock.hcl").exists());
    init(&env, &cfg, "tofu 1.11.0", &dir).ok();

    // The installed platform missing from the field.
    let env = TestEnv::new();
    let (_reg, cfg) = registry(&env, |field| {
        field.as_object_mut().unwrap().remove("linux_amd64");
    });
    let dir = env.checkout("w", &[("main.tf", CONFIG)]);
    let err = stderr(&init(&env, &cfg, "tofu 1.12.2", &dir).fails());
    assert!(
        err.contains("registry response missing package with platform \"linux_amd64\""),
        "{err}"
    );
}

/// A `package_size` the downloaded archive does not have is refused by tofu 1.12 before
/// any hash is checked (upstream: internal/getproviders/package_authentication.go@v1.12.0,
/// `registryPackageAuthentication`), in its words; tofu 1.11 does not read the field.
/// Nothing is written in the refused checkout.
#[test]
fn a_package_size_the_download_does_not_have_is_refused_by_tofu_1_12_only() {
    let env = TestEnv::new();
    let real = packages()
        .into_iter()
        .find(|(p, ..)| *p == "linux_amd64")
        .map(|(_, zip, _)| zip.len())
        .unwrap();
    let (_reg, cfg) = registry(&env, |field| {
        field["linux_amd64"]["package_size"] = serde_json::json!(real + 1);
    });
    let dir = env.checkout("w", &[("main.tf", CONFIG)]);
    let err = stderr(&init(&env, &cfg, "tofu 1.12.2", &dir).fails());
    let words = format!(
        "registry response indicates a package of size {}, but received a package of size {real}",
        real + 1
    );
    assert!(err.contains(&words), "{err}");
    assert!(!dir.join(".terraform").exists() && !dir.join(".terraform.lock.hcl").exists());
    let out = init(&env, &cfg, "tofu 1.11.0", &dir).ok();
    assert!(lock_file(&dir).contains("registry.opentofu.org/hashicorp/thing"));
    // A signed provider is followed by OpenTofu's footer (internal/command/views/init.go).
    let said = tstore_test_support::stdout(&out);
    assert!(
        said.contains("Providers are signed by their developers.\nIf you'd like to know more about provider signing, you can read about it here:\nhttps://opentofu.org/docs/cli/plugins/signing/"),
        "{said}"
    );
}

/// `network_mirror { trust_all_hashes = true }` (tofu ≥ 1.12, upstream:
/// internal/getproviders/http_mirror_source.go@v1.12.0): every platform's hashes the mirror
/// lists are trusted, one of them must be the archive's, and all are locked for a provider
/// of OpenTofu's registry; without it (or before 1.12) only the package's own.
#[test]
fn a_trusted_network_mirror_locks_every_platform_under_tofu_1_12() {
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    let pkgs = packages();
    let archives: Vec<(&str, Vec<u8>, Vec<String>)> = pkgs
        .iter()
        .map(|(p, zip, h1)| (*p, zip.clone(), vec![zh(zip), h1.clone()]))
        .collect();
    reg.publish_mirror("registry.opentofu.org/hashicorp/thing", "1.0.0", &archives);
    let config = |trust: &str| {
        reg.write_cli_config(
            &env.root.path().join(format!("cli-config/{trust}.tfrc")),
            &[],
            &format!(
                "  network_mirror {{\n    url = \"{}\"\n    trust_all_hashes = {trust}\n  }}",
                reg.mirror_url()
            ),
        )
    };
    let installed = pkgs.iter().find(|(p, ..)| *p == "linux_amd64").unwrap();
    let own = vec![zh(&installed.1), installed.2.clone()];
    let every: Vec<String> = archives.iter().flat_map(|(_, _, h)| h.clone()).collect();

    let dir = env.checkout("trusted", &[("main.tf", CONFIG)]);
    init(&env, &config("true"), "tofu 1.12.2", &dir).ok();
    assert_eq!(lock_file(&dir), expected_lock(every));

    for (name, trust, tool) in [
        ("untrusted", "false", "tofu 1.12.2"),
        ("older", "true", "tofu 1.11.0"),
    ] {
        // A store of its own: the zip is verified in this run, so tofu locks its zh:.
        let dir = env.checkout(name, &[("main.tf", CONFIG)]);
        init(&env, &config(trust), tool, &dir)
            .env("TSTORE_HOME", env.root.path().join(format!("store-{name}")))
            .env(
                "TSTORE_MOUNT",
                env.root.path().join(format!("mount-{name}")),
            )
            .ok();
        assert_eq!(lock_file(&dir), expected_lock(own.clone()), "{name}");
    }
    // The store already holds the package: a cache hit, which adds no zh: (OpenTofu locks
    // only what it verified in the run).
    let dir = env.checkout("cache-hit", &[("main.tf", CONFIG)]);
    init(&env, &config("false"), "tofu 1.12.2", &dir).ok();
    assert_eq!(lock_file(&dir), expected_lock(vec![installed.2.clone()]));

    // Not a boolean: the CLI configuration is refused, naming the argument.
    let dir = env.checkout("bad", &[("main.tf", CONFIG)]);
    let err = stderr(&init(&env, &config("\"yes\""), "tofu 1.12.2", &dir).fails());
    assert!(err.contains("trust_all_hashes"), "{err}");
}

/// A provider OpenTofu's registry publishes without signing keys: tofu installs it, the
/// checksums still checked, with its own install line, and locks every platform's signed
/// `zh:` without the incomplete-lock warning; `OPENTOFU_ENFORCE_GPG_VALIDATION=true`, any
/// other host, and terraform refuse it (upstream:
/// internal/getproviders/package_authentication.go@v1.12.2,
/// `ShouldEnforceGPGValidationForProvider`; internal/command/views/init.go).
#[test]
fn a_provider_without_signing_keys_is_installed_from_opentofus_registry_only() {
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    let pkgs = packages();
    let zips: Vec<(&str, Vec<u8>)> = pkgs.iter().map(|(p, z, _)| (*p, z.clone())).collect();
    reg.publish_without_keys("hashicorp/thing", "1.0.0", &zips);
    let hosts = [
        "registry.opentofu.org",
        "registry.terraform.io",
        "other.example",
    ];
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &hosts,
        "  direct {}",
    );
    let dir = env.checkout("w", &[("main.tf", CONFIG)]);
    let out = init(&env, &cfg, "tofu 1.12.2", &dir).ok();
    let said = tstore_test_support::stdout(&out);
    assert!(
        said.contains("- Installed hashicorp/thing v1.0.0. Signature validation was skipped due to the registry not containing GPG keys for this provider"),
        "{said}"
    );
    assert!(
        !stderr(&out).contains("Incomplete lock file"),
        "{}",
        stderr(&out)
    );
    // The install line says it; tofu writes no other line about it.
    assert!(
        !stderr(&out).contains("signature check"),
        "{}",
        stderr(&out)
    );
    let installed = pkgs.iter().find(|(p, ..)| *p == "linux_amd64").unwrap();
    let mut locked: Vec<String> = pkgs.iter().map(|(_, z, _)| zh(z)).collect();
    locked.push(installed.2.clone());
    assert_eq!(lock_file(&dir), expected_lock(locked));

    // Enforced: refused, nothing written.
    let enforced = env.checkout("enforced", &[("main.tf", CONFIG)]);
    let err = stderr(
        &init(&env, &cfg, "tofu 1.12.2", &enforced)
            .env("OPENTOFU_ENFORCE_GPG_VALIDATION", "true")
            .fails(),
    );
    assert!(
        err.contains("the registry returned no signing keys"),
        "{err}"
    );
    assert!(!enforced.join(".terraform.lock.hcl").exists());

    // Another host, and terraform's default registry under terraform: refused.
    let other = CONFIG.replace("hashicorp/thing", "other.example/hashicorp/thing");
    let elsewhere = env.checkout("elsewhere", &[("main.tf", other.as_str())]);
    let err = stderr(&init(&env, &cfg, "tofu 1.12.2", &elsewhere).fails());
    assert!(
        err.contains("the registry returned no signing keys"),
        "{err}"
    );
    let terraform = env.checkout("terraform", &[("main.tf", CONFIG)]);
    let err = stderr(
        &init(&env, &cfg, "terraform 1.11.4", &terraform)
            .env("TSTORE_FLAVOR", "terraform")
            .fails(),
    );
    assert!(
        err.contains("the registry returned no signing keys"),
        "{err}"
    );
}
