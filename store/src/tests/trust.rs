//! Trust (trust.rs): a store whose index this machine did not write is re-verified from its
//! bytes before any package in it is used; a damaged index is moved aside and rebuilt
//! (rebuild.rs).

use std::path::{Path, PathBuf};

use super::{key, Fixture};
use crate::*;
use tstore_diagnostic::Diagnostic as _;

/// A store at `<fixture>/store` with the provider `good` (h1 and a zh recorded), an
/// ingested-and-committed `evil` provider, and a module package; and the machine key
/// path of "this machine".
struct Cache {
    f: Fixture,
    good_h1: Hash,
    good_tree: TreeId,
    evil_tree: TreeId,
}

fn machine_key(f: &Fixture, name: &str) -> PathBuf {
    f.work.join(format!("{name}-state/machine-key"))
}

fn open(root: &Path, key_file: &Path) -> Store {
    Store::open(root).unwrap().with_machine_key(key_file)
}

fn zh() -> HashRecord {
    HashRecord::verified_locally(
        "zh:9455ba7c20a0eace758a38bef5fc0eb1e47cf231b4eaeaa9b1f26a1eb8acab53"
            .parse()
            .unwrap(),
    )
}

fn cache() -> Cache {
    let f = Fixture::new();
    let store = open(&f.root, &machine_key(&f, "writer"));
    let good = store
        .ingest()
        .dir(&f.dir(
            "good",
            &[("terraform-provider-x", b"#!/bin/sh\necho good\n", true)],
        ))
        .unwrap();
    store
        .commit_package(
            &key("x"),
            &good.tree,
            &[HashRecord::verified_locally(good.h1.clone()), zh()],
            None,
        )
        .unwrap();
    let evil = store
        .ingest()
        .dir(&f.dir(
            "evil",
            &[("terraform-provider-x", b"#!/bin/sh\necho pwned\n", true)],
        ))
        .unwrap();
    store
        .commit_package(
            &key("evil"),
            &evil.tree,
            &[HashRecord::verified_locally(evil.h1)],
            None,
        )
        .unwrap();
    let module = store
        .ingest()
        .module_dir(&f.dir("m", &[("main.tf", b"# module\n", false)]))
        .unwrap();
    store
        .commit_package(
            &PackageKey::module("git-m-0123"),
            &module.tree,
            &module
                .h1
                .into_iter()
                .map(HashRecord::verified_locally)
                .collect::<Vec<_>>(),
            None,
        )
        .unwrap();
    assert!(store.is_trusted().unwrap());
    Cache {
        good_h1: good.h1,
        good_tree: good.tree,
        evil_tree: evil.tree,
        f,
    }
}

/// `cp -a` of the store: what restoring a CI cache makes (new files, same bytes).
fn restore(cache: &Cache, name: &str) -> PathBuf {
    let to = cache.f.work.join(name);
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&cache.f.root)
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    to
}

fn sql(root: &Path, statements: &str) {
    let conn = rusqlite::Connection::open(root.join("index.sqlite")).unwrap();
    conn.execute_batch(statements).unwrap();
}

