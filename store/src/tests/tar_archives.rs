//! Module package tar archives: every compression streamed into the same tree a directory of
//! the same files gives, and every way an archive is refused leaves no package and no file
//! but unreferenced blobs.

use std::io::Write as _;
use std::path::PathBuf;

use super::Fixture;
use crate::*;
use tar::EntryType as T;

const EVERY: [TarCompression; 4] = [
    TarCompression::None,
    TarCompression::Gzip,
    TarCompression::Bzip2,
    TarCompression::Xz,
];

/// A tar entry: (raw name, type, link target, mode, contents).
type Entry<'a> = (&'a [u8], T, Option<&'a str>, u32, &'a [u8]);

fn file<'a>(name: &'a str, data: &'a [u8]) -> Entry<'a> {
    (name.as_bytes(), T::Regular, None, 0o644, data)
}

/// A tar written header by header (old-style headers), so hostile names get through.
fn tar_bytes(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, link, mode, data) in entries {
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_entry_type(*kind);
        h.set_mode(*mode);
        h.set_size(data.len() as u64);
        if let Some(l) = link {
            h.as_old_mut().linkname[..l.len()].copy_from_slice(l.as_bytes());
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap()
}

fn compress(compression: TarCompression, tar: &[u8]) -> Vec<u8> {
    match compression {
        TarCompression::None => tar.to_vec(),
        TarCompression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        TarCompression::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        TarCompression::Xz => {
            let mut out = Vec::new();
            lzma_rs::xz_compress(&mut std::io::Cursor::new(tar), &mut out).unwrap();
            out
        }
    }
}

impl Fixture {
    fn tar(&self, name: &str, compression: TarCompression, entries: &[Entry<'_>]) -> PathBuf {
        let path = self.work.join(format!("{name}-{compression:?}.tar"));
        fs_err::write(&path, compress(compression, &tar_bytes(entries))).unwrap();
        path
    }
}

/// No package, and nothing but blobs: the store's temp directory is empty.
#[track_caller]
fn nothing_left(f: &Fixture, store: &Store) {
    assert!(store.packages().unwrap().is_empty());
    let tmp: Vec<_> = fs_err::read_dir(f.root.join("tmp"))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(tmp.is_empty(), "the store's tmp keeps {tmp:?}");
}

#[test]
fn every_compression_gives_the_tree_of_the_same_directory() {
    let f = Fixture::new();
    let store = f.store();
    let dir = f.dir(
        "m",
        &[
            ("main.tf", b"output \"x\" {}\n", false),
            ("sub/run.sh", b"#!/bin/sh\n", true),
        ],
    );
    std::os::unix::fs::symlink("sub/run.sh", dir.join("run")).unwrap();
    std::os::unix::fs::symlink("sub", dir.join("alias")).unwrap();
    let want = store.ingest().module_dir(&dir).unwrap();
    for compression in EVERY {
        let tar = f.tar(
            "m",
            compression,
            &[
                (b"./", T::Directory, None, 0o755, b""),
                file("./main.tf", b"output \"x\" {}\n"),
                (b"sub/", T::Directory, None, 0o755, b""),
                // Listed again (an appended archive): a directory is only implied.
                (b"sub/", T::Directory, None, 0o755, b""),
                (b"sub/run.sh", T::Regular, None, 0o755, b"#!/bin/sh\n"),
                (b"run", T::Symlink, Some("sub/run.sh"), 0o777, b""),
                (b"alias", T::Symlink, Some("sub"), 0o777, b""),
                // A module package leaves `.git` out, as a directory's ingest does.
                file(".git/config", b"[core]\n"),
                file("sub/.git", b"gitdir: x\n"),
            ],
        );
        let got = store.ingest().module_tar(&tar, compression).unwrap();
        assert_eq!(got, want, "{compression:?}");
        // A symlink to a directory has no `h1:` as a file: a module does not need one.
        assert_eq!(got.h1, None);
        assert_eq!((got.files, got.bytes), (2, 24));
    }
    let without_dir_link = f.tar(
        "plain",
        TarCompression::Gzip,
        &[file("a", b"x"), (b"b", T::Symlink, Some("a"), 0o777, b"")],
    );
    let got = store
        .ingest()
        .module_tar(&without_dir_link, TarCompression::Gzip)
        .unwrap();
    let sha = |b: &[u8]| -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(b).into()
    };
    assert_eq!(
        got.h1,
        Some(h1_of_files(&[("a", sha(b"x")), ("b", sha(b"x"))]).unwrap())
    );
}

#[test]
fn hostile_entries_are_refused_in_every_compression() {
    type Want = fn(&HostileReason) -> bool;
    let cases: Vec<(&str, Vec<Entry<'_>>, &str, Want)> = vec![
        ("dotdot", vec![file("../evil", b"x")], "../evil", |r| {
            *r == HostileReason::ParentDir
        }),
        (
            "absolute",
            vec![file("/tmp/evil", b"x")],
            "/tmp/evil",
            |r| *r == HostileReason::AbsolutePath,
        ),
        (
            "backslash",
            vec![file("a\\..\\evil", b"x")],
            "a\\..\\evil",
            |r| *r == HostileReason::AbsolutePath,
        ),
        (
            "not UTF-8",
            vec![(b"caf\xe9", T::Regular, None, 0o644, b"x")],
            "caf\u{fffd}",
            |r| *r == HostileReason::InvalidName,
        ),
        (
            "absolute link",
            vec![(b"l", T::Symlink, Some("/etc/passwd"), 0o777, b"")],
            "l",
            |r| matches!(r, HostileReason::EscapingSymlink { .. }),
        ),
        (
            "a chain of links out",
            vec![
                (b"d", T::Symlink, Some("e/.."), 0o777, b""),
                (b"e", T::Symlink, Some(".."), 0o777, b""),
            ],
            "d",
            |r| matches!(r, HostileReason::EscapingSymlink { .. }),
        ),
        (
            "a file through a link",
            vec![(b"d", T::Symlink, Some("."), 0o777, b""), file("d/f", b"x")],
            "d",
            |r| *r == HostileReason::Duplicate,
        ),
        (
            "a device",
            vec![(b"dev", T::Char, None, 0o644, b"")],
            "dev",
            |r| *r == HostileReason::SpecialFile { mode: 0o020644 },
        ),
        (
            "a FIFO",
            vec![(b"fifo", T::Fifo, None, 0o600, b"")],
            "fifo",
            |r| *r == HostileReason::SpecialFile { mode: 0o010600 },
        ),
        (
            "a hard link",
            vec![file("f", b"x"), (b"h", T::Link, Some("f"), 0o644, b"")],
            "h",
            |r| matches!(r, HostileReason::UnsupportedKind { kind } if kind == "hard link"),
        ),
        (
            "a file twice",
            vec![file("f", b"x"), file("./f", b"y")],
            "./f",
            |r| *r == HostileReason::Duplicate,
        ),
        (
            "a file and a directory",
            vec![file("f", b"x"), (b"f/", T::Directory, None, 0o755, b"")],
            "f/",
            |r| *r == HostileReason::Duplicate,
        ),
        (
            "a file that is the root",
            vec![file("./", b"x")],
            "./",
            |r| *r == HostileReason::InvalidName,
        ),
    ];
    for compression in EVERY {
        for (what, entries, entry_name, want) in &cases {
            let f = Fixture::new();
            let store = f.store();
            let tar = f.tar("evil", compression, entries);
            let err = store.ingest().module_tar(&tar, compression).unwrap_err();
            match &err {
                StoreError::HostileArchive { entry, reason, .. }
                    if entry == entry_name && want(reason) => {}
                other => panic!("{compression:?} {what}: {other:?}"),
            }
            super::archives::says_what_and_what_to_do(&err);
            nothing_left(&f, &store);
        }
    }
}

#[test]
fn the_limits_refuse_a_header_before_its_bytes() {
    let limits = Limits {
        max_total_bytes: 3 << 20,
        max_entry_bytes: 2 << 20,
        max_entries: 3,
        max_ratio: 200,
    };
    let f = Fixture::new();
    let store = f.store().with_limits(limits.clone());
    let three = vec![0u8; 3 << 20];
    let two = vec![0u8; 2 << 20];
    for compression in EVERY {
        let too_large = f.tar("large", compression, &[file("zeros", &three)]);
        let hashed = store.bytes_hashed();
        let err = store
            .ingest()
            .module_tar(&too_large, compression)
            .unwrap_err();
        // Refused at the header: none of its bytes were read into a blob.
        assert_eq!(store.bytes_hashed(), hashed);
        assert!(
            matches!(&err, StoreError::HostileArchive { reason: HostileReason::EntryTooLarge { size, .. }, .. } if *size == 3 << 20),
            "{compression:?}: {err:?}"
        );
        let in_total = f.tar("total", compression, &[file("a", &two), file("b", &two)]);
        let err = store
            .ingest()
            .module_tar(&in_total, compression)
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::HostileArchive { reason: HostileReason::TotalTooLarge { .. }, entry, .. } if entry == "b"),
            "{compression:?}: {err:?}"
        );
        let many = f.tar(
            "many",
            compression,
            &[
                file("a", b""),
                file("b", b""),
                file("c", b""),
                file("d", b""),
            ],
        );
        let err = store.ingest().module_tar(&many, compression).unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::HostileArchive {
                    reason: HostileReason::TooManyEntries { count: 4, limit: 3 },
                    ..
                }
            ),
            "{compression:?}: {err:?}"
        );
    }
    assert!(store.packages().unwrap().is_empty());
}

