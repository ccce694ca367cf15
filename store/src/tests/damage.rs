//! Store-level tests of what damage written through a view (no FUSE) takes with it: a file
//! added to a view is noticed and the view rebuilt under its name; a blob changed in place
//! takes every package sharing it, and no tree row is left naming a blob that is gone, so
//! the next ingest of the same content brings every package back whole.

use std::os::unix::fs::PermissionsExt as _;

use super::{key, Fixture};
use crate::{Freshness, Reverified, Store};

/// Commit `name` from `files` (`(path, content)`), verified by its `h1:`.
fn commit(f: &Fixture, store: &Store, name: &str, files: &[(&str, &[u8])]) -> crate::Ingested {
    let files: Vec<(&str, &[u8], bool)> = files.iter().map(|(p, c)| (*p, *c, false)).collect();
    f.commit_verified(store, name, &files)
}

#[test]
fn a_file_added_to_a_view_is_noticed_and_the_view_rebuilt_under_its_name() {
    let f = Fixture::new();
    let store = f.store();
    commit(
        &f,
        &store,
        "a",
        &[("main.tf", b"a\n"), ("sub/x.tf", b"x\n")],
    );
    let view = store.view_dir(&key("a")).unwrap();
    for dir in [view.clone(), view.join("sub")] {
        // As root writes through a checkout's link: the mode bits do not stop it.
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        fs_err::write(dir.join("evil.tf"), b"evil\n").unwrap();
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        assert_eq!(
            store.package_freshness(&key("a")).unwrap(),
            Freshness::Stale,
            "a file added in {}",
            dir.display()
        );
        let Reverified::Restored(problems) = store.reverify_package(&key("a")).unwrap() else {
            panic!("expected the view to be restored")
        };
        assert!(
            problems
                .iter()
                .any(|p| p.contains("evil.tf: not part of the package")),
            "{problems:?}"
        );
        assert!(!dir.join("evil.tf").exists());
        assert_eq!(fs_err::read(view.join("main.tf")).unwrap(), b"a\n");
        assert_eq!(
            store.package_freshness(&key("a")).unwrap(),
            Freshness::Fresh
        );
        assert!(store.package(&key("a")).unwrap().is_some());
    }
    assert!(store.verify().unwrap().missing.is_empty());
}

#[test]
fn a_blob_changed_in_place_takes_every_package_sharing_it_and_leaves_no_tree_without_it() {
    let f = Fixture::new();
    let store = f.store();
    let a = commit(
        &f,
        &store,
        "a",
        &[("shared.tf", b"s\n"), ("own.tf", b"a\n")],
    );
    commit(
        &f,
        &store,
        "b",
        &[("shared.tf", b"s\n"), ("own.tf", b"b\n")],
    );
    commit(&f, &store, "c", &[("own.tf", b"c\n")]);
    // Written in place through a's view: the blob file, and b's view, change with it.
    let file = store.view_dir(&key("a")).unwrap().join("shared.tf");
    fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut text = fs_err::read(&file).unwrap();
    text.extend_from_slice(b"# evil\n");
    fs_err::write(&file, text).unwrap();

    assert!(store.trusted_package(&key("a")).unwrap().is_none());
    for gone in ["a", "b"] {
        assert!(store.package(&key(gone)).unwrap().is_none(), "{gone}");
        assert!(!store.view_dir(&key(gone)).unwrap().exists(), "{gone}");
    }
    assert!(store.trusted_package(&key("c")).unwrap().is_some());
    // No tree row names a blob that is gone: verify finds nothing missing, and nothing
    // finds a's tree by its h1: any more.
    let report = store.verify().unwrap();
    assert!(report.missing.is_empty(), "{:?}", report.missing);
    assert!(report.corrupt.is_empty(), "{:?}", report.corrupt);
    assert_eq!(store.tree_with_h1(&a.h1).unwrap(), None);

    // The same content ingested again brings a back whole, at the same view path.
    let again = commit(
        &f,
        &store,
        "a",
        &[("shared.tf", b"s\n"), ("own.tf", b"a\n")],
    );
    assert_eq!(again.h1, a.h1);
    let view = store.view_dir(&key("a")).unwrap();
    assert_eq!(fs_err::read(view.join("shared.tf")).unwrap(), b"s\n");
    assert_eq!(
        store.package_freshness(&key("a")).unwrap(),
        Freshness::Fresh
    );
    assert!(store.verify().unwrap().missing.is_empty());
}

#[test]
fn repair_drops_a_tree_whose_blob_is_gone_even_when_no_package_names_it() {
    let f = Fixture::new();
    let store = f.store();
    let a = commit(&f, &store, "a", &[("main.tf", b"a\n")]);
    // What an older release left behind: the package gone, its tree row kept, a blob file
    // removed.
    let blob = store.verify().unwrap();
    assert!(blob.missing.is_empty());
    let tree = store
        .tree(&store.package(&key("a")).unwrap().unwrap().tree)
        .unwrap();
    let crate::tree::EntryKind::File { blob, .. } = &tree.entries()[0].kind else {
        panic!("main.tf is a file")
    };
    store
        .index()
        .conn
        .execute("DELETE FROM packages", [])
        .unwrap();
    crate::view::remove_view(&store.layout, &store.view_dir(&key("a")).unwrap()).unwrap();
    fs_err::remove_file(store.blob_path(blob)).unwrap();
    let report = store.verify().unwrap();
    assert_eq!(report.missing.len(), 1, "{:?}", report.missing);
    assert!(store.tree_with_h1(&a.h1).unwrap().is_some());

    let lock = store.locks().try_exclusive().unwrap().unwrap();
    store.repair(&lock, &report).unwrap();
    drop(lock);
    let after = store.verify().unwrap();
    assert!(after.missing.is_empty(), "{:?}", after.missing);
    assert_eq!(store.tree_with_h1(&a.h1).unwrap(), None);
    // The same content ingested again is whole.
    commit(&f, &store, "a", &[("main.tf", b"a\n")]);
    assert_eq!(
        fs_err::read(store.view_dir(&key("a")).unwrap().join("main.tf")).unwrap(),
        b"a\n"
    );
}
