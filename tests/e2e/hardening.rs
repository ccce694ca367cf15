//! Nothing in a checkout makes tstore write or delete outside it: crafted keys in tstore's
//! module state, and symlinked `.terraform` components, leave a victim directory outside
//! the checkout byte-identical. Each case runs the real binary on a checkout prepared as an
//! attacker would.

use std::path::{Path, PathBuf};

use tstore_test_support::{mirror, run_ok, snapshot, stderr, TestEnv};

use crate::common::{tstore, NULL_CONFIG};

const NULL_LINK: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";

/// A directory outside every checkout, with files and a nested directory, that no init
/// may touch.
fn victim(env: &TestEnv) -> PathBuf {
    let v = env.root.path().join("victim");
    fs_err::create_dir_all(v.join("nested/linux_amd64")).unwrap();
    fs_err::write(v.join("precious.txt"), "do not delete\n").unwrap();
    fs_err::write(v.join("nested/linux_amd64/file"), "inner\n").unwrap();
    fs_err::create_dir_all(v.join("linux_amd64")).unwrap();
    fs_err::write(v.join("linux_amd64/terraform-provider-null"), "not yours\n").unwrap();
    v
}

/// A checkout calling a local module copied privately (so `.terraform/modules` is used).
fn module_checkout(env: &TestEnv, name: &str) -> PathBuf {
    env.checkout(
        name,
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    )
}

fn init(env: &TestEnv, cfg: Option<&Path>, dir: &Path) -> std::process::Output {
    tstore(env, cfg)
        .env("TSTORE_NO_FUSE", "1")
        .arg("init")
        .arg(dir)
        .output()
        .expect("run tstore")
}

#[test]
fn crafted_module_state_keys_never_name_a_path_outside() {
    let env = TestEnv::new();
    let victim = victim(&env);
    let before = snapshot(&victim);
    let rel = pathdiff(&victim, &env.work.join("state/.terraform/modules"));
    for (i, key) in [
        rel.as_str(),
        victim.to_str().unwrap(),
        "../../../victim",
        "a/../../x",
    ]
    .iter()
    .enumerate()
    {
        let dir = module_checkout(&env, &format!("state{i}"));
        let modules = dir.join(".terraform/modules");
        fs_err::create_dir_all(&modules).unwrap();
        fs_err::write(
            modules.join(".tstore-installs.json"),
            serde_json::json!({ *key: { "package": "x", "action": "copy" } }).to_string(),
        )
        .unwrap();
        fs_err::write(
            modules.join("modules.json"),
            serde_json::json!({ "Modules": [{ "Key": key, "Source": "./x", "Dir": victim }] })
                .to_string(),
        )
        .unwrap();
        let out = init(&env, None, &dir);
        assert!(out.status.success(), "{key}: {}", stderr(&out));
        assert_eq!(snapshot(&victim), before, "{key}: the victim changed");
    }
}

/// `pathdiff(to, from)`: a relative path from `from` to `to` (both absolute).
fn pathdiff(to: &Path, from: &Path) -> String {
    let to: Vec<_> = to.components().collect();
    let from: Vec<_> = from.components().collect();
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = vec!["..".into(); from.len() - common];
    out.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    out.join("/")
}

#[test]
fn symlinked_terraform_directories_are_refused_and_the_target_is_untouched() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let victim = victim(&env);
    let before = snapshot(&victim);
    // (case, symlink inside the checkout, config)
    let cases: [(&str, &str, &str); 6] = [
        (".terraform", ".terraform", NULL_CONFIG),
        ("providers", ".terraform/providers", NULL_CONFIG),
        (
            "host",
            ".terraform/providers/registry.terraform.io",
            NULL_CONFIG,
        ),
        (
            "version",
            ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2",
            NULL_CONFIG,
        ),
        ("modules", ".terraform/modules", ""),
        ("terraform-for-modules", ".terraform", ""),
    ];
    for (case, link, config) in cases {
        let dir = if config.is_empty() {
            module_checkout(&env, case)
        } else {
            env.checkout(case, &[("main.tf", config)])
        };
        let link = dir.join(link);
        fs_err::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let out = init(&env, Some(&cfg), &dir);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{case}: {err}");
        assert!(err.contains("is a symlink"), "{case}: {err}");
        assert_eq!(snapshot(&victim), before, "{case}: the victim changed");
    }
}

/// The entry itself may be a symlink left in the checkout: it is replaced as a link, and
/// what it pointed at stays.
#[test]
fn symlinked_entries_are_replaced_as_links_not_followed() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let victim = victim(&env);
    let before = snapshot(&victim);

    let dir = env.checkout("provider-entry", &[("main.tf", NULL_CONFIG)]);
    let link = dir.join(NULL_LINK);
    fs_err::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(victim.join("linux_amd64"), &link).unwrap();
    run_ok(
        tstore(&env, Some(&cfg))
            .env("TSTORE_NO_FUSE", "1")
            .arg("init")
            .arg(&dir),
    );
    assert!(fs_err::read_link(&link).unwrap().starts_with(&env.mount));

    let dir = module_checkout(&env, "module-entry");
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(&modules).unwrap();
    std::os::unix::fs::symlink(&victim, modules.join("m")).unwrap();
    fs_err::write(
        modules.join(".tstore-installs.json"),
        serde_json::json!({ "m": { "package": "x", "action": "copy" } }).to_string(),
    )
    .unwrap();
    let out = init(&env, None, &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(snapshot(&victim), before, "the victim changed");
}
