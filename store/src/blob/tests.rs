//! Blob files: idempotent writes, modes, batches, and what a held content costs.

use super::*;
use std::os::unix::fs::MetadataExt;

fn layout() -> (tempfile::TempDir, Layout) {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path());
    fs_err::create_dir_all(&layout.tmp).unwrap();
    (dir, layout)
}

#[test]
fn write_is_idempotent_and_read_only() {
    let (_d, layout) = layout();
    let a = write_blob(&layout, &mut &b"hello\n"[..], false).unwrap();
    let b = write_blob(&layout, &mut &b"hello\n"[..], true).unwrap();
    assert_eq!((a.id, a.size, a.sha256), (b.id, b.size, b.sha256));
    assert!(a.written_now && !b.written_now);
    assert_eq!(a.size, 6);
    assert_eq!(a.id.0, *blake3::hash(b"hello\n").as_bytes());
    assert_eq!(
        hex::encode(a.sha256),
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
    );
    let path = layout.blob_path(&a.id);
    let meta = fs_err::metadata(&path).unwrap();
    // The first writer decided the mode; the second write changed nothing.
    assert_eq!(meta.mode() & 0o777, 0o444);
    assert_eq!(fs_err::read(&path).unwrap(), b"hello\n");
    // No temp files left behind.
    assert_eq!(fs_err::read_dir(&layout.tmp).unwrap().count(), 0);
    let id_str = a.id.to_string();
    assert_eq!(
        &path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy(),
        &id_str[..2]
    );
    assert_eq!(id_str.parse::<BlobId>().unwrap(), a.id);
    assert!("XYZ".parse::<BlobId>().is_err());
}

#[test]
fn content_the_store_holds_makes_no_temp_file_small_or_large() {
    let (_d, layout) = layout();
    let large: Vec<u8> = (0..(IN_MEMORY_MAX + 10)).map(|i| (i % 251) as u8).collect();
    let small = write_blob(&layout, &mut &b"held\n"[..], false).unwrap();
    let big = write_blob(&layout, &mut &large[..], false).unwrap();
    assert_eq!(big.size, IN_MEMORY_MAX + 10);
    assert_eq!(fs_err::read(layout.blob_path(&big.id)).unwrap(), large);
    // With no temp directory, only content that needs no new file can be written.
    fs_err::remove_dir(&layout.tmp).unwrap();
    let mut batch = BlobBatch::new(&layout);
    let again = batch.write(&mut &b"held\n"[..], false, 5).unwrap();
    assert_eq!((again.id, again.written_now), (small.id, false));
    // Announced small, found large: copied to a temp file like any large content.
    assert!(batch.write(&mut &large[..], false, 5).is_err());
    assert!(batch.write(&mut &b"new\n"[..], false, 4).is_err());
    batch.finish().unwrap();
}

#[test]
fn twin_has_other_mode() {
    let (_d, layout) = layout();
    let a = write_blob(&layout, &mut &b"#!/bin/sh\n"[..], false).unwrap();
    let plain = blob_file_with_mode(&layout, &a.id, false).unwrap();
    assert_eq!(plain, layout.blob_path(&a.id));
    let exec = blob_file_with_mode(&layout, &a.id, true).unwrap();
    assert_eq!(exec, layout.blob_twin_path(&a.id, true));
    assert_eq!(fs_err::metadata(&exec).unwrap().mode() & 0o777, 0o555);
    assert_eq!(fs_err::read(&exec).unwrap(), b"#!/bin/sh\n");
    assert_eq!(blob_file_with_mode(&layout, &a.id, true).unwrap(), exec);
}

#[test]
fn a_large_batch_places_every_blob_once_and_a_dropped_one_nothing() {
    let (_d, layout) = layout();
    let before = write_blob(&layout, &mut &b"already here"[..], false).unwrap();
    let mut batch = BlobBatch::new(&layout);
    let mut written = Vec::new();
    for i in 0..(PER_FILE_SYNC_MAX * 3) {
        let content = format!("file {}", i % 10);
        written.push(batch.write(&mut content.as_bytes(), i % 2 == 0, 0).unwrap());
    }
    let again = batch.write(&mut &b"already here"[..], false, 0).unwrap();
    assert_eq!((again.id, again.written_now), (before.id, false));
    // Nothing is visible before the batch finishes.
    assert!(written.iter().all(|w| !layout.blob_path(&w.id).exists()));
    batch.finish().unwrap();
    for (i, w) in written.iter().enumerate() {
        let path = layout.blob_path(&w.id);
        assert_eq!(
            fs_err::read_to_string(&path).unwrap(),
            format!("file {}", i % 10)
        );
        // The first writer of a content decided its mode.
        let exec = (i % 10) % 2 == 0;
        assert_eq!(
            fs_err::metadata(&path).unwrap().mode() & 0o777,
            blob_mode(exec)
        );
    }
    assert_eq!(fs_err::read_dir(&layout.tmp).unwrap().count(), 0);

    let mut dropped = BlobBatch::new(&layout);
    let lost: Vec<WrittenBlob> = (0..PER_FILE_SYNC_MAX * 2)
        .map(|i| {
            dropped
                .write(&mut format!("lost {i}").as_bytes(), false, 0)
                .unwrap()
        })
        .collect();
    drop(dropped);
    assert!(lost.iter().all(|w| !layout.blob_path(&w.id).exists()));
    assert_eq!(fs_err::read_dir(&layout.tmp).unwrap().count(), 0);
}
