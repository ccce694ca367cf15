//! Lock files over time against the origin registry and a network mirror: the mirror's
//! `h1:` as terraform records it, locked packages verified from the store without the
//! network, a stale store package checked again, `providers lock` for two platforms, and a
//! lock entry pinned, upgraded, excluded and dropped, judged by the real terraform.

use tstore_test_support::mirror::{self};
use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{lock_file, run_ok, snapshot, stderr, stdout, TestEnv};

use crate::common::json;
use crate::common::TstoreEnv as _;

use crate::registry::{registry_with_providers, CONFIG, FAKE_CONFIG, FAKE_FILES};

/// Network mirror: the lock gets the installed directory's h1: plus (the lock rule of
/// OpenTofu's hash-disposition RFC, a deliberate difference from terraform 1.0.3, which
/// writes only the h1:) the zh: of the zip verified.
#[test]
fn network_mirror_lock_has_the_h1_as_terraforms() {
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    let zip = mirror::zip_bytes(&FAKE_FILES);
    let h1 = mirror::h1(&FAKE_FILES);
    reg.publish_mirror(
        "example.com/test/fake",
        "1.0.0",
        &[("linux_amd64", zip.clone(), vec![h1.clone()])],
    );
    let cfg = reg.write_mirror_cli_config(&env.root.path().join("cli-config/mirror.tfrc"));
    let config = FAKE_CONFIG.replace("tstore.test/test/fake", "example.com/test/fake");
    let dir = env.checkout("mirror", &[("main.tf", config.as_str())]);
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    assert!(
        stdout(&out).contains("- Installed example.com/test/fake v1.0.0 (verified checksum)"),
        "{}",
        stdout(&out)
    );
    let zip_path = env.root.path().join("fake.zip");
    std::fs::write(&zip_path, &zip).unwrap();
    let zh = mirror::zh(&zip_path);
    let lock = lock_file(&dir);
    let expected = format!(
        "# This file is maintained automatically by \"terraform init\".\n\
         # Manual edits may be lost in future updates.\n\n\
         provider \"example.com/test/fake\" {{\n  version = \"1.0.0\"\n  hashes = [\n    \"{h1}\",\n  ]\n}}\n"
    );
    // terraform locks the h1: alone from a network mirror, whatever zip it verified.
    assert_eq!(lock, expected);
    assert!(!lock.contains(&zh));

    // A mirror whose reported hash does not match is refused.
    reg.publish_mirror(
        "example.com/test/fake",
        "1.0.1",
        &[("linux_amd64", zip, vec![format!("zh:{}", "0".repeat(64))])],
    );
    let dir2 = env.checkout("mirror2", &[("main.tf", config.as_str())]);
    let before = snapshot(&dir2);
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir2).fails();
    assert!(
        stderr(&out).contains("does not match the checksums"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, snapshot(&dir2));
}

