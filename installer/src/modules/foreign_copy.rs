//! A module directory under `.terraform/modules` that tstore did not create: terraform's
//! (or tofu's) copy of a package, in a checkout that ran `terraform init` before
//! `tstore init`.
//!
//! Rule enforced here: such a directory is replaced by tstore's install only when it holds
//! nothing its package does not (every file, link and directory in it is in the package
//! with the same bytes; terraform's `.git` at its top is not content). A file a module wrote
//! into its own directory there (`${path.module}/out.txt`), or an edit, is never deleted:
//! the directory is moved aside under a fresh name beside it and the install says where.

use std::ffi::OsStr;
use std::path::Path;

use crate::workdir::safe_fs::{Kind, RelPath, SafeDir, SafeFsError};

/// The most of one file read to compare it (a larger file counts as one the package does
/// not hold: the directory is kept, never wrongly deleted).
const MAX_COMPARED_FILE: u64 = 64 << 20;

/// Whether `copy` (a directory opened without following links) holds anything `package`
/// (the package's files, as the store's view of it) does not. Anything that cannot be
/// read or compared counts as more.
pub(super) fn holds_more_than(copy: &SafeDir, package: &Path) -> bool {
    differs(copy, package, true).unwrap_or(true)
}

fn differs(copy: &SafeDir, package: &Path, top: bool) -> Result<bool, SafeFsError> {
    for (name, kind) in copy.entries()? {
        if top && name == OsStr::new(".git") {
            continue;
        }
        let rel = RelPath::new(&name)?;
        let theirs = package.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(&theirs) else {
            return Ok(true);
        };
        let same = match kind {
            Kind::Dir if meta.is_dir() => match copy.open_dir(&rel)? {
                Some(sub) => !differs(&sub, &theirs, false)?,
                None => false,
            },
            Kind::File if meta.is_file() => {
                meta.len() <= MAX_COMPARED_FILE
                    && copy.read_file(&rel, MAX_COMPARED_FILE + 1)? == std::fs::read(&theirs).ok()
            }
            Kind::Symlink if meta.file_type().is_symlink() => {
                copy.read_link(&rel)? == std::fs::read_link(&theirs).ok()
            }
            _ => false,
        };
        if !same {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_holding_only_the_package_may_go_anything_more_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let package = tmp.path().join("package");
        let copy = tmp.path().join("copy");
        for dir in [&package, &copy] {
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            std::fs::write(dir.join("main.tf"), "locals {}\n").unwrap();
            std::fs::write(dir.join("sub/x.tf"), "locals {}\n").unwrap();
            std::os::unix::fs::symlink("main.tf", dir.join("link")).unwrap();
        }
        // What the package has and the copy lacks (dot files a second call skips) is fine;
        // so is terraform's `.git` at the top.
        std::fs::write(package.join(".hidden"), "x").unwrap();
        std::fs::create_dir_all(copy.join(".git")).unwrap();
        std::fs::write(copy.join(".git/HEAD"), "ref").unwrap();
        let more = || holds_more_than(&SafeDir::open_trusted(&copy).unwrap(), &package);
        assert!(!more());

        for (change, undo) in [
            (
                (|c: &Path| std::fs::write(c.join("sub/out.txt"), "generated").unwrap())
                    as fn(&Path),
                (|c: &Path| std::fs::remove_file(c.join("sub/out.txt")).unwrap()) as fn(&Path),
            ),
            (
                |c: &Path| std::fs::write(c.join("main.tf"), "locals { a = 1 }\n").unwrap(),
                |c: &Path| std::fs::write(c.join("main.tf"), "locals {}\n").unwrap(),
            ),
            (
                |c: &Path| {
                    std::fs::remove_file(c.join("link")).unwrap();
                    std::os::unix::fs::symlink("/etc", c.join("link")).unwrap();
                },
                |c: &Path| {
                    std::fs::remove_file(c.join("link")).unwrap();
                    std::os::unix::fs::symlink("main.tf", c.join("link")).unwrap();
                },
            ),
            (
                |c: &Path| std::fs::create_dir(c.join("sub/new")).unwrap(),
                |c: &Path| std::fs::remove_dir(c.join("sub/new")).unwrap(),
            ),
        ] {
            change(&copy);
            assert!(more());
            undo(&copy);
            assert!(!more());
        }
    }
}
