//! `DATA_DIR/plugin_path`: the `-plugin-dir` values of `init`, recorded as tofu records
//! them, because later tofu commands (`plan`, `apply`, `validate`, …) read the file and
//! search those directories instead of the default ones for plugins other than providers
//! (provisioners); providers they take from `.terraform/providers` and the lock file.
//!
//! Rules, as tofu's `storePluginPath` and `SetForcedPluginDirs`: no `-plugin-dir` leaves
//! the file as it is; one empty value (`-plugin-dir=`) removes it; otherwise it is replaced
//! by the values as given (not made absolute), as indented JSON with Go's escaping and no
//! final newline, mode 0644.
//!
//! upstream: internal/command/plugins.go@v1.12.6 (`storePluginPath`),
//! internal/command/workdir/plugin_dirs.go@v1.12.6 (`SetForcedPluginDirs`)

use super::data_dir::DataDir;
use super::safe_fs::{Durability, RelPath, SafeFsError};

/// The file's name in the data directory.
pub const FILE_NAME: &str = "plugin_path";

/// What [`record`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// No `-plugin-dir` was given: the file was left as it is.
    Untouched,
    /// The file now lists the directories.
    Written,
    /// `-plugin-dir=` removed the file (or there was none).
    Removed,
}

/// Record `dirs` (the `-plugin-dir` values in command-line order) in `data_dir`.
pub fn record(data_dir: &DataDir, dirs: &[String]) -> Result<Recorded, SafeFsError> {
    let name = RelPath::new(FILE_NAME)?;
    match dirs {
        [] => Ok(Recorded::Untouched),
        [only] if only.is_empty() => {
            if let Some(dir) = data_dir.open(false)? {
                dir.remove(&name)?;
            }
            Ok(Recorded::Removed)
        }
        _ => {
            let dir = data_dir.open(true)?.expect("created");
            dir.write_atomic(&name, render(dirs).as_bytes(), Durability::Process)?;
            Ok(Recorded::Written)
        }
    }
}

/// The values directories are taken from: every non-empty one. An empty value only clears
/// the record; it names no directory to search.
pub fn search_dirs(dirs: &[String]) -> Vec<String> {
    dirs.iter().filter(|d| !d.is_empty()).cloned().collect()
}

/// `json.MarshalIndent(dirs, "", "  ")` as Go writes it: `<`, `>`, `&`, U+2028 and U+2029
/// escaped, which serde_json writes as they are (they only occur inside strings here).
fn render(dirs: &[String]) -> String {
    let text = serde_json::to_string_pretty(dirs).expect("strings serialize");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_go_indents_and_escapes() {
        let dirs = ["/srv/mirror".to_owned(), "a<b>&c".to_owned()];
        assert_eq!(
            render(&dirs),
            "[\n  \"/srv/mirror\",\n  \"a\\u003cb\\u003e\\u0026c\"\n]"
        );
    }

    #[test]
    fn recorded_removed_or_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::resolve(tmp.path(), None);
        let file = tmp.path().join(".terraform").join(FILE_NAME);
        assert_eq!(record(&data, &[]).unwrap(), Recorded::Untouched);
        assert!(!file.exists());
        let dirs = ["m1".to_owned(), "/m2".to_owned()];
        assert_eq!(record(&data, &dirs).unwrap(), Recorded::Written);
        assert_eq!(
            fs_err::read_to_string(&file).unwrap(),
            "[\n  \"m1\",\n  \"/m2\"\n]"
        );
        assert_eq!(record(&data, &[]).unwrap(), Recorded::Untouched);
        assert!(file.exists());
        assert_eq!(record(&data, &[String::new()]).unwrap(), Recorded::Removed);
        assert!(!file.exists());
        assert_eq!(search_dirs(&[String::new(), "x".into()]), ["x"]);
    }
}
