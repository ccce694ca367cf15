//! Roots, `tstore gc`, concurrency and crash safety, with real processes.
//!
//! Everything runs with `TSTORE_NO_FUSE=1` (the mount path is a symlink to the views): the
//! FUSE daemon is not what these tests are about, and no daemon is left behind.
//! Knobs: `TSTORE_STRESS_SECS` (default 30), `TSTORE_STRESS_WORKERS` (default 8) and
//! `TSTORE_FAULT_ROUNDS` (default 50); `scripts/soak` raises them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tstore_test_support::{mirror, stdout, TestEnv, Tstore};

use crate::common::json;
use crate::common::TstoreEnv as _;

/// Providers of the fixtures: `example.com/test/pN` 1.0.0, each an executable with its own
/// content plus a file shared by all.
const PROVIDERS: usize = 8;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub(crate) struct Fixture {
    pub(crate) env: TestEnv,
    cfg: PathBuf,
}

impl Fixture {
    /// A packed mirror of [`PROVIDERS`] providers of `size` bytes each.
    pub(crate) fn new(size: usize) -> Fixture {
        let env = TestEnv::new();
        let mirror_dir = env.root.path().join("mirror");
        for i in 0..PROVIDERS {
            let mut bin = vec![0u8; size];
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1);
            for b in &mut bin {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            let files = [
                mirror::PkgFile {
                    path: &format!("terraform-provider-p{i}_v1.0.0"),
                    contents: &bin,
                    executable: true,
                },
                mirror::PkgFile {
                    path: "LICENSE",
                    contents: b"shared license text\n",
                    executable: false,
                },
            ];
            mirror::write_packed(
                &mirror_dir,
                &format!("example.com/test/p{i}"),
                "1.0.0",
                "linux_amd64",
                &files,
            );
        }
        let cfg = env.cli_config_fs_mirror(&mirror_dir);
        Fixture { env, cfg }
    }

    /// `tstore` with this fixture's CLI configuration and no FUSE.
    pub(crate) fn cmd(&self) -> Tstore {
        self.env.tstore().cli_config(&self.cfg).no_fuse()
    }

    /// (Re)create checkout `name` requiring the given providers.
    pub(crate) fn checkout(&self, name: &str, providers: &[usize]) -> PathBuf {
        let mut tf = String::from("terraform {\n  required_providers {\n");
        for p in providers {
            tf.push_str(&format!(
                "    p{p} = {{ source = \"example.com/test/p{p}\" }}\n"
            ));
        }
        tf.push_str("  }\n}\n");
        self.env.checkout(name, &[("main.tf", &tf)])
    }

    pub(crate) fn init(&self, dir: &Path) -> std::process::Output {
        self.cmd().init(dir).output()
    }

    pub(crate) fn gc_json(&self, args: &[&str]) -> serde_json::Value {
        json(&self.cmd().arg("gc").arg("--json").args(args).ok())
    }

    /// `store verify --repair --json` (removes leftovers); panics unless no package had
    /// to be quarantined.
    fn verify_clean(&self) -> serde_json::Value {
        let out = self
            .cmd()
            .args(["store", "verify", "--repair", "--json"])
            .output();
        let v = json(&out);
        assert!(out.status.success(), "store verify failed: {v}");
        assert_eq!(v["repair"]["packages"], serde_json::json!([]), "{v}");
        assert_eq!(v["corrupt"], serde_json::json!([]), "{v}");
        assert_eq!(v["missing"], serde_json::json!([]), "{v}");
        assert_eq!(v["views_bad"], serde_json::json!([]), "{v}");
        v
    }
}

fn provider_link(dir: &Path, p: usize) -> PathBuf {
    dir.join(format!(
        ".terraform/providers/example.com/test/p{p}/1.0.0/linux_amd64"
    ))
}

