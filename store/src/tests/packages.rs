//! Packages: commit (idempotent, merging hashes, refusing conflicts), read-only views,
//! concurrent commits, verify, source memos, the store lock and `tmp/` cleanup.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

use super::{key, v2_files, write_zip, Fixture, Z};
use crate::*;

fn running_as_root() -> bool {
    // Without libc: the owner of a file we create is our uid.
    let f = tempfile::NamedTempFile::new().unwrap();
    f.as_file().metadata().unwrap().uid() == 0
}

#[test]
fn commit_is_idempotent_merges_hashes_and_detects_conflicts() {
    let f = Fixture::new();
    let store = f.store();
    let a = store.ingest().dir(&f.dir("a", &v2_files())).unwrap();
    let k = key("fake");
    let h1 = HashRecord::verified_locally(a.h1.clone());
    let p1 = store
        .commit_package(&k, &a.tree, std::slice::from_ref(&h1), None)
        .unwrap();
    assert_eq!(p1.hashes, vec![h1.clone()]);
    assert_eq!((p1.files, p1.bytes), (2, 12));
    let zh = HashRecord {
        hash: "zh:9455ba7c20a0eace758a38bef5fc0eb1e47cf231b4eaeaa9b1f26a1eb8acab53"
            .parse()
            .unwrap(),
        disposition: Disposition {
            reported_by_registry: true,
            signed_by_key_ids: vec!["ABCD".into()],
            ..Default::default()
        },
    };
    let reported_h1 = HashRecord {
        hash: a.h1.clone(),
        disposition: Disposition {
            reported_by_registry: true,
            ..Default::default()
        },
    };
    let p2 = store
        .commit_package(&k, &a.tree, &[zh.clone(), reported_h1], None)
        .unwrap();
    assert_eq!(p2.created_at, p1.created_at);
    assert_eq!(p2.hashes.len(), 2);
    assert!(
        p2.hashes[0].disposition.verified_locally && p2.hashes[0].disposition.reported_by_registry
    );
    assert_eq!(p2.hashes[1], zh);
    assert_eq!(store.package(&k).unwrap().unwrap().hashes, p2.hashes);

    let b = store
        .ingest()
        .dir(&f.dir("b", &[("terraform-provider-fake", b"other\n", true)]))
        .unwrap();
    let err = store.commit_package(&k, &b.tree, &[], None).unwrap_err();
    assert!(
        matches!(&err, StoreError::PackageConflict { existing, new, .. } if *existing == a.tree && *new == b.tree),
        "{err:?}"
    );
    assert_eq!(store.packages().unwrap().len(), 1);
    assert_eq!(store.package(&k).unwrap().unwrap().tree, a.tree);

    let unknown: TreeId = "00".repeat(32).parse().unwrap();
    assert!(matches!(
        store.commit_package(&key("x"), &unknown, &[], None),
        Err(StoreError::UnknownTree(_))
    ));
    assert!(store.package(&key("x")).unwrap().is_none());
}

