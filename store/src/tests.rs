//! Store-level tests: ingest, hostile archives, commit, views, concurrency, verify, memos.
//!
//! Longer than most files on purpose: every test here shares one `Fixture` (a store and a
//! work directory) and the zip writer; split by topic they would only import each other.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

use crate::*;

const V2_H1: &str = "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=";
const V3_H1_ZIP: &str = "h1:7ot6ByVSVHrC4ZngFjGA3WZw12dZSuA4qgCzzWy0xqs=";

fn key(name: &str) -> PackageKey {
    PackageKey::provider(format!("example.com/test/{name}"), "1.0.0", "linux_amd64")
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let work = dir.path().join("work");
        fs_err::create_dir_all(&work).unwrap();
        Fixture {
            _dir: dir,
            root,
            work,
        }
    }

    fn store(&self) -> Store {
        Store::open(&self.root).unwrap()
    }

    /// Write a directory of `(path, content, exec)` files.
    fn dir(&self, name: &str, files: &[(&str, &[u8], bool)]) -> PathBuf {
        let d = self.work.join(name);
        for (p, content, exec) in files {
            let path = d.join(p);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(&path, content).unwrap();
            let mode = if *exec { 0o755 } else { 0o644 };
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        fs_err::create_dir_all(&d).unwrap();
        d
    }

    fn zip_path(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // Views are read-only directories: make them removable for TempDir (matters when the
        // tests do not run as root).
        if self.root.exists() {
            let _ = crate::view::make_dirs_writable(&self.root);
        }
    }
}

enum Z<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Link(&'a str, &'a str),
}

fn write_zip(path: &Path, entries: &[Z]) {
    let mut w = zip::ZipWriter::new(fs_err::File::create(path).unwrap());
    for e in entries {
        match e {
            Z::File(name, content, mode) => {
                let opts = SimpleFileOptions::default()
                    .compression_method(CompressionMethod::Deflated)
                    .unix_permissions(*mode);
                w.start_file(*name, opts).unwrap();
                w.write_all(content).unwrap();
            }
            Z::Dir(name) => w
                .add_directory(*name, SimpleFileOptions::default().unix_permissions(0o755))
                .unwrap(),
            Z::Link(name, target) => w
                .add_symlink(*name, *target, SimpleFileOptions::default())
                .unwrap(),
        }
    }
    w.finish().unwrap();
}

/// Central directory headers: (offset, name) for patching tests.
fn central_headers(bytes: &[u8]) -> Vec<(usize, String)> {
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

fn v2_files() -> Vec<(&'static str, &'static [u8], bool)> {
    vec![
        ("terraform-provider-fake", b"hello\n", true),
        ("sub/data.txt", b"world\n", false),
    ]
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
    let got = store.ingest_zip(&zip).unwrap();
    assert_eq!(got.ingested.h1.to_string(), V2_H1);
    assert_eq!(got.h1_zip.to_string(), V3_H1_ZIP);
    let sha = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(fs_err::read(&zip).unwrap()))
    };
    assert_eq!(got.zh.to_string(), format!("zh:{sha}"));
    assert_eq!((got.ingested.files, got.ingested.bytes), (2, 12));

    let dir = f.dir("v2", &v2_files());
    let from_dir = store.ingest_dir(&dir).unwrap();
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
    let got2 = store.ingest_zip(&zip2).unwrap();
    assert_eq!(got2.h1_zip.to_string(), V2_H1);
    assert_eq!(got2.ingested, got.ingested);
    assert_eq!(store.disk_usage().unwrap().trees, 1);
}

#[test]
fn symlinks_inside_are_hashed_as_their_target_and_escapes_refused() {
    let f = Fixture::new();
    let store = f.store();
    let dir = f.dir("links", &[("bin/tool", b"hello\n", true)]);
    std::os::unix::fs::symlink("bin/tool", dir.join("terraform-provider-fake")).unwrap();
    let got = store.ingest_dir(&dir).unwrap();
    let want = h1_of_files(&[
        ("bin/tool", sha(b"hello\n")),
        ("terraform-provider-fake", sha(b"hello\n")),
    ])
    .unwrap();
    assert_eq!(got.h1, want);
    // A symlinked root is resolved first.
    let alias = f.work.join("alias");
    std::os::unix::fs::symlink(&dir, &alias).unwrap();
    assert_eq!(store.ingest_dir(&alias).unwrap(), got);

    std::os::unix::fs::symlink("../../etc/passwd", dir.join("bin/evil")).unwrap();
    let err = store.ingest_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, StoreError::HostileDirectory { reason: HostileReason::EscapingSymlink { .. }, entry, .. } if entry == "bin/evil"),
        "{err:?}"
    );
}