#[test]
fn a_restored_store_with_a_swapped_tree_is_adopted_and_the_package_quarantined() {
    let cache = cache();
    let root = restore(&cache, "restored");
    // The cache writer points `x` at the evil tree and leaves the h1: memo and the
    // package's hashes claiming the good files; the view is the evil package's.
    sql(
        &root,
        &format!(
            "UPDATE packages SET tree = '{evil}' WHERE name = 'example.com/test/x';
             UPDATE trees SET h1 = '{h1}' WHERE id = '{evil}';
             DELETE FROM packages WHERE name = 'example.com/test/evil';",
            evil = cache.evil_tree,
            h1 = cache.good_h1
        ),
    );
    let views = root.join("views/providers/example.com/test");
    let _ = crate::view::make_dirs_writable(&views);
    fs_err::remove_dir_all(views.join("x/1.0.0/linux_amd64")).unwrap();
    fs_err::rename(
        views.join("evil/1.0.0/linux_amd64"),
        views.join("x/1.0.0/linux_amd64"),
    )
    .unwrap();

    let store = open(&root, &machine_key(&cache.f, "victim"));
    assert!(!store.is_trusted().unwrap());
    // Verify believes none of it.
    let report = store.verify().unwrap();
    assert!(!report.trusted);
    assert!(
        report.claims_bad.iter().any(|c| matches!(c,
            BadClaim::Tree { tree, problem } if *tree == cache.evil_tree.to_string() && problem.contains(&cache.good_h1.to_string()))),
        "{report:?}"
    );
    // The first use adopts the store: x is quarantined, the module forgotten.
    assert!(store.trusted_package(&key("x")).unwrap().is_none());
    assert!(store.is_trusted().unwrap());
    assert!(store.package(&key("x")).unwrap().is_none());
    assert!(store
        .package(&PackageKey::module("git-m-0123"))
        .unwrap()
        .is_none());
    assert!(!root.join("views/modules/git-m-0123").exists());
    assert!(!views.join("x/1.0.0/linux_amd64").exists());
    // The good content can be committed again; the evil tree row is gone.
    let good = store
        .ingest()
        .dir(&cache.f.dir(
            "good",
            &[("terraform-provider-x", b"#!/bin/sh\necho good\n", true)],
        ))
        .unwrap();
    assert_eq!(good.tree, cache.good_tree);
    assert_eq!(good.h1, cache.good_h1);
    store
        .commit_package(
            &key("x"),
            &good.tree,
            &[HashRecord::verified_locally(good.h1)],
            None,
        )
        .unwrap();
    assert!(matches!(
        store.tree(&cache.evil_tree),
        Err(StoreError::UnknownTree(_))
    ));
    assert!(store.verify().unwrap().is_clean());
}

#[test]
fn an_honest_restored_store_is_adopted_once_keeping_only_what_its_bytes_confirm() {
    let cache = cache();
    let root = restore(&cache, "restored");
    let key_file = machine_key(&cache.f, "victim");
    let store = open(&root, &key_file);
    let adopted = store.ensure_trusted().unwrap().expect("adopted");
    assert_eq!(adopted.packages, 3, "{adopted:?}");
    assert!(adopted.quarantined.is_empty(), "{adopted:?}");
    assert_eq!(adopted.forgotten, vec![PackageKey::module("git-m-0123")]);
    assert!(store.bytes_hashed() > 0);
    // Only the recomputed h1: stays vouched for: the zh: cannot be recomputed from files.
    let x = store.trusted_package(&key("x")).unwrap().unwrap();
    assert_eq!(
        x.hashes,
        vec![HashRecord::verified_locally(cache.good_h1.clone())]
    );
    assert_eq!(
        store.package_freshness(&key("x")).unwrap(),
        Freshness::Fresh
    );
    // Another handle (another process) trusts it without re-hashing anything.
    let again = open(&root, &key_file);
    assert!(again.is_trusted().unwrap());
    assert_eq!(again.ensure_trusted().unwrap(), None);
    assert!(again.trusted_package(&key("x")).unwrap().is_some());
    assert_eq!(again.bytes_hashed(), 0);
    // Its name is the restored index's claim: content ingested here under it replaces it.
    let other = again
        .ingest()
        .dir(&cache.f.dir(
            "other",
            &[(
                "terraform-provider-x",
                b"#!/bin/sh
echo other
",
                true,
            )],
        ))
        .unwrap();
    let replaced = again
        .commit_package(
            &key("x"),
            &other.tree,
            &[HashRecord::verified_locally(other.h1.clone())],
            None,
        )
        .unwrap();
    assert_eq!(replaced.tree, other.tree);
    // Which is now this machine's: another tree for it is a conflict again.
    assert!(matches!(
        again.commit_package(&key("x"), &cache.good_tree, &[], None),
        Err(StoreError::PackageConflict { .. })
    ));
    // The writer's own store is still trusted by the writer, not by the victim's key.
    let writer = open(&cache.f.root, &machine_key(&cache.f, "writer"));
    assert!(writer.is_trusted().unwrap());
    let stranger = open(&cache.f.root, &key_file);
    assert!(!stranger.is_trusted().unwrap());
    // A new file holding the same bytes (a copy over the original) is not the same index.
    let copy = cache.f.work.join("index-copy");
    fs_err::copy(root.join("index.sqlite"), &copy).unwrap();
    fs_err::remove_file(root.join("index.sqlite")).unwrap();
    fs_err::rename(&copy, root.join("index.sqlite")).unwrap();
    assert!(!open(&root, &key_file).is_trusted().unwrap());
}

