//! One call's source read once, the same way by the walk and by its prefetch: what the call
//! installs from (a registry module at a selection, or a package address), as the lock
//! file writes its source, and what the lock pins for it.

use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{Getter, ModuleSource, RemotePackage};
use tstore_tofu::version::{ModuleVersionConstraints, Version};

use super::{pins, Walker};
use crate::modules::getters::registry::RegistryModule;
use crate::modules::FetchError;

/// Where one call's module comes from, with what it needs fetched and its lock bookkeeping.
pub(super) enum Plan<'s, 'a> {
    /// `./x`, `../x`: read in place, nothing fetched.
    Local(&'s str),
    /// A directory named by absolute path or `file://`: read in place, nothing fetched.
    Directory {
        package: &'s RemotePackage,
        subdir: Option<&'s str>,
    },
    /// A getter tstore does not implement (its name).
    Unsupported(&'s str),
    /// A module registry address.
    Registry(RegistryPlan<'s, 'a>),
    /// A go-getter address fetched into the store.
    Remote(RemotePlan<'s, 'a>),
}

pub(super) struct RegistryPlan<'s, 'a> {
    pub(super) module: RegistryModule<'s>,
    pub(super) subdir: Option<&'s str>,
    /// The call's source as the lock file writes it.
    pub(super) source: String,
    /// The entry that pins the call, and the version it pins.
    pub(super) pinned: Option<(&'a ModuleLockEntry, Version)>,
    /// The constraints the version is selected with: the locked version exactly, or the
    /// call's own.
    pub(super) selection: ModuleVersionConstraints,
    /// What chose the version: `lock`, `upgrade`, `constraint`.
    pub(super) selected_by: &'static str,
}

pub(super) struct RemotePlan<'s, 'a> {
    pub(super) package: &'s RemotePackage,
    pub(super) subdir: Option<&'s str>,
    /// The call's source as the lock file writes it.
    pub(super) source: String,
    /// A git call's ref.
    pub(super) reference: Option<String>,
    /// The entry that pins the call (for git, only while the call names its ref).
    pub(super) pinned: Option<&'a ModuleLockEntry>,
}

impl<'a> Walker<'a> {
    /// The plan of the call `key` whose source is `source` and version `version`.
    pub(super) fn plan<'s>(
        &self,
        key: &str,
        source: &'s ModuleSource,
        version: Option<&str>,
    ) -> Result<Plan<'s, 'a>, FetchError> {
        match source {
            ModuleSource::Local(path) => Ok(Plan::Local(path)),
            ModuleSource::Unsupported { getter } => Ok(Plan::Unsupported(getter)),
            ModuleSource::Remote { package, subdir } if package.getter == Getter::File => {
                Ok(Plan::Directory {
                    package,
                    subdir: subdir.as_deref(),
                })
            }
            ModuleSource::Remote { package, subdir } => {
                let subdir = subdir.as_deref();
                let (source, reference, pinned) = self.remote_pin(key, package, subdir)?;
                Ok(Plan::Remote(RemotePlan {
                    package,
                    subdir,
                    source,
                    reference,
                    pinned,
                }))
            }
            ModuleSource::Registry {
                host,
                namespace,
                name,
                system,
                subdir,
            } => {
                let constraints = match version {
                    Some(v) => ModuleVersionConstraints::parse(v).map_err(|e| {
                        FetchError::Package(format!("invalid version constraint: {e}"))
                    })?,
                    None => ModuleVersionConstraints::default(),
                }
                .naming_prereleases(self.opts.workdir.tool.exact_prerelease());
                let module = RegistryModule {
                    host,
                    path: format!("{namespace}/{name}/{system}"),
                };
                let subdir = subdir.as_deref();
                let (source, pinned) = self.registry_pin(key, &module, subdir, &constraints);
                let (selection, selected_by) = match &pinned {
                    Some((_, v)) => (pins::exact(v)?, "lock"),
                    None if self.opts.workdir.upgrade => (constraints, "upgrade"),
                    None => (constraints, "constraint"),
                };
                Ok(Plan::Registry(RegistryPlan {
                    module,
                    subdir,
                    source,
                    pinned,
                    selection,
                    selected_by,
                }))
            }
        }
    }
}
