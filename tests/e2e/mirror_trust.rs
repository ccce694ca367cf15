//! A filesystem mirror belongs to whoever owns its directory: reading it never follows a
//! link its owner swaps in while `store import` (or an install from the mirror) runs, and a
//! mirror package is bounded as an archive is (a sparse file is a decompression bomb).

use std::path::Path;
use std::process::Command;

use tstore_test_support::{run_ok, stderr, TestEnv};

use crate::common::TstoreEnv as _;

const PACKAGE: &str = "example.com/test/swap/1.0.0/linux_amd64";

fn blobs_hold(store: &Path, needle: &[u8]) -> bool {
    walkdir::WalkDir::new(store.join("blobs-v1"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .any(|e| {
            std::fs::read(e.path())
                .map(|b| b.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false)
        })
}

#[test]
fn a_file_swapped_for_a_link_during_import_never_brings_its_target_in() {
    let env = TestEnv::new();
    let secret = env.root.path().join("id_ed25519");
    fs_err::write(&secret, "KEY-MATERIAL-0600").unwrap();
    let mirror = env.root.path().join("mirror");
    let pkg = mirror.join(PACKAGE);
    fs_err::create_dir_all(pkg.join("docs")).unwrap();
    fs_err::write(pkg.join("terraform-provider-swap"), "#!/bin/sh\n").unwrap();
    // Files large enough that reading them keeps the import busy between listing a file
    // and opening it; one of them, `zz`, is flipped between a file and a link to the key by
    // the mirror's owner, by rename, as fast as it can.
    for i in 0..8 {
        let mut doc = format!("doc {i}\n").into_bytes();
        doc.resize(1 << 20, b'.');
        fs_err::write(pkg.join(format!("docs/f{i:02}")), doc).unwrap();
    }
    fs_err::write(pkg.join("docs/zz"), "doc\n").unwrap();
    let stash = env.root.path().join("stash");
    fs_err::create_dir(&stash).unwrap();
    let mut swapper = Command::new("sh")
        .arg("-c")
        .arg(
            r#"cd "$1"; echo doc > "$3/real"; ln -s "$2" "$3/link0"
               while true; do
                 cp -P "$3/link0" "$3/link"; mv -T "$3/link" zz
                 cp "$3/real" "$3/tmp"; mv -T "$3/tmp" zz
               done"#,
        )
        .arg("swapper")
        .arg(pkg.join("docs"))
        .arg(&secret)
        .arg(&stash)
        .spawn()
        .unwrap();
    let mut refused = 0;
    for _ in 0..10 {
        let out = env.tstore().args(["store", "import"]).arg(&mirror).output();
        if !out.status.success() {
            refused += 1;
        }
        if blobs_hold(&env.store, b"KEY-MATERIAL") {
            break;
        }
    }
    let _ = swapper.kill();
    let _ = swapper.wait();
    assert!(
        !blobs_hold(&env.store, b"KEY-MATERIAL"),
        "the key was read into the store through a swapped link ({refused} imports refused)"
    );
}

#[test]
fn a_sparse_file_in_a_mirror_is_refused_as_a_bomb() {
    let env = TestEnv::new();
    let mirror = env.root.path().join("mirror");
    let pkg = mirror.join(PACKAGE);
    fs_err::create_dir_all(&pkg).unwrap();
    fs_err::write(pkg.join("terraform-provider-swap"), "#!/bin/sh\n").unwrap();
    // 256 MiB that take no room in the mirror.
    run_ok(
        Command::new("truncate")
            .args(["-s", "256M"])
            .arg(pkg.join("data.bin")),
    );
    let out = env.tstore().args(["store", "import"]).arg(&mirror).output();
    assert!(!out.status.success(), "a 256 MiB sparse file was imported");
    let err = stderr(&out);
    assert!(err.contains("data.bin"), "{err}");
    let stored: u64 = walkdir::WalkDir::new(env.store.join("blobs-v1"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(stored < 1 << 20, "{stored} bytes of blobs were written");
}
