//! A call of a module registry address: the version its constraints and the lock choose,
//! then the package at the location the registry names for it.

use std::path::PathBuf;

use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::ModuleSource;

use super::plan::RegistryPlan;
use crate::modules::fetch::{bad_location, join_subdirs, Resolved};
use crate::modules::locked::{self};
use crate::modules::tree::Node;
use crate::modules::FetchError;
use crate::report::Event;

use super::{CallAt, Walker};

impl<'a> Walker<'a> {
    /// A module registry address: the newest version its constraints allow, then the
    /// package at the location the registry names for it.
    pub(super) fn registry_call(
        &mut self,
        c: &CallAt<'_>,
        plan: RegistryPlan<'_, 'a>,
    ) -> Result<(Node, PathBuf), FetchError> {
        let RegistryPlan {
            module: m,
            subdir,
            source,
            pinned,
            selection,
            selected_by,
        } = plan;
        if let Some((entry, version)) = &pinned {
            self.session
                .registry_pinned(&m, &selection, version, entry)?;
        }
        // The cooldown governs choosing: a version the lock names is installed as locked.
        let cooldown = if pinned.is_some() {
            None
        } else {
            self.opts.workdir.release_age.as_ref()
        };
        let mut resolved =
            self.session
                .registry(&m, &selection, self.opts.workdir.upgrade, cooldown)?;
        // The package as fetched is what the lock pins: a later call of the same address
        // installs it without its dot entries, which must not make its entry depend on the
        // order of the calls.
        let mut hashes = locked::package_hashes(self.store, &resolved.fetched)?;
        if let Some((entry, _)) = &pinned {
            // The store's memo of this version may predate the lock (the version was
            // published again, and the lock written from the new bytes elsewhere): a memo
            // whose package is not the one pinned is not believed; the registry is asked
            // once more, and what it serves now must match.
            if locked::check(entry, &hashes, None).is_err() {
                resolved = self.session.registry(&m, &selection, true, None)?;
                hashes = locked::package_hashes(self.store, &resolved.fetched)?;
            }
        }
        // As the tools say it once the version is chosen: the module's address (its host
        // named) and the version, for a call whose resolution asked the registry.
        if self.session.asked_registry(&m, &selection)
            && self
                .said_downloading
                .insert(crate::modules::fetch::resolve_key(&m, &selection))
        {
            let address = format!("{}/{} {}", m.host, m.path, resolved.version);
            self.reporter.event(Event::DownloadingModule {
                source: &address,
                key: &c.key,
            });
        }
        let Resolved {
            version,
            location,
            fetched,
            published,
            held_back,
        } = resolved;
        let (loc_sub, loc_package) = match ModuleSource::parse(
            &location,
            self.opts.workdir.flavor.default_registry_host(),
        ) {
            Ok(ModuleSource::Remote { subdir, package }) => (subdir, package.to_string()),
            _ => return Err(bad_location(&location)),
        };
        // Releases that parse sources as addresses take a registry location's `//*` as a
        // directory named `*` (go-getter's glob is not expanded there).
        let literal = loc_sub.as_deref().is_some_and(|l| l.contains(['*', '?']))
            && self
                .opts
                .workdir
                .tool
                .follows(&tstore_tofu::tool_version::MODULE_SOURCE_ADDRESSES);
        let sub = join_subdirs(&[fetched.subdir.clone(), loc_sub, subdir.map(str::to_owned)]);
        let fetched = self.again_without_dot_entries(&loc_package, fetched)?;
        if let Some((entry, _)) = &pinned {
            locked::check(entry, &hashes, None)?;
            // A verified entry keeps its hashes (a restored store may have dropped a `zh:`).
            hashes.extend(entry.hashes.iter().cloned());
        }
        let entry = ModuleLockEntry {
            source,
            version: Some(version.to_string()),
            constraints: c.call.version.clone(),
            commit: None,
            hashes,
        };
        if literal {
            let sub = sub.unwrap_or_default();
            return Err(FetchError::Package(format!(
                "Unreadable module subdirectory: The directory {}/{sub} does not exist. The \
                 target submodule {sub} does not exist within the target module.",
                self.opts.workdir.data_dir.module_dir_shown(&c.key)
            )));
        }
        let (mut node, dir) = self.remote_node(c, Some(version), fetched, sub)?;
        // Releases that parse sources as addresses record the registry package's address
        // (`HOST/NS/NAME/SYSTEM[//SUBDIR]`, the default host named), as the lock does.
        if self
            .opts
            .workdir
            .tool
            .follows(&tstore_tofu::tool_version::MODULE_SOURCE_ADDRESSES)
        {
            node.source = entry.source.clone();
        }
        node.lock_entry = Some(entry);
        node.published = published;
        node.held_back = held_back;
        node.selected_by = Some(selected_by);
        node.origin_why = self.origin_why(pinned.map(|(e, _)| e));
        Ok((node, dir))
    }

    /// With a module mirror, why a remote call's package would not come from it: the call
    /// has no lock entry (or `-upgrade` resolves it again), or the mirror did not serve its
    /// entry. `None` without a mirror, or when the mirror was not asked (the store had it).
    pub(super) fn origin_why(&self, pinned: Option<&ModuleLockEntry>) -> Option<String> {
        self.opts.module_mirror.as_ref()?;
        match pinned {
            Some(entry) => self.session.mirror_miss(entry).map(str::to_owned),
            None if self.opts.workdir.upgrade => {
                Some("-upgrade resolves it again at its origin".into())
            }
            None => Some("no module lock entry pins it".into()),
        }
    }
}
