//! `store verify` reports only; `--repair` quarantines damaged packages and removes
//! leftovers; `--dry-run` changes nothing; the next init fetches a quarantined package
//! again, with links and the mount serving good bytes.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tstore_test_support::{
    mirror, stderr, stdout, Layout, NullMirror, TestEnv, NULL_PROVIDER_FILE,
};

use crate::common::{json, TstoreEnv, NULL_CONFIG};

const NULL_REL: &str = "providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";
const NULL_LINK: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";

fn init(fixture: &NullMirror, dir: &Path, no_fuse: bool) {
    let mut tstore = fixture.env.tstore().cli_config(&fixture.cfg);
    if no_fuse {
        tstore = tstore.no_fuse();
    }
    tstore.init(dir).ok();
}

/// Flip one byte of `path` in place, keeping its size and restoring its mtime: bit rot.
fn rot(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap();
    let mtime = meta.modified().unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(1000)).unwrap();
    f.write_all(&[bytes[1000] ^ 0xff]).unwrap();
    bytes[1000] ^= 0xff;
    f.set_modified(mtime).unwrap();
    drop(f);
    std::fs::set_permissions(path, meta.permissions()).unwrap();
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(after.len(), meta.len());
    assert_eq!(after.modified().unwrap(), mtime);
}

fn package_count(env: &TestEnv) -> usize {
    let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
    ls["packages"].as_array().unwrap().len()
}