#[test]
fn a_damaged_index_is_moved_aside_and_rebuilt_from_the_views() {
    let cache = cache();
    let root = &cache.f.root;
    let key_file = machine_key(&cache.f, "writer");
    fs_err::write(root.join("index.sqlite"), vec![0x5a; 8192]).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = fs_err::remove_file(root.join(format!("index.sqlite{suffix}")));
    }
    assert!(matches!(
        Store::index_health(root).unwrap(),
        IndexHealth::Damaged { .. }
    ));
    let err = Store::open(root).unwrap_err();
    assert!(err.is_damaged_index(), "{err:?}");
    assert!(
        err.hint()
            .is_some_and(|h| h.contains("tstore store verify --repair")),
        "{err:?}"
    );

    let rebuilt = Store::rebuild_damaged_index(root, Some(&key_file), || {})
        .unwrap()
        .expect("rebuilt");
    assert_eq!(rebuilt.packages, vec![key("evil"), key("x")]);
    assert_eq!(rebuilt.skipped.len(), 1, "{rebuilt:?}");
    assert!(rebuilt.bad_blobs.is_empty());
    assert_eq!(rebuilt.damaged.len(), 1);
    assert_eq!(fs_err::read(&rebuilt.damaged[0]).unwrap(), vec![0x5a; 8192]);
    assert_eq!(Store::index_health(root).unwrap(), IndexHealth::Sound);
    // A sound index is left alone.
    assert_eq!(
        Store::rebuild_damaged_index(root, Some(&key_file), || {}).unwrap(),
        None
    );

    let store = open(root, &key_file);
    assert!(store.is_trusted().unwrap());
    let x = store.trusted_package(&key("x")).unwrap().unwrap();
    assert_eq!(x.tree, cache.good_tree);
    assert_eq!(
        x.hashes,
        vec![HashRecord::verified_locally(cache.good_h1.clone())]
    );
    assert_eq!(store.bytes_hashed(), 0);
    // What was not rebuilt is a leftover for repair.
    let report = store.verify().unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(
        store.repair_plan(&report).unwrap().leftovers.views,
        vec![root.join("views/modules/git-m-0123")]
    );
}

/// A handle kept for another command (the init server's next request) is checked again as
/// a new open would be: it forgets that its index was trusted, notices a restored cache put
/// in place of its store, and refuses a root opened to others.
#[test]
fn a_reused_handle_is_checked_again_as_a_new_open() {
    let cache = cache();
    let key = machine_key(&cache.f, "writer");
    let mut store = open(&cache.f.root, &key);
    assert_eq!(
        store.ensure_trusted().unwrap(),
        None,
        "written here: no adoption"
    );
    // Another machine key from now on: the index's tag no longer matches it.
    fs_err::remove_file(&key).unwrap();
    assert!(
        store.is_trusted().unwrap(),
        "the handle remembers its finding"
    );
    assert!(store.reuse().unwrap());
    assert!(!store.is_trusted().unwrap(), "a reused handle checks again");

    let mode = |m: u32| std::os::unix::fs::PermissionsExt::from_mode(m);
    fs_err::set_permissions(&cache.f.root, mode(0o770)).unwrap();
    assert!(matches!(
        store.reuse(),
        Err(StoreError::OpenToOthers { .. })
    ));
    fs_err::set_permissions(&cache.f.root, mode(0o700)).unwrap();
    assert!(store.reuse().unwrap());

    // A restored cache in the store's place: new files at the same path.
    let aside = cache.f.work.join("aside");
    fs_err::rename(&cache.f.root, &aside).unwrap();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&aside)
        .arg(&cache.f.root)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(!store.reuse().unwrap());
}
