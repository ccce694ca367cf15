//! Where a working directory's data lives: `.terraform`, or `TF_DATA_DIR` as terraform and
//! tofu read it (relative to the working directory, or absolute).

use std::path::{Path, PathBuf};

use super::safe_fs::{RelPath, SafeDir, SafeFsError};

/// A working directory's data directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataDir {
    /// The directory itself.
    pub path: PathBuf,
    /// Where the no-symlink walk of [`safe_fs`](super::safe_fs) starts: the working
    /// directory for a data directory inside it (a checkout may have planted a symlink at
    /// `.terraform`, so it is walked to without following), the data directory itself when
    /// `TF_DATA_DIR` names one outside the working directory (absolute, or `../…`: the user
    /// chose it, so it is opened as given).
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
            let shown = tstore_tofu::module_source::clean_join(".", given);
            if shown == "." {
                DataDir {
                    path: working_dir.to_owned(),
                    anchor: working_dir.to_owned(),
                    shown,
                }
            } else if shown == ".." || shown.starts_with("../") {
                let path = working_dir.join(&shown);
                DataDir {
                    anchor: path.clone(),
                    path,
                    shown,
                }
            } else {
                DataDir {
                    path: working_dir.join(&shown),
                    anchor: working_dir.to_owned(),
                    shown,
                }
            }
        }
    }

    /// Open the data directory for changes: the anchor as given, then down to the data
    /// directory without following symlinks (a symlinked `.terraform` is refused). `None`
    /// when it does not exist and `create` is false.
    pub fn open(&self, create: bool) -> Result<Option<SafeDir>, SafeFsError> {
        if !self.anchor.is_dir() {
            if !create {
                return Ok(None);
            }
            // A data directory the user named (absolute, or outside the working directory)
            // is created as given, like the working directory would be.
            fs_err::create_dir_all(&self.anchor).map_err(|source| SafeFsError::Io {
                op: "create",
                path: self.anchor.clone(),
                source,
            })?;
        }
        let anchor = SafeDir::open_trusted(&self.anchor)?;
        if self.anchor == self.path {
            return Ok(Some(anchor));
        }
        let below = RelPath::new(&self.shown)?;
        if create {
            anchor.create_dir_all(&below).map(Some)
        } else {
            anchor.open_dir(&below)
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
        // Outside the working directory: the user's choice, opened as given.
        let d = DataDir::resolve(wd, Some("../shared"));
        assert_eq!(
            (d.path.as_path(), d.anchor.as_path()),
            (Path::new("/w/../shared"), Path::new("/w/../shared"))
        );
        let d = DataDir::resolve(wd, Some("."));
        assert_eq!((d.path.as_path(), d.anchor.as_path()), (wd, wd));
    }

    #[test]
    fn a_symlinked_data_directory_inside_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let wd = tmp.path().join("w");
        let elsewhere = tmp.path().join("elsewhere");
        fs_err::create_dir_all(&wd).unwrap();
        fs_err::create_dir_all(&elsewhere).unwrap();
        let d = DataDir::resolve(&wd, None);
        assert!(d.open(false).unwrap().is_none());
        assert_eq!(d.open(true).unwrap().unwrap().path(), wd.join(".terraform"));
        fs_err::remove_dir(wd.join(".terraform")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, wd.join(".terraform")).unwrap();
        for create in [false, true] {
            assert!(matches!(
                d.open(create),
                Err(SafeFsError::SymlinkedDir { .. })
            ));
        }
        // An absolute TF_DATA_DIR that is a symlink is the user's choice.
        let d = DataDir::resolve(&wd, Some(wd.join(".terraform").to_str().unwrap()));
        assert!(d.open(true).unwrap().is_some());
    }
}
