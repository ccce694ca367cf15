//! Nothing in a checkout makes tstore write or delete outside it: crafted keys in tstore's
//! module state and in `modules.json`, and symlinked `.terraform` components, leave a victim
//! directory outside the checkout byte-identical (paths, bytes, modes). Each case runs the
//! real binary on a checkout prepared as an attacker would, and says what init does: either
//! it succeeds, ignoring (with a warning) or repairing the crafted entry, or it fails with an
//! error naming the symlink to remove.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use tstore_test_support::{mirror, snapshot, stderr, TestEnv};

use crate::common::{json, TstoreEnv, NULL_CONFIG};

const NULL_LINK: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";

/// A directory outside every checkout, with files of several modes and nested
/// directories, that no init may touch.
fn victim(env: &TestEnv) -> PathBuf {
    let v = env.root.path().join("victim");
    fs_err::create_dir_all(v.join("nested/linux_amd64")).unwrap();
    fs_err::write(v.join("precious.txt"), "do not delete\n").unwrap();
    fs_err::write(v.join("secret"), "0600\n").unwrap();
    fs_err::set_permissions(v.join("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    fs_err::write(v.join("nested/linux_amd64/file"), "inner\n").unwrap();
    fs_err::create_dir_all(v.join("linux_amd64")).unwrap();
    fs_err::write(v.join("linux_amd64/terraform-provider-null"), "not yours\n").unwrap();
    fs_err::create_dir_all(v.join("locked")).unwrap();
    fs_err::write(v.join("locked/file"), "x\n").unwrap();
    fs_err::set_permissions(v.join("locked"), std::fs::Permissions::from_mode(0o500)).unwrap();
    v
}

/// A checkout calling a local module (so `.terraform/modules` is managed).
fn module_checkout(env: &TestEnv, name: &str) -> PathBuf {
    env.checkout(
        name,
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    )
}

/// tstore's module state naming `keys` as private copies.
fn write_state(modules: &Path, keys: &[&str]) {
    fs_err::create_dir_all(modules).unwrap();
    let state: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|k| {
            let v = serde_json::json!({ "package": "x", "action": "copy" });
            ((*k).to_owned(), v)
        })
        .collect();
    fs_err::write(
        modules.join(".tstore-installs.json"),
        serde_json::Value::Object(state).to_string(),
    )
    .unwrap();
}

#[track_caller]
fn assert_ok(out: &std::process::Output, case: &str) {
    assert!(out.status.success(), "{case}: {}", stderr(out));
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
        "..",
        ".",
        "",
        "m/../../../../victim",
    ]
    .iter()
    .enumerate()
    {
        let dir = module_checkout(&env, &format!("state{i}"));
        let modules = dir.join(".terraform/modules");
        write_state(&modules, &[key]);
        fs_err::write(
            modules.join("modules.json"),
            serde_json::json!({ "Modules": [{ "Key": key, "Source": "./x", "Dir": victim }] })
                .to_string(),
        )
        .unwrap();
        let out = env.tstore().no_fuse().init(&dir).output();
        assert_ok(&out, key);
        assert!(
            stderr(&out).contains("which is not a module key tstore writes"),
            "{key}: {}",
            stderr(&out)
        );
        assert_eq!(snapshot(&victim), before, "{key}: the victim changed");
        // The state is repaired: only the key init installed is left.
        let state = fs_err::read_to_string(modules.join(".tstore-installs.json")).unwrap();
        assert!(!state.contains(&format!("{key:?}")), "{key}: {state}");
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

/// `modules.json` is only read for the directories of installed modules: a crafted `Key`
/// or `Dir` is never a path init removes or writes, with or without `-get=false`.
#[test]
fn crafted_modules_json_keys_and_dirs_are_never_written_through() {
    let env = TestEnv::new();
    let victim = victim(&env);
    let before = snapshot(&victim);
    for get in [true, false] {
        let dir = module_checkout(&env, &format!("manifest-{get}"));
        let modules = dir.join(".terraform/modules");
        fs_err::create_dir_all(&modules).unwrap();
        let records = serde_json::json!({ "Modules": [
            { "Key": "../x", "Source": "./x", "Dir": victim },
            { "Key": "m", "Source": "./m", "Dir": "../../victim" },
            { "Key": victim, "Source": "./x", "Dir": "../victim/nested" },
        ] });
        fs_err::write(modules.join("modules.json"), records.to_string()).unwrap();
        let mut tstore = env.tstore().no_fuse().arg("init");
        if !get {
            tstore = tstore.arg("-get=false");
        }
        let out = tstore.arg(&dir).output();
        assert_ok(&out, &format!("get={get}"));
        assert_eq!(snapshot(&victim), before, "get={get}: the victim changed");
        if get {
            let text = fs_err::read_to_string(modules.join("modules.json")).unwrap();
            assert!(!text.contains("victim") && !text.contains(".."), "{text}");
        }
    }
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
    let cases: [(&str, &str, &str); 8] = [
        (".terraform", ".terraform", NULL_CONFIG),
        ("providers", ".terraform/providers", NULL_CONFIG),
        (
            "host",
            ".terraform/providers/registry.terraform.io",
            NULL_CONFIG,
        ),
        (
            "namespace",
            ".terraform/providers/registry.terraform.io/hashicorp",
            NULL_CONFIG,
        ),
        (
            "version",
            ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2",
            NULL_CONFIG,
        ),
        ("modules", ".terraform/modules", ""),
        ("terraform-for-modules", ".terraform", ""),
        ("modules-without-calls", ".terraform/modules", "# none\n"),
    ];
    for (case, link, config) in cases {
        let dir = match config {
            "" => module_checkout(&env, case),
            c => env.checkout(case, &[("main.tf", c)]),
        };
        let link_path = dir.join(link);
        fs_err::create_dir_all(link_path.parent().unwrap()).unwrap();
        symlink(&victim, &link_path).unwrap();
        // The victim looks like an install tstore would clean up.
        let out = env.tstore().cli_config(&cfg).no_fuse().init(&dir).output();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{case}: {err}");
        assert!(err.contains("is a symlink"), "{case}: {err}");
        assert!(
            err.contains(link) && err.contains("init again"),
            "{case}: {err}"
        );
        assert_eq!(snapshot(&victim), before, "{case}: the victim changed");
        assert!(link_path.is_symlink(), "{case}: the symlink itself is kept");
    }
}

/// The entry itself may be a symlink or a directory left in the checkout: it is replaced
/// as a link (never followed), and what it pointed at stays.
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
    symlink(victim.join("linux_amd64"), &link).unwrap();
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&dir)
        .ok();
    assert!(fs_err::read_link(&link).unwrap().starts_with(&env.mount));

    // A real OS_ARCH directory holding links and a hard link out: removed, not followed.
    let dir = env.checkout("provider-dir", &[("main.tf", NULL_CONFIG)]);
    let link = dir.join(NULL_LINK);
    plant_tree(&link, &victim);
    let out = env.tstore().cli_config(&cfg).no_fuse().init(&dir).output();
    assert_ok(&out, "provider-dir");
    assert!(fs_err::read_link(&link).unwrap().starts_with(&env.mount));

    let dir = module_checkout(&env, "module-entry");
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(&modules).unwrap();
    symlink(&victim, modules.join("m")).unwrap();
    write_state(&modules, &["m"]);
    let out = env.tstore().no_fuse().init(&dir).output();
    assert_ok(&out, "module-entry");
    // `m` is read in place now: the stale link tstore recorded is removed, as a link.
    assert!(fs_err::symlink_metadata(modules.join("m")).is_err());
    assert_eq!(snapshot(&victim), before, "the victim changed");
}

