//! What the module lock file pins for one call, looked up the same way by the walk and its
//! prefetch (through [`plan`](super::plan)): a registry call's locked version, a remote
//! call's entry; where a pinned call is fetched from; a pinned git ref's reach.

use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{Getter, RemotePackage};
use tstore_tofu::version::{ModuleVersionConstraints, Version};

use super::Walker;
use crate::modules::getters::git_reach::Reach;
use crate::modules::getters::{git, registry};
use crate::modules::locked::{self, Pins};
use crate::modules::{FetchError, ModuleWarning};

impl<'a> Walker<'a> {
    /// A registry call's source as the lock writes it, and what its entry pins: the locked
    /// version, while the call's constraints still allow it (a locked version is selected
    /// exactly; the store's memo of it then needs no registry at all).
    pub(super) fn registry_pin(
        &self,
        key: &str,
        m: &registry::RegistryModule<'_>,
        subdir: Option<&str>,
        constraints: &ModuleVersionConstraints,
    ) -> (String, Option<(&'a ModuleLockEntry, Version)>) {
        let source = match subdir {
            Some(sub) => format!("{}/{}//{sub}", m.host, m.path),
            None => format!("{}/{}", m.host, m.path),
        };
        let pins: &'a Pins = self.pins;
        let pinned = pins.entry(key, &source).and_then(|e| {
            let v: Version = e.version.as_deref()?.parse().ok()?;
            constraints.matches(&v).then_some((e, v))
        });
        (source, pinned)
    }

    /// A remote call's source as the lock writes it, its git ref, and the entry that pins it
    /// (for git, only while the call names the entry's ref).
    pub(super) fn remote_pin(
        &self,
        key: &str,
        package: &RemotePackage,
        subdir: Option<&str>,
    ) -> Result<(String, Option<String>, Option<&'a ModuleLockEntry>), FetchError> {
        let source = locked::lock_source(package, subdir);
        let reference = match package.getter {
            Getter::Git => git::GitAddress::parse(&package.url)?.reference,
            _ => None,
        };
        let pins: &'a Pins = self.pins;
        let pinned = pins
            .entry(key, &source)
            .filter(|e| package.getter != Getter::Git || e.version == reference);
        Ok((source, reference, pinned))
    }
}

impl Walker<'_> {
    /// A pinned git call's ref must reach the commit its entry pins (`reach`): checked once
    /// per call and commit per init, before the store's package of that commit is believed
    /// or the commit fetched. What the check found that the user should know (a ref that
    /// moved on, a ref left unchecked under the outage opt-in, an old check or the module
    /// mirror's record believed while the remote cannot be asked) becomes a warning.
    pub(super) fn check_reach(
        &mut self,
        key: &str,
        package: &RemotePackage,
        entry: &ModuleLockEntry,
    ) -> Result<(), FetchError> {
        let (Getter::Git, Some(locked)) = (&package.getter, &entry.commit) else {
            return Ok(());
        };
        let addr = git::GitAddress::parse(&package.url)?;
        let cache = crate::modules::getters::git_cache::GitCache::new(self.store.git_cache_dir()?);
        let session = &mut self.session;
        let reach = crate::modules::getters::git_reach::check(
            &self.opts.run,
            &addr,
            locked,
            &cache,
            self.opts.reach_records.as_deref(),
            &mut |repo, reference, commit| session.mirror_reach(repo, reference, commit),
            self.opts.trust_lock,
        )?;
        let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
        match reach {
            Reach::Same | Reach::Recorded => {}
            Reach::MovedOn { tip, kind } => self.tree.warnings.push(ModuleWarning::RefMovedOn {
                key: key.to_owned(),
                repo: addr.repo,
                reference,
                locked: locked.clone(),
                tip,
                tag: kind == git::RefKind::Tag,
            }),
            Reach::Unchecked { why } => self.tree.warnings.push(ModuleWarning::RefUnchecked {
                key: key.to_owned(),
                repo: addr.repo,
                reference,
                why,
            }),
            Reach::MirrorRecorded { mirror, ago, why } => {
                self.tree.warnings.push(ModuleWarning::RefCheckedByMirror {
                    key: key.to_owned(),
                    repo: addr.repo,
                    reference,
                    mirror,
                    ago,
                    why,
                })
            }
            Reach::RecordedLongAgo { ago, why } => {
                self.tree.warnings.push(ModuleWarning::RefCheckedLongAgo {
                    key: key.to_owned(),
                    repo: addr.repo,
                    reference,
                    ago,
                    why,
                })
            }
        }
        Ok(())
    }
}

/// Where a pinned call's package is fetched when the store lacks it: a git call by its
/// locked commit (the ref may have moved on since; that it still reaches the commit is
/// checked apart), anything else by its address (and checked against the entry after).
pub(super) fn pinned_address(
    package: &RemotePackage,
    entry: &ModuleLockEntry,
) -> Result<RemotePackage, FetchError> {
    Ok(match (&package.getter, &entry.commit) {
        (Getter::Git, Some(commit)) => RemotePackage {
            getter: Getter::Git,
            url: git::at_commit(&package.url, commit)?,
        },
        _ => package.clone(),
    })
}

/// The constraint selecting exactly version `v` (a locked version): the bare version, since
/// selection takes a pre-release only when the constraint text is exactly that version.
pub(super) fn exact(v: &Version) -> Result<ModuleVersionConstraints, FetchError> {
    ModuleVersionConstraints::parse(&v.to_string())
        .map_err(|e| FetchError::Package(format!("invalid locked version {v}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_version_is_selected_exactly_pre_releases_too() {
        let available: Vec<Version> = ["1.0.0", "1.0.0-rc1", "1.1.0", "2.0.0-beta.2"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for locked in ["1.0.0", "1.0.0-rc1", "1.1.0", "2.0.0-beta.2"] {
            let v: Version = locked.parse().unwrap();
            let selected = exact(&v).unwrap().select(&available).map(|v| v.to_string());
            assert_eq!(selected.as_deref(), Some(locked), "locked {locked}");
        }
    }
}