/// Every symlink under `.terraform/providers` of `dir` that does not resolve.
fn dangling_links(dir: &Path) -> Vec<PathBuf> {
    let base = dir.join(".terraform/providers");
    let mut out = Vec::new();
    let mut stack = vec![base];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                if std::fs::metadata(&p).is_err() {
                    out.push(p);
                }
            } else if meta.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

fn package_names(v: &serde_json::Value, field: &str) -> Vec<String> {
    let mut names: Vec<String> = v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Roots are recorded by init; gc drops roots whose directory is gone or whose links were
/// removed, removes what they alone used, honours the grace period and `--dry-run`.
#[test]
fn gc_sweeps_what_no_live_root_links() {
    let f = Fixture::new(1000);
    let a = f.checkout("a", &[0, 1]);
    let b = f.checkout("b", &[1, 2]);
    let c = f.checkout("c", &[3]);
    for d in [&a, &b, &c] {
        f.cmd().arg("init").arg(d).ok();
    }
    let roots = json(&f.cmd().args(["roots", "ls", "--json"]).ok());
    let roots = roots["roots"].as_array().unwrap();
    assert_eq!(roots.len(), 3, "{roots:?}");
    assert_eq!(roots[0]["links"].as_array().unwrap().len(), 2, "{roots:?}");

    // Nothing unreferenced: nothing to do.
    let r = f.gc_json(&["--min-age", "0"]);
    assert_eq!(r["packages_removed"], serde_json::json!([]), "{r}");
    assert_eq!(r["roots_live"], 3, "{r}");

    // b deleted, c's links removed.
    std::fs::remove_dir_all(&b).unwrap();
    std::fs::remove_dir_all(c.join(".terraform")).unwrap();
    // The default grace period (1 h) keeps everything young.
    let r = f.gc_json(&[]);
    assert_eq!(r["packages_removed"], serde_json::json!([]), "{r}");
    assert_eq!(r["packages_young"], 2, "{r}");
    // --dry-run reports and keeps.
    let r = f.gc_json(&["--min-age", "0", "--dry-run"]);
    assert_eq!(
        package_names(&r, "packages_removed"),
        ["example.com/test/p2", "example.com/test/p3"],
        "{r}"
    );
    let ls = json(&f.cmd().args(["store", "ls", "--json"]).ok());
    assert_eq!(ls["packages"].as_array().unwrap().len(), 4, "{ls}");
    // For real.
    let r = f.gc_json(&["--min-age", "0"]);
    assert_eq!(
        package_names(&r, "packages_removed"),
        ["example.com/test/p2", "example.com/test/p3"],
        "{r}"
    );
    assert_eq!(r["blobs_removed"], 2, "{r}"); // the shared LICENSE stays
    assert!(r["bytes_freed"].as_u64().unwrap() >= 2000, "{r}");
    assert_eq!(r["roots_live"], 1, "{r}");
    let ls = json(&f.cmd().args(["store", "ls", "--json"]).ok());
    assert_eq!(
        package_names(&ls, "packages"),
        ["example.com/test/p0", "example.com/test/p1"]
    );
    assert!(dangling_links(&a).is_empty());
    assert!(!f
        .env
        .store
        .join("views/providers/example.com/test/p2/1.0.0")
        .exists());
    f.verify_clean();
    // A re-init of c brings p3 back.
    f.cmd().arg("init").arg(&c).ok();
    assert!(provider_link(&c, 3).join("LICENSE").exists());
}

/// gc waits at most `--wait`: with the store lock held shared past it (a long init), it
/// skips and exits 0.
#[test]
fn gc_skips_when_the_store_stays_busy() {
    let f = Fixture::new(100);
    let a = f.checkout("a", &[0]);
    f.cmd().arg("init").arg(&a).ok();
    // Something to collect: a checkout that went away.
    let b = f.checkout("b", &[1]);
    f.cmd().arg("init").arg(&b).ok();
    fs_err::remove_dir_all(&b).unwrap();
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(f.env.store.join(".lock"))
        .unwrap();
    lock.lock_shared().unwrap();
    let out = f.cmd().args(["gc", "--min-age", "0", "--wait", "1"]).ok();
    assert_eq!(stdout(&out).trim(), "store busy, skipped");
    // It let go of its turnstile: a new init is not held back.
    f.cmd().arg("init").arg(&a).ok();
    lock.unlock().unwrap();
    let out = f.cmd().args(["gc", "--min-age", "0"]).ok();
    assert!(
        stdout(&out).contains("gc removed 1 package"),
        "{}",
        stdout(&out)
    );
    f.cmd().args(["gc", "--min-age", "1y"]).fails();
}

/// N processes run `tstore init` in random checkouts while another deletes checkouts and
/// runs `gc --min-age 0` in a loop: no init fails, no link dangles, verify is clean, and a
/// final gc leaves exactly what the remaining checkouts link.
#[test]
fn stress_concurrent_inits_and_gc() {
    let secs = knob("TSTORE_STRESS_SECS", 30);
    let workers = knob("TSTORE_STRESS_WORKERS", 8) as usize;
    let f = Arc::new(Fixture::new(200_000));
    // Ten checkouts over eight providers: deleting one often leaves a provider unlinked.
    let checkouts: Vec<(String, Vec<usize>)> = (0..10)
        .map(|i| {
            let mut p = vec![i % PROVIDERS];
            if i < 3 {
                p.push((i + 4) % PROVIDERS);
            }
            (format!("c{i}"), p)
        })
        .collect();
    // A checkout is either being initialized or being deleted, never both.
    let busy: Arc<Vec<Mutex<()>>> = Arc::new(checkouts.iter().map(|_| Mutex::new(())).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let inits = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let deadline = Instant::now() + Duration::from_secs(secs);

    let mut handles = Vec::new();
    for w in 0..workers {
        let (f, busy, stop, inits, failures, checkouts) = (
            f.clone(),
            busy.clone(),
            stop.clone(),
            inits.clone(),
            failures.clone(),
            checkouts.clone(),
        );
        handles.push(std::thread::spawn(move || {
            let mut x = 0x2545_f491_4f6c_dd1du64 ^ (w as u64 + 1) << 32;
            while !stop.load(Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % checkouts.len() as u64) as usize;
                let (name, providers) = &checkouts[i];
                let _guard = busy[i].lock().unwrap();
                let dir = f.checkout(name, providers);
                let out = f.init(&dir);
                inits.fetch_add(1, Ordering::Relaxed);
                if !out.status.success() {
                    failures
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&out.stderr).into_owned());
                } else if !dangling_links(&dir).is_empty() {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("dangling links right after init in {name}"));
                }
                drop(_guard);
                std::thread::sleep(Duration::from_millis(x % 40));
            }
        }));
    }
    let (mut gc_runs, mut gc_skips, mut removed) = (0u64, 0u64, 0u64);
    let mut x = 0x1234_5678_9abc_def1u64;
    while Instant::now() < deadline {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % checkouts.len() as u64) as usize;
        if let Ok(_guard) = busy[i].try_lock() {
            let dir = f.env.work.join(&checkouts[i].0);
            let _ = std::fs::remove_dir_all(&dir);
        }
        let out = f.cmd().args(["gc", "--min-age", "0", "--json"]).ok();
        let v = json(&out);
        if v.get("skipped").is_some() {
            gc_skips += 1;
        } else {
            gc_runs += 1;
            removed += v["packages_removed"].as_array().unwrap().len() as u64;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    eprintln!(
        "stress: {} inits, gc ran {gc_runs} times (skipped {gc_skips}), removed {removed} packages",
        inits.load(Ordering::Relaxed)
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n---\n")
    );
    assert!(gc_runs > 0, "gc never got the store lock");

    // The end state.
    let r = f.gc_json(&["--min-age", "0"]);
    assert!(r.get("skipped").is_none(), "{r}");
    let mut expected = std::collections::BTreeSet::new();
    for (name, providers) in &checkouts {
        let dir = f.env.work.join(name);
        if !dir.exists() {
            continue;
        }
        assert!(dangling_links(&dir).is_empty(), "dangling links in {name}");
        for p in providers {
            if provider_link(&dir, *p).exists() {
                expected.insert(format!("example.com/test/p{p}"));
            }
        }
    }
    let ls = json(&f.cmd().args(["store", "ls", "--json"]).ok());
    let have: std::collections::BTreeSet<String> =
        package_names(&ls, "packages").into_iter().collect();
    assert_eq!(
        have, expected,
        "the store holds exactly what checkouts link"
    );
    let du = json(&f.cmd().args(["store", "du", "--json"]).ok());
    let blobs = expected.len() as u64 + u64::from(!expected.is_empty()); // + shared LICENSE
    assert_eq!(du["blobs"], blobs, "{du}");
    assert_eq!(du["trees"], expected.len() as u64, "{du}");
    let v = f.verify_clean();
    let left = &v["repair"]["leftovers"];
    assert_eq!(left["tmp"], serde_json::json!([]), "{v}");
    assert_eq!(left["blobs"], serde_json::json!([]), "{v}");
    assert_eq!(left["views"], serde_json::json!([]), "{v}");
}

