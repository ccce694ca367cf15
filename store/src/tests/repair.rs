//! Store-level tests of `Store::repair` and `Store::repair_plan`: which packages a bad
//! blob takes down, what moves to `quarantine/`, and that a plan changes nothing.

use std::os::unix::fs::PermissionsExt as _;

use super::{key, Fixture};
use crate::{BlobId, Store};

/// Packages `a` and `b` share the blob of `shared.txt`; `c` does not.
fn three_packages(f: &Fixture, store: &Store) -> BlobId {
    for (name, own) in [
        ("a", &b"only a\n"[..]),
        ("b", b"only b\n"),
        ("c", b"only c\n"),
    ] {
        let shared: &[u8] = if name == "c" {
            b"not shared\n"
        } else {
            b"shared\n"
        };
        let got = store
            .ingest()
            .dir(&f.dir(
                name,
                &[("shared.txt", shared, false), ("own.txt", own, false)],
            ))
            .unwrap();
        store
            .commit_package(&key(name), &got.tree, &[], None)
            .unwrap();
    }
    BlobId(*blake3::hash(b"shared\n").as_bytes())
}

fn damage(store: &Store, blob: &BlobId) -> std::path::PathBuf {
    let path = store.layout.blob_path(blob);
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    fs_err::write(&path, b"Shared\n").unwrap();
    path
}

#[test]
fn a_bad_shared_blob_quarantines_every_package_that_references_it() {
    let f = Fixture::new();
    let store = f.store();
    let shared = three_packages(&f, &store);
    let path = damage(&store, &shared);
    let report = store.verify().unwrap();
    assert_eq!(report.corrupt.len(), 1, "{report:?}");

    // The plan names a and b, and changes nothing.
    let plan = store.repair_plan(&report).unwrap();
    assert!(plan.dry_run);
    let planned: Vec<_> = plan.packages.iter().map(|p| p.package.clone()).collect();
    assert_eq!(planned, vec![key("a"), key("b")]);
    assert!(
        plan.packages[0].reasons[0].starts_with("shared.txt: blob "),
        "{plan:?}"
    );
    assert_eq!(plan.blobs.len(), 1);
    assert_eq!(plan.blobs[0].to, None);
    assert_eq!(super::present(&store), vec![key("a"), key("b"), key("c")]);
    assert_eq!(fs_err::read(&path).unwrap(), b"Shared\n");

    let lock = store.locks().try_exclusive().unwrap().unwrap();
    let done = store.repair(&lock, &report).unwrap();
    drop(lock);
    assert!(!done.dry_run);
    assert_eq!(done.packages, plan.packages);
    assert_eq!(super::present(&store), vec![key("c")]);
    assert!(!path.exists(), "the bad blob is still in blobs-v1");
    let moved = done.blobs[0].to.clone().expect("moved");
    assert!(moved.starts_with(store.layout.root.join("quarantine")));
    assert_eq!(fs_err::read(&moved).unwrap(), b"Shared\n");
    assert!(!store.view_dir(&key("a")).unwrap().exists());
    assert!(!store.view_dir(&key("b")).unwrap().exists());
    assert!(store.view_dir(&key("c")).unwrap().exists());
    let after = store.verify().unwrap();
    assert!(after.is_clean(), "{after:?}");
    assert!(store.repair_plan(&after).unwrap().leftovers.is_empty());

    // Committing a again writes a good blob file for the shared content.
    let got = store
        .ingest()
        .dir(&f.dir(
            "a2",
            &[
                ("shared.txt", b"shared\n", false),
                ("own.txt", b"only a\n", false),
            ],
        ))
        .unwrap();
    store
        .commit_package(&key("a"), &got.tree, &[], None)
        .unwrap();
    assert_eq!(fs_err::read(&path).unwrap(), b"shared\n");
    assert!(store.verify().unwrap().is_clean());
}

#[test]
fn a_missing_blob_quarantines_its_packages_and_a_second_repair_keeps_the_first_evidence() {
    let f = Fixture::new();
    let store = f.store();
    let shared = three_packages(&f, &store);
    let own_c = BlobId(*blake3::hash(b"only c\n").as_bytes());
    fs_err::remove_file(store.layout.blob_path(&own_c)).unwrap();
    damage(&store, &shared);
    let report = store.verify().unwrap();
    assert_eq!(report.missing.len(), 1, "{report:?}");
    let lock = store.locks().try_exclusive().unwrap().unwrap();
    let done = store.repair(&lock, &report).unwrap();
    assert_eq!(done.packages.len(), 3, "{done:?}");
    let c = done
        .packages
        .iter()
        .find(|p| p.package == key("c"))
        .unwrap();
    assert!(c.reasons[0].contains("is missing"), "{c:?}");
    assert!(super::present(&store).is_empty());
    assert!(store.verify().unwrap().is_clean());

    // The same damage again: the earlier quarantined file is kept, the new one beside it.
    three_packages(&f, &store);
    damage(&store, &shared);
    let report = store.verify().unwrap();
    let again = store.repair(&lock, &report).unwrap();
    let first = done.blobs[0].to.clone().unwrap();
    let second = again.blobs[0].to.clone().unwrap();
    assert_ne!(first, second);
    assert!(first.exists() && second.exists());
}