#[test]
fn views_are_read_only_hardlinks_with_the_right_exec_bit() {
    let f = Fixture::new();
    let store = f.store();
    // The same content is executable in one package and not in the other.
    let a = store
        .ingest()
        .dir(&f.dir(
            "a",
            &[
                ("terraform-provider-a", b"#!/bin/sh\necho hi\n", true),
                ("README", b"shared\n", false),
            ],
        ))
        .unwrap();
    let b = store
        .ingest()
        .dir(&f.dir(
            "b",
            &[
                ("script.sh", b"#!/bin/sh\necho hi\n", false),
                ("README", b"shared\n", false),
            ],
        ))
        .unwrap();
    store.commit_package(&key("a"), &a.tree, &[], None).unwrap();
    store.commit_package(&key("b"), &b.tree, &[], None).unwrap();
    assert_eq!(store.link_mode(), LinkMode::Hardlink);
    let va = store.view_dir(&key("a")).unwrap();
    let vb = store.view_dir(&key("b")).unwrap();
    assert!(va.starts_with(store.views_dir()));
    assert!(va.ends_with("providers/example.com/test/a/1.0.0/linux_amd64"));

    let exe = fs_err::metadata(va.join("terraform-provider-a")).unwrap();
    let plain = fs_err::metadata(vb.join("script.sh")).unwrap();
    assert_eq!(exe.mode() & 0o777, 0o555);
    assert_eq!(plain.mode() & 0o777, 0o444);
    assert_ne!(
        exe.ino(),
        plain.ino(),
        "different modes need different inodes"
    );
    let blob = BlobId(*blake3::hash(b"#!/bin/sh\necho hi\n").as_bytes());
    let layout = &store.layout;
    let inodes: Vec<u64> = [layout.blob_path(&blob), layout.blob_twin_path(&blob, false)]
        .iter()
        .map(|p| fs_err::metadata(p).unwrap().ino())
        .collect();
    assert!(inodes.contains(&exe.ino()) && inodes.contains(&plain.ino()));

    // Shared blob: one file on disk for both READMEs.
    let ra = fs_err::metadata(va.join("README")).unwrap();
    let rb = fs_err::metadata(vb.join("README")).unwrap();
    assert_eq!(ra.ino(), rb.ino());
    assert_eq!(ra.mode() & 0o777, 0o444);
    let usage = store.space().usage().unwrap();
    assert_eq!((usage.packages, usage.trees, usage.blobs), (2, 2, 2));
    assert_eq!(usage.logical_bytes, 2 * (18 + 7));
    // Two blobs plus one twin.
    assert_eq!(usage.blob_bytes, 18 + 7 + 18);

    // Directories are read-only too; the view cannot be written into.
    assert_eq!(fs_err::metadata(&va).unwrap().mode() & 0o777, 0o555);
    if !running_as_root() {
        assert!(fs_err::write(va.join("new"), b"x").is_err());
    }
    // The exec bit survives a round trip through the view.
    let out = std::process::Command::new(va.join("terraform-provider-a"))
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"hi\n");
    assert!(store.verify().unwrap().is_clean());
}

#[test]
fn concurrent_commits_of_the_same_package_both_succeed() {
    let f = Fixture::new();
    drop(f.store());
    let src = f.dir("src", &v2_files());
    for round in 0..8 {
        let k = key(&format!("race{round}"));
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Package> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let store = Store::open(&f.root).unwrap();
                        barrier.wait();
                        let got = store.ingest().dir(&src).unwrap();
                        store
                            .commit_package(
                                &k,
                                &got.tree,
                                &[HashRecord::verified_locally(got.h1)],
                                None,
                            )
                            .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results[0].tree, results[1].tree);
        assert_eq!(results[0].created_at, results[1].created_at);
    }
    let store = f.store();
    assert_eq!(store.packages().unwrap().len(), 8);
    let usage = store.space().usage().unwrap();
    assert_eq!((usage.trees, usage.blobs), (1, 2));
    assert!(store.verify().unwrap().is_clean());
    // Temp files and dirs were all cleaned up.
    assert_eq!(
        fs_err::read_dir(store.root().join("tmp")).unwrap().count(),
        0
    );
}

#[test]
fn verify_detects_a_flipped_byte() {
    let f = Fixture::new();
    let store = f.store();
    let got = store.ingest().dir(&f.dir("a", &v2_files())).unwrap();
    store
        .commit_package(&key("fake"), &got.tree, &[], None)
        .unwrap();
    let clean = store.verify().unwrap();
    assert!(clean.is_clean(), "{clean:?}");
    assert_eq!(clean.blobs_checked, 2);
    assert_eq!(clean.bytes_checked, 12);

    let blob = BlobId(*blake3::hash(b"world\n").as_bytes());
    let path = store.layout.blob_path(&blob);
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    fs_err::write(&path, b"World\n").unwrap();
    let report = store.verify().unwrap();
    assert!(!report.is_clean());
    assert_eq!(
        report.corrupt,
        vec![CorruptBlob {
            blob,
            path: path.clone()
        }]
    );
    // The view shares the inode, so it is not reported separately as a different file.
    assert!(report.missing.is_empty());

    fs_err::remove_file(&path).unwrap();
    let report = store.verify().unwrap();
    assert_eq!(report.missing.len(), 1);
    assert_eq!(report.missing[0].referenced_by, got.tree);
}

