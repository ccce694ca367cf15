//! Ingest of zips and directories: the `h1:` vectors, symlinks, and every way an archive is
//! refused before anything from it becomes a package.

use std::path::{Path, PathBuf};

use super::{key, v2_files, write_zip, Fixture, Z};
use crate::*;
use tstore_diagnostic::Diagnostic as _;

const V2_H1: &str = "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=";
const V3_H1_ZIP: &str = "h1:7ot6ByVSVHrC4ZngFjGA3WZw12dZSuA4qgCzzWy0xqs=";

fn sha(b: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(b).into()
}

/// The zip at `zip` is refused for a reason `want` accepts, read as a file and read as a
/// stream alike.
#[track_caller]
fn assert_hostile(store: &Store, zip: &Path, want: fn(&HostileReason) -> bool) {
    let err = store.ingest().zip(zip).unwrap_err();
    match &err {
        StoreError::HostileArchive { reason, .. } if want(reason) => {}
        other => panic!("unexpected result for {}: {other:?}", zip.display()),
    }
    says_what_and_what_to_do(&err);
    let bytes = fs_err::read(zip).unwrap();
    let streamed = store
        .ingest()
        .zip_stream(&mut bytes.as_slice(), zip)
        .unwrap_err();
    match &streamed {
        StoreError::HostileArchive { reason, .. } if want(reason) => {}
        other => panic!(
            "unexpected result for {} streamed: {other:?}",
            zip.display()
        ),
    }
    assert!(store.packages().unwrap().is_empty());
}

/// A refused archive's message says what and which entry; its hint, what to do.
#[track_caller]
pub(super) fn says_what_and_what_to_do(err: &StoreError) {
    let msg = err.to_string();
    assert!(msg.contains("refusing to unpack"), "{msg}");
    assert!(
        err.hint()
            .is_some_and(|h| h.contains("corrupt or malicious")),
        "{err:?}"
    );
}

/// Central directory headers: (offset, name) for patching tests.
pub(super) fn central_headers(bytes: &[u8]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 46 <= bytes.len() {
        if bytes[i..i + 4] == [0x50, 0x4b, 0x01, 0x02] {
            let n = u16::from_le_bytes([bytes[i + 28], bytes[i + 29]]) as usize;
            out.push((
                i,
                String::from_utf8_lossy(&bytes[i + 46..i + 46 + n]).into_owned(),
            ));
        }
        i += 1;
    }
    out
}

#[test]
fn zip_and_dir_give_same_tree_and_h1_vectors() {
    let f = Fixture::new();
    let store = f.store();
    let zip = f.zip_path("v3.zip");
    write_zip(
        &zip,
        &[
            Z::File("terraform-provider-fake", b"hello\n", 0o755),
            Z::Dir("sub/"),
            Z::File("sub/data.txt", b"world\n", 0o644),
        ],
    );
    let got = store.ingest().zip(&zip).unwrap();
    assert_eq!(got.ingested.h1.to_string(), V2_H1);
    assert_eq!(got.h1_zip.to_string(), V3_H1_ZIP);
    let sha = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(fs_err::read(&zip).unwrap()))
    };
    assert_eq!(got.zh.to_string(), format!("zh:{sha}"));
    assert_eq!((got.ingested.files, got.ingested.bytes), (2, 12));

    let dir = f.dir("v2", &v2_files());
    let from_dir = store.ingest().dir(&dir).unwrap();
    assert_eq!(from_dir, got.ingested);

    // Without directory entries both forms agree (V2).
    let zip2 = f.zip_path("v2.zip");
    write_zip(
        &zip2,
        &[
            Z::File("sub/data.txt", b"world\n", 0o644),
            Z::File("terraform-provider-fake", b"hello\n", 0o755),
        ],
    );
    let got2 = store.ingest().zip(&zip2).unwrap();
    assert_eq!(got2.h1_zip.to_string(), V2_H1);
    assert_eq!(got2.ingested, got.ingested);
    assert_eq!(store.space().usage().unwrap().trees, 1);
}

