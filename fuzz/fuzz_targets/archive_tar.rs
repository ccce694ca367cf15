//! A module package's `.tar` archive: extracted by `modules::archive::extract_tar`
//! (installer/src/modules/getters/archive.rs, through `tstore_installer::fuzz_entry::extract_module_tar`)
//! with small limits, then ingested as the module fetch does,
//! `tstore_store::Store::ingest_module_dir`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tstore_fuzz::extract_module_archive("tar", data);
});
