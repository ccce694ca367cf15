//! Small records of this machine in the state directory (`~/.local/state/tstore/`): a JSON
//! object of strings, read capped and never through a link (`read_own_capped`), written
//! whole to a temporary file beside it and renamed over it (the rename replaces a link, it
//! never writes through one). An unreadable record is no record; a record that cannot be
//! written changes nothing else (said at debug level).

use std::collections::BTreeMap;
use std::path::Path;

/// The largest record read.
const MAX_BYTES: u64 = 1 << 20;

/// The record at `path` (empty when it is missing or unreadable).
pub(crate) fn read(path: &Path) -> BTreeMap<String, String> {
    tstore_tofu::read::read_own_capped(path, MAX_BYTES)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Write `record` to `path` whole (see [`replace`]).
pub(crate) fn write(path: &Path, record: &BTreeMap<String, String>) {
    let written = serde_json::to_string_pretty(record)
        .map_err(std::io::Error::from)
        .and_then(|text| replace(path, text.as_bytes()));
    if let Err(e) = written {
        tracing::debug!("cannot write the record {}: {e}", path.display());
    }
}

/// Put `bytes` at `path`: written to a temporary file beside it, renamed over it (its
/// directory made 0700 if missing).
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut temp = tempfile::Builder::new()
        .prefix(".record-")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut temp, bytes)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether `key` is said on this machine for the first time: recorded in `said.json` of
/// the state directory `state_dir` (`None`: no state directory, every time is the first).
pub fn first_said_on_this_machine(state_dir: Option<&Path>, key: &str) -> bool {
    let Some(dir) = state_dir else { return true };
    let path = dir.join("said.json");
    let mut said = read(&path);
    if said.contains_key(key) {
        return false;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    said.insert(key.to_owned(), now.to_string());
    write(&path, &said);
    true
}