#[test]
fn symlinks_inside_are_hashed_as_their_target_and_escapes_refused() {
    let f = Fixture::new();
    let store = f.store();
    let dir = f.dir("links", &[("bin/tool", b"hello\n", true)]);
    std::os::unix::fs::symlink("bin/tool", dir.join("terraform-provider-fake")).unwrap();
    let got = store.ingest().dir(&dir).unwrap();
    let want = h1_of_files(&[
        ("bin/tool", sha(b"hello\n")),
        ("terraform-provider-fake", sha(b"hello\n")),
    ])
    .unwrap();
    assert_eq!(got.h1, want);
    // A symlinked root is resolved first.
    let alias = f.work.join("alias");
    std::os::unix::fs::symlink(&dir, &alias).unwrap();
    assert_eq!(store.ingest().dir(&alias).unwrap(), got);

    std::os::unix::fs::symlink("../../etc/passwd", dir.join("bin/evil")).unwrap();
    let err = store.ingest().dir(&dir).unwrap_err();
    assert!(
        matches!(&err, StoreError::HostileDirectory { reason: HostileReason::EscapingSymlink { .. }, entry, .. } if entry == "bin/evil"),
        "{err:?}"
    );
}

#[test]
fn hostile_names_and_kinds_are_refused() {
    let f = Fixture::new();
    let store = f.store();
    type Case<'a> = (&'a str, Vec<Z<'a>>, fn(&HostileReason) -> bool);
    let cases: Vec<Case> = vec![
        ("parent.zip", vec![Z::File("../evil", b"x", 0o644)], |r| {
            *r == HostileReason::ParentDir
        }),
        (
            "parent2.zip",
            vec![Z::File("a/../../evil", b"x", 0o644)],
            |r| *r == HostileReason::ParentDir,
        ),
        ("abs.zip", vec![Z::File("/etc/evil", b"x", 0o644)], |r| {
            *r == HostileReason::AbsolutePath
        }),
        ("drive.zip", vec![Z::File("C:/evil", b"x", 0o644)], |r| {
            *r == HostileReason::AbsolutePath
        }),
        (
            "backslash.zip",
            vec![Z::File("a\\..\\evil", b"x", 0o644)],
            |r| *r == HostileReason::AbsolutePath,
        ),
        (
            "link-up.zip",
            vec![Z::File("a", b"x", 0o644), Z::Link("l", "../x")],
            |r| matches!(r, HostileReason::EscapingSymlink { .. }),
        ),
        ("link-abs.zip", vec![Z::Link("l", "/etc/passwd")], |r| {
            matches!(r, HostileReason::EscapingSymlink { .. })
        }),
        (
            "link-chain.zip",
            vec![Z::Link("d/l", ".."), Z::Link("m", "d/l/..")],
            |r| matches!(r, HostileReason::EscapingSymlink { .. }),
        ),
        (
            "file-dir.zip",
            vec![Z::File("a", b"x", 0o644), Z::Dir("a/")],
            |r| *r == HostileReason::Duplicate,
        ),
        (
            "file-under-file.zip",
            vec![Z::File("a", b"x", 0o644), Z::File("a/b", b"x", 0o644)],
            |r| *r == HostileReason::Duplicate,
        ),
        (
            "dot-dup.zip",
            vec![Z::File("x", b"1", 0o644), Z::File("./x", b"2", 0o644)],
            |r| *r == HostileReason::Duplicate,
        ),
    ];
    for (name, entries, want) in cases {
        let zip = f.zip_path(name);
        write_zip(&zip, &entries);
        assert_hostile(&store, &zip, want);
    }
}

