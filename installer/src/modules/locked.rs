//! The module lock (`.tstore.lock.hcl`, [`tstore_tofu::module_lock`]) in the install: what a
//! call's entry pins, the check of a package against it, and the entry each remote call gets.
//!
//! Rules:
//! - An entry pins a call when its `source` is the call's source as the lock writes it (and,
//!   for git, its `version` is the ref the call names); a call whose source changed is
//!   resolved again and its entry replaced. Under `-upgrade` no entry pins anything.
//! - A registry entry pins its version while the call's constraints still allow it (a
//!   constraint the version no longer meets re-resolves the call, as for providers); a git
//!   entry pins its commit: a store that holds that commit's package installs it without
//!   asking the remote, a store that lacks it fetches the ref, which must still name that
//!   commit (so a moved tag is refused where the package is fetched, never installed).
//! - Every package a pinned call installs must have one of the entry's `h1:` hashes (the
//!   package tree's, as providers' `h1:`, of the package as fetched: a later call of the same
//!   address installs it without its dot entries, which does not change its entry): a moved
//!   tag, a re-published registry version or a changed archive is refused, naming the call,
//!   the source, expected and got. A verified entry keeps its hashes.
//! - An entry's `source` never holds credentials: an `http(s)` URL's user information, any
//!   other URL's password and go-getter's `sshkey` parameter are left out, a secret-looking
//!   query value is written `redacted` (the file is committed).

use std::collections::BTreeSet;
use std::path::PathBuf;

use tstore_store::{Hash, PackageKey, Store};
use tstore_tofu::module_lock::{self, Change, ModuleLock, ModuleLockEntry};
use tstore_tofu::module_source::{Getter, RemotePackage};

use super::fetch::Fetched;
use super::tree::Node;
use super::{chain, CallLock, FetchError, ModuleInstallError};
use crate::report::LockFileChange;
use crate::workdir::atomic::write_atomic;

/// The entries of the lock file as read before the walk: none under `-upgrade`, or, when
/// the upgrade names calls, all but those calls' and the calls' inside them.
#[derive(Debug, Default)]
pub(super) struct Pins {
    lock: ModuleLock,
    /// The lock file as read, every entry kept (`-upgrade` too): what it vouched for.
    read: ModuleLock,
}

impl Pins {
    /// Pins from `lock` (`None`: no lock file). `upgrade` drops the entries of the calls
    /// `upgrade_only` names and of every call inside one (`vpc` also drops `vpc.label`),
    /// or every entry when it names none.
    pub(super) fn new(lock: Option<&ModuleLock>, upgrade: bool, upgrade_only: &[String]) -> Pins {
        let read = lock.cloned().unwrap_or_default();
        let mut lock = read.clone();
        if upgrade {
            lock.entries.retain(|key, _| {
                !upgrade_only.is_empty() && !upgrade_only.iter().any(|u| within(key, u))
            });
        }
        Pins { lock, read }
    }

    /// Whether the lock file as read (before `-upgrade` dropped anything) pins call `key`,
    /// of source `source`, at `commit`: the lock's review is that commit's gate (the
    /// cooldown does not hold it back).
    pub(super) fn read_pins(&self, key: &str, source: &str, commit: &str) -> bool {
        self.read
            .entries
            .get(key)
            .filter(|e| e.source == source)
            .and_then(|e| e.commit.as_deref())
            .is_some_and(|c| c.eq_ignore_ascii_case(commit))
    }

    /// The entry of call `key` when its source is the call's, as the lock writes it.
    pub(super) fn entry(&self, key: &str, source: &str) -> Option<&ModuleLockEntry> {
        self.lock.entries.get(key).filter(|e| e.source == source)
    }
}