/// Many entries, each small, that together expand past the whole-archive ratio: refused as
/// a zip of them is, naming the archive as a whole.
#[test]
fn a_small_archive_that_expands_too_far_is_refused() {
    let f = Fixture::new();
    let store = f.store().with_limits(Limits {
        max_ratio: 2,
        ..Limits::default()
    });
    let mib = vec![0u8; 1 << 20];
    let names: Vec<String> = (0..65).map(|i| format!("f{i}")).collect();
    let entries: Vec<Entry<'_>> = names.iter().map(|n| file(n, &mib)).collect();
    let bomb = f.tar("bomb", TarCompression::Gzip, &entries);
    let err = store
        .ingest()
        .module_tar(&bomb, TarCompression::Gzip)
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::HostileArchive { reason: HostileReason::CompressionRatio { limit: 2, .. }, entry, .. } if entry.is_empty()),
        "{err:?}"
    );
    assert!(err.to_string().contains("decompression bomb"), "{err}");
    nothing_left(&f, &store);
}

#[test]
fn corrupt_and_truncated_streams_are_errors() {
    for compression in EVERY {
        let f = Fixture::new();
        let store = f.store();
        let mut bytes = compress(compression, &tar_bytes(&[file("f", &[7u8; 4096])]));
        let n = bytes.len();
        let corrupt = f.work.join("corrupt");
        if compression == TarCompression::None {
            // A plain tar has no checksum over content: cut it in the middle of the file.
            bytes.truncate(1024);
        } else {
            bytes[n / 2..].iter_mut().for_each(|b| *b ^= 0x5a);
        }
        fs_err::write(&corrupt, &bytes).unwrap();
        let err = store
            .ingest()
            .module_tar(&corrupt, compression)
            .unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::BadTar { .. } | StoreError::HostileArchive { .. }
            ),
            "{compression:?}: {err:?}"
        );
        assert!(
            err.to_string().contains(&corrupt.display().to_string()),
            "{err}"
        );
        nothing_left(&f, &store);
    }
}

