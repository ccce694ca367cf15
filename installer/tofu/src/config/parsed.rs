//! Each configuration file is parsed once per process. An init reads the configuration
//! twice — the module phase walks the module tree, the provider phase then reads the
//! requirements of every module through the installed tree — and the second read of a file
//! finds the first one's result here.
//!
//! A result is reused only for the same file read for the same flavor (which decides the
//! block types a file may have) and shown under the same name: the same path in
//! messages, and the same identity of the open file (device, inode, size, modification and
//! change times, taken with `fstat` on the descriptor that would be read) — whatever path
//! led to it, so a module package read from the store by the module phase and through its
//! `.terraform/modules` link by the provider phase is parsed once. A file replaced or
//! rewritten meanwhile — a module re-installed under the same key — is parsed afresh. Failures are
//! not remembered: a file that fails to read or parse fails the command.
//!
//! A file whose content the facts cache knows without reading it (a package's file, named
//! by the package's tree; `facts.rs`) is not opened: its recorded facts are decoded once per
//! process for each name it is shown under.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::hcl::parse_hcl;
use super::json::parse_json;
use super::{ConfigError, FileContent};
use crate::flavor::Flavor;
use crate::read::{read_capped_from, MAX_CONFIG_FILE};

/// What a parsed file is remembered by.
#[derive(Clone, PartialEq, Eq, Hash)]
struct FileKey {
    shown: PathBuf,
    /// Which block types a file may have depends on the flavor.
    flavor: Flavor,
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// Files parsed in this process, by their identity and change time. A process fact, not a
/// run's memory: a file is remembered only when its last change was [`SETTLED`] before it
/// was read, so any later change (which stamps a later change time) misses the memo, in
/// this run or a later one of the init server (git's "racily clean" rule).
static PARSED: Mutex<Option<HashMap<FileKey, Arc<FileContent>>>> = Mutex::new(None);

/// How long before a read a file must have last changed to be remembered: well over the
/// kernel's coarse clock tick (at most 10 ms), which stamps change times.
const SETTLED: std::time::Duration = std::time::Duration::from_millis(50);

/// Facts decoded in this process, by content, rules and the name the file is shown under.
type ContentKey = (super::facts::ContentId, String, PathBuf);
static BY_CONTENT: Mutex<Option<HashMap<ContentKey, Arc<FileContent>>>> = Mutex::new(None);

/// Read and parse the configuration file at `path` (`.json` as JSON, anything else as
/// HCL) as `flavor`'s tool reads it, naming it `shown` in every position and error; a file
/// this process parsed before for the same flavor, unchanged since and settled when read
/// ([`SETTLED`]), is not read again.
pub(super) fn parse_file(
    path: &Path,
    shown: &Path,
    flavor: Flavor,
) -> Result<Arc<FileContent>, ConfigError> {
    let read_err = |err| ConfigError::Read {
        path: shown.to_owned(),
        err,
    };
    let json = path.to_string_lossy().ends_with(".json");
    let rules = super::facts::rules(flavor, json);
    // A file whose content is known without reading it (a package's, by its tree) and
    // whose facts are recorded is not opened at all.
    if let Some(id) = super::facts::content_id(path) {
        let key = (id, rules.clone(), shown.to_owned());
        if let Some(hit) = BY_CONTENT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|memo| memo.get(&key))
        {
            return Ok(Arc::clone(hit));
        }
        if let Some(content) = super::facts::recorded_by_id(&rules, &id, shown) {
            let content = Arc::new(content);
            BY_CONTENT
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert_with(HashMap::new)
                .insert(key, Arc::clone(&content));
            return Ok(content);
        }
    }
    let reading_from = std::time::SystemTime::now();
    let file = crate::read::open_regular(path).map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    let key = FileKey {
        shown: shown.to_owned(),
        flavor,
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    };
    if let Some(hit) = PARSED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|memo| memo.get(&key))
    {
        return Ok(Arc::clone(hit));
    }
    let src = read_capped_from(file, meta.size(), MAX_CONFIG_FILE).map_err(read_err)?;
    // The facts of these bytes, recorded by an earlier process; else parsed, and recorded.
    let parsed = match super::facts::recorded(&rules, src.as_bytes(), shown) {
        Some(content) => content,
        None => {
            let content = if json {
                parse_json(&src, shown, flavor)?
            } else {
                parse_hcl(&src, shown, flavor)?
            };
            super::facts::record(&rules, src.as_bytes(), &content);
            content
        }
    };
    let parsed = Arc::new(parsed);
    if settled(key.ctime, reading_from) {
        PARSED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .insert(key, Arc::clone(&parsed));
    }
    Ok(parsed)
}

