//! The module source policy (`tstore_modules { … }` of the CLI configuration, the `modules`
//! block of `.tstore.hcl`): `tstore_installer::parse_machine_rules`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let _ = tstore_installer::parse_machine_rules(src, "fuzz");
});
