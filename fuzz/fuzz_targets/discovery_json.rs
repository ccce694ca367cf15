//! A service discovery document (`.well-known/terraform.json`): parsed as
//! `net::discovery::discover` does and each service's URL resolved by
//! `discovery::service_url` (through `tstore_installer::fuzz_entry::discovery`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tstore_installer::fuzz_entry::discovery(data);
});
