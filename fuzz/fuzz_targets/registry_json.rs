//! The registries' answers, the first byte choosing which (through
//! `tstore_installer::fuzz_entry`): a provider registry's `versions`
//! (providers/sources/registry.rs `supported_versions`) and `download` metadata
//! (`resolve_url`, `registry_packages`), a `SHA256SUMS` (`parse_sha256sums`), a module
//! registry's `versions` (modules/getters/registry.rs `listed_versions`) and `download` location
//! (`resolve_location`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_installer::fuzz_entry as f;

fuzz_target!(|data: &[u8]| {
    let Some((&which, doc)) = data.split_first() else {
        return;
    };
    match which % 5 {
        0 => drop(f::provider_versions(doc)),
        1 => drop(f::provider_download(doc)),
        2 => drop(f::sha256sums(doc)),
        3 => drop(f::module_versions(doc)),
        _ => drop(f::module_location(doc)),
    }
});
