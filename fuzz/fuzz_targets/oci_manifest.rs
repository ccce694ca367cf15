//! An OCI image manifest as a module or a provider platform's manifest is read
//! (installer/src/net/oci/mod.rs `OciClient::parse_manifest`, `single_zip_layer`; through
//! `tstore_installer::fuzz_entry::oci_manifest`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tstore_installer::fuzz_entry::oci_manifest(data);
});
