//! A call of a go-getter address (git, HTTP, OCI, …) fetched into the store or found there,
//! or of a local directory named by absolute path, read in place; and the node each gives.

use std::path::PathBuf;

use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{clean_join, Getter, RemotePackage};
use tstore_tofu::version::Version;

use super::plan::RemotePlan;
use crate::modules::fetch::{join_subdirs, Fetched};
use crate::modules::locked::{self};
use crate::modules::tree::Node;
use crate::modules::{package_dirs, package_meta, FetchError, ModuleWarning};

use super::{CallAt, Walker};

impl<'a> Walker<'a> {
    /// A local directory named by absolute path or `file://`: read in place.
    pub(super) fn directory_call(
        &mut self,
        c: &CallAt<'_>,
        package: &RemotePackage,
        subdir: Option<&str>,
    ) -> Result<(Node, PathBuf), FetchError> {
        let fetched = local_directory(package)?;
        if self.installed_addrs.insert(fetched.id.clone()) {
            self.linked_installs.insert(c.key.clone());
        }
        self.remote_node(c, None, fetched, subdir.map(str::to_owned))
    }

    /// A go-getter address, fetched into the store (or found there).
    pub(super) fn remote_call(
        &mut self,
        c: &CallAt<'_>,
        plan: RemotePlan<'_, 'a>,
    ) -> Result<(Node, PathBuf), FetchError> {
        let RemotePlan {
            package,
            subdir,
            source,
            reference,
            pinned,
        } = plan;
        // Under the cooldown, since when the tag of an unpinned git call names its commit.
        let mut tag_published = None;
        let fetched = match pinned {
            Some(entry) => {
                self.check_reach(&c.key, package, entry)?;
                match self.session.pinned_without_origin(package, entry)? {
                    Some(f) => f,
                    None => {
                        let pinned = super::pins::pinned_address(package, entry)?;
                        self.say_downloading(c, &pinned);
                        self.session.fetch(&pinned, 0)?
                    }
                }
            }
            None => {
                self.say_downloading(c, package);
                let fetched = self.session.fetch(package, 0)?;
                if let (Getter::Git, Some(commit)) = (&package.getter, &fetched.commit) {
                    let addr = crate::modules::getters::git::GitAddress::parse(&package.url)?;
                    crate::modules::getters::git_reach::record_resolved(
                        &self.opts.run,
                        &addr,
                        commit,
                        self.opts.reach_records.as_deref(),
                    );
                    // A commit the lock file pinned for this call (an -upgrade that finds
                    // the tag unmoved) is the lock's to vouch for.
                    let policy = self
                        .opts
                        .workdir
                        .release_age
                        .as_ref()
                        .filter(|_| !self.pins.read_pins(&c.key, &source, commit));
                    let session = &mut self.session;
                    let reference = addr.reference.as_deref().unwrap_or("HEAD");
                    tag_published = crate::modules::getters::git_first_seen::check(
                        &self.opts.run,
                        &c.call.source,
                        &addr,
                        commit,
                        self.opts.reach_records.as_deref(),
                        policy,
                        &mut |policy| {
                            session.mirror_first_seen(&addr.repo, reference, commit, policy)
                        },
                    )?;
                }
                fetched
            }
        };
        let sub = join_subdirs(&[fetched.subdir.clone(), subdir.map(str::to_owned)]);
        let commit = fetched.commit.clone();
        let mut hashes = locked::package_hashes(self.store, &fetched)?;
        let fetched = self.again_without_dot_entries(&package.to_string(), fetched)?;
        if let Some(entry) = pinned {
            locked::check(entry, &hashes, commit.as_deref())?;
            hashes.extend(entry.hashes.iter().cloned());
        }
        let selected_by = match (pinned, self.opts.workdir.upgrade) {
            (Some(_), _) => "lock",
            (None, true) => "upgrade",
            (None, false) => "constraint",
        };
        let entry = ModuleLockEntry {
            source,
            version: reference,
            constraints: None,
            commit,
            hashes,
        };
        let (mut node, dir) = self.remote_node(c, None, fetched, sub)?;
        node.lock_entry = Some(entry);
        node.selected_by = Some(selected_by);
        node.published = tag_published;
        node.origin_why = self.origin_why(pinned);
        Ok((node, dir))
    }

