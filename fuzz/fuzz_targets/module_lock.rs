//! tstore's module lock file (`.tstore.lock.hcl`): `tstore_tofu::module_lock::parse`.
//! What parses must render (`module_lock::render`) to text that parses again.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tstore_tofu::module_lock;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(lock) = module_lock::parse(src, Path::new(".tstore.lock.hcl")) else {
        return;
    };
    let text = module_lock::render(&lock);
    if let Err(e) = module_lock::parse(&text, Path::new("rendered")) {
        panic!("a parsed module lock renders to text that does not parse: {e}\n{text}");
    }
});
