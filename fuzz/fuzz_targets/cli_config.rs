//! The CLI configuration (`~/.tofurc`, `*.tfrc`, `*.tfrc.json`), native or JSON syntax (JSON
//! when it starts with `{`): `tstore_tofu::cliconfig::CliConfig::parse_with_env`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::cliconfig::CliConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let env = |k: &str| match k {
        "HOME" => Some("/home/fuzz".to_owned()),
        "TF_DATA" => Some("/data".to_owned()),
        _ => None,
    };
    let _ = CliConfig::parse_with_env(src, "fuzz.tfrc", &env);
});
