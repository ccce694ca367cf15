//! The dependency lock file (`.terraform.lock.hcl`): `tstore_tofu::lockfile::LockFile::parse`.
//! What parses must render (`to_string_with_header`) to text that parses again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::LockFile;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(lock) = LockFile::parse(src, ".terraform.lock.hcl") else {
        return;
    };
    let text = lock.to_string_with_header(Flavor::Tofu);
    if let Err(e) = LockFile::parse(&text, "rendered") {
        panic!("a parsed lock file renders to text that does not parse: {e}\n{text}");
    }
});