fn sha(b: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(b).into()
}

#[track_caller]
fn assert_hostile(store: &Store, zip: &Path, want: fn(&HostileReason) -> bool) {
    let err = store.ingest_zip(zip).unwrap_err();
    match &err {
        StoreError::HostileArchive { reason, .. } if want(reason) => {}
        other => panic!("unexpected result for {}: {other:?}", zip.display()),
    }
    // The message says what, which entry and what to do.
    let msg = err.to_string();
    assert!(
        msg.contains("refusing to unpack") && msg.contains("hint:"),
        "{msg}"
    );
    assert!(store.packages().unwrap().is_empty());
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
    assert_eq!(store.disk_usage().unwrap().blob_bytes, 0);
}

#[test]
fn commit_is_idempotent_merges_hashes_and_detects_conflicts() {
    let f = Fixture::new();
    let store = f.store();
    let a = store.ingest_dir(&f.dir("a", &v2_files())).unwrap();
    let k = key("fake");
    let h1 = HashRecord::verified_locally(a.h1.clone());
    let p1 = store
        .commit_package(&k, &a.tree, std::slice::from_ref(&h1), None)
        .unwrap();
    assert_eq!(p1.hashes, vec![h1.clone()]);
    assert_eq!((p1.files, p1.bytes), (2, 12));
    let zh = HashRecord {
        hash: "zh:9455ba7c20a0eace758a38bef5fc0eb1e47cf231b4eaeaa9b1f26a1eb8acab53"
            .parse()
            .unwrap(),
        disposition: Disposition {
            reported_by_registry: true,
            signed_by_key_ids: vec!["ABCD".into()],
            ..Default::default()
        },
    };
    let reported_h1 = HashRecord {
        hash: a.h1.clone(),
        disposition: Disposition {
            reported_by_registry: true,
            ..Default::default()
        },
    };
    let p2 = store
        .commit_package(&k, &a.tree, &[zh.clone(), reported_h1], None)
        .unwrap();
    assert_eq!(p2.created_at, p1.created_at);
    assert_eq!(p2.hashes.len(), 2);
    assert!(
        p2.hashes[0].disposition.verified_locally && p2.hashes[0].disposition.reported_by_registry
    );
    assert_eq!(p2.hashes[1], zh);
    assert_eq!(store.package(&k).unwrap().unwrap().hashes, p2.hashes);

    let b = store
        .ingest_dir(&f.dir("b", &[("terraform-provider-fake", b"other\n", true)]))
        .unwrap();
    let err = store.commit_package(&k, &b.tree, &[], None).unwrap_err();
    assert!(
        matches!(&err, StoreError::PackageConflict { existing, new, .. } if *existing == a.tree && *new == b.tree),
        "{err:?}"
    );
    assert_eq!(store.packages().unwrap().len(), 1);
    assert_eq!(store.package(&k).unwrap().unwrap().tree, a.tree);

    let unknown: TreeId = "00".repeat(32).parse().unwrap();
    assert!(matches!(
        store.commit_package(&key("x"), &unknown, &[], None),
        Err(StoreError::UnknownTree(_))
    ));
    assert!(store.package(&key("x")).unwrap().is_none());
}

