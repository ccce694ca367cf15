//! A local state file (`terraform.tfstate`): `tstore_tofu::state::providers_in_state`, the
//! streamed reader that keeps only each resource's provider. Whatever it returns is a
//! provider address that renders to itself; no input makes it panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::state::providers_in_state;

fuzz_target!(|data: &[u8]| {
    let Ok(providers) = providers_in_state(data) else {
        return;
    };
    for addr in providers {
        let text = addr.to_string();
        match ProviderAddr::parse_normalized(&text) {
            Ok(again) if again == addr => {}
            other => panic!("{text} read from a state does not render to itself: {other:?}"),
        }
    }
});
