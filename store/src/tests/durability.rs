//! What a write left to the page cache is worth in this boot and in the next one: trusted
//! in the boot that wrote it, re-read from the disk after (as a machine crash may have lost
//! it), durable once gc made it so.

use std::os::unix::fs::MetadataExt as _;

use super::{key, Fixture};
use crate::durability::{split_recorded, Durability};
use crate::*;

const FILES: &[(&str, &[u8], bool)] = &[
    ("main.tf", b"# one\n", false),
    ("run.sh", b"#!/bin/sh\n", true),
];

/// `store` as a process of another boot would open it (the machine restarted).
fn next_boot(store: &mut Store, boot: &str) {
    store.durability = Durability::Deferred {
        boot: boot.to_owned(),
    };
    store.found_fresh.get_mut().unwrap().clear();
}

fn recorded_stat(store: &Store, name: &str) -> String {
    let index = store.index();
    index
        .conn
        .query_row(
            "SELECT s.stat FROM package_stats s JOIN packages p ON p.id = s.package WHERE p.name = ?1",
            [key(name).name()],
            |r| r.get(0),
        )
        .unwrap()
}

fn marks(store: &Store) -> Vec<Option<String>> {
    let index = store.index();
    let mut s = index
        .conn
        .prepare("SELECT written_boot FROM blobs ORDER BY id")
        .unwrap();
    s.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_package_of_this_boot_is_trusted_and_rehashed_in_the_next() {
    let f = Fixture::new();
    let mut store = f.store();
    next_boot(&mut store, "boot-a");
    f.commit_verified(&store, "p", FILES);
    assert_eq!(
        split_recorded(&recorded_stat(&store, "p")).0,
        Some("boot-a")
    );
    assert_eq!(marks(&store), vec![Some("boot-a".to_owned()); 2]);
    assert_eq!(
        store.package_freshness(&key("p")).unwrap(),
        Freshness::Fresh
    );

    next_boot(&mut store, "boot-b");
    assert_eq!(
        store.package_freshness(&key("p")).unwrap(),
        Freshness::Stale
    );
    let hashed = store.bytes_hashed();
    assert!(store.trusted_package(&key("p")).unwrap().is_some());
    assert!(store.bytes_hashed() > hashed, "re-read from the disk");
    // What was read after the boot that wrote it came from the disk: unmarked.
    assert_eq!(split_recorded(&recorded_stat(&store, "p")).0, None);
    assert_eq!(marks(&store), vec![None; 2]);
    next_boot(&mut store, "boot-c");
    assert_eq!(
        store.package_freshness(&key("p")).unwrap(),
        Freshness::Fresh
    );
}

/// A machine crash that zeroed a blob whose size and times the file system kept: the boot
/// after finds it before linking it, and drops the package to be fetched again.
#[test]
fn a_blob_lost_with_its_boot_is_found_before_it_is_linked() {
    let f = Fixture::new();
    let mut store = f.store();
    next_boot(&mut store, "boot-a");
    let got = f.commit_verified(&store, "p", FILES);
    let tree = store.tree(&got.tree).unwrap();
    let EntryKind::File { blob, .. } = &tree.entries()[0].kind else {
        panic!("a file first")
    };
    let path = store.layout.blob_path(blob);
    let meta = fs_err::metadata(&path).unwrap();
    let times = std::fs::FileTimes::new()
        .set_accessed(meta.accessed().unwrap())
        .set_modified(meta.modified().unwrap());
    crate::view::make_dirs_writable(&store.layout.root).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file = fs_err::OpenOptions::new().write(true).open(&path).unwrap();
    use std::io::Write as _;
    (&file).write_all(&vec![0u8; meta.len() as usize]).unwrap();
    file.file().set_times(times).unwrap();
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    drop(file);
    assert_eq!(fs_err::metadata(&path).unwrap().mtime(), meta.mtime());

    next_boot(&mut store, "boot-b");
    assert!(store.trusted_package(&key("p")).unwrap().is_none());
    assert!(store.package(&key("p")).unwrap().is_none());
}

#[test]
fn an_ingest_replaces_a_blob_file_another_boot_left_and_keeps_this_boots() {
    let f = Fixture::new();
    let mut store = f.store();
    let dir = f.dir("d", FILES);
    let inodes = |store: &Store| -> Vec<u64> {
        let tree = store.tree(&store.ingest().dir(&dir).unwrap().tree).unwrap();
        tree.blobs()
            .into_iter()
            .map(|b| fs_err::metadata(store.layout.blob_path(&b)).unwrap().ino())
            .collect()
    };
    next_boot(&mut store, "boot-a");
    let first = inodes(&store);
    assert_eq!(inodes(&store), first, "this boot's files are reused");
    next_boot(&mut store, "boot-b");
    let second = inodes(&store);
    assert!(first.iter().zip(&second).all(|(a, b)| a != b), "replaced");
    assert_eq!(marks(&store), vec![Some("boot-b".to_owned()); 2]);

    // Once durable, reused in any boot.
    assert_eq!(store.make_durable().unwrap(), 2);
    assert_eq!(marks(&store), vec![None; 2]);
    next_boot(&mut store, "boot-c");
    assert_eq!(inodes(&store), second);
}

#[test]
fn gc_makes_this_boots_packages_durable() {
    let f = Fixture::new();
    let mut store = f.store();
    next_boot(&mut store, "boot-a");
    f.commit_verified(&store, "p", FILES);
    // The default grace period keeps the new, unused package.
    let lock = store.locks().try_exclusive().unwrap().unwrap();
    store.gc(&lock, &GcOptions::default()).unwrap();
    drop(lock);
    assert_eq!(split_recorded(&recorded_stat(&store, "p")).0, None);
    assert_eq!(marks(&store), vec![None; 2]);
    next_boot(&mut store, "boot-b");
    let hashed = store.bytes_hashed();
    assert_eq!(
        store.package_freshness(&key("p")).unwrap(),
        Freshness::Fresh
    );
    assert!(store.trusted_package(&key("p")).unwrap().is_some());
    assert_eq!(store.bytes_hashed(), hashed, "nothing re-read");
}
