//! Step 3: make `.terraform/modules` match the decisions: links, private copies,
//! stale installs removed, `modules.json` written atomically.
//!
//! What may be removed under `.terraform/modules` (what tstore created), and nothing else:
//! - `KEY` of a call installed now: the slot it fills is replaced whole, as terraform
//!   replaces it, except a directory tstore did not create that holds more than its
//!   package (terraform's copy with files a module wrote there): that one is moved aside
//!   (`.KEY.tstore-….kept`, [`foreign_copy`](super::foreign_copy)) and said, never deleted;
//! - `KEY` that tstore recorded in its own state file (`.tstore-installs.json`) and no call
//!   installs any more, only when KEY is a module key tstore writes
//!   ([`is_module_key`]: names of letters, digits, `_` and `-` joined by `.`, one plain name). Other keys in the state
//!   file (`../x`, `/etc`) are ignored with a warning, and a state file that is a symlink is
//!   not read;
//! - the temporary copy `.KEY.tstore-copy-PID-N` this process made, and a link under
//!   tstore's temporary link name `.KEY.tstore-PID-N.tmp` (left by an init killed while
//!   replacing a link) that points into the mount's `modules/`, as a link. A name alone
//!   never allows a removal;
//! - a directory in the slot of a key tstore recorded as a link is someone else's
//!   (terraform's copy after `terraform init -upgrade`) and goes through the foreign-copy
//!   check above, like a slot tstore never recorded.
//!
//! Entries no state names (terraform's leftovers, anything the user put there) are never
//! touched. Every change goes through [`safe_fs`](crate::workdir::safe_fs): an entry is
//! removed as itself (a link never followed, a directory without following links in it),
//! and never through a symlinked `.terraform` or `.terraform/modules`.

use std::collections::BTreeMap;
use std::path::Path;

use tstore_store::Store;

mod slot;

use super::decide::Decision;
use super::options::STATE_FILE;
use super::tree::Node;
use super::{chain, manifest, CallReport, ModuleInstallError, ModuleOptions, ModuleWarning};
use crate::workdir::guard::is_module_key;
use crate::workdir::safe_fs::{Durability, Kind, RelPath, SafeDir, SafeFsError};

/// The most of `.tstore-installs.json` that is read.
const MAX_STATE_BYTES: u64 = 16 << 20;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub(super) struct InstallState {
    pub(super) package: String,
    pub(super) action: String,
}

/// What `apply` did: one report per call, in the order of `nodes`.
pub(super) fn apply(
    store: &Store,
    opts: &ModuleOptions,
    nodes: &[Node],
    decisions: &[Decision],
    warnings: &mut Vec<ModuleWarning>,
) -> Result<Vec<CallReport>, ModuleInstallError> {
    // An interrupt waits until `.terraform/modules` matches `modules.json` again.
    let _writing = crate::workdir::interrupt::Writing::begin();
    let modules_path = opts.workdir.data_dir.modules();
    if nodes.is_empty() && !modules_path.exists() {
        // No module calls and nothing installed before: leave the directory untouched.
        return Ok(Vec::new());
    }
    let werr = |path: &Path, e: &dyn std::fmt::Display| ModuleInstallError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let fail = |path: &Path, e: SafeFsError| werr(path, &chain(&e));
    // `.terraform` and `.terraform/modules` are opened once, without following symlinks:
    // everything below is written and removed through them.
    let modules = opts
        .workdir
        .data_dir
        .open(true)
        .and_then(|d| {
            let d = d.expect("created");
            d.create_dir_all(&RelPath::new("modules")?)
        })
        .map_err(|e| fail(&modules_path, e))?;
    let state_rel = RelPath::new(STATE_FILE).expect("a plain name");
    let old = read_install_state(&modules, &state_rel, warnings);
    remove_interrupted_links(&modules, &opts.workdir.mount.join("modules"))
        .map_err(|e| fail(&modules_path, e))?;
    let mut new: BTreeMap<String, InstallState> = BTreeMap::new();
    let mut records = Vec::new();
    let mut calls = Vec::new();
    let slots = slot::Slots {
        store,
        opts,
        modules: &modules,
        old: &old,
    };
    for (n, d) in nodes.iter().zip(decisions) {
        // Keys come from validated module names; one that is not a plain name never
        // reaches the filesystem.
        if !is_module_key(&n.key) {
            return Err(werr(
                &modules_path,
                &format!("{:?} is not a valid module key", n.key),
            ));
        }
        let key = RelPath::new(&n.key).map_err(|e| fail(&modules_path, e))?;
        let filled = slot::fill(&slots, &key, n, d, warnings)?;
        if let Some(state) = filled.state {
            new.insert(n.key.clone(), state);
        }
        let (dir, copy_bytes) = (filled.dir, filled.copy_bytes);
        records.push(manifest::Record {
            key: n.key.clone(),
            source: n.source.clone(),
            version: n.version.clone(),
            dir: dir.clone(),
        });
        calls.push(call_report(n, d, dir, copy_bytes));
    }
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        let rel = RelPath::new(key).map_err(|e| fail(&modules_path, e))?;
        modules
            .remove(&rel)
            .map_err(|e| fail(&modules.display_path(&rel), e))?;
    }
    write_records(&modules, &state_rel, &new, &records)
        .map_err(|(rel, e)| fail(&modules.display_path(&rel), e))?;
    Ok(calls)
}

