//! Providers installed end to end from filesystem mirrors, compared with terraform's own
//! `init`.

use std::path::Path;

use tstore_test_support::{
    lock_file, mirror, peers, run_fail, run_ok, snapshot, stderr, stdout, Layout, NullMirror,
    TestEnv, NULL_H1,
};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};

const NULL_LINK: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";

/// `tstore init`, then the real `terraform validate` and `plan` work offline in that
/// directory without any `terraform init`.
fn init_then_terraform_accepts(layout: Layout) {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(layout);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);

    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let text = stdout(&out);
    assert!(text.contains("- Installed hashicorp/null v2.1.2"), "{text}");
    assert!(text.contains("has created a lock file"), "{text}");

    let link = dir.join(NULL_LINK);
    let target = std::fs::read_link(&link).expect("the provider dir is a symlink");
    assert!(
        target.starts_with(&env.mount),
        "link {} points into the mount path {}",
        target.display(),
        env.mount.display()
    );
    let lock = lock_file(&dir);
    assert!(lock.contains(NULL_H1), "{lock}");

    // No CLI config for terraform: it must not need any installation source.
    env.assert_terraform_validates_and_plans_null(&dir);
}

#[test]
fn init_from_packed_mirror_then_terraform_validate_and_plan() {
    init_then_terraform_accepts(Layout::Packed);
}

#[test]
fn init_from_unpacked_mirror_then_terraform_validate_and_plan() {
    init_then_terraform_accepts(Layout::Unpacked);
}

/// The lock file tstore writes is byte-identical to the one `terraform init` writes from
/// the same mirror.
fn lock_file_matches_terraform(layout: Layout) {
    let NullMirror { env, mirror, cfg } = TestEnv::with_null_mirror(layout);
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", NULL_CONFIG)]);

    env.tstore().cli_config(&cfg).arg("init").arg(&ours).ok();
    run_ok(&mut env.terraform_init(&theirs, &cfg));
    let ours = lock_file(&ours);
    let theirs = lock_file(&theirs);
    // terraform records only the h1: from a mirror, packed or not; so does the terraform
    // flavor (the tofu flavor adds the zh: of a zip it verified in the run).
    assert_eq!(ours, theirs, "lock files differ");
    assert!(!ours.contains("zh:") && ours.contains(NULL_H1), "{ours}");
    let _ = mirror;
}

#[test]
fn lock_file_is_byte_identical_to_terraform_packed() {
    lock_file_matches_terraform(Layout::Packed);
}

#[test]
fn lock_file_is_byte_identical_to_terraform_unpacked() {
    lock_file_matches_terraform(Layout::Unpacked);
}

/// Two checkouts share one copy; the second init neither re-reads the zip nor
/// re-hashes the tree (the store counts bytes hashed).
#[test]
fn second_checkout_reuses_the_store_without_rehashing() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let b = env.checkout("b", &[("main.tf", NULL_CONFIG)]);

    let first = json(
        &env.tstore()
            .cli_config(&cfg)
            .args(["init", "--json"])
            .arg(&a)
            .ok(),
    );
    assert_eq!(first["providers"][0]["obtained"], "ingested", "{first}");
    assert!(
        first["bytes_hashed"].as_u64().unwrap() > 20_000_000,
        "{first}"
    );

    let second = json(
        &env.tstore()
            .cli_config(&cfg)
            .args(["init", "-json"])
            .arg(&b)
            .ok(),
    );
    assert_eq!(second["providers"][0]["obtained"], "memoized", "{second}");
    assert_eq!(second["bytes_hashed"], 0, "{second}");
    assert_eq!(second["lock_file"], "created", "{second}");

    // Both links resolve to the same file, held once by the store.
    let bin = peers().null_provider.file_name().unwrap().to_owned();
    let ia = std::fs::metadata(a.join(NULL_LINK).join(&bin)).unwrap();
    let ib = std::fs::metadata(b.join(NULL_LINK).join(&bin)).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((ia.dev(), ia.ino()), (ib.dev(), ib.ino()));
    let du = json(&env.tstore().args(["store", "du", "--json"]).ok());
    assert_eq!(du["packages"], 1, "{du}");
    assert_eq!(du["blobs"], 1, "{du}");
    assert!(du["blob_bytes"].as_u64().unwrap() < 2 * 20_373_856, "{du}");
    // Two checkouts link it: private copies, as `tofu init` makes, would cost twice.
    assert_eq!(du["links"], 2, "{du}");
    assert_eq!(du["linked_bytes"], 2 * 20_373_856, "{du}");

    // A re-init of an installed checkout changes nothing.
    let again = stdout(&env.tstore().cli_config(&cfg).arg("init").arg(&a).ok());
    assert!(
        again.contains("- Using previously-installed hashicorp/null v2.1.2"),
        "{again}"
    );
    assert!(again.contains("Reusing previous version"), "{again}");
    // terraform 1.17 names the version it reuses (hashicorp/terraform#38918).
    let again = stdout(
        &env.tstore()
            .cli_config(&cfg)
            .env("TSTORE_TOOL_VERSION", "terraform 1.17.2")
            .arg("init")
            .arg(&a)
            .ok(),
    );
    assert!(
        again.contains("- Reusing version 2.1.2 of hashicorp/null from the dependency lock file"),
        "{again}"
    );
}

