//! An OCI image index as a provider version's index is read (installer/src/net/oci/mod.rs
//! `OciClient::parse_index`; through `tstore_installer::fuzz_entry::oci_index`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tstore_installer::fuzz_entry::oci_index(data);
});
