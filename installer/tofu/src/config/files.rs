//! Which files make up one module directory: primary and override files, by name.

use std::io;
use std::path::{Path, PathBuf};

use super::ConfigError;
use crate::flavor::Flavor;

/// List the module's primary and override files, sorted by name. Under tofu, `.tofu` and
/// `.tofu.json` files count too and hide the `.tf`/`.tf.json` file of the same stem;
/// terraform reads neither.
pub(crate) fn module_files(
    dir: &Path,
    flavor: Flavor,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ConfigError> {
    // A package's directory is listed by its tree (`facts.rs`), any other one read.
    let listed = match super::facts::dir_files(dir) {
        Some(names) => names,
        None => non_directories(dir)?,
    };
    let mut names: Vec<String> = listed
        .into_iter()
        .filter(|name| {
            // Editor droppings and hidden files, as tofu ignores them.
            let ignored = name.starts_with('.')
                || name.ends_with('~')
                || (name.starts_with('#') && name.ends_with('#'));
            !ignored && config_ext(name, flavor).is_some()
        })
        .collect();
    names.sort();
    let mut primary = Vec::new();
    let mut overrides = Vec::new();
    for name in &names {
        let ext = config_ext(name, flavor).unwrap_or_default();
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

/// The names (UTF-8 ones) of the entries of `dir` that are not directories.
fn non_directories(dir: &Path) -> Result<Vec<String>, ConfigError> {
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
        // The entry's type comes with the listing; only a symlink needs a `stat` to say
        // whether it names a directory.
        let is_dir = match entry.file_type() {
            Ok(t) if t.is_symlink() => entry.path().is_dir(),
            Ok(t) => t.is_dir(),
            Err(_) => entry.path().is_dir(),
        };
        if is_dir {
            continue;
        }
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

fn config_ext(name: &str, flavor: Flavor) -> Option<&'static str> {
    let extensions: &[&'static str] = match flavor {
        Flavor::Tofu => &[".tf", ".tf.json", ".tofu", ".tofu.json"],
        Flavor::Terraform => &[".tf", ".tf.json"],
    };
    extensions
        .iter()
        .copied()
        .find(|ext| name.ends_with(ext) && name.len() > ext.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path, flavor: Flavor) -> (Vec<String>, Vec<String>) {
        let (primary, overrides) = module_files(dir, flavor).unwrap();
        let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
        (
            primary.iter().map(name).collect(),
            overrides.iter().map(name).collect(),
        )
    }

    #[test]
    fn tofu_files_follow_the_flavor() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "main.tf",
            "main.tofu",
            "vars.tf.json",
            "vars.tofu.json",
            "only.tofu",
            "x.tf",
            "override.tf",
            "a_override.tofu",
            ".hidden.tf",
            "backup.tf~",
            "#auto.tf#",
            "notes.md",
        ] {
            fs_err::write(dir.path().join(f), "").unwrap();
        }
        fs_err::create_dir(dir.path().join("sub.tf")).unwrap();
        // A symlink counts as what it names: a file yes, a directory no.
        std::os::unix::fs::symlink("x.tf", dir.path().join("y.tf")).unwrap();
        std::os::unix::fs::symlink("sub.tf", dir.path().join("linked_dir.tf")).unwrap();
        assert_eq!(
            names(dir.path(), Flavor::Tofu),
            (
                vec![
                    "main.tofu".into(),
                    "only.tofu".into(),
                    "vars.tofu.json".into(),
                    "x.tf".into(),
                    "y.tf".into()
                ],
                vec!["a_override.tofu".into(), "override.tf".into()],
            )
        );
        assert_eq!(
            names(dir.path(), Flavor::Terraform),
            (
                vec![
                    "main.tf".into(),
                    "vars.tf.json".into(),
                    "x.tf".into(),
                    "y.tf".into()
                ],
                vec!["override.tf".into()],
            )
        );
    }
}
