//! Step 1: walk the module tree from the root, fetching remote packages as calls are met
//! (the calls of one module in parallel).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use tstore_store::Store;
use tstore_tofu::config::{self, ModuleCall};
use tstore_tofu::flavor::Flavor;
use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{clean_join, Getter, ModuleSource, RemotePackage};
use tstore_tofu::static_eval::Inputs;
use tstore_tofu::version::Version;

use super::fetch::{bad_location, join_subdirs, FetchSession, Fetched, Resolved};
use super::locked::{self, Pins};
use super::options::{MAX_DEPTH, MAX_MODULE_INSTANCES};
use super::package_meta::Meta;
use super::tree::Node;
use super::{
    package_dirs, package_meta, FetchError, ModuleInstallError, ModuleOptions, ModuleWarning,
};
use crate::report::Event;
use plan::{Plan, RegistryPlan, RemotePlan};

mod local;
mod pins;
mod plan;
mod prefetch;
#[cfg(test)]
mod tests;
use crate::report::Reporter;

/// What the walk found: every call of the tree and the package each remote call installs.
#[derive(Debug, Default)]
pub(super) struct ModuleTree {
    /// Every module call (instance), depth first, calls of one module by name.
    pub(super) nodes: Vec<Node>,
    /// Install key → (package root in the store view, its meta file).
    pub(super) installs: BTreeMap<String, (Fetched, Option<Meta>)>,
    /// Package ids fetched by this walk.
    pub(super) fetched: Vec<String>,
    /// Package ids found in the store.
    pub(super) reused: Vec<String>,
    /// Package ids fetched from the module mirror.
    pub(super) mirrored: Vec<String>,
    /// What was ignored on the way, for the user.
    pub(super) warnings: Vec<ModuleWarning>,
}

/// Walk the module tree of `opts.workdir.dir`, fetching every remote package it calls.
pub(super) fn walk(
    store: &Store,
    opts: &ModuleOptions,
    pins: &Pins,
    reporter: &dyn Reporter,
) -> Result<ModuleTree, ModuleInstallError> {
    let mut walker = Walker {
        store,
        opts,
        pins,
        reporter,
        session: FetchSession::new(
            store,
            &opts.workdir.network,
            opts.workdir.flavor.default_registry_host(),
            reporter,
            opts.module_mirror.as_ref(),
            &opts.run,
        ),
        installed_addrs: HashSet::new(),
        said_downloading: HashSet::new(),
        linked_installs: HashSet::new(),
        tree: ModuleTree::default(),
    };
    let root = ModuleAt {
        parent: None,
        dir: opts.workdir.dir.clone(),
        dir_shown: ".".to_owned(),
        install: None,
        pkg_path: ".".to_owned(),
        key: String::new(),
        depth: 0,
    };
    walker.visit(&root, Inputs::Root(opts.workdir.root_inputs()))?;
    let log = walker.session.into_log();
    let mut tree = walker.tree;
    tree.fetched = log.fetched;
    tree.reused = log.reused;
    tree.mirrored = log.mirrored;
    Ok(tree)
}

/// Where a module being walked is.
struct ModuleAt {
    /// The node of the call that brought it in; `None`: the root module.
    parent: Option<usize>,
    /// Where its files are read (the working directory, or a package in the store view).
    dir: PathBuf,
    /// Its directory as `modules.json` names it (relative to the working directory).
    dir_shown: String,
    /// The install (remote call key) whose package holds it; `None`: the root package.
    install: Option<String>,
    /// Its cleaned path inside that package.
    pkg_path: String,
    /// Its module key (`a.b`; empty for the root).
    key: String,
    /// How many calls deep it is.
    depth: usize,
}

/// One call of the module being walked, and how to say it failed.
struct CallAt<'c> {
    key: String,
    call: &'c ModuleCall,
    kind: &'static str,
    parent: Option<usize>,
}

impl CallAt<'_> {
    fn fail(&self, source: FetchError) -> ModuleInstallError {
        ModuleInstallError::Call {
            at: self.call.at.clone(),
            key: self.key.clone(),
            address: self.call.source.clone(),
            source,
        }
    }
}