/// Rewrite the null provider's package in the mirror with one byte changed.
fn tamper(mirror_dir: &Path, layout: Layout) {
    let mut bytes = std::fs::read(&peers().null_provider).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    let files = [mirror::PkgFile {
        path: tstore_test_support::NULL_PROVIDER_FILE,
        contents: &bytes,
        executable: true,
    }];
    let addr = "registry.terraform.io/hashicorp/null";
    if layout == Layout::Packed {
        mirror::write_packed(mirror_dir, addr, "2.1.2", "linux_amd64", &files);
    } else {
        let dir = mirror_dir.join(addr).join("2.1.2/linux_amd64");
        std::fs::remove_dir_all(&dir).unwrap();
        mirror::write_unpacked(mirror_dir, addr, "2.1.2", "linux_amd64", &files);
    }
}

/// A mirror package changed after the lock file was written. A store that already holds
/// the package the lock pins installs that (verified) package without reading the mirror,
/// as terraform installs from its plugin cache; a store that does not must fetch it, and
/// refuses the changed bytes with terraform's error, changing nothing.
fn tampered_package_is_refused(layout: Layout) {
    let NullMirror { env, mirror, cfg } = TestEnv::with_null_mirror(layout);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&a).ok();
    let lock = lock_file(&a);
    let with_lock = |name: &str| {
        env.checkout(
            name,
            &[
                ("main.tf", NULL_CONFIG),
                (".terraform.lock.hcl", lock.as_str()),
            ],
        )
    };
    let b = with_lock("b");
    let c = with_lock("c");

    tamper(&mirror, layout);

    // The store has the locked package: it is linked, and it is the good one.
    env.tstore().cli_config(&cfg).arg("init").arg(&c).ok();
    let installed = fs_err::read(
        c.join(".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
            .join(tstore_test_support::NULL_PROVIDER_FILE),
    )
    .unwrap();
    assert!(installed == std::fs::read(&peers().null_provider).unwrap());
    assert_eq!(lock_file(&c), lock);

    // Another store must read the mirror, and refuses what it finds there.
    let other = env.root.path().join("other-store");
    for dir in [&a, &b] {
        let before = snapshot(dir);
        let cmd = env
            .tstore()
            .cli_config(&cfg)
            .env("TSTORE_HOME", &other)
            .env("TSTORE_MOUNT", env.root.path().join("other-mount"))
            .no_fuse()
            .arg("init")
            .arg(dir);
        let out = cmd.fails();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("Error: Failed to install provider"), "{err}");
        assert!(
            err.contains(
                "doesn't match any of the checksums previously recorded in the dependency lock file"
            ),
            "{err}"
        );
        let origin = if layout == Layout::Packed {
            "the current package"
        } else {
            "the local package"
        };
        assert!(err.contains(origin), "{err}");
        assert_eq!(
            before,
            snapshot(dir),
            "{} changed on a failed init",
            dir.display()
        );
    }
    assert!(!b.join(".terraform").exists());
}

