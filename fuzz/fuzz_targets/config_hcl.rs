//! A module's configuration in native syntax: `main.tf` read by
//! `tstore_tofu::config::load_module_requirements` (both flavors), and the same bytes as a
//! test file (`main.tftest.hcl`) read by `config::test_files::test_module_calls` (both
//! flavors).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::config::{load_module_requirements, test_files::test_module_calls};
use tstore_tofu::flavor::Flavor;

fuzz_target!(|data: &[u8]| {
    let dir = tstore_fuzz::scratch_dir();
    std::fs::write(dir.path().join("main.tf"), data).unwrap();
    std::fs::write(dir.path().join("main.tftest.hcl"), data).unwrap();
    for flavor in [Flavor::Tofu, Flavor::Terraform] {
        let _ = load_module_requirements(dir.path(), flavor);
        let _ = test_module_calls(dir.path(), "tests", flavor);
    }
    tstore_tofu::fuzz_entry::forget_parsed_config_files();
});