/// What tstore recorded of the slots (`.tstore-installs.json`): only keys tstore could have
/// written name an entry to remove; anything else in the state file ("../x", "/etc") is
/// ignored with a warning, never followed. A state file that cannot be read is said and
/// taken as empty.
fn read_install_state(
    modules: &SafeDir,
    state_rel: &RelPath,
    warnings: &mut Vec<ModuleWarning>,
) -> BTreeMap<String, InstallState> {
    let state_path = modules.display_path(state_rel);
    let mut old: BTreeMap<String, InstallState> =
        match modules.read_file(state_rel, MAX_STATE_BYTES) {
            Ok(bytes) => bytes
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default(),
            Err(e) => {
                warnings.push(ModuleWarning::UnreadableInstallState { error: chain(&e) });
                BTreeMap::new()
            }
        };
    // Only keys tstore could have written name an entry to remove; anything else in the
    // state file ("../x", "/etc") is ignored, never followed.
    old.retain(|key, _| {
        let ok = is_module_key(key);
        if !ok {
            warnings.push(ModuleWarning::ForeignStateEntry {
                state_file: state_path.clone(),
                key: key.clone(),
            });
        }
        ok
    });
    old
}

/// Remove the links an init killed while replacing a link left: a link under a temporary
/// name (`.KEY.tstore-PID-N.tmp`) that points where tstore links modules (`mount_modules`),
/// removed as itself (a link is never followed). A name alone allows no removal: another
/// entry of that name is left as it is.
fn remove_interrupted_links(modules: &SafeDir, mount_modules: &Path) -> Result<(), SafeFsError> {
    for (name, kind) in modules.entries()? {
        if kind == Kind::Symlink && is_temporary_link_name(&name) {
            let rel = RelPath::new(&name)?;
            if modules
                .read_link(&rel)?
                .is_some_and(|t| t.starts_with(mount_modules))
            {
                modules.remove(&rel)?;
            }
        }
    }
    Ok(())
}

/// Write the state file, then `modules.json`, each renamed into place (not synced: tofu
/// does not sync `modules.json` either, and the next init repairs what a power loss
/// emptied); a file that already holds these bytes is left as it is (a re-init that
/// changes nothing writes nothing). The error names the file.
fn write_records(
    modules: &SafeDir,
    state_rel: &RelPath,
    state: &BTreeMap<String, InstallState>,
    records: &[manifest::Record],
) -> Result<(), (RelPath, SafeFsError)> {
    let state_text = serde_json::to_string_pretty(state).expect("state serializes");
    let manifest_rel = RelPath::new("modules.json").expect("a plain name");
    let manifest_text = manifest::render(records);
    // The state file before the manifest, each renamed into place (not synced: tofu does
    // not sync `modules.json` either, and the next init repairs what a power loss emptied);
    // a file that already holds these bytes is left as it is (a re-init that changes
    // nothing writes nothing).
    let unchanged = |rel: &RelPath, new: &[u8]| {
        modules
            .read_file(rel, new.len() as u64 + 1)
            .ok()
            .flatten()
            .is_some_and(|old| old == new)
    };
    let writes: Vec<(&RelPath, &[u8])> = [
        (state_rel, state_text.as_bytes()),
        (&manifest_rel, manifest_text.as_bytes()),
    ]
    .into_iter()
    .filter(|(rel, new)| !unchanged(rel, new))
    .collect();
    if !writes.is_empty() {
        modules
            .write_atomic_all(&writes, Durability::Process)
            .map_err(|e| (manifest_rel.clone(), e))?;
    }
    Ok(())
}

