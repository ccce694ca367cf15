//! Counts in words that agree with their numbers, and lists that name only what applies:
//! `roots ls` says "1 link", `store rm` names only the working directories that still link
//! into the store (and counts them in words).

use tstore_test_support::{stderr, stdout, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

#[test]
fn counts_agree_and_store_rm_names_only_directories_still_linked() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    tstore_test_support::mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let b = env.checkout("b", &[("main.tf", NULL_CONFIG)]);
    for dir in [&a, &b] {
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .arg("init")
            .arg(dir)
            .ok();
    }
    let ls = stdout(&env.tstore().args(["roots", "ls"]).ok());
    assert!(ls.contains("  (1 link)") && !ls.contains("links)"), "{ls}");

    // b's links are gone: it needs nothing after the store is removed.
    fs_err::remove_dir_all(b.join(".terraform")).unwrap();
    let err = stderr(&env.tstore().no_fuse().args(["store", "rm"]).fails());
    assert!(err.contains("1 working directory links into it"), "{err}");
    assert!(err.contains(&a.display().to_string()), "{err}");
    assert!(!err.contains(&b.display().to_string()), "{err}");
}
