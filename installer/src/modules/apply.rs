//! Step 3: make `.terraform/modules` match the decisions: links, private copies,
//! stale installs removed, `modules.json` written atomically.

use std::collections::BTreeMap;
use std::path::Path;

use tstore_store::{PackageKey, Store};

use super::decide::Decision;
use super::walk::Walker;
use super::{chain, manifest, Action, CallReport, ModuleInstallError, ModuleOptions, STATE_FILE};
use crate::workdir::atomic::write_atomic;
use crate::workdir::guard::{check_parents, is_module_key};

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub(super) struct InstallState {
    pub(super) package: String,
    pub(super) action: String,
}

pub(super) fn apply(
    store: &Store,
    opts: &ModuleOptions,
    w: &mut Walker<'_>,
    decisions: &[Decision],
) -> Result<(), ModuleInstallError> {
    // An interrupt waits until `.terraform/modules` matches `modules.json` again.
    let _writing = crate::workdir::interrupt::Writing::begin();
    let modules_dir = opts.data_dir.modules();
    if w.nodes.is_empty() && !modules_dir.exists() {
        // No module calls and nothing installed before: leave the directory untouched.
        return Ok(());
    }
    let werr = |path: &Path, e: &dyn std::fmt::Display| ModuleInstallError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    // `.terraform` and `.terraform/modules` must be real directories: everything below is
    // written and removed through them.
    let guard =
        |path: &Path| check_parents(&opts.data_dir.anchor, path).map_err(|e| werr(path, &e));
    guard(&modules_dir.join(STATE_FILE))?;
    fs_err::create_dir_all(&modules_dir).map_err(|e| werr(&modules_dir, &e))?;
    let state_path = modules_dir.join(STATE_FILE);
    let mut old: BTreeMap<String, InstallState> = fs_err::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    // Only keys tstore could have written name an entry to remove; anything else in the
    // state file ("../x", "/etc") is ignored, never followed.
    old.retain(|key, _| {
        let ok = is_module_key(key);
        if !ok {
            w.warnings.push(format!(
                "{}: ignoring the entry {key:?}, which is not a module key tstore writes",
                state_path.display()
            ));
        }
        ok
    });
    let mut new: BTreeMap<String, InstallState> = BTreeMap::new();
    let mut records = Vec::new();
    for (i, n) in w.nodes.clone().iter().enumerate() {
        let d = &decisions[i];
        // Keys come from validated module names; one that is not a plain name never
        // reaches the filesystem.
        if !is_module_key(&n.key) {
            return Err(werr(
                &modules_dir,
                &format!("{:?} is not a valid module key", n.key),
            ));
        }
        let mut dir = n.dir.clone();
        let target_path = modules_dir.join(&n.key);
        match d.action {
            Action::Link => {
                let id = n.package.clone().expect("remote installs have a package");
                let target = opts.mount.join("modules").join(&id);
                remove_unless_symlink(&target_path).map_err(|e| werr(&target_path, &e))?;
                crate::workdir::link::ensure_symlink(&opts.data_dir.anchor, &target_path, &target)
                    .map_err(|e| werr(&target_path, &chain(&e)))?;
                new.insert(
                    n.key.clone(),
                    InstallState {
                        package: id,
                        action: "link".into(),
                    },
                );
            }
            Action::Copy => {
                let (src, id) = match &n.package {
                    Some(id) => (
                        store
                            .view_dir(&PackageKey::module(id))
                            .map_err(|e| werr(&target_path, &chain(&e)))?,
                        id.clone(),
                    ),
                    None => (opts.dir.join(&n.dir), format!("local:{}", n.dir)),
                };
                let state = InstallState {
                    package: id,
                    action: "copy".into(),
                };
                let keep = !opts.upgrade
                    && old.get(&n.key) == Some(&state)
                    && fs_err::symlink_metadata(&target_path).is_ok_and(|m| m.is_dir());
                if !keep {
                    let tmp = modules_dir.join(format!(".{}.tstore-copy", n.key));
                    let _ = fs_err::remove_dir_all(&tmp);
                    copy_tree(&src, &tmp).map_err(|e| werr(&tmp, &e))?;
                    remove_any(&target_path).map_err(|e| werr(&target_path, &e))?;
                    fs_err::rename(&tmp, &target_path).map_err(|e| werr(&target_path, &e))?;
                }
                if n.package.is_none() {
                    dir = opts.data_dir.module_dir_shown(&n.key);
                }
                new.insert(n.key.clone(), state);
            }
            Action::InPlace => {}
        }
        records.push(manifest::Record {
            key: n.key.clone(),
            source: n.source.clone(),
            version: n.version.clone(),
            dir: dir.clone(),
        });
        w.report.calls.push(CallReport {
            key: n.key.clone(),
            source: n.source.clone(),
            kind: n.kind,
            version: n.version.clone(),
            dir,
            package: n.package.clone(),
            action: d.action,
            read_only: d.status,
            reason: d.reason.clone(),
            at: n.at.to_string(),
        });
    }
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        let p = modules_dir.join(key);
        remove_any(&p).map_err(|e| werr(&p, &e))?;
    }
    write_atomic(
        &state_path,
        serde_json::to_string_pretty(&new)
            .expect("state serializes")
            .as_bytes(),
    )
    .map_err(|e| werr(&state_path, &e))?;
    let manifest_path = modules_dir.join("modules.json");
    write_atomic(&manifest_path, manifest::render(&records).as_bytes())
        .map_err(|e| werr(&manifest_path, &e))?;
    Ok(())
}

pub(super) fn remove_unless_symlink(p: &Path) -> std::io::Result<()> {
    match fs_err::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => Ok(()),
        Ok(_) => remove_any(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Remove a file, symlink (never following it) or directory tree; absent is fine.
pub(super) fn remove_any(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    match fs_err::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            // A private copy may have been made read-only by the module: make it writable.
            for e in walkdir::WalkDir::new(p).into_iter().flatten() {
                if e.file_type().is_dir() {
                    let _ =
                        fs_err::set_permissions(e.path(), std::fs::Permissions::from_mode(0o755));
                }
            }
            fs_err::remove_dir_all(p)
        }
        Ok(_) => fs_err::remove_file(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A writable copy of `src` (files reflinked where the filesystem can, symlinks kept).
pub(super) fn copy_tree(src: &Path, dest: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::create_dir_all(dest)?;
    for entry in walkdir::WalkDir::new(src).min_depth(1).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let rel = entry.path().strip_prefix(src).expect("under src");
        let out = dest.join(rel);
        let ft = entry.file_type();
        if ft.is_dir() {
            fs_err::create_dir_all(&out)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(fs_err::read_link(entry.path())?, &out)?;
        } else {
            let exec = entry
                .metadata()
                .map_err(std::io::Error::other)?
                .permissions()
                .mode()
                & 0o111
                != 0;
            reflink_copy::reflink_or_copy(entry.path(), &out)?;
            fs_err::set_permissions(
                &out,
                std::fs::Permissions::from_mode(if exec { 0o755 } else { 0o644 }),
            )?;
        }
    }
    Ok(())
}
