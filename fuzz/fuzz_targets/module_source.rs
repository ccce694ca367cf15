//! A module call's `source` address: `tstore_tofu::module_source::{ModuleSource::parse,
//! split_subdir, is_local}`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::module_source::{is_local, split_subdir, ModuleSource};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = is_local(s);
    let _ = split_subdir(s);
    if let Ok(source) = ModuleSource::parse(s, "registry.opentofu.org") {
        let _ = source.kind();
        let _ = format!("{source:?}");
    }
});
