//! One call's slot under `.terraform/modules` filled as decided: a link into the mount, a
//! private copy (of a package's view, or of a local module opened from the working
//! directory without following links), or a local module's link in place; a directory
//! tstore did not create that holds more than its package is moved aside first.

use std::collections::BTreeMap;
use std::path::Path;

use tstore_store::{PackageKey, Store};

use super::super::decide::Decision;
use super::super::tree::Node;
use super::super::{chain, Action, ModuleInstallError, ModuleOptions, ModuleWarning};
use super::InstallState;
use crate::workdir::safe_fs::{Kind, RelPath, SafeDir, SafeFsError};

/// What filling a slot gave: the state tstore records for it (none for a local module
/// used where it is), the directory `modules.json` names, and the bytes of a private copy.
pub(super) struct Filled {
    pub(super) state: Option<InstallState>,
    pub(super) dir: String,
    pub(super) copy_bytes: Option<u64>,
}

/// The slots of `.terraform/modules` (opened as `modules`) and what tstore recorded of them
/// before this init (`old`).
pub(super) struct Slots<'a> {
    pub(super) store: &'a Store,
    pub(super) opts: &'a ModuleOptions,
    pub(super) modules: &'a SafeDir,
    pub(super) old: &'a BTreeMap<String, InstallState>,
}

/// Fill the slot `key` of call `n` as `d` decided.
pub(super) fn fill(
    slots: &Slots<'_>,
    key: &RelPath,
    n: &Node,
    d: &Decision,
    warnings: &mut Vec<ModuleWarning>,
) -> Result<Filled, ModuleInstallError> {
    let Slots {
        store,
        opts,
        modules,
        old,
    } = *slots;
    let target_path = modules.display_path(key);
    let werr = |e: &dyn std::fmt::Display| ModuleInstallError::Write {
        path: target_path.clone(),
        message: e.to_string(),
    };
    let fail = |e: SafeFsError| werr(&chain(&e));
    // A slot is tstore's only as tstore left it: a directory where tstore recorded a
    // link is someone else's (terraform's copy after `terraform init -upgrade`).
    let recorded_link = old.get(&n.key).is_some_and(|s| s.action == "link");
    let foreign = !old.contains_key(&n.key)
        || (recorded_link && modules.kind(key).map_err(fail)? == Some(Kind::Dir));
    if foreign {
        if let Some(kept_as) = keep_foreign_copy(store, modules, key, n, opts).map_err(fail)? {
            warnings.push(ModuleWarning::KeptForeignCopy {
                slot: modules.display_path(key),
                kept_as,
            });
        }
    }
    let link = |package: String, target: &Path| -> Result<Filled, ModuleInstallError> {
        crate::workdir::link::ensure_symlink(modules, key, target).map_err(|e| werr(&chain(&e)))?;
        Ok(Filled {
            state: Some(InstallState {
                package,
                action: "link".into(),
            }),
            dir: n.dir.clone(),
            copy_bytes: None,
        })
    };
    match d.action {
        Action::Link => {
            let id = n.package.clone().expect("remote installs have a package");
            let target = opts.workdir.mount.join("modules").join(&id);
            link(id, &target)
        }
        Action::Copy => {
            // The source is opened once, here, and copied through that descriptor: a
            // local module's directory is reached from the working directory without
            // following a symlink (its path has them resolved already), so what was
            // judged to be inside the checkout is what is copied.
            let (src, id) = match &n.package {
                Some(id) => {
                    let view = store
                        .view_dir(&PackageKey::module(id))
                        .map_err(|e| werr(&chain(&e)))?;
                    (SafeDir::open_trusted(&view).map_err(fail)?, id.clone())
                }
                None => (
                    open_local_module(&opts.workdir.dir, &n.dir).map_err(fail)?,
                    format!("local:{}", n.dir),
                ),
            };
            let state = InstallState {
                package: id,
                action: "copy".into(),
            };
            let keep = !opts.workdir.upgrade
                && old.get(&n.key) == Some(&state)
                && modules.kind(key).ok().flatten() == Some(Kind::Dir);
            if !keep {
                replace_with_copy(modules, key, &src).map_err(fail)?;
            }
            Ok(Filled {
                state: Some(state),
                dir: match n.package {
                    Some(_) => n.dir.clone(),
                    None => opts.workdir.data_dir.module_dir_shown(&n.key),
                },
                copy_bytes: Some(tstore_store::regular_file_bytes(src.path())),
            })
        }
        Action::InPlace => match &n.link_to {
            Some(source_dir) => link(n.package.clone().unwrap_or_default(), source_dir),
            None => Ok(Filled {
                state: None,
                dir: n.dir.clone(),
                copy_bytes: None,
            }),
        },
    }
}

