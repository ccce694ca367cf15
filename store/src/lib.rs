//! The tstore content-addressed store: blobs, trees, packages, the SQLite index, `h1:`/`zh:`
//! hashing, ingest, read-only views and verification.
//!
//! The store knows nothing of HCL, registries or OpenTofu configuration. Packages are named by
//! opaque strings ([`PackageKey`]); the installer decides what to fetch, and the store makes
//! content durable, deduplicated, verified and visible.
//!
//! # Model
//!
//! - **Blob** ([`BlobId`]): file content addressed by BLAKE3, written once, read-only.
//! - **Tree** ([`TreeId`], [`Tree`]): the sorted list of a package's files (path, exec bit,
//!   blob) and symlinks, addressed by the BLAKE3 of its canonical encoding. Identical files in
//!   different packages share one blob.
//! - **Package** ([`Package`]): a [`PackageKey`] resolving to a tree, with the hashes trusted
//!   for it ([`HashRecord`]: `h1:`/`zh:` plus a [`Disposition`]).
//! - **View**: the package materialized read-only at `views/…` (hardlinks to blobs).
//! - **Source memo** ([`SourceMemo`]): which tree a zip or directory produced, keyed by its
//!   path and an lstat-only [`SourceFingerprint`], so a second init re-reads nothing.
//!
//! # On-disk layout
//!
//! ```text
//! <root>/
//! ├── .lock                     advisory lock: shared for init/import/providers lock, exclusive for gc
//! ├── index.sqlite (+ -wal)     blobs(id,size,sha256) trees(id,encoding,h1,files,bytes)
//! │                             tree_blobs packages package_hashes sources roots …
//! │                             module_sources (module source → package memos)
//! │                             file_facts (a configuration file's facts by content)
//! ├── blobs-v1/ab/<62 hex>      blob content, 0444 (or 0555: the mode it was first needed with)
//! │   blobs-v1/ab/<62 hex>.x|.r twin with the other mode, made on demand (reflink or copy)
//! ├── tmp/                      temp files and dirs (same filesystem: renames are atomic)
//! └── views/providers/HOST/NS/TYPE/VERSION/OS_ARCH/…   read-only package views
//!     views/modules/<module package id>/…             (module packages)
//! ```
//!
//! # Invariants
//!
//! - **The index never points at nothing.** Writes are ordered: blob files are fsynced and
//!   renamed in → `blobs`/`trees` rows → view renamed in → `packages` row. Garbage collection
//!   (exclusive lock) must delete rows first and files second.
//! - **Nothing half-made is visible.** Blobs and views are built under `tmp/` and renamed
//!   into place; a failed or interrupted ingest leaves at most unreferenced blobs.
//! - **"Already exists" is success.** Two processes ingesting and committing the same package
//!   at once both succeed, and end with one tree and one view.
//! - **Blob files are never modified** and are read-only; a view file is a hardlink to one.
//! - **`h1:` is computed once**, at ingest, from sha256s recorded in the same read pass that
//!   computed the BLAKE3 addresses, and memoized in the `trees` table.
//! - **Archives are validated before extraction** ([`HostileReason`], [`Limits`]).
//!
//! # Example
//!
//! ```no_run
//! use tstore_store::{HashRecord, PackageKey, Store};
//! # fn main() -> tstore_store::Result<()> {
//! let store = Store::open("/home/me/.local/share/tstore".as_ref())?;
//! let _lock = store.locks().shared()?;
//! let zip = std::path::Path::new("terraform-provider-null_2.1.2_linux_amd64.zip");
//! let got = store.ingest().zip(zip)?;
//! let key = PackageKey::provider("registry.terraform.io/hashicorp/null", "2.1.2", "linux_amd64");
//! let hashes = [
//!     HashRecord::verified_locally(got.ingested.h1.clone()),
//!     HashRecord::verified_locally(got.zh.clone()),
//! ];
//! let package = store.commit_package(&key, &got.ingested.tree, &hashes, None)?;
//! println!("{} at {}", package.key, store.view_dir(&key)?.display());
//! # Ok(())
//! # }
//! ```

// `StoreError` carries its context inline (a `PackageKey`, two `TreeId`s, paths) so callers can
// match on it; errors are the cold path, so the size of `Result` does not matter here.
#![allow(clippy::result_large_err)]

mod blob;
mod blob_files;
mod commit;
mod damaged;
mod decoded_trees;
mod durability;
mod error;
mod file_facts;
mod fingerprint;
mod freshness;
mod gc;
mod gc_budget;
mod gc_check;
mod hash;
mod hashing_copy;
mod ids;
mod index;
mod ingest;
mod layout;
mod leftovers;
mod lock;
mod marker;
mod module_sources;
mod package;
mod provenance;
mod read;
mod rebuild;
mod repair;
mod roots;
mod store;
mod temp;
mod tree;
mod trees_by_hash;
mod trust;
mod verify;
mod view;

pub use blob::BlobId;
pub use durability::TEST_BOOT_ID_VAR;
pub use error::{HostileReason, StoreError};
pub use file_facts::FileFacts;
pub use fingerprint::SourceFingerprint;
pub use freshness::{Freshness, Reverified};
pub use gc::{GcOptions, GcReport};
pub use gc_budget::Space;
pub use gc_budget::{BudgetReport, SizeBudget};
pub use hash::{h1_of_files, h1_of_zip_names, Hash, NewlineInName};
pub use ids::{PackageKey, TreeId};
pub use ingest::Ingest;
pub use ingest::{
    Ingested, IngestedArchive, IngestedModule, Limits, TarCompression, XZ_DECODER_THREAD,
};
pub use layout::regular_file_bytes;
pub use leftovers::Leftovers;
pub use lock::Locks;
pub use lock::{LockMode, StoreLock};
pub use marker::{identify_store, NotAStore};
pub use module_sources::Memos;
pub use module_sources::ModuleSourceMemo;
pub use package::{Disposition, HashRecord, Package};
pub use provenance::Provenances;
pub use provenance::{Provenance, UnsupportedName};
pub use read::PackageChange;
pub use rebuild::{IndexHealth, RebuiltIndex, SkippedView};
pub use repair::{QuarantinedBlob, QuarantinedPackage, RepairReport};
pub use roots::Roots;
pub use roots::{package_of_view_relpath, RecordedRoot, Root, RootLink};
pub use store::{DiskUsage, SourceMemo, Store};
pub use temp::{remove_own_temps, temp_prefix};
pub use tree::{EntryKind, Tree, TreeEntry};
pub use trust::AdoptReport;
pub use verify::{BadClaim, BadView, CorruptBlob, MissingBlob, VerifyReport};
pub use view::LinkMode;

/// Result with [`StoreError`] by default.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
// Test fixtures start programs (cp, a provider binary) directly.
#[allow(clippy::disallowed_methods)]
mod tests;