/// What `init` reports of the call `n` installed as `d` decided: its source as
/// [`display_url`](crate::redact::display_url) shows it (`modules.json` keeps it as
/// written).
fn call_report(n: &Node, d: &Decision, dir: String, copy_bytes: Option<u64>) -> CallReport {
    CallReport {
        key: n.key.clone(),
        source: crate::redact::display_url(&n.source),
        kind: n.kind,
        version: n.version.clone(),
        dir,
        package: n.package.clone(),
        vouched_by: n.vouched_by,
        action: d.action,
        read_only: d.status,
        reason: d.reason.clone(),
        copy_bytes,
        at: n.at.to_string(),
        lock: None,
        selected_by: n.selected_by,
        published: n.published,
        obtained: None,
        origin_why: n.origin_why.clone(),
    }
}

/// Whether `name` is a temporary link name `SafeDir::fresh_symlink` makes:
/// `.NAME.tstore-PID-N.tmp`.
fn is_temporary_link_name(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let Some(body) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let Some((_, tail)) = body.rsplit_once(".tstore-") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    tail.split_once('-')
        .is_some_and(|(pid, n)| digits(pid) && digits(n))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{symlink, PermissionsExt as _};

    use super::super::Action;
    use super::slot::{copy_tree, open_local_module};
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs_err::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_copy_keeps_private_modes_exec_bits_and_links_and_skips_fifos() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs_err::create_dir_all(src.join("sub")).unwrap();
        fs_err::write(src.join("main.tf"), "x").unwrap();
        fs_err::write(src.join("key"), "k").unwrap();
        fs_err::set_permissions(src.join("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        fs_err::write(src.join("sub/run.sh"), "#!/bin/sh\n").unwrap();
        fs_err::set_permissions(
            src.join("sub/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        symlink("../outside", src.join("sub/link")).unwrap();
        nix::unistd::mkfifo(&src.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let dest_root = tmp.path().join("dest");
        fs_err::create_dir(&dest_root).unwrap();
        let dest = SafeDir::open_trusted(&dest_root).unwrap();
        copy_tree(&SafeDir::open_trusted(&src).unwrap(), &dest).unwrap();
        assert_eq!(
            fs_err::read_to_string(dest_root.join("main.tf")).unwrap(),
            "x"
        );
        assert_eq!(
            mode(&dest_root.join("key")),
            0o600,
            "a private file stays private"
        );
        assert_eq!(mode(&dest_root.join("sub/run.sh")), 0o755);
        assert_eq!(
            fs_err::read_link(dest_root.join("sub/link")).unwrap(),
            Path::new("../outside"),
            "a link is copied as a link, never followed"
        );
        assert!(fs_err::symlink_metadata(dest_root.join("fifo")).is_err());
    }

    #[test]
    fn the_report_shows_a_source_without_credentials() {
        let source = "git::https://user:s3cret@git.test/org/net.git?ref=v1&sshkey=TOK3N";
        let n = Node {
            key: "net".into(),
            source: source.into(),
            kind: "git",
            version: None,
            dir: ".terraform/modules/net".into(),
            install: Some("net".into()),
            pkg_path: ".".into(),
            parent: None,
            package: Some("git-net-0".into()),
            vouched_by: Some(tstore_store::Provenance::Origin),
            at: tstore_tofu::config::SourcePos {
                file: "main.tf".into(),
                line: Some(1),
            },
            link_to: None,
            lock_entry: None,
            selected_by: None,
            published: None,
            held_back: Vec::new(),
            repeated_by: None,
            origin_why: None,
        };
        let d = Decision {
            action: Action::Link,
            status: super::super::package_meta::ReadOnlyStatus::ReadOnly,
            reason: "read-only".into(),
            writes: false,
        };
        let report = call_report(&n, &d, n.dir.clone(), None);
        assert_eq!(
            report.source,
            "git::https://git.test/org/net.git?ref=v1&sshkey=redacted"
        );
        let json = serde_json::to_string(&report).unwrap();
        assert!(
            !json.contains("s3cret") && !json.contains("TOK3N"),
            "{json}"
        );
        assert_eq!(
            n.source, source,
            "the node (modules.json's Source) is as written"
        );
    }

    #[test]
    fn a_local_module_is_opened_without_following_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("work");
        let outside = tmp.path().join("outside");
        fs_err::create_dir_all(root.join("mods/real")).unwrap();
        fs_err::create_dir_all(&outside).unwrap();
        symlink(&outside, root.join("mods/swapped")).unwrap();
        symlink(root.join("mods"), root.join("alias")).unwrap();
        assert!(open_local_module(&root, "mods/real").is_ok());
        assert!(open_local_module(&root, ".").is_ok());
        for bad in ["mods/swapped", "alias/real"] {
            assert!(
                open_local_module(&root, bad).is_err(),
                "{bad} was opened through a symlink"
            );
        }
        assert!(open_local_module(&root, "mods/missing").is_err());
    }
}
