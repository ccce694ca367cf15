//! Names of temporary entries in the store's `tmp/`: each carries the id of the process
//! that made it (`KIND-PID-RANDOM`), so a process stopped by Ctrl-C can remove exactly its
//! own leftovers ([`remove_own_temps`]) while other processes keep theirs.

use std::io;
use std::path::Path;

/// The prefix of a temporary entry of `kind` made by this process.
pub fn temp_prefix(kind: &str) -> String {
    format!("{kind}-{}-", std::process::id())
}

/// Remove every entry of `store_root`'s `tmp/` that this process made; the number removed.
/// For an interrupted command: whatever it was writing will never be renamed into place.
pub fn remove_own_temps(store_root: &Path) -> io::Result<usize> {
    let tag = format!("-{}-", std::process::id());
    let mut removed = 0;
    let entries = match std::fs::read_dir(store_root.join("tmp")) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // KIND-PID-RANDOM: the pid follows the first dash.
        if !name
            .split_once('-')
            .is_some_and(|(_, rest)| format!("-{rest}").starts_with(&tag))
        {
            continue;
        }
        match crate::layout::remove_tree(&entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_this_process_temps() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mine = tmp.join(format!("{}abc", temp_prefix("blob")));
        let my_dir = tmp.join(format!("{}def", temp_prefix("view")));
        let theirs = tmp.join(format!("blob-{}-abc", std::process::id() + 1));
        let other = tmp.join("unrelated");
        std::fs::write(&mine, "x").unwrap();
        std::fs::create_dir_all(my_dir.join("v")).unwrap();
        std::fs::write(&theirs, "x").unwrap();
        std::fs::write(&other, "x").unwrap();
        assert_eq!(remove_own_temps(dir.path()).unwrap(), 2);
        assert!(!mine.exists() && !my_dir.exists());
        assert!(theirs.exists() && other.exists());
    }
}
