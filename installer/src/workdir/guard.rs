//! What tstore may touch under a working directory. A checkout is input from whoever
//! prepared it: a symlinked `.terraform`, `.terraform/modules` or
//! `.terraform/providers/HOST/…` directory, or a crafted key in tstore's own state files,
//! must never make tstore write or delete outside the working directory.
//!
//! Rules enforced here:
//! - every directory between the working directory and a path tstore writes, renames or
//!   removes is a real directory, not a symlink ([`check_parents`]); the last component may
//!   be a symlink, which is then replaced or removed as a link, never followed;
//! - a module key read back from state is a call path tstore itself could have written
//!   ([`is_module_key`]): identifiers joined by `.`, so it names exactly one entry of
//!   `.terraform/modules`.
//!
//! The checks run right before each change; the threat is what the checkout holds, not a
//! process racing tstore inside the user's own directory.

use std::io;
use std::path::{Component, Path, PathBuf};

/// A path tstore would have to write through a symlink, or one outside the working
/// directory.
#[derive(Debug, thiserror::Error)]
pub enum UnsafePath {
    /// A directory on the way is a symlink.
    #[error(
        "{} is a symlink; tstore does not write through symlinks inside a working \
         directory's .terraform. Remove it (tstore did not create it) and run init again",
        .0.display()
    )]
    SymlinkedParent(PathBuf),
    /// The path is not below the working directory.
    #[error("{} is outside the working directory {}", .path.display(), .root.display())]
    Outside {
        /// The path.
        path: PathBuf,
        /// The working directory.
        root: PathBuf,
    },
    /// A directory on the way cannot be inspected.
    #[error("cannot inspect {}", .path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Check that every directory between `root` and `path`'s parent is a real directory (or
/// does not exist yet), and that `path` is below `root` with plain components only.
pub fn check_parents(root: &Path, path: &Path) -> Result<(), UnsafePath> {
    let outside = || UnsafePath::Outside {
        path: path.to_owned(),
        root: root.to_owned(),
    };
    let rel = path.strip_prefix(root).map_err(|_| outside())?;
    let components: Vec<Component> = rel.components().collect();
    if components.is_empty()
        || components
            .iter()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(outside());
    }
    let mut dir = root.to_path_buf();
    for c in &components[..components.len() - 1] {
        dir.push(c);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => return Err(UnsafePath::SymlinkedParent(dir)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(UnsafePath::Io { path: dir, source }),
        }
    }
    Ok(())
}

/// Whether `key` is a module call path tstore writes: HCL identifiers (a letter or `_`,
/// then letters, digits, `_` and `-`) joined by `.`. Such a key is one plain file name.
pub fn is_module_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_keys() {
        for ok in ["a", "vpc", "a.b", "a_b-c.d2", "_x"] {
            assert!(is_module_key(ok), "{ok}");
        }
        for bad in [
            "", "../x", "/etc", "a/b", ".", "..", "a..b", "1a", "a.", ".a", "a b",
        ] {
            assert!(!is_module_key(bad), "{bad}");
        }
    }

    #[test]
    fn parents_must_be_real_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("work");
        let victim = tmp.path().join("victim");
        fs_err::create_dir_all(root.join(".terraform/providers")).unwrap();
        fs_err::create_dir_all(&victim).unwrap();
        let ok = root.join(".terraform/providers/h/n/t/v/linux_amd64");
        check_parents(&root, &ok).unwrap();
        std::os::unix::fs::symlink(&victim, root.join(".terraform/providers/h")).unwrap();
        assert!(matches!(
            check_parents(&root, &ok),
            Err(UnsafePath::SymlinkedParent(p)) if p.ends_with("providers/h")
        ));
        // The last component may be a symlink (it is replaced as a link).
        check_parents(&root, &root.join(".terraform/providers/h")).unwrap();
        for bad in [
            tmp.path().join("elsewhere"),
            root.join(".terraform/../../x"),
        ] {
            assert!(matches!(
                check_parents(&root, &bad),
                Err(UnsafePath::Outside { .. })
            ));
        }
    }
}