#[test]
fn source_memo_avoids_rereading() {
    let f = Fixture::new();
    let zip = f.zip_path("p.zip");
    write_zip(
        &zip,
        &[
            Z::File("terraform-provider-fake", b"hello\n", 0o755),
            Z::File("sub/data.txt", b"world\n", 0o644),
        ],
    );
    let k = key("fake");
    {
        let store = f.store();
        let fp = SourceFingerprint::of_path(&zip).unwrap();
        assert!(store.memos().source(&zip, &fp).unwrap().is_none());
        let got = store.ingest().zip(&zip).unwrap();
        assert!(store.bytes_hashed() > 12);
        let hashes = [
            HashRecord::verified_locally(got.ingested.h1.clone()),
            HashRecord::verified_locally(got.zh.clone()),
        ];
        store
            .commit_package(&k, &got.ingested.tree, &hashes, Some((&zip, &fp)))
            .unwrap();
    }
    // A second run: the fingerprint matches, nothing is read.
    let store = f.store();
    let fp = SourceFingerprint::of_path(&zip).unwrap();
    let memo = store.memos().source(&zip, &fp).unwrap().unwrap();
    assert_eq!(memo.fingerprint, fp);
    assert_eq!(memo.tree, store.package(&k).unwrap().unwrap().tree);
    assert_eq!(memo.hashes.len(), 2);
    store
        .commit_package(&k, &memo.tree, &memo.hashes, Some((&zip, &fp)))
        .unwrap();
    assert_eq!(store.bytes_hashed(), 0);

    // The source changed: no memo.
    std::thread::sleep(std::time::Duration::from_millis(30));
    write_zip(
        &zip,
        &[Z::File("terraform-provider-fake", b"HELLO\n", 0o755)],
    );
    let fp2 = SourceFingerprint::of_path(&zip).unwrap();
    assert_ne!(fp, fp2);
    assert!(store.memos().source(&zip, &fp2).unwrap().is_none());
}

#[test]
fn stale_view_from_an_interrupted_commit_is_replaced() {
    let f = Fixture::new();
    let store = f.store();
    let got = store.ingest().dir(&f.dir("a", &v2_files())).unwrap();
    let k = key("fake");
    let view = store.view_dir(&k).unwrap();
    fs_err::create_dir_all(&view).unwrap();
    fs_err::write(view.join("junk"), b"left over").unwrap();
    store.commit_package(&k, &got.tree, &[], None).unwrap();
    assert!(!view.join("junk").exists());
    assert_eq!(fs_err::read(view.join("sub/data.txt")).unwrap(), b"world\n");
    assert!(store.verify().unwrap().is_clean());
}

#[test]
fn store_lock_shared_and_exclusive() {
    let f = Fixture::new();
    let a = f.store();
    let b = f.store();
    let shared = a.locks().shared().unwrap();
    let shared2 = b.locks().shared().unwrap();
    assert!(b.locks().try_exclusive().unwrap().is_none());
    drop(shared);
    drop(shared2);
    let excl = b.locks().try_exclusive().unwrap().unwrap();
    assert_eq!(excl.mode(), LockMode::Exclusive);
    assert!(a.locks().try_exclusive().unwrap().is_none());
}

#[test]
fn clean_tmp_removes_leftovers_under_the_exclusive_lock() {
    let f = Fixture::new();
    let store = f.store();
    let tmp = store.root().join("tmp");
    fs_err::create_dir_all(tmp.join("view-crashed/v/sub")).unwrap();
    fs_err::set_permissions(
        tmp.join("view-crashed/v"),
        std::fs::Permissions::from_mode(0o555),
    )
    .unwrap();
    fs_err::write(tmp.join("blob-crashed"), b"x").unwrap();
    let lock = store.locks().try_exclusive().unwrap().unwrap();
    assert_eq!(store.clean_tmp(&lock).unwrap(), 2);
    assert_eq!(fs_err::read_dir(&tmp).unwrap().count(), 0);
}

