//! Store-level tests through the public API, one file per topic: `archives` (zip and
//! directory ingest, hostile archives, limits), `tar_archives` (the streamed tar ingest),
//! `packages` (commit, views, concurrency, verify, source memos, locks), `repair`
//! (quarantine), …. This module holds what they share: a [`Fixture`] (a store and a work
//! directory) and the zip writer.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

use crate::{GcOptions, GcReport, PackageKey, Store};

mod archives;
mod claims;
mod damage;
mod durability;
mod gc_budget;
mod packages;
mod provenance;
mod repair;
mod tar_archives;
mod trust;
mod zip_streams;

fn key(name: &str) -> PackageKey {
    PackageKey::provider(format!("example.com/test/{name}"), "1.0.0", "linux_amd64")
}

/// The store's package keys, sorted.
fn present(store: &Store) -> Vec<PackageKey> {
    let mut keys: Vec<_> = store
        .packages()
        .unwrap()
        .into_iter()
        .map(|p| p.key)
        .collect();
    keys.sort();
    keys
}

/// gc with no grace period, under the exclusive lock.
fn gc_now(store: &Store) -> GcReport {
    let lock = store.locks().try_exclusive().unwrap().unwrap();
    store
        .gc(
            &lock,
            &GcOptions {
                min_age: std::time::Duration::ZERO,
                dry_run: false,
                ..GcOptions::default()
            },
        )
        .unwrap()
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

    /// Ingest `files` as the directory `name` and commit it as package `name`, its `h1:`
    /// verified.
    fn commit_verified(
        &self,
        store: &Store,
        name: &str,
        files: &[(&str, &[u8], bool)],
    ) -> crate::Ingested {
        let got = store.ingest().dir(&self.dir(name, files)).unwrap();
        store
            .commit_package(
                &key(name),
                &got.tree,
                &[crate::HashRecord::verified_locally(got.h1.clone())],
                None,
            )
            .unwrap();
        got
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

fn v2_files() -> Vec<(&'static str, &'static [u8], bool)> {
    vec![
        ("terraform-provider-fake", b"hello\n", true),
        ("sub/data.txt", b"world\n", false),
    ]
}