/// Whether call `key` is call `call` or one inside it (`vpc.label` is inside `vpc`).
pub(super) fn within(key: &str, call: &str) -> bool {
    key.strip_prefix(call)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The lock file a walk calls for, beside the one it read.
#[derive(Debug)]
pub(super) struct LockUpdate {
    path: PathBuf,
    old: Option<ModuleLock>,
    new: ModuleLock,
    changes: Vec<Change>,
}

impl LockUpdate {
    /// The entries of `nodes`' remote calls, against `old` (the file at `path`). An entry of
    /// a call no longer in the configuration is kept when `keep_unused`: the tool release's
    /// rule for providers' entries (terraform before 1.1.2 keeps them, later releases and
    /// tofu drop them), followed here too.
    pub(super) fn new(
        path: PathBuf,
        old: Option<ModuleLock>,
        nodes: &[Node],
        keep_unused: bool,
    ) -> LockUpdate {
        let mut new = ModuleLock {
            entries: nodes
                .iter()
                .filter_map(|n| Some((n.key.clone(), n.lock_entry.clone()?)))
                .collect(),
        };
        if keep_unused {
            if let Some(old) = &old {
                let called: BTreeSet<&str> = nodes.iter().map(|n| n.key.as_str()).collect();
                for (key, entry) in &old.entries {
                    if !called.contains(key.as_str()) {
                        new.entries.insert(key.clone(), entry.clone());
                    }
                }
            }
        }
        let changes = module_lock::diff(old.as_ref().unwrap_or(&ModuleLock::default()), &new);
        LockUpdate {
            path,
            old,
            new,
            changes,
        }
    }

    /// Whether the file would be written with other entries than it has.
    pub(super) fn changes_anything(&self) -> bool {
        !self.changes.is_empty()
    }

    /// Each change, for `-lockfile=readonly`'s error.
    pub(super) fn describe_changes(&self) -> Vec<String> {
        self.changes
            .iter()
            .map(|change| match change {
                Change::Added(key) => format!("module \"{key}\" would be added"),
                Change::Removed(key) => format!("module \"{key}\" would be removed"),
                Change::Changed { key, fields } => format!(
                    "module \"{key}\": {} would change",
                    fields
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect()
    }

    /// The standing of remote call `key` in the new file.
    pub(super) fn standing(&self, key: &str) -> CallLock {
        match self.changes.iter().find(|c| c.key() == key) {
            Some(Change::Added(_)) => CallLock::Added,
            Some(_) => CallLock::Changed,
            None => CallLock::Verified,
        }
    }

    /// The new entries, by key.
    pub(super) fn new_entries(&self) -> impl Iterator<Item = (&String, &ModuleLockEntry)> {
        self.new.entries.iter()
    }

    /// The keys whose entries the new file drops.
    pub(super) fn removed(&self) -> Vec<String> {
        self.changes
            .iter()
            .filter_map(|c| match c {
                Change::Removed(key) => Some(key.clone()),
                _ => None,
            })
            .collect()
    }

    /// Write the new file when it differs (atomically); no file is created for a
    /// configuration without remote calls.
    pub(super) fn write(&self) -> Result<LockFileChange, ModuleInstallError> {
        let change = match &self.old {
            None if self.new.entries.is_empty() => return Ok(LockFileChange::Unchanged),
            Some(_) if self.changes.is_empty() => return Ok(LockFileChange::Unchanged),
            Some(_) => LockFileChange::Updated,
            None => LockFileChange::Created,
        };
        write_atomic(&self.path, module_lock::render(&self.new).as_bytes()).map_err(|e| {
            ModuleInstallError::Write {
                path: self.path.clone(),
                message: chain(&e),
            }
        })?;
        Ok(change)
    }
}

/// A remote package address as the lock writes it: without a password in the URL, without
/// go-getter's `sshkey` (its name judged decoded), with the value of every query parameter
/// not known to be harmless (`redact::redact_query`: `ref`, `depth`, `archive`, …) written
/// `redacted`, and for git without `ref` (the entry's `version` holds it). Calls are
/// matched to entries by this same form, so a redacted entry still matches its call.
pub(super) fn lock_source(package: &RemotePackage, subdir: Option<&str>) -> String {
    let (body, query) = match package.url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (package.url.as_str(), None),
    };
    let body = without_password(body);
    let kept: Vec<&str> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| {
            let name = p.split('=').next().unwrap_or_default();
            let drop_ref = package.getter == Getter::Git && name == "ref";
            !(crate::redact::is_sshkey(name) || drop_ref)
        })
        .collect();
    let mut out = match package.getter {
        Getter::Git => format!("git::{body}"),
        Getter::Http | Getter::File | Getter::Oci => body,
    };
    if let Some(sub) = subdir {
        out = format!("{out}//{sub}");
    }
    if !kept.is_empty() {
        // A committed file holds no secret: a token or signature in the query is written
        // `redacted` (the entry then also survives the token's rotation).
        out = format!("{out}?{}", crate::redact::redact_query(&kept.join("&")));
    }
    out
}

/// `url` without what may be a secret in its authority: all of an `http(s)` URL's user
/// information (`https://TOKEN@host` is a common way to pass a token), an other URL's
/// password (`ssh://git@host` keeps its user).
pub(crate) fn without_password(url: &str) -> String {
    crate::redact::without_credentials(url)
}

/// The hashes the lock records for the package `fetched`: its `h1:` and, for an archive or
/// an OCI layer, the archive's `zh:` (the store computed both when it ingested the package).
pub(super) fn package_hashes(
    store: &Store,
    fetched: &Fetched,
) -> Result<BTreeSet<String>, FetchError> {
    let package = store
        .package(&PackageKey::module(&fetched.id))
        .map_err(FetchError::from)?;
    Ok(package
        .into_iter()
        .flat_map(|p| p.hashes)
        .filter(|r| matches!(r.hash, Hash::H1(_) | Hash::Zh(_)))
        .map(|r| r.hash.to_string())
        .collect())
}

/// Refuse `got` (the package a pinned call fetched) unless one of its hashes is one the
/// entry records, and, for git, its commit is the entry's. An entry must record a hash
/// tstore can check (`h1:` of the package tree, `zh:` of the archive): one listing only
/// other schemes pins nothing and is refused, not waved through.
pub(super) fn check(
    entry: &ModuleLockEntry,
    got_hashes: &BTreeSet<String>,
    got_commit: Option<&str>,
) -> Result<(), FetchError> {
    if let (Some(want), Some(got)) = (entry.commit.as_deref(), got_commit) {
        if !want.eq_ignore_ascii_case(got) {
            return Err(FetchError::LockMismatch {
                source_address: entry.source.clone(),
                what: format!(
                    "ref {:?} now names commit {got}, the lock file's is {want}",
                    entry.version.as_deref().unwrap_or("HEAD")
                ),
            });
        }
    }
    let want: BTreeSet<&String> = entry
        .hashes
        .iter()
        .filter(|h| h.starts_with("h1:") || h.starts_with("zh:"))
        .collect();
    if want.is_empty() {
        return Err(FetchError::LockEntryWithoutHash {
            source_address: entry.source.clone(),
        });
    }
    if !got_hashes.iter().any(|h| want.contains(h)) {
        return Err(FetchError::LockMismatch {
            source_address: entry.source.clone(),
            what: format!(
                "the package's checksum {} is not one the lock file records ({})",
                got_hashes
                    .iter()
                    .find(|h| h.starts_with("h1:"))
                    .or_else(|| got_hashes.iter().next())
                    .map_or("(none)", String::as_str),
                want.iter()
                    .map(|h| h.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(url: &str) -> RemotePackage {
        RemotePackage {
            getter: Getter::Git,
            url: url.to_owned(),
        }
    }

    #[test]
    fn sources_are_written_without_secrets_or_the_ref() {
        assert_eq!(
            lock_source(
                &git("https://u:s3cret@h.example/r.git?ref=v1&depth=1"),
                Some("m")
            ),
            "git::https://h.example/r.git//m?depth=1"
        );
        assert_eq!(
            lock_source(&git("ssh://git@h.example/r.git?sshkey=AAAA&ref=v1"), None),
            "git::ssh://git@h.example/r.git"
        );
        assert_eq!(
            lock_source(&git("ssh://git:pw@h.example/r.git"), None),
            "git::ssh://git@h.example/r.git"
        );
        let http = RemotePackage {
            getter: Getter::Http,
            url: "https://:token@h.example/x.tgz?archive=tgz".to_owned(),
        };
        assert_eq!(
            lock_source(&http, None),
            "https://h.example/x.tgz?archive=tgz"
        );
        let signed = RemotePackage {
            getter: Getter::Http,
            url: "https://h.example/x.tgz?private_token=T0K&archive=tgz&X-Amz-Signature=abc"
                .to_owned(),
        };
        assert_eq!(
            lock_source(&signed, None),
            "https://h.example/x.tgz?private_token=redacted&archive=tgz&X-Amz-Signature=redacted"
        );
    }

    #[test]
    fn a_package_must_match_its_entry() {
        let entry = ModuleLockEntry {
            source: "git::https://h.example/r.git".to_owned(),
            version: Some("v1".to_owned()),
            constraints: None,
            commit: Some("a".repeat(40)),
            hashes: ["h1:one".to_owned()].into_iter().collect(),
        };
        let one: BTreeSet<String> = ["h1:one".to_owned()].into_iter().collect();
        let two: BTreeSet<String> = ["h1:two".to_owned()].into_iter().collect();
        assert!(check(&entry, &one, Some(&"a".repeat(40))).is_ok());
        let moved = check(&entry, &one, Some(&"b".repeat(40)))
            .unwrap_err()
            .to_string();
        assert!(moved.contains("now names commit"), "{moved}");
        let changed = check(&entry, &two, None).unwrap_err().to_string();
        assert!(
            changed.contains("h1:two") && changed.contains("h1:one"),
            "{changed}"
        );
    }

    #[test]
    fn an_entry_must_record_a_hash_that_can_be_checked() {
        let entry = |hashes: &[&str]| ModuleLockEntry {
            source: "https://h.example/x.tgz".to_owned(),
            version: None,
            constraints: None,
            commit: None,
            hashes: hashes.iter().map(|h| (*h).to_owned()).collect(),
        };
        let got: BTreeSet<String> = ["h1:one".to_owned(), "zh:aa".to_owned()]
            .into_iter()
            .collect();
        // No hash at all, or only schemes tstore does not compute: refused.
        for hashes in [&[][..], &["sha9:x"][..]] {
            let err = check(&entry(hashes), &got, None).unwrap_err().to_string();
            assert!(err.contains("with no h1: or zh: checksum"), "{err}");
        }
        // A zh: alone is checked too: the archive's hash must be it.
        assert!(check(&entry(&["zh:aa"]), &got, None).is_ok());
        let err = check(&entry(&["zh:bb"]), &got, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("h1:one") && err.contains("zh:bb"), "{err}");
    }

    #[test]
    fn a_scoped_upgrade_drops_the_named_calls_and_those_inside_them() {
        let entry = ModuleLockEntry {
            source: "git::https://h.example/r.git".to_owned(),
            version: None,
            constraints: None,
            commit: None,
            hashes: BTreeSet::new(),
        };
        let lock = ModuleLock {
            entries: ["vpc", "vpc.label", "vpc2", "db"]
                .into_iter()
                .map(|k| (k.to_owned(), entry.clone()))
                .collect(),
        };
        let kept = |upgrade: bool, only: &[&str]| -> Vec<String> {
            let only: Vec<String> = only.iter().map(|s| (*s).to_owned()).collect();
            Pins::new(Some(&lock), upgrade, &only)
                .lock
                .entries
                .into_keys()
                .collect()
        };
        assert_eq!(kept(false, &[]), ["db", "vpc", "vpc.label", "vpc2"]);
        assert_eq!(kept(false, &["vpc"]), ["db", "vpc", "vpc.label", "vpc2"]);
        assert!(kept(true, &[]).is_empty());
        assert_eq!(kept(true, &["vpc"]), ["db", "vpc2"]);
        assert_eq!(kept(true, &["vpc.label", "db"]), ["vpc", "vpc2"]);
    }
}
