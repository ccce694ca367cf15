//! Which files make up one module directory: primary and override files, by name.

use std::io;
use std::path::{Path, PathBuf};

use super::ConfigError;

/// List the module's primary and override files, sorted by name, with `.tf`
/// files dropped where a `.tofu` file of the same stem exists.
pub(super) fn module_files(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ConfigError> {
    let entries = fs_err::read_dir(dir).map_err(|err| ConfigError::ReadDir {
        dir: dir.to_owned(),
        err: io::Error::new(err.kind(), err.to_string()),
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| ConfigError::ReadDir {
            dir: dir.to_owned(),
            err,
        })?;
        let path = entry.path();
        if path.is_dir() {
            continue;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        // Editor droppings and hidden files, as tofu ignores them.
        let ignored = name.starts_with('.')
            || name.ends_with('~')
            || (name.starts_with('#') && name.ends_with('#'));
        if !ignored && config_ext(&name).is_some() {
            names.push(name);
        }
    }
    names.sort();
    let mut primary = Vec::new();
    let mut overrides = Vec::new();
    for name in &names {
        let ext = config_ext(name).unwrap_or_default();
        let stem = &name[..name.len() - ext.len()];
        if let Some(tofu_ext) = ext.strip_prefix(".tf").map(|rest| format!(".tofu{rest}")) {
            if names.contains(&format!("{stem}{tofu_ext}")) {
                continue;
            }
        }
        let is_override = stem == "override" || stem.ends_with("_override");
        let path = dir.join(name);
        if is_override {
            overrides.push(path);
        } else {
            primary.push(path);
        }
    }
    Ok((primary, overrides))
}

fn config_ext(name: &str) -> Option<&'static str> {
    [".tf", ".tf.json", ".tofu", ".tofu.json"]
        .into_iter()
        .find(|ext| name.ends_with(ext) && name.len() > ext.len())
}
