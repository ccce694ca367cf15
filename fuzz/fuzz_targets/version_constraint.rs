//! Versions and version constraints: `tstore_tofu::version::{Version::parse,
//! Version::parse_lenient, VersionConstraints::parse, ModuleVersionConstraints::parse}`, and
//! what parses matched against a version. A constraint that parses must render
//! (`to_lock_string`) to one that parses again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::version::{ModuleVersionConstraints, Version, VersionConstraints};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let versions: Vec<Version> = [Version::parse(s), Version::parse_lenient(s)]
        .into_iter()
        .flatten()
        .chain([Version::new(1, 2, 3)])
        .collect();
    if let Ok(c) = VersionConstraints::parse(s) {
        for v in &versions {
            let _ = c.matches(v);
        }
        let text = c.to_lock_string();
        if let Err(e) = VersionConstraints::parse(&text) {
            panic!("{s:?} parses, renders to {text:?}, which does not: {e}");
        }
    }
    if let Ok(c) = ModuleVersionConstraints::parse(s) {
        for v in &versions {
            let _ = c.matches(v);
        }
        let _ = c.select(&versions);
        let _ = c.to_go_string();
    }
});