/// A directory at `at` as an attacker would leave it: symlinks to the victim and to one
/// of its files, a hard link to another, and a read-only subdirectory.
fn plant_tree(at: &Path, victim: &Path) {
    fs_err::create_dir_all(at.join("ro/deeper")).unwrap();
    symlink(victim, at.join("escape")).unwrap();
    symlink(victim.join("precious.txt"), at.join("ro/file-link")).unwrap();
    symlink(victim.join("locked"), at.join("ro/deeper/locked")).unwrap();
    fs_err::hard_link(victim.join("secret"), at.join("hard")).unwrap();
    fs_err::write(at.join("ro/deeper/own"), "own\n").unwrap();
    for d in ["ro/deeper", "ro"] {
        fs_err::set_permissions(at.join(d), std::fs::Permissions::from_mode(0o555)).unwrap();
    }
}

/// A stale install tstore recorded (a link to the victim, or a private copy holding links
/// and hard links out) is removed without following anything in it.
#[test]
fn stale_installs_are_removed_without_following_links() {
    let env = TestEnv::new();
    let victim = victim(&env);
    let before = snapshot(&victim);

    let dir = module_checkout(&env, "stale");
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(&modules).unwrap();
    symlink(&victim, modules.join("gone")).unwrap();
    symlink(victim.join("precious.txt"), modules.join("file")).unwrap();
    plant_tree(&modules.join("copied"), &victim);
    // A leftover copy in tstore's temp name for the key, planted as a tree.
    plant_tree(&modules.join(".m.tstore-copy"), &victim);
    write_state(&modules, &["gone", "file", "copied"]);
    let out = env.tstore().no_fuse().init(&dir).output();
    assert_ok(&out, "stale");
    assert_eq!(snapshot(&victim), before, "the victim changed");
    for gone in ["gone", "file", "copied"] {
        assert!(
            fs_err::symlink_metadata(modules.join(gone)).is_err(),
            "{gone} is still there"
        );
    }

    // A private copy (a local module declared self-modifying) replacing a planted tree.
    let dir = env.checkout(
        "copy",
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            (
                "module-package.meta.hcl",
                "module \"m\" {\n  path = \"./m\"\n  read-only = {\n    self = false\n  }\n}\n",
            ),
        ],
    );
    let modules = dir.join(".terraform/modules");
    plant_tree(&modules.join("m"), &victim);
    plant_tree(&modules.join(".m.tstore-copy"), &victim);
    write_state(&modules, &["m"]);
    for upgrade in [false, true] {
        let mut tstore = env.tstore().no_fuse().args(["init", "--json"]);
        if upgrade {
            tstore = tstore.arg("-upgrade");
        }
        let report = json(&tstore.arg(&dir).ok());
        assert_eq!(report["modules"][0]["action"], "copy", "{report}");
        assert_eq!(
            snapshot(&victim),
            before,
            "upgrade={upgrade}: the victim changed"
        );
        assert!(modules.join("m/main.tf").is_file());
        assert!(!modules.join("m/escape").exists() && !modules.join("m/hard").exists());
    }
}

