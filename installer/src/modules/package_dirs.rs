//! Directories inside a module package and the working directory, as tofu names them: a
//! `//subdir` glob expanded in the package, a local module's directory with its symlinks
//! resolved.

use std::path::{Path, PathBuf};

use super::FetchError;

/// Expand a `//subdir` that is a glob (`*`, `?` per path component, as go-getter's
/// `SubdirGlob` does with `filepath.Glob`) inside the package at `root`: it must match
/// exactly one path, which is returned relative to `root`. `//*` is the usual form: the
/// single top-level directory of an archive.
pub(crate) fn glob_subdir(root: &Path, pattern: &str) -> Result<String, FetchError> {
    let mut matches = vec![String::new()];
    for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let mut next = Vec::new();
        for prefix in &matches {
            let dir = root.join(prefix);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| crate::wildcard::matches(part, n))
                .collect();
            names.sort();
            for name in names {
                next.push(if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                });
            }
        }
        matches = next;
    }
    match matches.as_slice() {
        [] => Err(FetchError::Package(format!("subdir {pattern:?} not found"))),
        [one] => Ok(one.clone()),
        _ => Err(FetchError::Package(format!(
            "subdir {pattern:?} matches multiple paths"
        ))),
    }
}

/// `rel` (relative to `base`, or absolute; already cleaned) with its symlinks resolved as
/// Go's `filepath.EvalSymlinks` resolves a path: a relative link target replaces the link
/// in place, an absolute one makes the result absolute; `..` is applied to what has been
/// resolved so far. This is how terraform and tofu record a local module's directory, so
/// the manifest's `Dir` matches theirs, and so does `path.module`.
pub(crate) fn eval_symlinks(base: &Path, rel: &str) -> std::io::Result<String> {
    let mut out = if rel.starts_with('/') {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    };
    let mut todo: std::collections::VecDeque<String> = rel.split('/').map(str::to_owned).collect();
    let mut links = 0;
    while let Some(c) = todo.pop_front() {
        match c.as_str() {
            "" | "." => {}
            ".." => {
                let up = out.file_name().is_some_and(|n| n != "..");
                if up {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            name => {
                let candidate = out.join(name);
                let full = base.join(&candidate);
                let is_link = std::fs::symlink_metadata(&full)?.file_type().is_symlink();
                if !is_link {
                    out = candidate;
                    continue;
                }
                links += 1;
                if links > 255 {
                    return Err(std::io::Error::other("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&full)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                let parts: Vec<String> = target
                    .to_string_lossy()
                    .split('/')
                    .map(str::to_owned)
                    .collect();
                for part in parts.into_iter().rev() {
                    todo.push_front(part);
                }
            }
        }
    }
    let text = out.to_string_lossy().into_owned();
    Ok(if text.is_empty() {
        ".".to_owned()
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_symlinks_like_go() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        for d in ["real/sub", "other"] {
            fs_err::create_dir_all(b.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("real", b.join("link")).unwrap();
        std::os::unix::fs::symlink("../other", b.join("real/up")).unwrap();
        std::os::unix::fs::symlink(b.join("other"), b.join("abs")).unwrap();
        // An absolute path is resolved from the root, whatever `base` is.
        let real = b.canonicalize().unwrap();
        let absolute = format!("{}/link/sub", real.display());
        for (rel, want) in [
            ("real", "real".to_owned()),
            ("link", "real".to_owned()),
            ("link/sub", "real/sub".to_owned()),
            ("link/up", "other".to_owned()),
            ("abs", b.join("other").display().to_string()),
            (".", ".".to_owned()),
            (
                absolute.as_str(),
                real.join("real/sub").display().to_string(),
            ),
            ("/..", "/".to_owned()),
        ] {
            assert_eq!(eval_symlinks(b, rel).unwrap(), want, "{rel}");
        }
        assert!(eval_symlinks(b, "missing").is_err());
    }

    #[test]
    fn glob_subdirs() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("only-1.0/modules/x")).unwrap();
        assert_eq!(glob_subdir(dir.path(), "*").unwrap(), "only-1.0");
        assert_eq!(
            glob_subdir(dir.path(), "*/modules/*").unwrap(),
            "only-1.0/modules/x"
        );
        fs_err::create_dir_all(dir.path().join("second")).unwrap();
        assert!(glob_subdir(dir.path(), "*")
            .unwrap_err()
            .to_string()
            .contains("multiple"));
        assert!(glob_subdir(dir.path(), "nope*")
            .unwrap_err()
            .to_string()
            .contains("not found"));
    }
}