/// kill -9 at random moments of init (ingest, commit, link, lock file) and gc: afterwards
/// `store verify` (after it removed the leftovers) is clean and a fresh init succeeds.
#[test]
fn kill_9_during_ingest_and_gc_leaves_a_sound_store() {
    let rounds = knob("TSTORE_FAULT_ROUNDS", 50);
    let f = Fixture::new(3_000_000);
    let mut x = 0x7777_1234_abcd_0001u64;
    let mut killed = 0;
    for round in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let providers = [
            (round as usize) % PROVIDERS,
            (round as usize + 2) % PROVIDERS,
        ];
        let dir = f.checkout(&format!("r{round}"), &providers);
        let mut cmd = f.cmd().command();
        if round % 3 == 2 {
            // Make garbage for gc to sweep, then kill gc mid-sweep.
            for old in 0..round {
                let _ = std::fs::remove_dir_all(f.env.work.join(format!("r{old}")));
            }
            cmd.args(["gc", "--min-age", "0"]);
        } else {
            cmd.arg("init").arg(&dir);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(x % 120_000));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();

        f.verify_clean();
        let fresh = f.checkout(&format!("fresh{round}"), &providers);
        let out = f.init(&fresh);
        assert!(
            out.status.success(),
            "round {round}: init after kill -9 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dangling_links(&fresh).is_empty(), "round {round}");
        std::fs::remove_dir_all(&fresh).unwrap();
        if round % 3 != 2 {
            // The killed init's checkout: a re-init repairs whatever it left.
            f.cmd().arg("init").arg(&dir).ok();
            assert!(dangling_links(&dir).is_empty(), "round {round}");
        }
    }
    eprintln!("fault injection: {rounds} rounds, {killed} processes killed while running");
    assert!(killed > 0, "no process was killed mid-run");
    f.gc_json(&["--min-age", "0"]);
    f.verify_clean();
}

