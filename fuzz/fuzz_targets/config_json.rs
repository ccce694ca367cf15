//! A module's configuration in JSON syntax: `main.tf.json` read by
//! `tstore_tofu::config::load_module_requirements` (both flavors).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::config::load_module_requirements;
use tstore_tofu::flavor::Flavor;

fuzz_target!(|data: &[u8]| {
    let dir = tstore_fuzz::scratch_dir();
    std::fs::write(dir.path().join("main.tf.json"), data).unwrap();
    for flavor in [Flavor::Tofu, Flavor::Terraform] {
        let _ = load_module_requirements(dir.path(), flavor);
    }
    tstore_tofu::fuzz_entry::forget_parsed_config_files();
});