/// tstore's own files under `.terraform/modules` and the lock file, planted as symlinks to
/// files outside: init replaces the link (as terraform replaces the lock file: a new file
/// renamed over it) and never writes through it.
#[test]
fn state_manifest_and_lock_file_symlinks_are_replaced_not_written_through() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let victim = victim(&env);
    fs_err::write(
        victim.join("state.json"),
        r#"{"m":{"package":"x","action":"copy"}}"#,
    )
    .unwrap();
    fs_err::write(victim.join("lock.hcl"), "# the victim's lock file\n").unwrap();
    let before = snapshot(&victim);

    let main = format!("{NULL_CONFIG}module \"m\" {{\n  source = \"./m\"\n}}\n");
    let dir = env.checkout(
        "files",
        &[
            ("main.tf", main.as_str()),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    );
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(&modules).unwrap();
    symlink(
        victim.join("state.json"),
        modules.join(".tstore-installs.json"),
    )
    .unwrap();
    symlink(victim.join("precious.txt"), modules.join("modules.json")).unwrap();
    symlink(victim.join("lock.hcl"), dir.join(".terraform.lock.hcl")).unwrap();
    let out = env.tstore().cli_config(&cfg).no_fuse().init(&dir).output();
    assert_ok(&out, "files");
    let err = stderr(&out);
    assert!(
        err.contains("is a symlink, not a file tstore wrote"),
        "{err}"
    );
    assert_eq!(snapshot(&victim), before, "the victim changed");
    for f in [
        modules.join(".tstore-installs.json"),
        modules.join("modules.json"),
        dir.join(".terraform.lock.hcl"),
    ] {
        let meta = fs_err::symlink_metadata(&f).unwrap();
        assert!(meta.is_file(), "{} is not a regular file now", f.display());
    }
    let lock = fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap();
    assert!(lock.contains("hashicorp/null"), "{lock}");
}

/// A symlinked data directory: init refuses it, and the root it records names no link
/// outside the checkout (the links found through the symlink are not this checkout's).
#[test]
fn a_symlinked_data_directory_records_no_root_link_outside_the_checkout() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    // A data directory outside the checkout holding real links into the store.
    let donor = env.checkout("donor", &[("main.tf", NULL_CONFIG)]);
    assert_ok(
        &env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .init(&donor)
            .output(),
        "donor",
    );
    let outside = env.root.path().join("outside-data");
    fs_err::rename(donor.join(".terraform"), &outside).unwrap();
    let before = snapshot(&outside);

    let dir = env.checkout("crafted", &[("main.tf", NULL_CONFIG)]);
    symlink(&outside, dir.join(".terraform")).unwrap();
    let out = env.tstore().cli_config(&cfg).no_fuse().init(&dir).output();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        snapshot(&outside),
        before,
        "the outside data directory changed"
    );
    let roots = json(&env.tstore().args(["roots", "ls", "--json"]).ok());
    // A root without links is not kept at all; either way none of its links is outside.
    let crafted = roots["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str() == dir.to_str());
    if let Some(crafted) = crafted {
        assert_eq!(crafted["links"], serde_json::json!([]), "{roots}");
    }
}

/// `TF_DATA_DIR` is the user's choice, not the checkout's: a relative one that leads out of
/// the working directory (`../data`) is used as given, as terraform does.
#[test]
fn a_tf_data_dir_outside_the_checkout_is_the_users_choice() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout("with-data", &[("main.tf", NULL_CONFIG)]);
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .env("TF_DATA_DIR", "../shared-data")
        .arg("init")
        .arg(&dir)
        .ok();
    let link = env.work.join("shared-data").join(
        NULL_LINK
            .strip_prefix(".terraform/")
            .expect("NULL_LINK is under .terraform"),
    );
    assert!(fs_err::read_link(&link).unwrap().starts_with(&env.mount));
}

