//! A module package's `.tar.xz` archive: the store's streamed tar ingest,
//! `tstore_store::Ingest::module_tar` (store/src/ingest/tar_archive.rs), with small
//! limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tstore_fuzz::ingest_module_tar(tstore_store::TarCompression::Xz, data);
});