#[test]
fn tampered_packed_package_is_refused_and_nothing_changes() {
    tampered_package_is_refused(Layout::Packed);
}

#[test]
fn tampered_unpacked_package_is_refused_and_nothing_changes() {
    tampered_package_is_refused(Layout::Unpacked);
}

/// The checksum-mismatch error in each release's words: the "(this might be because …)"
/// reason for an unpacked package only; "; for more information: URL" from terraform 1.2.9,
/// at developer.hashicorp.com from 1.11.4 (internal/providercache/package_install.go).
/// Judged by terraform 1.0.3 and 1.11.4 on the same tampered mirror, each layout.
#[test]
fn a_tampered_package_is_refused_in_each_terraforms_words() {
    for layout in [Layout::Packed, Layout::Unpacked] {
        let NullMirror { env, mirror, cfg } = TestEnv::with_null_mirror(layout);
        let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
        env.tstore().cli_config(&cfg).arg("init").arg(&a).ok();
        let lock = lock_file(&a);
        tamper(&mirror, layout);
        let words = |out: &std::process::Output| {
            stderr(out).split_whitespace().collect::<Vec<_>>().join(" ")
        };
        for (judge, tool) in [
            (&peers().terraform, "terraform 1.0.3"),
            (&peers().terraform_current, "terraform 1.11.4"),
        ] {
            let files = [
                ("main.tf", NULL_CONFIG),
                (".terraform.lock.hcl", lock.as_str()),
            ];
            let name = format!("{layout:?}-{}", tool.replace(' ', "-"));
            let theirs = env.checkout(&format!("theirs-{name}"), &files);
            let ours = env.checkout(&format!("ours-{name}"), &files);
            let their_err = words(&run_fail(&mut env.judge_init(judge, &theirs, &cfg)));
            let cmd = env
                .tstore()
                .cli_config(&cfg)
                .env("TSTORE_HOME", env.root.path().join(format!("store-{name}")))
                .env(
                    "TSTORE_MOUNT",
                    env.root.path().join(format!("mount-{name}")),
                )
                .no_fuse()
                .tool_version(tool)
                .arg("init")
                .arg(&ours);
            let our_err = words(&cmd.fails());
            // The sentence, from the package's origin to the end of what the tool says of it.
            let sentence = |err: &str| -> String {
                let start = err
                    .find("package for registry.terraform.io/hashicorp/null")
                    .unwrap_or_else(|| panic!("{err}"));
                let rest = &err[start..];
                let end = rest
                    .find("checksum-verification")
                    .map(|i| i + "checksum-verification".len())
                    .or_else(|| rest.find("platforms)").map(|i| i + "platforms)".len()))
                    .or_else(|| {
                        rest.find("dependency lock file")
                            .map(|i| i + "dependency lock file".len())
                    })
                    .unwrap();
                rest[..end].to_owned()
            };
            assert_eq!(
                sentence(&our_err),
                sentence(&their_err),
                "{layout:?} under {tool}:\n{their_err}\n{our_err}"
            );
            assert_eq!(
                their_err.contains("for more information"),
                tool == "terraform 1.11.4",
                "{their_err}"
            );
        }
    }
}

#[test]
fn lockfile_readonly_refuses_to_create_a_lock_file() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let before = snapshot(&dir);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .args(["init", "-lockfile=readonly"])
        .arg(&dir)
        .fails();
    assert!(
        stderr(&out).contains("-lockfile=readonly"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, snapshot(&dir));
}

/// Requirements come from the whole module tree. Constraints from the
/// root and a local child module (and a grandchild that only implies the provider) are
/// combined exactly as terraform combines them: the lock files are byte-identical.
#[test]
fn requirements_from_local_modules_match_terraform() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let files = [
        (
            "main.tf",
            r#"terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~>2.0,   >=2.0.0 , !=2.1.1" }
  }
}
module "child" { source = "./modules/child" }
"#,
        ),
        (
            "modules/child/main.tf",
            r#"terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "<= 2.9, >= 2.0.0" }
  }
}
module "grandchild" { source = "../grandchild" }
"#,
        ),
        (
            "modules/grandchild/main.tf",
            "resource \"null_resource\" \"g\" {}\n",
        ),
    ];
    let (ours, theirs) = env.ours_and_theirs(&files);
    env.tstore().cli_config(&cfg).arg("init").arg(&ours).ok();
    run_ok(&mut env.terraform_init(&theirs, &cfg));
    let ours = lock_file(&ours);
    let theirs = lock_file(&theirs);
    assert!(
        ours.contains(r#"constraints = ">= 2.0.0, ~> 2.0, != 2.1.1, <= 2.9.0""#),
        "{ours}"
    );
    assert_eq!(ours, theirs);
}

