//! Where a working directory's data lives: `.terraform`, or `TF_DATA_DIR` as terraform and
//! tofu read it (relative to the working directory, or absolute).

use std::path::{Path, PathBuf};

/// A working directory's data directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataDir {
    /// The directory itself.
    pub path: PathBuf,
    /// Where the symlink checks of [`guard`](super::guard) start: the working directory for
    /// a data directory inside it (a checkout may have planted a symlink there), the data
    /// directory itself when `TF_DATA_DIR` names one elsewhere (the user chose it).
    pub anchor: PathBuf,
    /// The data directory as `modules.json` writes it: `.terraform`, or `TF_DATA_DIR`.
    pub shown: String,
}

impl DataDir {
    /// The data directory of `working_dir` given `TF_DATA_DIR` (`None` or empty: `.terraform`).
    pub fn resolve(working_dir: &Path, tf_data_dir: Option<&str>) -> DataDir {
        let given = tf_data_dir
            .filter(|d| !d.is_empty())
            .unwrap_or(".terraform");
        let given = given.trim_end_matches('/');
        let given = if given.is_empty() { "/" } else { given };
        if Path::new(given).is_absolute() {
            DataDir {
                path: PathBuf::from(given),
                anchor: PathBuf::from(given),
                shown: given.to_owned(),
            }
        } else {
            let shown = crate::modules::source::clean_join(".", given);
            DataDir {
                path: working_dir.join(&shown),
                anchor: working_dir.to_owned(),
                shown,
            }
        }
    }

    /// `DATA_DIR/modules`.
    pub fn modules(&self) -> PathBuf {
        self.path.join("modules")
    }

    /// `DATA_DIR/providers`.
    pub fn providers(&self) -> PathBuf {
        self.path.join("providers")
    }

    /// A module install's directory as `modules.json` records it.
    pub fn module_dir_shown(&self, key: &str) -> String {
        format!("{}/modules/{key}", self.shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_relative_and_absolute() {
        let wd = Path::new("/w");
        let d = DataDir::resolve(wd, None);
        assert_eq!(d.path, Path::new("/w/.terraform"));
        assert_eq!(d.anchor, wd);
        assert_eq!(d.module_dir_shown("a"), ".terraform/modules/a");
        let d = DataDir::resolve(wd, Some("./data/"));
        assert_eq!(d.path, Path::new("/w/data"));
        assert_eq!(d.module_dir_shown("a"), "data/modules/a");
        let d = DataDir::resolve(wd, Some("/var/tf"));
        assert_eq!(
            (d.path.as_path(), d.anchor.as_path()),
            (Path::new("/var/tf"), Path::new("/var/tf"))
        );
        assert_eq!(d.module_dir_shown("a"), "/var/tf/modules/a");
        assert_eq!(DataDir::resolve(wd, Some("")), DataDir::resolve(wd, None));
    }
}
