//! `--json` output: one pretty-printed JSON document on stdout, ending in a newline.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

/// Print `value` as the command's JSON document.
pub(crate) fn print(value: &impl Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