struct Walker<'a> {
    store: &'a Store,
    opts: &'a ModuleOptions,
    /// What the module lock file pins.
    pins: &'a Pins,
    reporter: &'a dyn Reporter,
    /// What this init has fetched, resolved and found.
    session: FetchSession<'a>,
    /// Package addresses already installed by an earlier call of this init, in terraform's
    /// walk order (depth first, calls by name). A later call of the same address gets the
    /// package without its dot entries, as terraform and tofu copy an earlier install.
    installed_addrs: HashSet<String>,
    /// The registry modules (`HOST/PATH CONSTRAINTS`) whose "Downloading" line was said.
    said_downloading: HashSet<String>,
    /// Installs of a directory named by absolute path that terraform and tofu make a link
    /// to it (the first install of each directory; later ones are copies), by call key.
    linked_installs: HashSet<String>,
    tree: ModuleTree,
}

impl<'a> Walker<'a> {
    /// Read the module at `at`, then each of its calls: the call's node, then the module
    /// it calls, depth first.
    fn visit(&mut self, at: &ModuleAt, inputs: Inputs) -> Result<(), ModuleInstallError> {
        // Positions name the module as the user sees it (`.terraform/modules/KEY/…`
        // under the working directory), never the store's copy of its package.
        let shown_as = match at.dir_shown.as_str() {
            "." => self.opts.workdir.dir.clone(),
            rel => self.opts.workdir.dir.join(rel),
        };
        let mut module = config::load_module_requirements_shown_as(
            &at.dir,
            &shown_as,
            self.opts.workdir.flavor,
            inputs,
        )?;
        config::check_tool_version(&module, &self.opts.workdir.tool)?;
        // init also installs the modules the root module's test files run (tofu; terraform
        // from 1.6).
        if let (None, Some(test_directory)) = (at.parent, self.opts.workdir.test_directory_read()) {
            module
                .module_calls
                .extend(config::test_files::test_module_calls(
                    &at.dir,
                    &test_directory,
                    self.opts.workdir.flavor,
                )?);
        }
        if at.parent.is_none() && !module.module_calls.is_empty() {
            self.reporter.event(Event::InitializingModules);
        }
        self.prefetch(&at.key, &module.module_calls);
        for (name, call) in &module.module_calls {
            let key = if at.key.is_empty() {
                name.clone()
            } else {
                format!("{}.{name}", at.key)
            };
            let parsed = ModuleSource::parse(
                &call.source,
                self.opts.workdir.flavor.default_registry_host(),
            );
            let c = CallAt {
                key,
                call,
                kind: parsed.as_ref().map_or("unsupported", ModuleSource::kind),
                parent: at.parent,
            };
            self.check_size(at, &c)?;
            let parsed = parsed.map_err(|e| c.fail(FetchError::Address(e.reason)))?;
            let (node, dir) = self.call_node(at, &c, parsed)?;
            let child = ModuleAt {
                parent: Some(self.tree.nodes.len()),
                dir,
                dir_shown: node.dir.clone(),
                install: node.install.clone(),
                pkg_path: node.pkg_path.clone(),
                key: c.key.clone(),
                depth: at.depth + 1,
            };
            self.tree.nodes.push(node);
            self.visit(&child, call.inputs.clone())?;
        }
        Ok(())
    }

    /// A tree deeper than tofu allows, or with more instances than one working directory
    /// may have, stops the walk at the call that crosses the line.
    fn check_size(&self, at: &ModuleAt, c: &CallAt<'_>) -> Result<(), ModuleInstallError> {
        if at.depth + 1 > MAX_DEPTH {
            return Err(c.fail(FetchError::Package(format!(
                "module calls nest more than {MAX_DEPTH} levels deep; a module probably calls itself"
            ))));
        }
        if self.tree.nodes.len() >= MAX_MODULE_INSTANCES {
            return Err(c.fail(FetchError::Package(format!(
                "the configuration has more than {MAX_MODULE_INSTANCES} module instances \
                 (every call counted along every path of the module tree); a module tree \
                 that fans out at every level grows exponentially: check the calls of the \
                 modules on this path"
            ))));
        }
        Ok(())
    }