/// Living beside `terraform init`. With the CLI configuration printed by
/// `tstore cli-config` (the store's view as a filesystem mirror, before `direct`), a real
/// `terraform init` with no other source reachable succeeds, reuses tstore's link and
/// leaves the lock file alone; and tstore itself is fine with that configuration.
#[test]
fn terraform_init_with_tstore_cli_config_keeps_links_and_lock() {
    let NullMirror { env, mirror, cfg } = TestEnv::with_null_mirror(Layout::Packed);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let link = dir.join(NULL_LINK);
    let target = std::fs::read_link(&link).unwrap();
    let lock = lock_file(&dir);

    let printed = stdout(&env.tstore().arg("cli-config").ok());
    let providers_view = env.mount.join("providers");
    assert!(
        printed.contains(&format!("path = \"{}\"", providers_view.display())),
        "{printed}"
    );
    assert!(
        printed.find("filesystem_mirror") < printed.find("direct"),
        "{printed}"
    );
    assert!(
        printed.contains("\"registry.terraform.io/hashicorp/null\""),
        "{printed}"
    );
    let store_cfg = env.root.path().join("cli-config/store.tfrc");
    std::fs::write(&store_cfg, &printed).unwrap();
    // The packed mirror is gone: the store is the only place null can come from.
    std::fs::remove_dir_all(&mirror).unwrap();

    let out = run_ok(&mut env.terraform_init(&dir, &store_cfg));
    assert!(
        stdout(&out).contains("- Using previously-installed hashicorp/null v2.1.2"),
        "{}",
        stdout(&out)
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), target);
    assert_eq!(lock_file(&dir), lock);
    run_ok(env.terraform(&dir).args(["validate", "-no-color"]));

    // tstore with the same configuration: from the store, nothing re-hashed.
    let other = env.checkout(
        "other",
        &[
            ("main.tf", NULL_CONFIG),
            (".terraform.lock.hcl", lock.as_str()),
        ],
    );
    let report = json(
        &env.tstore()
            .cli_config(&store_cfg)
            .args(["init", "--json"])
            .arg(&other)
            .ok(),
    );
    assert_eq!(
        report["providers"][0]["obtained"], "store_by_lock",
        "{report}"
    );
    assert_eq!(report["bytes_hashed"], 0, "{report}");
}

/// The warm path: a new checkout whose lock pins a package the store holds takes it from the
/// store without reading the filesystem mirror, hashing nothing; `-upgrade` and a lock that
/// pins another version take the full path through the mirror.
#[test]
fn a_locked_package_in_the_store_skips_the_mirror_unless_upgrading() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&a).ok();
    let lock = lock_file(&a);
    let init_json = |dir: &Path, extra: &[&str]| {
        json(
            &env.tstore()
                .cli_config(&cfg)
                .args(["init", "--json"])
                .args(extra)
                .arg(dir)
                .ok(),
        )
    };

    let warm = env.checkout(
        "warm",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let report = init_json(&warm, &[]);
    assert_eq!(
        report["providers"][0]["obtained"], "store_by_lock",
        "{report}"
    );
    assert_eq!(report["bytes_hashed"], 0, "{report}");
    assert_eq!(lock_file(&warm), lock);

    let upgrading = env.checkout(
        "up",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let report = init_json(&upgrading, &["-upgrade"]);
    assert_ne!(
        report["providers"][0]["obtained"], "store_by_lock",
        "{report}"
    );
    assert!(
        report["providers"][0]["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("filesystem_mirror:")),
        "{report}"
    );
}
