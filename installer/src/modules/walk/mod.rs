//! Step 1: walk the module tree from the root, fetching remote packages as calls are met
//! (the calls of one module in parallel).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use tstore_store::Store;
use tstore_tofu::config::{self, ModuleCall};
use tstore_tofu::flavor::Flavor;
use tstore_tofu::module_source::{ModuleSource, RemotePackage};
use tstore_tofu::static_eval::Inputs;

use super::fetch::{FetchSession, Fetched};
use super::locked::Pins;
use super::options::{MAX_DEPTH, MAX_MODULE_INSTANCES};
use super::package_meta::Meta;
use super::tree::Node;
use super::{FetchError, ModuleInstallError, ModuleOptions, ModuleWarning};
use crate::report::Event;
use plan::Plan;

mod local;
mod pins;
mod plan;
mod prefetch;
mod registry;
mod remote;
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
