//! `--json` output: one pretty-printed JSON document on stdout, ending in a newline. Every
//! document is an object whose first field is `"format_version"` ([`FORMAT_VERSION`]): a
//! script checks it, and it changes only when a field changes meaning or goes away (new
//! fields may appear without it).

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

/// The version of the `--json` formats.
pub(crate) const FORMAT_VERSION: u64 = 1;

/// Print `value` as the command's JSON document, with `format_version` first.
pub(crate) fn print(value: &impl Serialize) -> Result<()> {
    let mut document = serde_json::Map::new();
    document.insert("format_version".into(), FORMAT_VERSION.into());
    match serde_json::to_value(value)? {
        serde_json::Value::Object(fields) => document.extend(fields),
        other => {
            document.insert("value".into(), other);
        }
    }
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &serde_json::Value::Object(document))?;
    writeln!(out)?;
    Ok(())
}