#[test]
fn hostile_patched_archives_are_refused() {
    let f = Fixture::new();
    let store = f.store();

    // Exact duplicate names (the zip writer refuses them, so patch the bytes).
    let zip = f.zip_path("dup.zip");
    write_zip(
        &zip,
        &[Z::File("dupA", b"1", 0o644), Z::File("dupB", b"2", 0o644)],
    );
    let bytes = fs_err::read(&zip).unwrap();
    let patched = String::from_utf8_lossy(&bytes).contains("dupB");
    assert!(patched);
    let mut bytes = bytes;
    for i in 0..bytes.len() - 4 {
        if &bytes[i..i + 4] == b"dupB" {
            bytes[i + 3] = b'A';
        }
    }
    fs_err::write(&zip, &bytes).unwrap();
    assert_hostile(&store, &zip, |r| *r == HostileReason::Duplicate);

    // A character device (mode in the external attributes).
    let zip = f.zip_path("chr.zip");
    write_zip(
        &zip,
        &[Z::File("ok", b"1", 0o644), Z::File("dev", b"", 0o644)],
    );
    let mut bytes = fs_err::read(&zip).unwrap();
    let (off, _) = central_headers(&bytes)
        .into_iter()
        .find(|(_, n)| n == "dev")
        .unwrap();
    bytes[off + 5] = 3; // made by Unix
    let attrs = (0o020644u32 << 16).to_le_bytes();
    bytes[off + 38..off + 42].copy_from_slice(&attrs);
    fs_err::write(&zip, &bytes).unwrap();
    assert_hostile(
        &store,
        &zip,
        |r| matches!(r, HostileReason::SpecialFile { mode } if mode & 0o170000 == 0o020000),
    );

    // A symlink (mode in the external attributes) whose target is longer than any path.
    let zip = f.zip_path("long-link.zip");
    write_zip(&zip, &[Z::File("l", &[b'a'; 5000], 0o644)]);
    let mut bytes = fs_err::read(&zip).unwrap();
    let (off, _) = central_headers(&bytes)[0].clone();
    bytes[off + 5] = 3; // made by Unix
    bytes[off + 38..off + 42].copy_from_slice(&(0o120777u32 << 16).to_le_bytes());
    fs_err::write(&zip, &bytes).unwrap();
    assert_hostile(&store, &zip, |r| {
        matches!(
            r,
            HostileReason::SizeMismatch {
                declared: 5000,
                actual: 4097
            }
        )
    });

    // Lying declared size: 1000 bytes declared as 10.
    let zip = f.zip_path("liar.zip");
    write_zip(&zip, &[Z::File("big", &[b'a'; 1000], 0o644)]);
    let mut bytes = fs_err::read(&zip).unwrap();
    let (off, _) = central_headers(&bytes)[0].clone();
    bytes[off + 24..off + 28].copy_from_slice(&10u32.to_le_bytes());
    bytes[22..26].copy_from_slice(&10u32.to_le_bytes()); // local header
    fs_err::write(&zip, &bytes).unwrap();
    assert_hostile(&store, &zip, |r| {
        matches!(
            r,
            HostileReason::SizeMismatch {
                declared: 10,
                actual: 11
            }
        )
    });
}

#[test]
fn archive_limits_are_enforced() {
    let f = Fixture::new();
    let limits = Limits {
        max_total_bytes: 150,
        max_entry_bytes: 120,
        max_entries: 3,
        ..Limits::default()
    };
    let store = f.store().with_limits(limits);
    let many = f.zip_path("many.zip");
    let names = ["a", "b", "c", "d"];
    write_zip(&many, &names.map(|n| Z::File(n, b"x", 0o644)));
    assert_hostile(&store, &many, |r| {
        matches!(r, HostileReason::TooManyEntries { count: 4, limit: 3 })
    });

    let large = f.zip_path("large.zip");
    write_zip(&large, &[Z::File("big", &[1; 121], 0o644)]);
    assert_hostile(&store, &large, |r| {
        matches!(r, HostileReason::EntryTooLarge { size: 121, .. })
    });

    let total = f.zip_path("total.zip");
    write_zip(
        &total,
        &[
            Z::File("a", &[1; 100], 0o644),
            Z::File("b", &[2; 100], 0o644),
        ],
    );
    assert_hostile(&store, &total, |r| {
        matches!(r, HostileReason::TotalTooLarge { size: 200, .. })
    });

    // A ratio bomb: 50 MB of zeros, with the default limits.
    let store = f.store();
    let bomb = f.zip_path("bomb.zip");
    write_zip(&bomb, &[Z::File("zeros", &vec![0u8; 50 << 20], 0o644)]);
    assert!(fs_err::metadata(&bomb).unwrap().len() < 1 << 20);
    assert_hostile(&store, &bomb, |r| {
        matches!(r, HostileReason::CompressionRatio { .. })
    });
    // Nothing was extracted before refusing.
    assert_eq!(store.space().usage().unwrap().blob_bytes, 0);
}

