//! A zip archive (a provider package, a module's zip): the store's ingest,
//! `tstore_store::Ingest::zip` (store/src/ingest/zip_archive.rs), with small limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (_dir, zip) = tstore_fuzz::write_scratch("package.zip", data);
    tstore_fuzz::with_store(|store| {
        let _ = store.ingest().zip(&zip);
    });
});