/// A blob flipped on disk is reported by `store verify`, and init re-ingests the package
/// instead of linking the corrupt content.
#[test]
fn corrupt_blob_is_reported_and_not_linked() {
    let f = Fixture::new(50_000);
    let a = f.checkout("a", &[0]);
    f.cmd().arg("init").arg(&a).ok();
    let bin = provider_link(&a, 0).join("terraform-provider-p0_v1.0.0");
    let good = std::fs::read(&bin).unwrap();
    // Find the blob file by content and flip a byte in place.
    let blob = walk_files(&f.env.store.join("blobs-v1"))
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|c| c == good))
        .expect("the provider's blob");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&blob, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut bad = good.clone();
    bad[1234] ^= 0xff;
    std::fs::write(&blob, &bad).unwrap();

    let out = f.cmd().args(["store", "verify", "--json"]).output();
    assert!(!out.status.success());
    let v = json(&out);
    assert_eq!(v["corrupt"].as_array().unwrap().len(), 1, "{v}");

    // A new checkout: the memo would name the corrupt tree; init re-ingests instead.
    let b = f.checkout("b", &[0]);
    let out = f.cmd().args(["init", "--json"]).arg(&b).ok();
    let report = json(&out);
    assert_eq!(report["providers"][0]["obtained"], "ingested", "{report}");
    let linked = std::fs::read(provider_link(&b, 0).join("terraform-provider-p0_v1.0.0")).unwrap();
    assert!(linked == good, "init linked corrupt content");
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        good,
        "a's link is repaired too"
    );
    f.verify_clean();
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// gc gets its turn on a busy store: while it waits for the running init (here: the store
/// lock held shared by the test) new inits queue behind its turnstile instead of keeping the
/// store busy, and once the running one finishes gc runs, then the queued init proceeds.
#[test]
fn gc_gets_its_turn_while_inits_keep_coming() {
    let f = Fixture::new(100);
    let a = f.checkout("a", &[0]);
    f.cmd().arg("init").arg(&a).ok();
    let b = f.checkout("b", &[1]);
    f.cmd().arg("init").arg(&b).ok();
    fs_err::remove_dir_all(&b).unwrap();
    let running = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(f.env.store.join(".lock"))
        .unwrap();
    running.lock_shared().unwrap();

    let gc = f
        .cmd()
        .args(["gc", "--min-age", "0", "--wait", "30", "--json"])
        .command()
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // gc holds its turnstile while it waits.
    let intent = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(f.env.store.join(".gc-intent.lock"))
        .unwrap();
    let waited = Instant::now();
    while intent.try_lock_shared().is_ok() {
        intent.unlock().unwrap();
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "gc never queued"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A new init now waits behind gc.
    let queued = f
        .cmd()
        .arg("init")
        .arg(&a)
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The running init finishes: gc runs, then the queued init.
    running.unlock().unwrap();
    let out = gc.wait_with_output().unwrap();
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.get("skipped").is_none(), "{report}");
    assert_eq!(
        report["roots_dropped"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    let queued = queued.wait_with_output().unwrap();
    assert!(
        queued.status.success(),
        "{}",
        String::from_utf8_lossy(&queued.stderr)
    );
    assert!(
        String::from_utf8_lossy(&queued.stderr).contains("waiting for the store lock"),
        "the queued init says why it waited: {}",
        String::from_utf8_lossy(&queued.stderr)
    );
    f.verify_clean();
}

/// A gc that finds nothing to collect does not hold inits back: its preview runs under the
/// shared lock, so it completes while an init holds the store.
#[test]
fn gc_with_nothing_to_collect_runs_beside_a_running_init() {
    let f = Fixture::new(100);
    let a = f.checkout("a", &[0]);
    f.cmd().arg("init").arg(&a).ok();
    let running = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(f.env.store.join(".lock"))
        .unwrap();
    running.lock_shared().unwrap();
    let out = f
        .cmd()
        .args(["gc", "--min-age", "0", "--wait", "0", "--json"])
        .ok();
    let report = json(&out);
    assert!(report.get("skipped").is_none(), "{report}");
    assert_eq!(report["dry_run"], false, "{report}");
    assert_eq!(report["packages_live"], 1, "{report}");
    // And a dry run never waits, whatever there is to collect.
    let b = f.checkout("b", &[1]);
    running.unlock().unwrap();
    f.cmd().arg("init").arg(&b).ok();
    fs_err::remove_dir_all(&b).unwrap();
    running.lock_shared().unwrap();
    let preview = json(
        &f.cmd()
            .args(["gc", "--min-age", "0", "--wait", "0", "--dry-run", "--json"])
            .ok(),
    );
    assert_eq!(
        preview["roots_dropped"].as_array().unwrap().len(),
        1,
        "{preview}"
    );
    running.unlock().unwrap();
}