/// While `tstore init` runs, another process of the checkout's author swaps a directory
/// under `.terraform` with a symlink to the victim and back, again and again
/// (`renameat2(RENAME_EXCHANGE)`, so the path always exists). Whatever moment each step of
/// init lands on, nothing is written or removed in the victim: init works through the
/// directory it opened (or refuses the symlink it met), never through a path checked
/// earlier. Each init either succeeds or fails with exit code 1.
#[test]
fn a_directory_swapped_for_a_symlink_during_init_never_redirects_it() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let victim = victim(&env);
    // The victim also looks like a modules directory with a stale install to remove.
    write_state(&victim, &["gone"]);
    fs_err::create_dir_all(victim.join("gone")).unwrap();
    fs_err::write(victim.join("gone/main.tf"), "# victim\n").unwrap();
    let before = snapshot(&victim);

    let main = format!("{NULL_CONFIG}module \"m\" {{\n  source = \"./m\"\n}}\n");
    let dir = env.checkout(
        "race",
        &[
            ("main.tf", main.as_str()),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    );
    let version = dir.join(NULL_LINK).parent().unwrap().to_path_buf();
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(&version).unwrap();
    for flipped in [&version, &modules] {
        fs_err::create_dir_all(flipped).unwrap();
        symlink(&victim, flipped.with_extension("swap")).unwrap();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Held by a flipper around each exchange, and by the test while it prepares a round.
    let pause = std::sync::Mutex::new(());
    let real = |a: &Path| -> PathBuf {
        let b = a.with_extension("swap");
        if a.is_symlink() {
            b
        } else {
            a.to_path_buf()
        }
    };
    std::thread::scope(|s| {
        for flipped in [&version, &modules] {
            let (stop, pause) = (&stop, &pause);
            s.spawn(move || {
                let swap = flipped.with_extension("swap");
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _held = pause.lock().unwrap();
                    nix::fcntl::renameat2(
                        nix::fcntl::AT_FDCWD,
                        flipped.as_path(),
                        nix::fcntl::AT_FDCWD,
                        swap.as_path(),
                        nix::fcntl::RenameFlags::RENAME_EXCHANGE,
                    )
                    .expect("exchange");
                }
            });
        }
        let mut outcome = Ok(());
        for round in 0..40 {
            {
                // Give each round something to do, in the real directories: a stale
                // install to remove, and no provider link yet.
                let _held = pause.lock().unwrap();
                let m = real(&modules);
                write_state(&m, &["gone"]);
                let _ = std::fs::create_dir(m.join("gone"));
                let _ = std::fs::remove_file(real(&version).join("linux_amd64"));
            }
            let out = env.tstore().cli_config(&cfg).no_fuse().init(&dir).output();
            if !matches!(out.status.code(), Some(0 | 1)) {
                outcome = Err(format!("round {round}: {}", stderr(&out)));
                break;
            }
            let after = snapshot(&victim);
            if after != before {
                let changed: Vec<_> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|k| before.get(*k) != after.get(*k))
                    .collect();
                outcome = Err(format!("round {round}: the victim changed: {changed:?}"));
                break;
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        outcome.unwrap();
    });
    assert_eq!(snapshot(&victim), before, "the victim changed");
}

/// A checkout's meta file asks for a private copy of a local module that is a symlink to a
/// directory outside the checkout: init reads it in place (as terraform does) and copies
/// nothing from outside into the checkout.
#[test]
fn a_local_module_outside_the_checkout_is_never_copied_into_it() {
    let env = TestEnv::new();
    let outside = victim(&env);
    fs_err::write(outside.join("main.tf"), "output \"x\" {\n  value = 1\n}\n").unwrap();
    let dir = env.checkout(
        "c",
        &[
            ("main.tf", "module \"l\" {\n  source = \"./local\"\n}\n"),
            (
                "module-package.meta.hcl",
                "module \"l\" {\n  path = \"./local\"\n  read-only = { self = false }\n}\n",
            ),
        ],
    );
    symlink(&outside, dir.join("local")).unwrap();
    let out = env.tstore().no_fuse().init(&dir).output();
    assert_ok(&out, "init");
    let copied = dir.join(".terraform/modules/l");
    assert!(!copied.exists(), "{} was made", copied.display());
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(dir.join(".terraform")) {
        let entry = entry.unwrap();
        if entry.file_name() == "secret" || entry.file_name() == "precious.txt" {
            found.push(entry.path().to_owned());
        }
    }
    assert!(
        found.is_empty(),
        "files from outside the checkout: {found:?}"
    );
}
