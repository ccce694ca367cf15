//! What a cold init that syncs nothing survives: a `kill -9` half way loses nothing the next
//! init needs, and a machine crash (a boot that ended with the files in its page cache,
//! simulated with `TSTORE_TEST_BOOT_ID`) is found by the next boot before a package is
//! linked.

use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{stderr, TestEnv};

use crate::common::TstoreEnv as _;

/// A module package of `files` small files (plus `main.tf`) as a `.tar.gz`.
fn module_tar_gz(files: usize) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    {
        let mut tar = tar::Builder::new(&mut gz);
        let mut add = |name: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            tar.append_data(&mut h, name, data).unwrap();
        };
        add("main.tf", b"output \"x\" {\n  value = \"intact\"\n}\n");
        for i in 0..files {
            add(
                &format!("data/{}/f{i}.txt", i % 50),
                format!("file {i}\n").as_bytes(),
            );
        }
        tar.finish().unwrap();
    }
    gz.finish().unwrap()
}

fn root(env: &TestEnv, name: &str, url: &str) -> PathBuf {
    env.checkout(
        name,
        &[(
            "main.tf",
            &format!("module \"m\" {{\n  source = \"{url}\"\n}}\n"),
        )],
    )
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d).into_iter().flatten().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn kill_9_during_a_cold_init_loses_nothing_the_next_init_needs() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let url = reg.archive("many.tar.gz", module_tar_gz(20_000));
    let dir = root(&env, "r", &url);
    let blobs = env.store.join("blobs-v1");
    let child = env
        .tstore()
        .no_fuse()
        .arg("init")
        .arg(&dir)
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    // Killed once blob files are in place: half way through the package.
    while files_under(&blobs).len() < 100 {
        assert!(start.elapsed().as_secs() < 60, "no blob appeared");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.signal(),
        Some(9),
        "the init ended before the kill"
    );

    let out = env.tstore().no_fuse().arg("init").arg(&dir).output();
    assert!(out.status.success(), "{}", stderr(&out));
    let installed = dir.join(".terraform/modules/m/main.tf");
    assert!(fs_err::read_to_string(installed)
        .unwrap()
        .contains("intact"));
    assert_eq!(
        files_under(&dir.join(".terraform/modules/m/data")).len(),
        20_000
    );
    // Every blob and view is sound; the killed process left only its temporary files,
    // which the repair (or gc) removes.
    let report = env
        .tstore()
        .no_fuse()
        .args(["store", "verify", "--json"])
        .output();
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    for field in ["corrupt", "missing", "views_bad", "claims_bad"] {
        assert_eq!(report[field], serde_json::json!([]), "{field}: {report}");
    }
    assert_eq!(
        report["repair"]["packages"],
        serde_json::json!([]),
        "{report}"
    );
    env.tstore()
        .no_fuse()
        .args(["store", "verify", "--repair"])
        .ok();
    env.tstore().no_fuse().args(["store", "verify"]).ok();
}

/// A blob a machine crash zeroed, its size and times kept: in the boot that wrote it the
/// page cache still has the bytes (nothing to find); the next boot re-reads the package
/// from the disk before linking it, drops it and fetches it again.
#[test]
fn a_package_a_machine_crash_damaged_is_fetched_again_in_the_next_boot() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let url = reg.archive("m.tar.gz", module_tar_gz(3));
    let dir = root(&env, "r", &url);
    let init = |boot: &str| {
        let out = env
            .tstore()
            .no_fuse()
            .env("TSTORE_TEST_BOOT_ID", boot)
            .arg("init")
            .arg(&dir)
            .output();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    init("boot-a");
    let installed = dir.join(".terraform/modules/m/main.tf");
    let intact = fs_err::read(&installed).unwrap();
    let blob = files_under(&env.store.join("blobs-v1"))
        .into_iter()
        .find(|p| fs_err::read(p).unwrap() == intact)
        .expect("the blob of main.tf");
    let meta = fs_err::metadata(&blob).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        let parent = blob.parent().unwrap();
        let dir_mode = fs_err::metadata(parent).unwrap().permissions();
        fs_err::set_permissions(parent, std::fs::Permissions::from_mode(0o700)).unwrap();
        fs_err::set_permissions(&blob, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut f = fs_err::OpenOptions::new().write(true).open(&blob).unwrap();
        f.write_all(&vec![0u8; intact.len()]).unwrap();
        f.file()
            .set_times(
                std::fs::FileTimes::new()
                    .set_accessed(meta.accessed().unwrap())
                    .set_modified(meta.modified().unwrap()),
            )
            .unwrap();
        fs_err::set_permissions(&blob, meta.permissions()).unwrap();
        fs_err::set_permissions(parent, dir_mode).unwrap();
    }
    assert_ne!(
        fs_err::read(&installed).unwrap(),
        intact,
        "the crash's damage"
    );

    let again = init("boot-b");
    assert_eq!(fs_err::read(&installed).unwrap(), intact);
    assert!(
        stderr(&again).contains("changed on disk"),
        "{}",
        stderr(&again)
    );
    let verify = env
        .tstore()
        .no_fuse()
        .env("TSTORE_TEST_BOOT_ID", "boot-b")
        .args(["store", "verify"])
        .output();
    assert!(verify.status.success(), "{}", stderr(&verify));
}

/// gc from cron with nothing to collect still makes what inits left to the page cache
/// durable (one `syncfs`), beside a running init: the marks go, and the next boot trusts
/// the package without re-reading it.
#[test]
fn gc_with_nothing_to_collect_makes_the_inits_files_durable() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let url = reg.archive("m.tar.gz", module_tar_gz(3));
    let dir = root(&env, "r", &url);
    let marked = || -> i64 {
        let conn = rusqlite::Connection::open(env.store.join("index.sqlite")).unwrap();
        conn.query_row(
            "SELECT COUNT(*) FROM blobs WHERE written_boot = 'boot-a'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    env.tstore()
        .no_fuse()
        .env("TSTORE_TEST_BOOT_ID", "boot-a")
        .arg("init")
        .arg(&dir)
        .ok();
    assert_eq!(marked(), 4);
    // An init holds the store: gc has nothing to collect and does not wait for it.
    let running = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.store.join(".lock"))
        .unwrap();
    running.file().lock_shared().unwrap();
    let report = env
        .tstore()
        .no_fuse()
        .env("TSTORE_TEST_BOOT_ID", "boot-a")
        .args(["gc", "--wait", "0"])
        .json();
    assert!(report.get("skipped").is_none(), "{report}");
    assert_eq!(marked(), 0);
    running.file().unlock().unwrap();
    let out = env
        .tstore()
        .no_fuse()
        .env("TSTORE_TEST_BOOT_ID", "boot-b")
        .arg("init")
        .arg(&dir)
        .json();
    assert_eq!(out["bytes_hashed"], 0, "nothing re-read: {out}");
}