/// Move aside the directory in `key`'s slot when tstore did not create it and it holds
/// more than what the call installs there (`foreign_copy`); its new path, or `None` when
/// the slot holds no such directory and may be filled as it is.
fn keep_foreign_copy(
    store: &Store,
    modules: &SafeDir,
    key: &RelPath,
    n: &Node,
    opts: &ModuleOptions,
) -> Result<Option<std::path::PathBuf>, SafeFsError> {
    if modules.kind(key)? != Some(Kind::Dir) {
        return Ok(None);
    }
    let package_dir = match (&n.package, &n.link_to) {
        (Some(id), _) => match store.view_dir(&PackageKey::module(id)) {
            Ok(view) => view,
            Err(_) => return Ok(None),
        },
        (None, Some(local)) => local.clone(),
        (None, None) => opts.workdir.dir.join(&n.dir),
    };
    let Some(copy) = modules.open_dir(key)? else {
        return Ok(None);
    };
    if !super::super::foreign_copy::holds_more_than(&copy, &package_dir) {
        return Ok(None);
    }
    let kept = modules.keep_aside(key.file_name())?;
    Ok(Some(modules.display_path(&RelPath::new(&kept)?)))
}

/// Replace `modules/KEY` with a fresh private copy of `src`: copied into a temporary
/// directory this process creates (`.KEY.tstore-copy-PID-N`, created exclusively, so an
/// entry of that name it did not make is never reused or removed), then renamed over the
/// entry once complete; on failure only what this process made is removed.
fn replace_with_copy(modules: &SafeDir, key: &RelPath, src: &SafeDir) -> Result<(), SafeFsError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let (tmp, dest) = loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut name = std::ffi::OsString::from(".");
        name.push(key.file_name());
        name.push(format!(".tstore-copy-{}-{n}", std::process::id()));
        let tmp = RelPath::new(&name)?;
        match modules.create_dir_new(&tmp) {
            Ok(dest) => break (tmp, dest),
            Err(e) if e.is_already_exists() => continue,
            Err(e) => return Err(e),
        }
    };
    let result = copy_tree(src, &dest)
        .and_then(|()| modules.remove(key))
        .and_then(|_| modules.rename(&tmp, key));
    if result.is_err() {
        let _ = modules.remove(&tmp);
    }
    result
}

/// A writable copy of the directory `src` (held open) into `dest`, a directory this init
/// just made: directories 0755, files with the source's permission bits plus owner
/// read-write (so a private file stays private; reflinked where the filesystem can, else
/// copied), symlinks kept as links; fifos, sockets and devices are not copied. The source is
/// read only through descriptors opened from `src` without following symlinks
/// (`openat(O_NOFOLLOW)` for every directory and file), so a directory of it swapped for a
/// symlink while init runs is refused, never read through; every entry is created through
/// `dest` with `O_EXCL | O_NOFOLLOW`.
pub(crate) fn copy_tree(src: &SafeDir, dest: &SafeDir) -> Result<(), SafeFsError> {
    use std::os::unix::fs::PermissionsExt as _;
    for (name, kind) in src.entries()? {
        let rel = RelPath::new(&name)?;
        match kind {
            Kind::Dir => {
                // A directory swapped for a symlink since it was listed is refused here.
                let Some(sub) = src.open_dir(&rel)? else {
                    continue;
                };
                copy_tree(&sub, &dest.create_dir_all(&rel)?)?;
            }
            Kind::Symlink => {
                if let Some(target) = src.read_link(&rel)? {
                    dest.symlink(&target, &rel)?;
                }
            }
            Kind::File => {
                let Some(mut from) = src.open_regular_file(&name)? else {
                    continue;
                };
                let path = src.display_path(&rel);
                let mode = from
                    .metadata()
                    .map_err(|source| SafeFsError::Io {
                        op: "read",
                        path: path.clone(),
                        source,
                    })?
                    .permissions()
                    .mode();
                // Group and other bits only where the source had them (a private 0600 file
                // of a local module stays private); the owner can always write its own copy.
                let mut to = dest.create_file(&rel, (mode & 0o755) | 0o600)?;
                if reflink_copy::reflink_file(&from, &to).is_err() {
                    std::io::copy(&mut from, &mut to).map_err(|source| SafeFsError::Io {
                        op: "copy",
                        path: dest.display_path(&rel),
                        source,
                    })?;
                }
            }
            Kind::Other => {}
        }
    }
    Ok(())
}

/// The root-package module directory `dir` (relative to the working directory `root`, its
/// symlinks already resolved), opened component by component without following a symlink:
/// one swapped in since it was resolved is refused.
pub(super) fn open_local_module(root: &Path, dir: &str) -> Result<SafeDir, SafeFsError> {
    let anchor = SafeDir::open_trusted(root)?;
    if dir == "." {
        return Ok(anchor);
    }
    let rel = RelPath::new(dir)?;
    anchor.open_dir(&rel)?.ok_or_else(|| SafeFsError::Io {
        op: "open",
        path: root.join(dir),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })
}