/// Many entries, each under the per-entry ratio floor, that together expand to far more than
/// the archive's size times the ratio limit: refused before anything is extracted.
#[test]
fn a_zip_of_many_small_highly_compressed_entries_is_refused() {
    let f = Fixture::new();
    let store = f.store();
    let zeros = vec![0u8; 1 << 20];
    let names: Vec<String> = (0..100).map(|i| format!("f{i}.bin")).collect();
    let entries: Vec<Z> = names
        .iter()
        .map(|n| Z::File(n.as_str(), &zeros, 0o644))
        .collect();
    let zip = f.work.join("many.zip");
    write_zip(&zip, &entries);
    assert!(fs_err::metadata(&zip).unwrap().len() < 1 << 20);
    assert_hostile(&store, &zip, |r| {
        matches!(r, HostileReason::CompressionRatio { .. })
    });
    let tmp: Vec<_> = fs_err::read_dir(f.root.join("tmp"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn hostile_archive_message_names_archive_entry_and_remedy() {
    let err = StoreError::HostileArchive {
        archive: PathBuf::from("/mirror/p.zip"),
        entry: "../evil".into(),
        reason: HostileReason::ParentDir,
    };
    assert_eq!(
        err.to_string(),
        "refusing to unpack /mirror/p.zip: entry \"../evil\": its path contains a \"..\" component \
         and would land outside the package directory"
    );
    assert_eq!(
        err.hint().as_deref(),
        Some(
            "the archive is corrupt or malicious; nothing from it was installed. Obtain the \
             package from a trusted source (or raise the store limits if the package is \
             legitimately that large)"
        )
    );
    let conflict = StoreError::PackageConflict {
        key: key("fake"),
        existing: TreeId([1; 32]),
        new: TreeId([2; 32]),
    };
    assert!(conflict.to_string().starts_with(
        "package provider example.com/test/fake 1.0.0 (linux_amd64) is already in the store"
    ));
}

/// A zip kept whole is found by its `zh:`, has exactly the bytes ingested, is checked by
/// verify like any blob, and goes with its tree; without the option nothing is kept.
#[test]
fn a_kept_zip_is_found_by_its_zh_and_collected_with_its_tree() {
    let f = Fixture::new();
    let zip = f.zip_path("kept.zip");
    write_zip(
        &zip,
        &[Z::File("terraform-provider-fake", b"hello\n", 0o755)],
    );
    let bytes = fs_err::read(&zip).unwrap();

    let plain = f.store();
    let first = plain.ingest().zip(&zip).unwrap();
    assert_eq!(
        first.zh.to_string(),
        format!("zh:{}", hex::encode(sha(&bytes)))
    );
    assert!(plain.kept_archive(&first.zh).unwrap().is_none());
    drop(plain);

    let store = f.store().with_kept_archives(true);
    // Only archives worth publishing are kept.
    let module = store.ingest().zip(&zip).unwrap();
    assert!(store.kept_archive(&module.zh).unwrap().is_none());
    let again = store.ingest().zip_keeping_it(&zip).unwrap();
    // The same hashes, computed in the pass that kept the zip.
    assert_eq!(again, first);
    let kept = store
        .kept_archive(&again.zh)
        .unwrap()
        .expect("the zip is kept");
    assert_eq!(fs_err::read(&kept).unwrap(), bytes);
    store
        .commit_package(&key("fake"), &again.ingested.tree, &[], None)
        .unwrap();
    assert!(store.verify().unwrap().is_clean());
    // A damaged kept zip is a damaged blob of the package's tree.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut damaged = bytes.clone();
    damaged[0] ^= 1;
    fs_err::write(&kept, &damaged).unwrap();
    assert!(!store.verify().unwrap().is_clean());
    fs_err::write(&kept, &bytes).unwrap();

    super::gc_now(&store);
    assert!(store.packages().unwrap().is_empty());
    assert!(store.kept_archive(&again.zh).unwrap().is_none());
    assert!(!kept.exists(), "the kept zip outlived its tree");
}

/// A module tree less some entries, derived in the index, is the tree (and `h1:`) that
/// ingesting a directory without those entries gives, and reads no file: it holds with every
/// blob file gone.
#[test]
fn a_tree_less_its_dot_entries_is_the_tree_of_the_directory_without_them() {
    let f = Fixture::new();
    let whole = f.dir(
        "whole",
        &[
            ("main.tf", b"# main\n", false),
            ("run.sh", b"#!/bin/sh\n", true),
            (".github/ci.yml", b"on: push\n", false),
            ("sub/.keep", b"", false),
            ("sub/x.tf", b"# x\n", false),
        ],
    );
    let store = f.store();
    let ingested = store.ingest().module_dir(&whole).unwrap();
    let want = store
        .ingest()
        .module_dir(&f.dir(
            "without",
            &[
                ("main.tf", b"# main\n", false),
                ("run.sh", b"#!/bin/sh\n", true),
                ("sub/x.tf", b"# x\n", false),
            ],
        ))
        .unwrap();
    fs_err::remove_dir_all(f.root.join("blobs-v1")).unwrap();
    let dotted = |path: &str| path.split('/').any(|p| p.starts_with('.'));
    let got = store
        .ingest()
        .module_tree_without(&ingested.tree, dotted)
        .unwrap();
    assert_ne!(got.tree, ingested.tree);
    assert_eq!(
        (got.tree, got.h1, got.files),
        (want.tree, want.h1, want.files)
    );
}
