//! What the index claims is checked against the bytes, never believed: `verify`, `repair`
//! and the re-verification of a stale package recompute `h1:` (and `zh:`) from the blobs.

use std::path::Path;

use super::{key, Fixture};
use crate::*;

fn sql(root: &Path, statements: &str) {
    let conn = rusqlite::Connection::open(root.join("index.sqlite")).unwrap();
    conn.execute_batch(statements).unwrap();
}

/// Commit provider `name` holding one executable that says `says`; its tree and `h1:`.
fn provider(f: &Fixture, store: &Store, name: &str, says: &str) -> (TreeId, Hash) {
    let script = format!("#!/bin/sh\necho {says}\n");
    let got = f.commit_verified(
        store,
        name,
        &[("terraform-provider-x", script.as_bytes(), true)],
    );
    (got.tree, got.h1)
}

#[test]
fn verify_and_reverify_recompute_hashes_instead_of_reading_them() {
    let f = Fixture::new();
    let store = f.store();
    let (good_tree, good_h1) = provider(&f, &store, "x", "good");
    let (evil_tree, evil_h1) = provider(&f, &store, "evil", "pwned");
    assert!(store.verify().unwrap().is_clean());

    // The index is changed in place: x claims the evil files' h1:.
    sql(
        &f.root,
        &format!("UPDATE package_hashes SET hash = '{evil_h1}' WHERE hash = '{good_h1}'"),
    );
    let report = store.verify().unwrap();
    assert!(
        report.claims_bad.iter().any(|c| matches!(c,
            BadClaim::Package { package, problem }
                if *package == key("x") && problem.contains(&evil_h1.to_string()))),
        "{report:?}"
    );
    // A stale package is re-verified from its bytes, claims included: removed.
    let blob = store.blob_path(&store.tree(&good_tree).unwrap().blobs()[0]);
    let file = fs_err::File::open(&blob).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(file);
    assert_eq!(
        store.package_freshness(&key("x")).unwrap(),
        Freshness::Stale
    );
    assert!(matches!(
        store.reverify_package(&key("x")).unwrap(),
        Reverified::Removed(lies) if lies.iter().any(|l| l.contains(&evil_h1.to_string()))
    ));
    assert!(store.package(&key("x")).unwrap().is_none());

    // A tree row whose memo lies goes with its packages on repair; a blob row's wrong
    // SHA-256 is corrected.
    sql(
        &f.root,
        &format!(
            "UPDATE trees SET h1 = '{good_h1}' WHERE id = '{evil_tree}';
             UPDATE blobs SET sha256 = zeroblob(32)"
        ),
    );
    let report = store.verify().unwrap();
    assert!(
        report.claims_bad.iter().any(|c| matches!(c,
            BadClaim::Tree { tree, problem }
                if *tree == evil_tree.to_string() && problem.contains(&good_h1.to_string()))),
        "{report:?}"
    );
    assert!(
        report
            .claims_bad
            .iter()
            .any(|c| matches!(c, BadClaim::Blob { .. })),
        "{report:?}"
    );
    let lock = store.locks().try_exclusive().unwrap().unwrap();
    let done = store.repair(&lock, &report).unwrap();
    assert_eq!(
        done.packages
            .iter()
            .map(|p| p.package.clone())
            .collect::<Vec<_>>(),
        vec![key("evil")]
    );
    assert!(matches!(
        store.tree(&evil_tree),
        Err(StoreError::UnknownTree(_))
    ));
    assert!(store.verify().unwrap().is_clean());
}
