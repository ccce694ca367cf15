//! The streamed zip ingest (`Ingest::zip_stream`): the tree the same bytes give as a file,
//! kinds from the central directory, and a refusal wherever the central directory tells
//! another story than the local headers. (Every hostile archive of `archives` is also
//! refused streamed: its `assert_hostile` reads both ways.)

use std::io::{Read, Write as _};
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

use super::archives::central_headers;
use super::{write_zip, Fixture, Z};
use crate::*;

const SHOWN: &str = "mirror.test/modules?tag=layer";

fn stream(store: &Store, bytes: &[u8]) -> Result<Ingested> {
    store.ingest().zip_stream(&mut { bytes }, Path::new(SHOWN))
}

/// The reason a streamed refusal gives, with the entry it names.
#[track_caller]
fn refused(store: &Store, bytes: &[u8]) -> (String, HostileReason) {
    match stream(store, bytes) {
        Err(StoreError::HostileArchive {
            archive,
            entry,
            reason,
        }) => {
            assert_eq!(archive, Path::new(SHOWN));
            (entry, reason)
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A zip of every kind of entry tstore's own zips hold, and then some: executable, plain,
/// stored and deflated, a directory entry, the root's own entry, a symlink, a zip64 entry,
/// an empty file, and one larger than what is read into memory.
fn every_kind(path: &Path) {
    let mut w = zip::ZipWriter::new(fs_err::File::create(path).unwrap());
    let deflated = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    w.add_directory("./", deflated.unix_permissions(0o755))
        .unwrap();
    w.start_file("main.tf", deflated.unix_permissions(0o644))
        .unwrap();
    w.write_all(b"variable \"x\" {}\n").unwrap();
    w.start_file("bin/run.sh", stored.unix_permissions(0o755))
        .unwrap();
    w.write_all(b"#!/bin/sh\necho hi\n").unwrap();
    w.add_directory("modules/", deflated.unix_permissions(0o755))
        .unwrap();
    w.start_file("modules/empty", deflated.unix_permissions(0o644))
        .unwrap();
    w.start_file(
        "wide.txt",
        deflated.large_file(true).unix_permissions(0o644),
    )
    .unwrap();
    w.write_all(b"a zip64 entry\n").unwrap();
    // Little-compressible content past the in-memory bound: streamed into its blob.
    let mut big = Vec::with_capacity(3 << 20);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    while big.len() < 3 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big.extend_from_slice(&x.to_le_bytes());
    }
    w.start_file("data/big.bin", deflated.unix_permissions(0o644))
        .unwrap();
    w.write_all(&big).unwrap();
    w.add_symlink("link.tf", "main.tf", deflated).unwrap();
    w.finish().unwrap();
}

#[test]
fn a_streamed_zip_gives_the_tree_its_file_gives() {
    let f = Fixture::new();
    let store = f.store();
    let zip = f.zip_path("every.zip");
    every_kind(&zip);
    let bytes = fs_err::read(&zip).unwrap();
    let streamed = stream(&store, &bytes).unwrap();
    let filed = store.ingest().zip(&zip).unwrap().ingested;
    assert_eq!(streamed, filed);
    let tree = store.tree(&streamed.tree).unwrap();
    let kind = |path: &str| {
        tree.entries()
            .iter()
            .find(|e| e.path == path)
            .map(|e| e.kind.clone())
    };
    assert!(matches!(
        kind("bin/run.sh"),
        Some(EntryKind::File { exec: true, .. })
    ));
    assert!(matches!(
        kind("main.tf"),
        Some(EntryKind::File { exec: false, .. })
    ));
    assert_eq!(
        kind("link.tf"),
        Some(EntryKind::Symlink {
            target: "main.tf".into()
        })
    );
    assert_eq!(streamed.files, 5);

    // An empty zip is an empty tree both ways.
    let empty = f.zip_path("empty.zip");
    write_zip(&empty, &[]);
    let bytes = fs_err::read(&empty).unwrap();
    assert_eq!(
        stream(&store, &bytes).unwrap(),
        store.ingest().zip(&empty).unwrap().ingested
    );
}

/// Patch `bytes` at `at` with `with`.
fn patched(bytes: &[u8], at: usize, with: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at..at + with.len()].copy_from_slice(with);
    out
}

#[test]
fn a_central_directory_that_tells_another_story_is_refused() {
    let f = Fixture::new();
    let store = f.store();
    let zip = f.zip_path("two.zip");
    write_zip(
        &zip,
        &[
            Z::File("a.tf", b"resource \"a\" {}\n", 0o644),
            Z::File("b.tf", b"resource \"b\" {}\n", 0o644),
        ],
    );
    let bytes = fs_err::read(&zip).unwrap();
    let headers = central_headers(&bytes);
    let (second, _) = headers[1];
    let end = bytes.len() - 22;
    assert_eq!(bytes[end..end + 4], [0x50, 0x4b, 0x05, 0x06]);

    // The same bytes as a file give a tree with "c.tf": a reader of the central directory
    // trusts its names. Streamed, that is another story than the local header's.
    let renamed = patched(&bytes, second + 46, b"c.tf");
    let file = f.zip_path("renamed.zip");
    fs_err::write(&file, &renamed).unwrap();
    assert!(store.ingest().zip(&file).is_ok());
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("another name", renamed, "b.tf"),
        (
            "another offset",
            patched(&bytes, second + 42, &0u32.to_le_bytes()),
            "b.tf",
        ),
        (
            "another CRC-32",
            patched(&bytes, second + 16, &0xdead_beefu32.to_le_bytes()),
            "b.tf",
        ),
        (
            "another size",
            patched(&bytes, second + 24, &1u32.to_le_bytes()),
            "b.tf",
        ),
        (
            "encrypted",
            patched(&bytes, second + 8, &1u16.to_le_bytes()),
            "b.tf",
        ),
        (
            "an entry left out",
            patched(&bytes, second, b"PK\x09\x09"),
            "b.tf",
        ),
        (
            "another count",
            patched(&bytes, end + 10, &1u16.to_le_bytes()),
            "",
        ),
        (
            "another directory offset",
            patched(&bytes, end + 16, &0u32.to_le_bytes()),
            "",
        ),
        ("data after the end", [&bytes[..], b"!"].concat(), ""),
        (
            // A reader that looks for the end record from the end of the file would find
            // one in the comment, with a central directory of its own.
            "a comment",
            [
                &patched(&bytes, end + 20, &22u16.to_le_bytes())[..],
                &bytes[end..],
            ]
            .concat(),
            "",
        ),
        (
            "an extra field in the central directory",
            {
                let mut b = patched(&bytes, second + 30, &4u16.to_le_bytes());
                let at = second + 46 + "b.tf".len();
                b.splice(at..at, [0x55, 0x54, 0, 0]);
                b
            },
            "b.tf",
        ),
        (
            "another disk",
            patched(&bytes, end + 6, &4u16.to_le_bytes()),
            "",
        ),
    ];
    for (what, case, entry) in cases {
        let (named, reason) = refused(&store, &case);
        assert_eq!(
            (named.as_str(), reason),
            (entry, HostileReason::DirectoryMismatch),
            "{what}"
        );
    }
    assert!(store.packages().unwrap().is_empty());
}

