//! A provider registry's signing key (ASCII armor) and detached signature over a
//! `SHA256SUMS`: `net::signing::verify_detached` (through
//! `tstore_installer::fuzz_entry::signature`). The input is the key, the signed data and the
//! signature, each but the last preceded by its length (two bytes, little-endian).
#![no_main]

use libfuzzer_sys::fuzz_target;

/// The next `len`-prefixed part of `data`.
fn part<'a>(data: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, rest) = data.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (part, rest) = rest.split_at(len);
    *data = rest;
    Some(part)
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let (Some(key), Some(signed)) = (part(&mut data), part(&mut data)) else {
        return;
    };
    let Ok(key) = std::str::from_utf8(key) else {
        return;
    };
    let _ = tstore_installer::fuzz_entry::signature(key, signed, data);
});