#[test]
fn views_are_read_only_hardlinks_with_the_right_exec_bit() {
    let f = Fixture::new();
    let store = f.store();
    // The same content is executable in one package and not in the other.
    let a = store
        .ingest_dir(&f.dir(
            "a",
            &[
                ("terraform-provider-a", b"#!/bin/sh\necho hi\n", true),
                ("README", b"shared\n", false),
            ],
        ))
        .unwrap();
    let b = store
        .ingest_dir(&f.dir(
            "b",
            &[
                ("script.sh", b"#!/bin/sh\necho hi\n", false),
                ("README", b"shared\n", false),
            ],
        ))
        .unwrap();
    store.commit_package(&key("a"), &a.tree, &[], None).unwrap();
    store.commit_package(&key("b"), &b.tree, &[], None).unwrap();
    assert_eq!(store.link_mode(), LinkMode::Hardlink);
    let va = store.view_dir(&key("a")).unwrap();
    let vb = store.view_dir(&key("b")).unwrap();
    assert!(va.starts_with(store.views_dir()));
    assert!(va.ends_with("providers/example.com/test/a/1.0.0/linux_amd64"));

    let exe = fs_err::metadata(va.join("terraform-provider-a")).unwrap();
    let plain = fs_err::metadata(vb.join("script.sh")).unwrap();
    assert_eq!(exe.mode() & 0o777, 0o555);
    assert_eq!(plain.mode() & 0o777, 0o444);
    assert_ne!(
        exe.ino(),
        plain.ino(),
        "different modes need different inodes"
    );
    let blob = BlobId(*blake3::hash(b"#!/bin/sh\necho hi\n").as_bytes());
    let layout = &store.layout;
    let inodes: Vec<u64> = [layout.blob_path(&blob), layout.blob_twin_path(&blob, false)]
        .iter()
        .map(|p| fs_err::metadata(p).unwrap().ino())
        .collect();
    assert!(inodes.contains(&exe.ino()) && inodes.contains(&plain.ino()));

    // Shared blob: one file on disk for both READMEs.
    let ra = fs_err::metadata(va.join("README")).unwrap();
    let rb = fs_err::metadata(vb.join("README")).unwrap();
    assert_eq!(ra.ino(), rb.ino());
    assert_eq!(ra.mode() & 0o777, 0o444);
    let usage = store.disk_usage().unwrap();
    assert_eq!((usage.packages, usage.trees, usage.blobs), (2, 2, 2));
    assert_eq!(usage.logical_bytes, 2 * (18 + 7));
    // Two blobs plus one twin.
    assert_eq!(usage.blob_bytes, 18 + 7 + 18);

    // Directories are read-only too; the view cannot be written into.
    assert_eq!(fs_err::metadata(&va).unwrap().mode() & 0o777, 0o555);
    if !running_as_root() {
        assert!(fs_err::write(va.join("new"), b"x").is_err());
    }
    // The exec bit survives a round trip through the view.
    let out = std::process::Command::new(va.join("terraform-provider-a"))
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"hi\n");
    assert!(store.verify().unwrap().is_clean());
}

fn running_as_root() -> bool {
    // Without libc: the owner of a file we create is our uid.
    let f = tempfile::NamedTempFile::new().unwrap();
    f.as_file().metadata().unwrap().uid() == 0
}

#[test]
fn concurrent_commits_of_the_same_package_both_succeed() {
    let f = Fixture::new();
    drop(f.store());
    let src = f.dir("src", &v2_files());
    for round in 0..8 {
        let k = key(&format!("race{round}"));
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Package> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let store = Store::open(&f.root).unwrap();
                        barrier.wait();
                        let got = store.ingest_dir(&src).unwrap();
                        store
                            .commit_package(
                                &k,
                                &got.tree,
                                &[HashRecord::verified_locally(got.h1)],
                                None,
                            )
                            .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results[0].tree, results[1].tree);
        assert_eq!(results[0].created_at, results[1].created_at);
    }
    let store = f.store();
    assert_eq!(store.packages().unwrap().len(), 8);
    let usage = store.disk_usage().unwrap();
    assert_eq!((usage.trees, usage.blobs), (1, 2));
    assert!(store.verify().unwrap().is_clean());
    // Temp files and dirs were all cleaned up.
    assert_eq!(
        fs_err::read_dir(store.root().join("tmp")).unwrap().count(),
        0
    );
}

#[test]
fn verify_detects_a_flipped_byte() {
    let f = Fixture::new();
    let store = f.store();
    let got = store.ingest_dir(&f.dir("a", &v2_files())).unwrap();
    store
        .commit_package(&key("fake"), &got.tree, &[], None)
        .unwrap();
    let clean = store.verify().unwrap();
    assert!(clean.is_clean(), "{clean:?}");
    assert_eq!(clean.blobs_checked, 2);
    assert_eq!(clean.bytes_checked, 12);

    let blob = BlobId(*blake3::hash(b"world\n").as_bytes());
    let path = store.layout.blob_path(&blob);
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    fs_err::write(&path, b"World\n").unwrap();
    let report = store.verify().unwrap();
    assert!(!report.is_clean());
    assert_eq!(
        report.corrupt,
        vec![CorruptBlob {
            blob,
            path: path.clone()
        }]
    );
    // The view shares the inode, so it is not reported separately as a different file.
    assert!(report.missing.is_empty());

    fs_err::remove_file(&path).unwrap();
    let report = store.verify().unwrap();
    assert_eq!(report.missing.len(), 1);
    assert_eq!(report.missing[0].referenced_by, got.tree);
}