/// Whether a file last changed at `ctime` (seconds, nanoseconds) had settled when a read
/// began at `reading_from`: a change after the read stamps a later time.
fn settled(ctime: (i64, i64), reading_from: std::time::SystemTime) -> bool {
    let Ok(since_epoch) = reading_from.duration_since(std::time::UNIX_EPOCH) else {
        return false;
    };
    let Some(limit) = since_epoch.checked_sub(SETTLED) else {
        return false;
    };
    let changed = (ctime.0, ctime.1);
    changed < (limit.as_secs() as i64, i64::from(limit.subsec_nanos()))
}

/// Forget every parsed file (for the fuzz harness, which parses a new file per input).
#[cfg(any(fuzzing, test))]
pub(crate) fn forget_all() {
    *PARSED.lock().unwrap_or_else(PoisonError::into_inner) = None;
    *BY_CONTENT.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Flavor = Flavor::Tofu;

    fn calls(content: &FileContent) -> Vec<String> {
        content
            .module_calls
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    #[test]
    fn an_unchanged_file_is_parsed_once_and_a_changed_one_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.tf");
        std::fs::write(&path, "module \"a\" {\n  source = \"./a\"\n}\n").unwrap();
        std::thread::sleep(SETTLED * 2);
        let first = parse_file(&path, &path, T).unwrap();
        let again = parse_file(&path, &path, T).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "parsed twice");
        assert_eq!(calls(&again), ["a"]);

        // Reached through a symlink, shown under the same name: the same file.
        let link = dir.path().join("link.tf");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(Arc::ptr_eq(&first, &parse_file(&link, &path, T).unwrap()));

        // Shown under another name: positions differ, so it is parsed for that name.
        let shown = Path::new(".terraform/modules/x/main.tf");
        let other = parse_file(&path, shown, T).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(
            other.module_calls[0].at.to_string(),
            format!("{}:1", shown.display())
        );

        // Replaced by rename (a new inode), the same size: parsed afresh.
        let new = dir.path().join("new.tf");
        std::fs::write(&new, "module \"b\" {\n  source = \"./b\"\n}\n").unwrap();
        std::fs::rename(&new, &path).unwrap();
        assert_eq!(calls(&parse_file(&path, &path, T).unwrap()), ["b"]);
        // Rewritten in place with other content: parsed afresh.
        std::fs::write(&path, "module \"cc\" {\n  source = \"./c\"\n}\n").unwrap();
        assert_eq!(calls(&parse_file(&path, &path, T).unwrap()), ["cc"]);
    }

    #[test]
    fn a_file_changed_just_before_its_read_is_read_again_even_with_the_same_stat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.tf");
        std::fs::write(&path, "module \"a\" {\n  source = \"./a\"\n}\n").unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(calls(&parse_file(&path, &path, T).unwrap()), ["a"]);
        // The same size, the same mtime, and (within one clock tick) the same ctime.
        std::fs::write(&path, "module \"b\" {\n  source = \"./b\"\n}\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(calls(&parse_file(&path, &path, T).unwrap()), ["b"]);
    }

    #[test]
    fn settled_means_changed_well_before_the_read() {
        let at =
            |secs: u64, nanos: u32| std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos);
        assert!(settled((100, 0), at(100, 60_000_000)));
        assert!(!settled((100, 0), at(100, 40_000_000)));
        assert!(!settled((100, 10), at(100, 50_000_010)));
        assert!(!settled((101, 0), at(100, 0)));
    }

    #[test]
    fn failures_are_not_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.tf");
        std::fs::write(&path, "module \"a\" {\n").unwrap();
        assert!(parse_file(&path, &path, T).is_err());
        assert!(parse_file(&path, &path, T).is_err());
        std::fs::write(&path, "module \"a\" {\n  source = \"./a\"\n}\n").unwrap();
        assert_eq!(calls(&parse_file(&path, &path, T).unwrap()), ["a"]);
    }
}