/// Found by fuzzing: lzma-rs 0.3.0 overflows an addition on this header (a panic with
/// overflow checks on). The panic stays in the decoder's thread and is an error.
#[test]
fn an_xz_stream_that_panics_the_decoder_is_an_error() {
    let f = Fixture::new();
    let store = f.store();
    let path = f.work.join("a.tar.xz");
    fs_err::write(&path, include_bytes!("testdata/xz-header-overflow.tar.xz")).unwrap();
    let err = store
        .ingest()
        .module_tar(&path, TarCompression::Xz)
        .unwrap_err();
    assert!(matches!(err, StoreError::BadTar { .. }), "{err:?}");
}

/// Data after the tar's end (two zero blocks) is not read: the package is what the tar
/// holds, whatever follows it.
#[test]
fn trailing_data_after_the_tar_is_ignored() {
    for compression in [TarCompression::None, TarCompression::Xz] {
        let f = Fixture::new();
        let store = f.store();
        let mut tar = tar_bytes(&[file("a", b"x")]);
        let clean = store
            .ingest()
            .module_tar(
                &f.tar("clean", compression, &[file("a", b"x")]),
                compression,
            )
            .unwrap();
        tar.extend_from_slice(&[0x41; 10240]);
        let path = f.work.join("trailing");
        fs_err::write(&path, compress(compression, &tar)).unwrap();
        let got = store.ingest().module_tar(&path, compression).unwrap();
        assert_eq!(got, clean, "{compression:?}");
    }
}