    /// The package a call at package address `addr` installs: `fetched` itself for the
    /// first call of that address in this init; for every later one, the package without
    /// entries whose name starts with `.` (at any depth), which is what terraform and tofu
    /// install there (they copy the first install, skipping dot files).
    pub(super) fn again_without_dot_entries(
        &mut self,
        addr: &str,
        fetched: Fetched,
    ) -> Result<Fetched, FetchError> {
        if self.installed_addrs.insert(addr.to_owned()) {
            return Ok(fetched);
        }
        self.session.without_dot_entries(&fetched)
    }

    /// The node of a remote call installing `fetched` (its module at `subdir`), and the
    /// directory its module is read from.
    pub(super) fn remote_node(
        &mut self,
        c: &CallAt<'_>,
        version: Option<Version>,
        fetched: Fetched,
        subdir: Option<String>,
    ) -> Result<(Node, PathBuf), FetchError> {
        let mut pkg_path = clean_join(".", subdir.as_deref().unwrap_or("."));
        if pkg_path.starts_with("..") {
            return Err(FetchError::Package(format!(
                "subdirectory {pkg_path:?} leaves the package"
            )));
        }
        if pkg_path.contains(['*', '?']) {
            pkg_path = package_dirs::glob_subdir(&fetched.view, &pkg_path)?;
        }
        let abs = if pkg_path == "." {
            fetched.view.clone()
        } else {
            fetched.view.join(&pkg_path)
        };
        if !abs.is_dir() {
            return Err(FetchError::Package(format!(
                "the package has no subdirectory {pkg_path:?}"
            )));
        }
        let meta = match package_meta::load(&fetched.view) {
            Ok(m) => m,
            Err(e) => {
                self.tree.warnings.push(ModuleWarning::InvalidMeta {
                    at: c.call.at.clone(),
                    key: c.key.clone(),
                    package: fetched.id.clone(),
                    error: crate::modules::chain(&e),
                });
                None
            }
        };
        let mut dir = self.opts.workdir.data_dir.module_dir_shown(&c.key);
        if pkg_path != "." {
            dir = format!("{dir}/{pkg_path}");
        }
        let id = fetched.id.clone();
        let link_to = fetched.in_place.clone();
        let vouched_by = link_to.is_none().then_some(fetched.provenance);
        self.tree.installs.insert(c.key.clone(), (fetched, meta));
        Ok((
            Node {
                key: c.key.clone(),
                source: self.recorded_source(&c.call.source),
                kind: c.kind,
                version: version.map(|v| v.to_string()),
                dir,
                install: Some(c.key.clone()),
                pkg_path,
                parent: c.parent,
                package: Some(id),
                vouched_by,
                at: c.call.at.clone(),
                link_to,
                lock_entry: None,
                selected_by: None,
                published: None,
                held_back: Vec::new(),
                repeated_by: c.call.repeated_by,
                origin_why: None,
            },
            abs,
        ))
    }

    /// A remote call's source as `modules.json` records it: as written, except that releases
    /// that parse sources as addresses record an absolute path as the `file://` URL it
    /// stands for (`tool_version::MODULE_SOURCE_ADDRESSES`).
    pub(super) fn recorded_source(&self, source: &str) -> String {
        let tool = &self.opts.workdir.tool;
        if source.starts_with('/')
            && tool.follows(&tstore_tofu::tool_version::MODULE_SOURCE_ADDRESSES)
        {
            return format!("file://{source}");
        }
        source.to_owned()
    }
}

/// The install of a local directory a call names by absolute path or `file://`: read in
/// place (the directory must exist), with its path as its package id.
pub(super) fn local_directory(package: &RemotePackage) -> Result<Fetched, FetchError> {
    let path = PathBuf::from(package.url.trim_start_matches("file://"));
    if !path.is_dir() {
        return Err(FetchError::Package(format!(
            "Unreadable module directory: {} does not exist or is not a directory",
            path.display()
        )));
    }
    Ok(Fetched {
        id: format!("file:{}", path.display()),
        view: path.clone(),
        subdir: None,
        in_place: Some(path),
        commit: None,
        // The call names the directory itself.
        provenance: tstore_store::Provenance::Origin,
    })
}