#[test]
fn sizes_only_in_a_data_descriptor_are_refused() {
    let f = Fixture::new();
    let store = f.store();
    let zip = f.zip_path("descriptor.zip");
    write_zip(&zip, &[Z::File("main.tf", b"locals {}\n", 0o644)]);
    // Bit 3 of the local header's flags: sizes and CRC-32 follow the data (as Go's zip
    // writer and other streaming writers make them).
    let mut bytes = fs_err::read(&zip).unwrap();
    bytes[6] |= 0x08;
    let err = stream(&store, &bytes).unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::BadZip {
                source: zip::result::ZipError::UnsupportedArchive(_),
                ..
            }
        ),
        "{err:?}"
    );
}

/// A reader that counts what is taken from it.
struct Counting<'a> {
    bytes: &'a [u8],
    taken: usize,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.bytes.read(buf)?;
        self.taken += n;
        Ok(n)
    }
}

#[test]
fn a_bomb_is_refused_at_its_header_and_a_cut_stream_is_not_a_zip() {
    let f = Fixture::new();
    let store = f.store();
    let bomb = f.zip_path("bomb.zip");
    write_zip(&bomb, &[Z::File("zeros", &vec![0u8; 50 << 20], 0o644)]);
    let bytes = fs_err::read(&bomb).unwrap();
    let mut reader = Counting {
        bytes: &bytes,
        taken: 0,
    };
    let err = store
        .ingest()
        .zip_stream(&mut reader, Path::new(SHOWN))
        .unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::HostileArchive {
                reason: HostileReason::CompressionRatio { .. },
                ..
            }
        ),
        "{err:?}"
    );
    // The header, not the compressed bytes, was read.
    assert!(
        reader.taken < 100,
        "{} of {} bytes read",
        reader.taken,
        bytes.len()
    );
    assert_eq!(store.space().usage().unwrap().blob_bytes, 0);

    let zip = f.zip_path("cut.zip");
    write_zip(&zip, &[Z::File("main.tf", b"locals {}\n", 0o644)]);
    let bytes = fs_err::read(&zip).unwrap();
    for cut in [10, 40, bytes.len() - 30, bytes.len() - 1] {
        let err = stream(&store, &bytes[..cut]).unwrap_err();
        assert!(
            matches!(&err, StoreError::BadZip { .. }),
            "cut at {cut}: {err:?}"
        );
    }
    // A compressed size past what the content could take: its bytes are not read.
    let mut swollen = bytes.clone();
    swollen[18..22].copy_from_slice(&(1u32 << 30).to_le_bytes());
    assert!(matches!(
        stream(&store, &swollen).unwrap_err(),
        StoreError::BadZip { .. }
    ));
    // A local header with an extra field that is not zip64's (here an extended timestamp,
    // harmless, but such fields can rename an entry for one reader and not another).
    let mut renamed = bytes.clone();
    renamed[28..30].copy_from_slice(&9u16.to_le_bytes());
    let at = 30 + "main.tf".len();
    renamed.splice(at..at, [0x55, 0x54, 5, 0, 1, 0, 0, 0, 0]);
    assert!(matches!(
        stream(&store, &renamed).unwrap_err(),
        StoreError::BadZip {
            source: zip::result::ZipError::UnsupportedArchive(_),
            ..
        }
    ));
    assert!(matches!(
        stream(&store, b"not a zip at all").unwrap_err(),
        StoreError::BadZip { .. }
    ));
}
