//! Local calls (`./x`, `../x`): read in place, relative to the calling module, and recorded
//! in `modules.json` under the directory terraform and tofu record. They join the caller's
//! recorded directory and the path, then resolve the symlinks of the result: in the root
//! package, against the working directory; in a package, against the package as they lay it
//! out in `.terraform/modules/KEY` (a real directory holding the package's own links; for
//! the first install of a directory named by absolute path, a link to that directory, which
//! makes the result that directory's absolute path).
//! upstream: internal/initwd/module_install.go@v1.0.3 (installLocalModule),
//! internal/initwd/getter.go@v1.0.3 (the first install of an address, later ones copied)

use std::path::PathBuf;

use tstore_tofu::module_source::clean_join;

use super::{CallAt, ModuleAt, Walker};
use crate::modules::tree::Node;
use crate::modules::{package_dirs, FetchError};

impl Walker<'_> {
    /// A local path: read in place, relative to its caller (inside a remote package it must
    /// stay inside that package, its links resolved).
    pub(super) fn local_call(
        &mut self,
        at: &ModuleAt,
        c: &CallAt<'_>,
        src: &str,
    ) -> Result<(Node, PathBuf), FetchError> {
        if c.call.version.is_some() {
            return Err(self.version_on_non_registry(
                &format!("can't use local directory {src:?} as a module registry address"),
                "Invalid version constraint: cannot apply a version constraint to a module with a relative local path",
            ));
        }
        let (dir, pkg_path, abs) = match &at.install {
            Some(install) => self.in_package(at, install, src)?,
            None => self.in_root_package(at, src)?,
        };
        if !abs.is_dir() {
            return Err(FetchError::Package(format!(
                "Unreadable module directory: {} does not exist or is not a directory",
                abs.display()
            )));
        }
        let (package, vouched_by) = at
            .install
            .as_ref()
            .map(|i| {
                let fetched = &self.tree.installs[i].0;
                (fetched.id.clone(), fetched.provenance)
            })
            .unzip();
        let node = Node {
            key: c.key.clone(),
            source: c.call.source.clone(),
            kind: c.kind,
            version: None,
            dir,
            install: at.install.clone(),
            pkg_path,
            parent: c.parent,
            package,
            vouched_by,
            at: c.call.at.clone(),
            link_to: None,
            lock_entry: None,
            selected_by: None,
            published: None,
            held_back: Vec::new(),
            repeated_by: c.call.repeated_by,
            origin_why: None,
        };
        Ok((node, abs))
    }

    /// A local module of the root package: its recorded directory (the caller's joined with
    /// `src`, symlinks resolved against the working directory), its path as the root
    /// package's meta file names it (joined, unresolved), and where it is read.
    fn in_root_package(
        &self,
        at: &ModuleAt,
        src: &str,
    ) -> Result<(String, String, PathBuf), FetchError> {
        let workdir = &self.opts.workdir.dir;
        let joined = clean_join(&at.dir_shown, src);
        let abs = workdir.join(&joined);
        if !abs.is_dir() {
            return Ok((joined.clone(), joined, abs));
        }
        let resolved = package_dirs::eval_symlinks(workdir, &joined)
            .map_err(|e| FetchError::Package(format!("Unreadable module directory: {e}")))?;
        let abs = workdir.join(&resolved);
        Ok((resolved, joined, abs))
    }

    /// A local module inside the package of `install`: its recorded directory, its path in
    /// the package (symlinks resolved, which its own local calls join), and where it is
    /// read. Leaving the package, by `..` or through a link, is refused.
    fn in_package(
        &self,
        at: &ModuleAt,
        install: &str,
        src: &str,
    ) -> Result<(String, String, PathBuf), FetchError> {
        let escapes = |how: &str| {
            FetchError::Package(format!(
                "Local module path escapes module package: {src:?} from {:?} leaves the \
                 package of module \"{install}\"{how}",
                at.pkg_path
            ))
        };
        let joined = clean_join(&at.pkg_path, src);
        if joined.starts_with("..") {
            return Err(escapes(""));
        }
        let root = &self.tree.installs[install].0.view;
        if !root.join(&joined).is_dir() {
            let shown = clean_join(
                &self.opts.workdir.data_dir.module_dir_shown(install),
                &joined,
            );
            return Ok((shown, joined.clone(), root.join(&joined)));
        }
        let resolved = package_dirs::eval_symlinks(root, &joined)
            .map_err(|e| FetchError::Package(format!("Unreadable module directory: {e}")))?;
        if resolved.starts_with('/') || resolved.starts_with("..") {
            return Err(escapes(" through a symbolic link"));
        }
        let dir = if self.linked_installs.contains(install) {
            // `.terraform/modules/KEY` is a link to the directory: resolving it gives that
            // directory's own path, its links resolved too.
            let real = root
                .canonicalize()
                .map_err(|e| FetchError::Package(format!("Unreadable module directory: {e}")))?;
            clean_join(&real.to_string_lossy(), &resolved)
        } else {
            clean_join(
                &self.opts.workdir.data_dir.module_dir_shown(install),
                &resolved,
            )
        };
        let abs = if resolved == "." {
            root.clone()
        } else {
            root.join(&resolved)
        };
        Ok((dir, resolved, abs))
    }
}