fn blob_files(env: &TestEnv) -> Vec<PathBuf> {
    walkdir::WalkDir::new(env.store.join("blobs-v1"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

fn bit_rot_is_reported_then_quarantined_and_refetched(no_fuse: bool) {
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let env = &fixture.env;
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    init(&fixture, &dir, no_fuse);
    let good = mirror::null_provider_bytes();
    let view_file = env
        .store
        .join("views")
        .join(NULL_REL)
        .join(NULL_PROVIDER_FILE);
    let blob = blob_files(env)
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|c| c == good))
        .expect("the provider's blob");
    rot(&blob);
    let damaged = std::fs::read(&blob).unwrap();
    assert_ne!(damaged, good);

    // Plain verify: reports the package, the file and the remedy; changes nothing.
    let out = env.tstore().args(["store", "verify"]).fails();
    let text = stdout(&out);
    assert!(
        text.contains("provider registry.terraform.io/hashicorp/null 2.1.2 (linux_amd64)"),
        "{text}"
    );
    assert!(text.contains(&blob.display().to_string()), "{text}");
    assert!(
        text.contains(&format!("{NULL_PROVIDER_FILE}: blob ")),
        "{text}"
    );
    assert!(
        stderr(&out).contains("tstore store verify --repair"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(&blob).unwrap(),
        damaged,
        "verify changed the blob"
    );
    assert_eq!(package_count(env), 1, "verify removed rows");
    assert!(view_file.exists());

    // Dry runs (both spellings) change nothing either.
    for args in [
        &["store", "verify", "--repair", "--dry-run", "--json"][..],
        &["store", "verify", "-dry-run", "-json"][..],
    ] {
        let out = env.tstore().args(args).output();
        let v = json(&out);
        assert_eq!(v["repaired"], false, "{v}");
        assert_eq!(v["repair"]["dry_run"], true, "{v}");
        assert_eq!(v["repair"]["packages"].as_array().unwrap().len(), 1, "{v}");
        assert_eq!(
            std::fs::read(&blob).unwrap(),
            damaged,
            "{args:?} changed the blob"
        );
        assert_eq!(package_count(env), 1, "{args:?} removed rows");
        assert!(view_file.exists(), "{args:?} removed the view");
    }

    // Repair: the package is quarantined, the blob moved out of blobs-v1.
    let out = env.tstore().args(["store", "verify", "--repair"]).ok();
    let text = stdout(&out);
    assert!(
        text.contains("quarantined: provider registry.terraform.io/hashicorp/null 2.1.2"),
        "{text}"
    );
    assert!(text.contains("1 package quarantined"), "{text}");
    assert_eq!(package_count(env), 0);
    assert!(!blob.exists(), "the bad blob is still in blobs-v1");
    assert!(!view_file.exists(), "the view is still there");
    let quarantined: Vec<_> = std::fs::read_dir(env.store.join("quarantine"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        quarantined
            .iter()
            .any(|p| std::fs::read(p).is_ok_and(|c| c == damaged)),
        "{quarantined:?}"
    );
    // The checkout's link no longer serves the bad bytes; through the mount the package
    // disappears (the watcher drops it when the index changes).
    let linked = dir.join(NULL_LINK).join(NULL_PROVIDER_FILE);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read(&linked).is_ok_and(|c| c == damaged) {
        assert!(Instant::now() < deadline, "the link still serves bad bytes");
        std::thread::sleep(Duration::from_millis(100));
    }
    if !no_fuse {
        let through_mount = env.mount.join(NULL_REL);
        while through_mount.exists() {
            assert!(
                Instant::now() < deadline,
                "the mount still shows the package"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    env.tstore().args(["store", "verify"]).ok();

    // The next init fetches it again and links good bytes.
    init(&fixture, &dir, no_fuse);
    assert_eq!(package_count(env), 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read(&linked).ok().as_deref() != Some(good) {
        assert!(
            Instant::now() < deadline,
            "the relinked provider is not good"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    if !no_fuse {
        let served = std::fs::read(env.mount.join(NULL_REL).join(NULL_PROVIDER_FILE)).unwrap();
        assert!(served == good, "the mount serves other bytes");
    }
    env.tstore().args(["store", "verify"]).ok();
}

/// Bit rot (same size, same mtime) in the views-symlink layout.
#[test]
fn store_verify_bit_rot_is_repaired_without_fuse() {
    bit_rot_is_reported_then_quarantined_and_refetched(true);
}

/// Bit rot (same size, same mtime) while the store is mounted.
#[test]
fn store_verify_bit_rot_is_repaired_through_the_mount() {
    bit_rot_is_reported_then_quarantined_and_refetched(false);
}

/// Plain verify reports leftovers and keeps them; --repair removes and lists them.
#[test]
fn store_verify_leftovers_are_reported_then_removed() {
    let NullMirror { env, mirror, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    env.tstore().args(["store", "import"]).arg(&mirror).ok();
    let tmp_file = env.store.join("tmp").join("crashed-ingest");
    let tmp_dir = env.store.join("tmp").join("crashed-dir");
    std::fs::write(&tmp_file, b"half").unwrap();
    std::fs::create_dir_all(tmp_dir.join("sub")).unwrap();

    let out = env.tstore().args(["store", "verify"]).fails();
    assert!(
        stdout(&out).contains(&tmp_file.display().to_string()),
        "{}",
        stdout(&out)
    );
    assert!(
        tmp_file.exists() && tmp_dir.exists(),
        "plain verify removed leftovers"
    );
    let v = json(&env.tstore().args(["store", "verify", "--json"]).fails());
    assert_eq!(v["clean"], false, "{v}");
    assert_eq!(
        v["repair"]["leftovers"]["tmp"].as_array().unwrap().len(),
        2,
        "{v}"
    );
    assert!(
        tmp_file.exists() && tmp_dir.exists(),
        "plain verify removed leftovers"
    );

    let v = json(
        &env.tstore()
            .args(["store", "verify", "--repair", "--json"])
            .ok(),
    );
    assert_eq!(v["repaired"], true, "{v}");
    let removed = v["repair"]["leftovers"]["tmp"].as_array().unwrap();
    assert_eq!(removed.len(), 2, "{v}");
    assert!(
        !tmp_file.exists() && !tmp_dir.exists(),
        "leftovers not removed"
    );
    assert_eq!(v["repair"]["packages"], serde_json::json!([]), "{v}");
    env.tstore().args(["store", "verify"]).ok();
    assert_eq!(package_count(&env), 1);
}

/// Damage done to an index file in place.
type Damage = fn(&Path);

/// Ways an index gets damaged: garbage over it, a copy cut short, an empty file.
const INDEX_DAMAGE: [(&str, Damage); 3] = [
    ("garbage", |index| {
        std::fs::write(index, vec![0x5a_u8; 8192]).unwrap()
    }),
    ("cut short", |index| {
        let len = std::fs::metadata(index).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(index).unwrap();
        f.set_len(len / 2).unwrap();
    }),
    ("emptied", |index| {
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(index)
            .unwrap();
    }),
];

/// A damaged index is refused by init and verify, naming `tstore store verify --repair`,
/// with nothing changed; `--repair` keeps the damaged file, rebuilds the index from the
/// blobs and views, and the next init of a new checkout downloads nothing (the mirror is
/// gone): the provider comes from the store, re-hashing nothing.
#[test]
fn a_damaged_index_is_refused_then_rebuilt_without_downloading_again() {
    for (damage, apply) in INDEX_DAMAGE {
        let fixture = TestEnv::with_null_mirror(Layout::Packed);
        let env = &fixture.env;
        let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
        init(&fixture, &dir, true);
        let lock = tstore_test_support::lock_file(&dir);
        let index = env.store.join("index.sqlite");
        apply(&index);
        let damaged = std::fs::read(&index).unwrap();
        let store_before = tstore_test_support::snapshot(&env.store);
        let dir_before = tstore_test_support::snapshot(&dir);

        let out = env
            .tstore()
            .cli_config(&fixture.cfg)
            .no_fuse()
            .arg("init")
            .arg(&dir)
            .fails();
        let err = stderr(&out);
        assert!(err.contains("is damaged"), "{damage}: {err}");
        assert!(
            err.contains("tstore store verify --repair"),
            "{damage}: {err}"
        );
        for args in [
            &["store", "verify"][..],
            &["store", "verify", "--repair", "--dry-run"],
        ] {
            let out = env.tstore().args(args).fails();
            assert!(
                stdout(&out).contains("damaged: the index"),
                "{damage}: {}",
                stdout(&out)
            );
        }
        assert!(
            stderr(&env.tstore().args(["store", "verify"]).fails())
                .contains("tstore store verify --repair"),
            "{damage}"
        );
        assert_eq!(
            tstore_test_support::snapshot(&env.store),
            store_before,
            "{damage}: a refusal changed the store"
        );
        assert_eq!(
            tstore_test_support::snapshot(&dir),
            dir_before,
            "{damage}: a refusal changed the checkout"
        );

        let out = env.tstore().args(["store", "verify", "--repair"]).ok();
        let text = stdout(&out);
        assert!(
            text.contains("rebuilt: provider registry.terraform.io/hashicorp/null 2.1.2"),
            "{damage}: {text}"
        );
        let kept: Vec<PathBuf> = std::fs::read_dir(&env.store)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("index.sqlite.damaged-")
            })
            .collect();
        assert_eq!(kept.len(), 1, "{damage}: {kept:?}");
        assert_eq!(std::fs::read(&kept[0]).unwrap(), damaged, "{damage}");

        std::fs::remove_dir_all(&fixture.mirror).unwrap();
        let other = env.checkout(
            "other",
            &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
        );
        let report = json(
            &env.tstore()
                .cli_config(&fixture.cfg)
                .no_fuse()
                .args(["init", "--json"])
                .arg(&other)
                .ok(),
        );
        assert_eq!(
            report["providers"][0]["obtained"], "store_by_lock",
            "{damage}: {report}"
        );
        assert_eq!(report["bytes_hashed"], 0, "{damage}: {report}");
        let linked = std::fs::read(other.join(NULL_LINK).join(NULL_PROVIDER_FILE)).unwrap();
        assert!(linked == mirror::null_provider_bytes(), "{damage}");
        env.tstore().args(["store", "verify"]).ok();
    }
}