/// `lock` with only the hash lines `keep` accepts.
fn filter_lock(lock: &str, keep: impl Fn(&str) -> bool) -> String {
    lock.lines()
        .filter(|l| {
            let t = l.trim();
            !(t.starts_with("\"h1:") || t.starts_with("\"zh:")) || keep(t)
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A lock file pinning versions the store holds is satisfied from the store with no source
/// consulted and nothing hashed, whether it holds all hashes, only `zh:` or only `h1:` —
/// and still after the registry is gone.
#[test]
fn locked_packages_are_verified_from_the_store_without_network() {
    let (env, reg, cfg) = registry_with_providers();
    let first = env.checkout("first", &[("main.tf", CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&first).ok();
    let lock = lock_file(&first);

    let variants = [
        ("full", lock.clone()),
        ("zh-only", filter_lock(&lock, |l| l.starts_with("\"zh:"))),
        ("h1-only", filter_lock(&lock, |l| l.starts_with("\"h1:"))),
    ];
    for (name, variant) in &variants {
        let dir = env.checkout(
            name,
            &[
                ("main.tf", CONFIG),
                (".terraform.lock.hcl", variant.as_str()),
            ],
        );
        let before = reg.server.requests().len();
        let report = json(
            &env.tstore()
                .cli_config(&cfg)
                .args(["init", "--json"])
                .arg(&dir)
                .ok(),
        );
        assert_eq!(
            reg.server.requests().len(),
            before,
            "{name}: a request reached the registry: {:?}",
            &reg.server.requests()[before..]
        );
        assert_eq!(report["bytes_hashed"], 0, "{name}: {report}");
        for p in report["providers"].as_array().unwrap() {
            assert_eq!(p["obtained"], "store_by_lock", "{name}: {report}");
        }
        // A package from the store is a cache hit, as a tool's plugin cache is: the lock
        // gets the directory h1: back and nothing else the store remembers.
        let after = lock_file(&dir);
        let want = if *name == "h1-only" { variant } else { &lock };
        assert_eq!(&after, want, "{name}");
        let expected = if *name == "zh-only" {
            "updated"
        } else {
            "unchanged"
        };
        assert_eq!(report["lock_file"], expected, "{name}: {report}");
        run_ok(env.terraform(&dir).args(["providers", "-no-color"]));
    }

    // The registry is gone: a checkout with a zh-only lock still inits, and says so.
    drop(reg);
    let dir = env.checkout(
        "offline",
        &[
            ("main.tf", CONFIG),
            (".terraform.lock.hcl", variants[1].1.as_str()),
        ],
    );
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let text = stdout(&out);
    assert!(
        text.contains("- Using hashicorp/null v2.1.2 from the store"),
        "{text}"
    );
    assert!(
        text.contains("- Using tstore.test/test/fake v1.0.0 from the store"),
        "{text}"
    );
    // A store hit says so once, as terraform says "from the shared cache directory": no
    // "Installing…"/"Installed…" lines after it.
    assert!(
        !text.contains("- Installing") && !text.contains("- Installed"),
        "{text}"
    );
    assert_eq!(lock_file(&dir), lock);
    // A lock hash the store never verified for this platform is not enough: with only
    // the other platforms' zh: lines, the store path is skipped and the (gone) registry
    // is needed.
    let zip_path = env.root.path().join("null-linux.zip");
    std::fs::write(&zip_path, mirror::zip_bytes(&mirror::null_files())).unwrap();
    let linux_zh = mirror::zh(&zip_path);
    let other_zh_only = filter_lock(&lock, |l| l.starts_with("\"zh:") && !l.contains(&linux_zh));
    let dir = env.checkout(
        "other-platform",
        &[
            ("main.tf", CONFIG),
            (".terraform.lock.hcl", other_zh_only.as_str()),
        ],
    );
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).fails();
    assert!(
        stderr(&out).contains("Failed to query available provider packages"),
        "{}",
        stderr(&out)
    );
}

/// A stale package (its files changed since verified) is never trusted: a touched blob is
/// re-hashed and used; a modified blob makes the store drop the package and fetch it again.
#[test]
fn stale_store_package_is_reverified_or_fetched_again() {
    use std::os::unix::fs::PermissionsExt;
    let (env, reg, cfg) = registry_with_providers();
    let first = env.checkout("first", &[("main.tf", CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&first).ok();
    let lock = lock_file(&first);
    let view = env
        .store
        .join("views/providers/tstore.test/test/fake/1.0.0/linux_amd64");
    let init_json = |name: &str| {
        let dir = env.checkout(
            name,
            &[("main.tf", CONFIG), (".terraform.lock.hcl", lock.as_str())],
        );
        let before = reg.server.requests().len();
        let report = json(
            &env.tstore()
                .cli_config(&cfg)
                .args(["init", "--json"])
                .arg(&dir)
                .ok(),
        );
        let requests: Vec<String> = reg.server.requests()[before..]
            .iter()
            .map(|r| r.path.clone())
            .collect();
        let fake = report["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider"] == "tstore.test/test/fake")
            .unwrap()
            .clone();
        assert_eq!(lock_file(&dir), lock);
        (report, fake, requests)
    };

    // Same content, new mtime: re-hashed (a few bytes), trusted, nothing fetched.
    let data = view.join("sub/data.txt");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::File::open(&data)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    let (report, fake, requests) = init_json("touched");
    assert_eq!(fake["obtained"], "store_by_lock", "{report}");
    assert!(report["bytes_hashed"].as_u64().unwrap() > 0, "{report}");
    assert!(requests.is_empty(), "{requests:?}");

    // Content changed behind the store's back: dropped and downloaded again.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&data, "WORLD\n").unwrap();
    let (report, fake, requests) = init_json("modified");
    assert_eq!(fake["obtained"], "downloaded", "{report}");
    assert!(
        requests
            .iter()
            .any(|p| p.ends_with("terraform-provider-fake_1.0.0_linux_amd64.zip")),
        "{requests:?}"
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "world\n");
    env.tstore().args(["store", "verify"]).ok();
    // And the repaired package is trusted from the store again.
    let (report, fake, requests) = init_json("repaired");
    assert_eq!(fake["obtained"], "store_by_lock", "{report}");
    assert_eq!(report["bytes_hashed"], 0, "{report}");
    assert!(requests.is_empty(), "{requests:?}");
}

/// `tstore providers lock` for two platforms writes terraform's lock byte for byte,
/// installs nothing into the working directory, and keeps every platform's package in the
/// store (a later init downloads nothing).
#[test]
fn providers_lock_two_platforms_is_byte_identical_to_terraform() {
    let (env, reg, cfg) = registry_with_providers();
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", CONFIG)]);
    let platforms = ["-platform=linux_amd64", "-platform=darwin_amd64"];
    let out = env
        .tstore()
        .cli_config(&cfg)
        .current_dir(&ours)
        .args(["providers", "lock"])
        .args(platforms)
        .ok();
    let text = stdout(&out);
    for platform in ["linux_amd64", "darwin_amd64"] {
        for provider in ["hashicorp/null", "tstore.test/test/fake"] {
            let line = format!(
                "- Obtained {provider} checksums for {platform} (self-signed, key ID {})",
                reg.key.key_id
            );
            assert!(text.contains(&line), "{line:?} missing from:\n{text}");
        }
    }
    assert!(
        text.contains("Success! Terraform has updated the lock file."),
        "{text}"
    );
    assert!(!ours.join(".terraform").exists());
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["providers", "lock", "-no-color"])
            .args(platforms),
    );
    let ours_lock = lock_file(&ours);
    let theirs_lock = lock_file(&theirs);
    assert_eq!(ours_lock, theirs_lock, "lock files differ");
    assert_eq!(ours_lock.matches("h1:").count(), 4, "{ours_lock}");

    // Running it again changes nothing, and each release says it in its own words:
    // terraform 1.0.3 that it updated the lock file (it says so whatever it found),
    // 1.11.4 that it found no need for changes (from 1.2.6). Judged by both.
    let success = |out: &std::process::Output| {
        stdout(out)
            .lines()
            .find(|l| l.starts_with("Success!"))
            .unwrap_or_default()
            .to_owned()
    };
    let peers = tstore_test_support::peers();
    for (judge, tool) in peers.judges() {
        let theirs_out = run_ok(
            env.command(judge)
                .current_dir(&theirs)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .args(["providers", "lock", "-no-color"])
                .args(platforms),
        );
        let ours_out = env
            .tstore()
            .cli_config(&cfg)
            .current_dir(&ours)
            .tool_version(tool)
            .args(["providers", "lock"])
            .args(platforms)
            .ok();
        assert_eq!(success(&ours_out), success(&theirs_out), "{tool}");
        assert_eq!(lock_file(&ours), lock_file(&theirs), "{tool}");
        // The per-package lines, as a set (terraform walks platforms in map order): from
        // 1.2.6 "- Retrieved … (auth)" and "- Obtained … checksums for P; <what changed>".
        let lines = |out: &std::process::Output| {
            let mut l: Vec<String> = stdout(out)
                .lines()
                .filter(|l| l.starts_with("- Retrieved") || l.starts_with("- Obtained"))
                .map(str::to_owned)
                .collect();
            l.sort();
            l
        };
        let theirs_lines = lines(&theirs_out);
        assert_eq!(
            theirs_lines.len(),
            if tool == "terraform 1.0.3" { 4 } else { 8 },
            "{theirs_lines:?}"
        );
        assert_eq!(
            lines(&ours_out),
            theirs_lines,
            "{tool}: {}",
            stdout(&ours_out)
        );
    }
    assert_eq!(lock_file(&ours), ours_lock, "the lock file did not change");
    // Both platforms' packages are in the store.
    let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
    let darwin = ls["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["platform"] == "darwin_amd64")
        .count();
    assert_eq!(darwin, 2, "{ls}");
    // init after lock: the store has everything the lock pins; no source consulted.
    let before = reg.server.requests().len();
    let report = json(
        &env.tstore()
            .cli_config(&cfg)
            .args(["init", "--json"])
            .arg(&ours)
            .ok(),
    );
    assert_eq!(reg.server.requests().len(), before, "{report}");
    assert_eq!(report["lock_file"], "unchanged", "{report}");
}

/// The lock pin holds when a newer version is published, `-upgrade` moves it, a pin the
/// constraints no longer allow is an error, and a provider no longer required stays in
/// the lock (terraform flavor).
#[test]
fn lock_pin_upgrade_excluded_and_removed_provider() {
    let (env, reg, cfg) = registry_with_providers();
    let dir = env.checkout("stack", &[("main.tf", CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    reg.publish(
        "test/fake",
        "1.1.0",
        &[("linux_amd64", mirror::zip_bytes(&FAKE_FILES[..1]))],
    );
    let lock_path = dir.join(".terraform.lock.hcl");
    let version_of = |lock: &str| {
        let at = lock.find("tstore.test/test/fake").unwrap();
        lock[at..].lines().nth(1).unwrap().trim().to_owned()
    };
    // The pin holds.
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    assert_eq!(version_of(&lock), "version     = \"1.0.0\"", "{lock}");
    // -upgrade moves it, and says the lock changed.
    let out = env
        .tstore()
        .cli_config(&cfg)
        .args(["init", "-upgrade"])
        .arg(&dir)
        .ok();
    assert!(
        stdout(&out).contains("- Installed tstore.test/test/fake v1.1.0"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("has made some changes"),
        "{}",
        stdout(&out)
    );
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    assert_eq!(version_of(&lock), "version     = \"1.1.0\"", "{lock}");
    // A constraint excluding the pinned version is an error, nothing changes.
    std::fs::write(dir.join("main.tf"), CONFIG.replace(">= 1.0.0", "< 1.1.0")).unwrap();
    let before = snapshot(&dir);
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).fails();
    assert!(
        stderr(&out).contains("locked provider tstore.test/test/fake 1.1.0 does not match configured version constraint < 1.1.0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, snapshot(&dir));
    // A provider no longer required stays in the lock under the terraform flavor, as
    // terraform 1.0 keeps it (the tofu flavor drops it: unit-tested in providers/install.rs).
    std::fs::write(
        dir.join("main.tf"),
        CONFIG.replace("fake = {", "# fake = {").replace(
            "      source  = \"tstore.test/test/fake\"\n      version = \">= 1.0.0\"\n    }\n",
            "",
        ),
    )
    .unwrap();
    let before = std::fs::read_to_string(&lock_path).unwrap();
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    assert!(
        !stdout(&out).contains("has made some changes"),
        "{}",
        stdout(&out)
    );
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    assert_eq!(lock, before);
    assert!(lock.contains("test/fake"), "{lock}");
    assert!(lock.contains("hashicorp/null"), "{lock}");
}