#[test]
fn source_memo_avoids_rereading() {
    let f = Fixture::new();
    let zip = f.zip_path("p.zip");
    write_zip(
        &zip,
        &[
            Z::File("terraform-provider-fake", b"hello\n", 0o755),
            Z::File("sub/data.txt", b"world\n", 0o644),
        ],
    );
    let k = key("fake");
    {
        let store = f.store();
        let fp = SourceFingerprint::of_path(&zip).unwrap();
        assert!(store.source_memo(&zip, &fp).unwrap().is_none());
        let got = store.ingest_zip(&zip).unwrap();
        assert!(store.bytes_hashed() > 12);
        let hashes = [
            HashRecord::verified_locally(got.ingested.h1.clone()),
            HashRecord::verified_locally(got.zh.clone()),
        ];
        store
            .commit_package(&k, &got.ingested.tree, &hashes, Some((&zip, &fp)))
            .unwrap();
    }
    // A second run: the fingerprint matches, nothing is read.
    let store = f.store();
    let fp = SourceFingerprint::of_path(&zip).unwrap();
    let memo = store.source_memo(&zip, &fp).unwrap().unwrap();
    assert_eq!(memo.fingerprint, fp);
    assert_eq!(memo.tree, store.package(&k).unwrap().unwrap().tree);
    assert_eq!(memo.hashes.len(), 2);
    store
        .commit_package(&k, &memo.tree, &memo.hashes, Some((&zip, &fp)))
        .unwrap();
    assert_eq!(store.bytes_hashed(), 0);

    // The source changed: no memo.
    std::thread::sleep(std::time::Duration::from_millis(30));
    write_zip(
        &zip,
        &[Z::File("terraform-provider-fake", b"HELLO\n", 0o755)],
    );
    let fp2 = SourceFingerprint::of_path(&zip).unwrap();
    assert_ne!(fp, fp2);
    assert!(store.source_memo(&zip, &fp2).unwrap().is_none());
}

#[test]
fn stale_view_from_an_interrupted_commit_is_replaced() {
    let f = Fixture::new();
    let store = f.store();
    let got = store.ingest_dir(&f.dir("a", &v2_files())).unwrap();
    let k = key("fake");
    let view = store.view_dir(&k).unwrap();
    fs_err::create_dir_all(&view).unwrap();
    fs_err::write(view.join("junk"), b"left over").unwrap();
    store.commit_package(&k, &got.tree, &[], None).unwrap();
    assert!(!view.join("junk").exists());
    assert_eq!(fs_err::read(view.join("sub/data.txt")).unwrap(), b"world\n");
    assert!(store.verify().unwrap().is_clean());
}

#[test]
fn store_lock_shared_and_exclusive() {
    let f = Fixture::new();
    let a = f.store();
    let b = f.store();
    let shared = a.lock_shared().unwrap();
    let shared2 = b.lock_shared().unwrap();
    assert!(b.try_lock_exclusive().unwrap().is_none());
    drop(shared);
    drop(shared2);
    let excl = b.try_lock_exclusive().unwrap().unwrap();
    assert_eq!(excl.mode(), LockMode::Exclusive);
    assert!(a.try_lock_exclusive().unwrap().is_none());
}

#[test]
fn clean_tmp_removes_leftovers_under_the_exclusive_lock() {
    let f = Fixture::new();
    let store = f.store();
    let tmp = store.root().join("tmp");
    fs_err::create_dir_all(tmp.join("view-crashed/v/sub")).unwrap();
    fs_err::set_permissions(
        tmp.join("view-crashed/v"),
        std::fs::Permissions::from_mode(0o555),
    )
    .unwrap();
    fs_err::write(tmp.join("blob-crashed"), b"x").unwrap();
    let lock = store.try_lock_exclusive().unwrap().unwrap();
    assert_eq!(store.clean_tmp(&lock).unwrap(), 2);
    assert_eq!(fs_err::read_dir(&tmp).unwrap().count(), 0);
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
         and would land outside the package directory\n\n  hint: the archive is corrupt or malicious; \
         nothing from it was installed. Obtain the package from a trusted source (or raise the store \
         limits if the package is legitimately that large)"
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
