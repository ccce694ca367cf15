//! Store-level tests of gc's size budget: unlinked packages go least recently used first
//! until the store fits, a linked one never, a dry run changes nothing, and a budget that
//! cannot be met says how much live checkouts hold.

use super::{key, present, Fixture};
use crate::{GcOptions, RootLink, SizeBudget, Store};

const MIB: u64 = 1 << 20;

/// Packages `a`, `b`, `c`, `d` of one MiB of their own each, last used at 100, 300, 200 and
/// 400 (seconds since the epoch); `d` linked by a live checkout.
fn four_packages(f: &Fixture, store: &Store) {
    for (name, used_at) in [("a", 100), ("b", 300), ("c", 200), ("d", 400)] {
        let content = vec![name.as_bytes()[0]; MIB as usize];
        let got = store
            .ingest()
            .dir(&f.dir(name, &[("terraform-provider-x", &content, true)]))
            .unwrap();
        store
            .commit_package(&key(name), &got.tree, &[], None)
            .unwrap();
        store
            .index()
            .conn
            .execute(
                "UPDATE packages SET created_at = ?2, used_at = ?2 WHERE name = ?1",
                rusqlite::params![format!("example.com/test/{name}"), used_at],
            )
            .unwrap();
    }
    let checkout = f.dir("checkout", &[("main.tf", b"", false)]);
    let view = store.view_dir(&key("d")).unwrap();
    std::os::unix::fs::symlink(&view, checkout.join("link")).unwrap();
    let lock = store.locks().shared().unwrap();
    store
        .roots()
        .record(
            &lock,
            &checkout,
            &[RootLink {
                link: checkout.join("link"),
                target: view,
                package: key("d"),
            }],
        )
        .unwrap();
}

fn gc(store: &Store, budget: SizeBudget, dry_run: bool) -> crate::GcReport {
    let opts = GcOptions {
        // The grace period keeps everything: only the budget drops.
        min_age: std::time::Duration::from_secs(86_400 * 365 * 100),
        dry_run,
        budget: Some(budget),
        ..GcOptions::default()
    };
    if dry_run {
        let lock = store.locks().shared().unwrap();
        store.gc(&lock, &opts).unwrap()
    } else {
        let lock = store.locks().try_exclusive().unwrap().unwrap();
        store.gc(&lock, &opts).unwrap()
    }
}

#[test]
fn unlinked_packages_go_least_recently_used_first_until_the_store_fits() {
    let f = Fixture::new();
    let store = f.store();
    four_packages(&f, &store);
    assert_eq!(store.space().content_bytes().unwrap(), 4 * MIB);
    let budget = SizeBudget {
        max_size: Some(2 * MIB + MIB / 2),
        min_free: None,
    };

    let preview = gc(&store, budget, true);
    let b = preview.budget.expect("a budget report");
    assert_eq!(b.packages_dropped, vec![key("a"), key("c")]);
    assert!(b.met);
    assert_eq!(present(&store).len(), 4, "a dry run drops nothing");

    let run = gc(&store, budget, false);
    let b = run.budget.expect("a budget report");
    assert_eq!(b.packages_dropped, vec![key("a"), key("c")]);
    assert_eq!(
        (b.size_before, b.size_after, b.met),
        (4 * MIB, 2 * MIB, true)
    );
    assert_eq!(present(&store), vec![key("b"), key("d")]);
    assert_eq!(store.space().content_bytes().unwrap(), 2 * MIB);
    assert!(run.bytes_freed >= 2 * MIB, "{}", run.bytes_freed);
    assert!(!store.view_dir(&key("a")).unwrap().exists());
    assert!(store.verify().unwrap().missing.is_empty());

    // Within budget: nothing more goes.
    let again = gc(&store, budget, false);
    assert!(again.budget.unwrap().packages_dropped.is_empty());
    assert_eq!(present(&store), vec![key("b"), key("d")]);
}

#[test]
fn a_budget_live_checkouts_exceed_drops_every_unlinked_package_and_says_so() {
    let f = Fixture::new();
    let store = f.store();
    four_packages(&f, &store);
    let run = gc(
        &store,
        SizeBudget {
            max_size: None,
            min_free: Some(u64::MAX / 2),
        },
        false,
    );
    let b = run.budget.expect("a budget report");
    assert!(!b.met);
    assert_eq!(b.packages_dropped, vec![key("a"), key("c"), key("b")]);
    assert_eq!(b.linked_bytes, MIB);
    assert_eq!(
        present(&store),
        vec![key("d")],
        "a linked package is never dropped"
    );
}