/// gc counts and removes a `tmp/` entry only once it is older than the grace period: a young
/// one may be an ingest in flight, and counting it would make every gc run under constant
/// cold-init load take the exclusive lock.
#[test]
fn gc_leaves_young_tmp_entries_and_removes_old_ones() {
    let f = Fixture::new();
    let store = f.store();
    let tmp = store.root().join("tmp");
    let young = tmp.join("ingest-in-flight");
    let old = tmp.join("crashed-long-ago");
    fs_err::write(&young, b"y").unwrap();
    fs_err::write(&old, b"o").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    let hour = GcOptions {
        min_age: std::time::Duration::from_secs(3600),
        dry_run: true,
        budget: None,
        ..GcOptions::default()
    };
    let shared = store.locks().shared().unwrap();
    let preview = store.gc(&shared, &hour).unwrap();
    assert_eq!(preview.leftovers.tmp, vec![old.clone()]);
    assert!(store
        .gc_idle_report(hour.min_age, &Default::default())
        .unwrap()
        .is_none());
    drop(shared);
    let lock = store.locks().try_exclusive().unwrap().unwrap();
    let run = store
        .gc(
            &lock,
            &GcOptions {
                dry_run: false,
                ..hour
            },
        )
        .unwrap();
    assert_eq!(run.leftovers.tmp, vec![old.clone()]);
    assert!(!old.exists(), "old leftover kept");
    assert!(young.exists(), "young tmp entry removed");
    let idle = store
        .gc_idle_report(hour.min_age, &Default::default())
        .unwrap();
    assert!(idle.is_some_and(|r| r.leftovers.is_empty()));
    // With no grace period everything in tmp/ is a leftover, as before.
    drop(lock);
    let run = super::gc_now(&store);
    assert_eq!(run.leftovers.tmp, vec![young.clone()]);
    assert!(!young.exists());
}

/// gc's check of whether there is work reads only: it answers while another connection
/// holds the index's write lock (an init recording its root), where a check that took the
/// write lock would wait in SQLite's busy handler and then fail.
#[test]
fn gc_idle_check_needs_no_index_write_lock() {
    let f = Fixture::new();
    let store = f.store();
    let writer = rusqlite::Connection::open(store.root().join("index.sqlite")).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let report = store
        .gc_idle_report(std::time::Duration::from_secs(3600), &Default::default())
        .unwrap()
        .expect("an empty store has nothing to collect");
    assert_eq!(report.packages_live + report.packages_young, 0);
    writer.execute_batch("ROLLBACK").unwrap();
}

/// The package generation moves when the package list changes (a reader such as the FUSE
/// daemon re-lists then), and not when an init only records its root.
#[test]
fn the_package_generation_moves_with_the_package_list_only() {
    let f = Fixture::new();
    let store = f.store();
    let start = store.package_generation().unwrap();
    let dir = f.dir("pkg", &[("terraform-provider-a", b"a", true)]);
    let tree = store.ingest().dir(&dir).unwrap().tree;
    store.commit_package(&key("a"), &tree, &[], None).unwrap();
    let added = store.package_generation().unwrap();
    assert_ne!(added, start);
    assert_eq!(
        store.package_trees().unwrap(),
        vec![(key("a"), tree)],
        "one query lists keys and trees"
    );
    let before = store.index_generation().unwrap();
    // Another connection (process) records a root that links the package.
    let other = Store::open(store.root()).unwrap();
    let lock = other.locks().shared().unwrap();
    let checkout = f.dir("checkout", &[("main.tf", b"", false)]);
    other
        .roots()
        .record(
            &lock,
            &checkout,
            &[RootLink {
                link: checkout.join("link"),
                target: store.view_dir(&key("a")).unwrap(),
                package: key("a"),
            }],
        )
        .unwrap();
    assert_ne!(
        store.index_generation().unwrap(),
        before,
        "a commit happened"
    );
    assert_eq!(store.package_generation().unwrap(), added);
    drop(lock);
    super::gc_now(&other);
    assert_ne!(
        store.package_generation().unwrap(),
        added,
        "gc removed a package"
    );
    // The changes since a generation, in order: what a reader applies instead of re-listing.
    assert_eq!(
        store.package_changes_since(start).unwrap(),
        Some(vec![(key("a"), Some(tree)), (key("a"), None)])
    );
    assert_eq!(
        store.package_changes_since(added).unwrap(),
        Some(vec![(key("a"), None)])
    );
    let now = store.package_generation().unwrap();
    assert_eq!(store.package_changes_since(now).unwrap(), Some(vec![]));
}

