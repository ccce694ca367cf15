//! `tstore gc --max-size` / `--min-free` with real checkouts, links and a real index: the
//! packages no checkout links go, oldest first, until the store fits; a linked one never;
//! the same budget on a copy of the store (a cache restored elsewhere) drops the same ones,
//! since recency lives in the index.

use crate::common::TstoreEnv as _;
use crate::gc::Fixture;

const KIB: u64 = 1024;

fn dropped(report: &serde_json::Value) -> Vec<String> {
    report["budget"]["packages_dropped"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn gc_keeps_the_store_under_its_budget_oldest_unlinked_first_and_never_a_linked_one() {
    // Providers p0, p1, p2 of 256 KiB each, one per checkout, in that order.
    let f = Fixture::new((256 * KIB) as usize);
    let dirs: Vec<_> = (0..3)
        .map(|p| {
            let dir = f.checkout(&format!("c{p}"), &[p]);
            assert!(f.init(&dir).status.success());
            dir
        })
        .collect();
    // c0 and c1 are gone (old branches); c2 is a live checkout.
    for dir in &dirs[..2] {
        fs_err::remove_dir_all(dir).unwrap();
    }
    // p1 was last used half an hour ago (inside gc's grace period), p0 just now (an init restamps a package's use at most every
    // ten minutes: the index is set as such an init would have left it).
    let index = rusqlite::Connection::open(f.env.store.join("index.sqlite")).unwrap();
    index
        .execute_batch(
            "UPDATE packages SET created_at = CAST(strftime('%s', 'now') AS INTEGER) - 1800,
                                 used_at = CAST(strftime('%s', 'now') AS INTEGER) - 1800
             WHERE name = 'example.com/test/p1';
             UPDATE packages SET used_at = CAST(strftime('%s', 'now') AS INTEGER) WHERE name = 'example.com/test/p0';",
        )
        .unwrap();
    drop(index);
    // Room for two providers, not three: the least recently used unlinked one goes.
    let budget = ["--max-size", "600K"];
    let preview = f.gc_json(&[&budget[..], &["--dry-run"]].concat());
    assert_eq!(dropped(&preview), vec!["example.com/test/p1"], "{preview}");

    // A copy of the store (a restored cache) decides the same: recency is in the index.
    let restored = tstore_test_support::TestEnv::new();
    fs_err::remove_dir(&restored.store).unwrap();
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&f.env.store)
        .arg(&restored.store)
        .status()
        .unwrap();
    assert!(cp.success());
    let there = crate::common::json(
        &restored
            .tstore()
            .no_fuse()
            .args(["gc", "--json", "--dry-run"])
            .args(budget)
            .ok(),
    );
    assert_eq!(dropped(&there), dropped(&preview), "{there}");

    let run = f.gc_json(&budget);
    assert_eq!(dropped(&run), dropped(&preview), "{run}");
    assert_eq!(run["budget"]["met"], true, "{run}");
    assert!(
        run["budget"]["size_after"].as_u64().unwrap() <= 600 * KIB,
        "{run}"
    );
    assert!(run["bytes_freed"].as_u64().unwrap() >= 256 * KIB, "{run}");
    // A budget below what the live checkout links drops the rest, keeps what it links,
    // and says why it cannot be met.
    let tight = f.gc_json(&["--max-size", "1K"]);
    assert_eq!(dropped(&tight), vec!["example.com/test/p0"], "{tight}");
    assert_eq!(tight["budget"]["met"], false, "{tight}");
    assert!(tight["budget"]["linked_bytes"].as_u64().unwrap() >= 256 * KIB);
    assert!(f.init(&dirs[2]).status.success());
    let words = f.cmd().args(["gc", "--max-size", "1K"]).ok();
    let text = String::from_utf8_lossy(&words.stdout);
    assert!(text.contains("the store does not fit"), "{text}");
    assert!(text.contains("linked by live checkouts"), "{text}");
}
