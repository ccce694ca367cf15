//! What vouches for a package's name: commits by provenance, memos of origin packages only,
//! and the classification of the module packages an older tstore committed.

use super::Fixture;
use crate::{Hash, HashRecord, ModuleSourceMemo, PackageKey, Provenance, Store, TreeId};

fn module_tree(f: &Fixture, name: &str, body: &[u8]) -> (TreeId, Hash) {
    let dir = f.dir(name, &[("main.tf", body, false)]);
    let ingested = f.store().ingest().module_dir(&dir).unwrap();
    (ingested.tree, ingested.h1.unwrap())
}

fn commit(store: &Store, id: &str, tree: &TreeId, hashes: &[Hash], provenance: Provenance) {
    let records: Vec<HashRecord> = hashes
        .iter()
        .cloned()
        .map(HashRecord::verified_locally)
        .collect();
    store
        .commit_package_as(&PackageKey::module(id), tree, &records, None, provenance)
        .unwrap();
}

fn provenance_of(store: &Store, id: &str) -> Option<(TreeId, Provenance)> {
    store
        .package(&PackageKey::module(id))
        .unwrap()
        .map(|p| (p.tree, p.provenance))
}

#[test]
fn origin_content_replaces_what_a_lock_put_under_its_name() {
    let f = Fixture::new();
    let store = f.store();
    let (theirs, theirs_h1) = module_tree(&f, "theirs", b"output \"x\" { value = \"attacker\" }\n");
    let (real, real_h1) = module_tree(&f, "real", b"output \"x\" { value = \"trusted\" }\n");
    commit(
        &store,
        "git-1234-trusted-00",
        &theirs,
        &[theirs_h1],
        Provenance::Lock,
    );
    // A lock's commit never lowers a name, and a mirror's does not raise it.
    commit(
        &store,
        "git-1234-trusted-00",
        &theirs,
        &[],
        Provenance::Mirror,
    );
    assert_eq!(
        provenance_of(&store, "git-1234-trusted-00"),
        Some((theirs, Provenance::Lock))
    );
    commit(
        &store,
        "git-1234-trusted-00",
        &real,
        &[real_h1],
        Provenance::Origin,
    );
    assert_eq!(
        provenance_of(&store, "git-1234-trusted-00"),
        Some((real, Provenance::Origin))
    );
    let view = store
        .view_dir(&PackageKey::module("git-1234-trusted-00"))
        .unwrap();
    assert!(fs_err::read_to_string(view.join("main.tf"))
        .unwrap()
        .contains("trusted"));
    // Once the origin's, a lock cannot take the name back: other files are a conflict.
    let lock_again = store.commit_package_as(
        &PackageKey::module("git-1234-trusted-00"),
        &theirs,
        &[],
        None,
        Provenance::Lock,
    );
    assert!(lock_again.is_err(), "{lock_again:?}");
}

#[test]
fn origin_content_with_the_same_files_promotes_the_name() {
    let f = Fixture::new();
    let store = f.store();
    let (tree, h1) = module_tree(&f, "m", b"output \"x\" {}\n");
    commit(
        &store,
        "git-ab-m-00",
        &tree,
        std::slice::from_ref(&h1),
        Provenance::Mirror,
    );
    commit(&store, "git-ab-m-00", &tree, &[h1], Provenance::Origin);
    assert_eq!(
        provenance_of(&store, "git-ab-m-00"),
        Some((tree, Provenance::Origin))
    );
}

#[test]
fn a_memo_names_only_an_origin_package() {
    let f = Fixture::new();
    let store = f.store();
    let (tree, h1) = module_tree(&f, "m", b"output \"x\" {}\n");
    commit(
        &store,
        "mirror-m-00",
        &tree,
        std::slice::from_ref(&h1),
        Provenance::Mirror,
    );
    let memo = ModuleSourceMemo {
        package: "mirror-m-00".into(),
        location: "git::https://git.test/m?ref=v1".into(),
        ..ModuleSourceMemo::default()
    };
    assert!(!store
        .memos()
        .record_module_source("registry\0h/ns/m/aws\u{0}1.0.0", &memo)
        .unwrap());
    assert_eq!(
        store
            .memos()
            .module_source("registry\0h/ns/m/aws\u{0}1.0.0")
            .unwrap(),
        None
    );
    commit(&store, "git-ab-m-00", &tree, &[h1], Provenance::Origin);
    let memo = ModuleSourceMemo {
        package: "git-ab-m-00".into(),
        ..memo
    };
    assert!(store
        .memos()
        .record_module_source("registry\0h/ns/m/aws\u{0}1.0.0", &memo)
        .unwrap());
    assert_eq!(
        store
            .memos()
            .module_source("registry\0h/ns/m/aws\u{0}1.0.0")
            .unwrap(),
        Some(memo)
    );
}