/// The index keeps the last 10,000 package changes; a reader further behind is told to list
/// every package again.
#[test]
fn a_reader_too_far_behind_the_package_changes_lists_again() {
    let f = Fixture::new();
    let store = f.store();
    let mut conn = rusqlite::Connection::open(store.root().join("index.sqlite")).unwrap();
    let tx = conn.transaction().unwrap();
    for i in 0..10_001 {
        tx.execute(
            "INSERT INTO package_changes (kind, name, version, platform, tree) VALUES ('module', ?1, '', '', NULL)",
            [format!("m{i}")],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let now = store.package_generation().unwrap();
    assert_eq!(now, 10_001);
    assert_eq!(store.package_changes_since(0).unwrap(), None);
    assert_eq!(
        store.package_changes_since(1).unwrap().unwrap().len(),
        10_000
    );
}

/// gc's read-only check walks the store for leftover views and blob files only when its last
/// walk that found none is older than the grace period or 10 minutes: a tight gc loop no
/// longer walks a large store on every run. A real gc run always looks.
#[test]
fn the_gc_check_walks_for_leftovers_at_most_every_ten_minutes() {
    let f = Fixture::new();
    let store = f.store();
    let hour = std::time::Duration::from_secs(3600);
    assert!(store
        .gc_idle_report(hour, &Default::default())
        .unwrap()
        .is_some());
    let stray = store
        .root()
        .join("views/providers/example.com/test/stray/1.0.0/linux_amd64");
    fs_err::create_dir_all(&stray).unwrap();
    assert!(
        store
            .gc_idle_report(hour, &Default::default())
            .unwrap()
            .is_some(),
        "walked again within ten minutes"
    );
    // No grace period: no trust either.
    assert!(store
        .gc_idle_report(std::time::Duration::ZERO, &Default::default())
        .unwrap()
        .is_none());
    let run = super::gc_now(&store);
    assert_eq!(run.leftovers.views.len(), 1, "{run:?}");
    assert!(!stray.exists());
}

/// gc's read-only check scans every blob for unused ones only when a blob was added or a
/// tree let go of one since its last scan; otherwise it trusts that scan's memo.
#[test]
fn the_gc_check_rescans_blobs_only_after_the_blob_generation_moves() {
    let f = Fixture::new();
    let store = f.store();
    let hour = std::time::Duration::from_secs(3600);
    let index = rusqlite::Connection::open(store.root().join("index.sqlite")).unwrap();
    let generation = || -> i64 {
        index
            .query_row("SELECT value FROM blob_generation", [], |r| r.get(0))
            .unwrap()
    };
    let dir = f.dir("pkg", &[("terraform-provider-a", b"a", true)]);
    let tree = store.ingest().dir(&dir).unwrap().tree;
    store.commit_package(&key("a"), &tree, &[], None).unwrap();
    let added = generation();
    assert!(added > 0, "adding blobs moves the generation");
    assert!(store
        .gc_idle_report(hour, &Default::default())
        .unwrap()
        .is_some());
    let memo = store.root().join(".gc-unused-blobs");
    assert_eq!(fs_err::read_to_string(&memo).unwrap(), format!("{added}\n"));

    // A blob row with no tree (and no file): the generation moves, the check scans and
    // sees it.
    let stray = "b".repeat(64);
    index
        .execute(
            "INSERT INTO blobs (id, size, sha256) VALUES (?1, 0, zeroblob(32))",
            [&stray],
        )
        .unwrap();
    assert_eq!(generation(), added + 1);
    assert!(store
        .gc_idle_report(hour, &Default::default())
        .unwrap()
        .is_none());

    // A memo at the current generation is trusted: the scan is skipped.
    fs_err::write(&memo, format!("{}\n", generation())).unwrap();
    assert!(store
        .gc_idle_report(hour, &Default::default())
        .unwrap()
        .is_some());
    // A memo listing the stray blob: the check looks at that blob (its file is gone: work).
    fs_err::write(&memo, format!("{}\n{stray}\n", generation())).unwrap();
    assert!(store
        .gc_idle_report(hour, &Default::default())
        .unwrap()
        .is_none());

    // gc removing the unused package lets go of its tree's blobs: the generation moves.
    let before = generation();
    let run = super::gc_now(&store);
    assert_eq!(run.packages_removed.len(), 1, "{run:?}");
    assert!(generation() > before);
    // ... and so does gc removing the stray blob the memo listed: the check scans afresh
    // instead of finding the listed blob's file gone ever after.
    assert!(!store
        .root()
        .join("blobs-v1")
        .join(&stray[..2])
        .join(&stray)
        .exists());
    assert!(store
        .gc_idle_report(hour, &Default::default())
        .unwrap()
        .is_some());
    assert_eq!(
        fs_err::read_to_string(&memo).unwrap(),
        format!("{}\n", generation())
    );
}

/// A root recorded again with the same links within [`crate::roots::RESTAMP_AFTER`] of its
/// last stamp writes nothing (no commit another connection could see); a stamp older than
/// that, or other links, are written.
#[test]
fn an_unchanged_root_is_not_written_again_until_its_stamp_ages() {
    let f = Fixture::new();
    let store = f.store();
    let dir = f.dir("pkg", &[("terraform-provider-a", b"a", true)]);
    let tree = store.ingest().dir(&dir).unwrap().tree;
    store.commit_package(&key("a"), &tree, &[], None).unwrap();
    let checkout = f.dir("checkout", &[("main.tf", b"", false)]);
    let link = |target: std::path::PathBuf| RootLink {
        link: checkout.join("link"),
        target,
        package: key("a"),
    };
    let view = store.view_dir(&key("a")).unwrap();
    let lock = store.locks().shared().unwrap();
    store
        .roots()
        .record(&lock, &checkout, &[link(view.clone())])
        .unwrap();
    // Another connection sees whether a commit happened.
    let watcher = Store::open(store.root()).unwrap();
    let stamps = || {
        let conn = rusqlite::Connection::open(store.root().join("index.sqlite")).unwrap();
        conn.query_row(
            "SELECT r.updated_at, p.used_at FROM roots r, packages p",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )
        .unwrap()
    };
    let before = watcher.index_generation().unwrap();
    let recorded = store
        .roots()
        .record(&lock, &checkout, &[link(view.clone())])
        .unwrap();
    assert_eq!(recorded.links, 1);
    assert_eq!(
        watcher.index_generation().unwrap(),
        before,
        "nothing written"
    );

    // A package stamp older than the window: stamped again.
    let conn = rusqlite::Connection::open(store.root().join("index.sqlite")).unwrap();
    conn.execute("UPDATE packages SET used_at = 5", []).unwrap();
    let before = watcher.index_generation().unwrap();
    store
        .roots()
        .record(&lock, &checkout, &[link(view.clone())])
        .unwrap();
    assert_ne!(watcher.index_generation().unwrap(), before);
    assert!(stamps().1 > 5, "{:?}", stamps());

    // The root's own stamp older than the window: written again.
    conn.execute("UPDATE roots SET updated_at = 5", []).unwrap();
    store
        .roots()
        .record(&lock, &checkout, &[link(view.clone())])
        .unwrap();
    assert!(stamps().0 > 5, "{:?}", stamps());

    // Other links: written at once.
    let before = watcher.index_generation().unwrap();
    store
        .roots()
        .record(&lock, &checkout, &[link(checkout.join("elsewhere"))])
        .unwrap();
    assert_ne!(watcher.index_generation().unwrap(), before);
    let roots = store.roots().list().unwrap();
    assert_eq!(roots[0].links[0].target, checkout.join("elsewhere"));
}