    /// The node of one call and the directory its module is read from.
    fn call_node(
        &mut self,
        at: &ModuleAt,
        c: &CallAt<'_>,
        source: ModuleSource,
    ) -> Result<(Node, PathBuf), ModuleInstallError> {
        if c.kind == "oci" && self.opts.workdir.flavor == Flavor::Terraform {
            return Err(c.fail(FetchError::Address(format!(
                "oci:// module sources are an OpenTofu feature (1.10 and later) that terraform \
                 does not read; use --flavor tofu to install {:?}",
                c.call.source
            ))));
        }
        if matches!(source, ModuleSource::Remote { .. }) && c.call.version.is_some() {
            return Err(c.fail(self.version_on_non_registry(
                "a module registry source address must have either three or four slash-separated components",
                "Invalid version constraint: cannot apply a version constraint to a module that is not from a registry",
            )));
        }
        let plan = self
            .plan(&c.key, &source, c.call.version.as_deref())
            .map_err(|e| c.fail(e))?;
        match plan {
            Plan::Unsupported(getter) => Err(c.fail(FetchError::Package(format!(
                "the {getter}:: getter is not supported by tstore (supported: local paths, \
                 module registries, git::, http(s):// archives, oci://, absolute paths)"
            )))),
            Plan::Local(src) => self.local_call(at, c, src).map_err(|e| c.fail(e)),
            Plan::Directory { package, subdir } => self
                .directory_call(c, package, subdir)
                .map_err(|e| c.fail(e)),
            Plan::Registry(plan) => self.registry_call(c, plan).map_err(|e| c.fail(e)),
            Plan::Remote(plan) => self.remote_call(c, plan).map_err(|e| c.fail(e)),
        }
    }

    /// A module registry address: the newest version its constraints allow, then the
    /// package at the location the registry names for it.
    fn registry_call(
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
    fn origin_why(&self, pinned: Option<&ModuleLockEntry>) -> Option<String> {
        self.opts.module_mirror.as_ref()?;
        match pinned {
            Some(entry) => self.session.mirror_miss(entry).map(str::to_owned),
            None if self.opts.workdir.upgrade => {
                Some("-upgrade resolves it again at its origin".into())
            }
            None => Some("no module lock entry pins it".into()),
        }
    }

    /// A local directory named by absolute path or `file://`: read in place.
    fn directory_call(
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

    /// "Downloading SOURCE for KEY..." before a package this init has not fetched yet (one
    /// the prefetch fetched was said there).
    fn say_downloading(&self, c: &CallAt<'_>, package: &RemotePackage) {
        if !self.session.has_package(&package.to_string()) {
            self.reporter.event(Event::DownloadingModule {
                source: &c.call.source,
                key: &c.key,
            });
        }
    }

    /// A go-getter address, fetched into the store (or found there).
    fn remote_call(
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
                        let pinned = pins::pinned_address(package, entry)?;
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
    fn again_without_dot_entries(
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
    fn remote_node(
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
                    error: super::chain(&e),
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
    fn recorded_source(&self, source: &str) -> String {
        let tool = &self.opts.workdir.tool;
        if source.starts_with('/')
            && tool.follows(&tstore_tofu::tool_version::MODULE_SOURCE_ADDRESSES)
        {
            return format!("file://{source}");
        }
        source.to_owned()
    }

    /// A `version` on a call whose source is not a registry address: releases that parse
    /// sources as addresses take it for a registry address that does not parse (`why`);
    /// terraform 1.0 says `before` (`tool_version::MODULE_SOURCE_ADDRESSES`).
    pub(super) fn version_on_non_registry(&self, why: &str, before: &str) -> FetchError {
        let tool = &self.opts.workdir.tool;
        if !tool.follows(&tstore_tofu::tool_version::MODULE_SOURCE_ADDRESSES) {
            return FetchError::Address(before.to_owned());
        }
        FetchError::Address(format!(
            "Invalid registry module source address: Failed to parse module registry address: \
             {why}. {} assumed that you intended a module registry source address because you \
             also set the argument \"version\", which applies only to registry modules.",
            tool.product()
        ))
    }
}

/// The install of a local directory a call names by absolute path or `file://`: read in
/// place (the directory must exist), with its path as its package id.
fn local_directory(package: &RemotePackage) -> Result<Fetched, FetchError> {
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