/// A store as an older tstore left it: every package of "origin", the memos it wrote.
#[test]
fn the_upgrade_classifies_an_older_tstores_module_packages() {
    let f = Fixture::new();
    let store = f.store();
    let (tree, h1) = module_tree(&f, "m", b"output \"x\" {}\n");
    let zh: Hash = format!("zh:{}", "ab".repeat(32)).parse().unwrap();
    let all = [
        // (id, hashes, git memo)
        ("git-aa-fetched-00", vec![h1.clone()], true),
        ("git-aa-fetched-00-nodot", vec![h1.clone()], false),
        ("git-bb-by-lock-00", vec![h1.clone()], false),
        ("git-bb-by-lock-00-nodot", vec![h1.clone()], false),
        ("http-archive-00", vec![h1.clone(), zh.clone()], false),
        ("http-mirrored-00", vec![h1.clone()], false),
        ("oci-layer-00", vec![h1.clone(), zh], false),
        ("oci-mirrored-00", vec![h1.clone()], false),
        ("mirror-vpc-00", vec![h1.clone()], false),
    ];
    for (id, hashes, git_memo) in &all {
        commit(&store, id, &tree, hashes, Provenance::Origin);
        if *git_memo {
            let memo = ModuleSourceMemo {
                package: (*id).to_owned(),
                ..ModuleSourceMemo::default()
            };
            let key = format!("git\0https://git.test/{id}?ref=v1\0{}", "c".repeat(40));
            assert!(store.memos().record_module_source(&key, &memo).unwrap());
        }
    }
    // The registry memo a mirror's resolution left, and the URL memo of a mirrored archive.
    for (source, package) in [
        ("registry\0h/ns/vpc/aws\u{0}5.5.3", "mirror-vpc-00"),
        ("http\0https://files.test/m.zip", "http-mirrored-00"),
        ("http\0https://files.test/a.zip", "http-archive-00"),
    ] {
        let memo = ModuleSourceMemo {
            package: package.to_owned(),
            ..ModuleSourceMemo::default()
        };
        assert!(store.memos().record_module_source(source, &memo).unwrap());
    }
    drop(store);
    crate::index::rerun_legacy_classification(&f.root);
    let store = f.store();
    let got: Vec<(String, Provenance)> = store.provenance().modules().unwrap();
    let want = [
        ("git-aa-fetched-00", Provenance::Origin),
        ("git-aa-fetched-00-nodot", Provenance::Origin),
        ("git-bb-by-lock-00", Provenance::Lock),
        ("git-bb-by-lock-00-nodot", Provenance::Lock),
        ("http-archive-00", Provenance::Origin),
        ("http-mirrored-00", Provenance::Lock),
        ("mirror-vpc-00", Provenance::Mirror),
        ("oci-layer-00", Provenance::Origin),
        ("oci-mirrored-00", Provenance::Lock),
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|(id, p)| ((*id).to_owned(), *p))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        store
            .memos()
            .module_source("registry\0h/ns/vpc/aws\u{0}5.5.3")
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .memos()
            .module_source("http\0https://files.test/m.zip")
            .unwrap(),
        None
    );
    assert!(store
        .memos()
        .module_source("http\0https://files.test/a.zip")
        .unwrap()
        .is_some());
    let claims = |id: &str| ["git-", "http-", "oci-"].iter().any(|p| id.starts_with(p));
    let unsupported: Vec<String> = store
        .provenance()
        .unsupported_names(claims)
        .unwrap()
        .into_iter()
        .map(|n| n.package)
        .collect();
    assert_eq!(
        unsupported,
        [
            "git-bb-by-lock-00",
            "git-bb-by-lock-00-nodot",
            "http-mirrored-00",
            "oci-mirrored-00"
        ]
    );
    // Dropping them keeps their tree findable by its hash.
    assert_eq!(
        store
            .provenance()
            .drop_unsupported_names(claims)
            .unwrap()
            .len(),
        4
    );
    assert!(store
        .provenance()
        .unsupported_names(claims)
        .unwrap()
        .is_empty());
    assert_eq!(store.tree_with_h1(&h1).unwrap(), Some(tree));
    assert_eq!(
        provenance_of(&store, "mirror-vpc-00"),
        Some((tree, Provenance::Mirror))
    );
}
