//! Step 1: walk the module tree from the root, fetching remote packages as calls are met
//! (the calls of one module in parallel: prefetch.rs).

use super::FetchError;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use tstore_store::Store;
use tstore_tofu::config::{self, SourcePos};
use tstore_tofu::static_eval::Inputs;
use tstore_tofu::version::{ModuleVersionConstraints, Version};

use super::fetch::{join_subdirs, FetchLog, Fetcher, Slots};
use super::policy::{Meta, META_FILE};
use super::source::{self, clean_join, Getter, ModuleSource, RemotePackage};
use super::{
    policy, registry, ModuleInstallError, ModuleOptions, ModulesReport, MAX_DEPTH,
    MAX_MODULE_INSTANCES,
};
use crate::net::http::HttpClient;

#[derive(Clone, Debug)]
pub(super) struct Fetched {
    pub(super) id: String,
    pub(super) view: PathBuf,
    /// A `//subdir` named by a registry location or `X-Terraform-Get`.
    pub(super) subdir: Option<String>,
    /// A local directory a call names by absolute path or `file://`: never ingested, read
    /// where it is, and `.terraform/modules/KEY` links to it (as terraform's file getter
    /// does), so no file of it is copied and no permission of it widened.
    pub(super) in_place: Option<PathBuf>,
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) key: String,
    pub(super) source: String,
    pub(super) kind: &'static str,
    pub(super) version: Option<String>,
    pub(super) dir: String,
    /// The install (remote call key) whose package holds this module; `None`: root package.
    pub(super) install: Option<String>,
    /// Cleaned path inside its package.
    pub(super) pkg_path: String,
    pub(super) parent: Option<usize>,
    pub(super) package: Option<String>,
    pub(super) at: SourcePos,
    /// For the install of a local directory named by absolute path: the directory
    /// `.terraform/modules/KEY` links to.
    pub(super) link_to: Option<PathBuf>,
}

pub(super) struct Walker<'a> {
    pub(super) store: &'a Store,
    pub(super) opts: &'a ModuleOptions,
    pub(super) http: Option<HttpClient>,
    pub(super) cache: HashMap<String, Fetched>,
    /// Registry resolutions (`HOST/PATH CONSTRAINTS` → version, location, package) of this
    /// init.
    pub(super) resolved: HashMap<String, Resolved>,
    pub(super) slots: Slots,
    pub(super) nodes: Vec<Node>,
    /// Install key → (package root in the store view, its meta file).
    pub(super) installs: BTreeMap<String, (Fetched, Option<Meta>)>,
    /// Package addresses already installed by an earlier call of this init, in terraform's
    /// walk order (depth first, calls by name). A later call of the same address gets the
    /// package without its dot entries, as terraform and tofu copy an earlier install.
    pub(super) installed_addrs: std::collections::HashSet<String>,
    pub(super) report: ModulesReport,
    pub(super) warnings: Vec<String>,
}

/// A module the walk visits: where its files are and where it sits in the module tree.
#[derive(Clone, Copy)]
pub(super) struct ModuleAt<'a> {
    /// Its node (the call that brings it in), the parent of its calls' nodes; `None` for
    /// the root module.
    pub(super) node: Option<usize>,
    /// Its directory on disk (for a remote package, in the store view).
    pub(super) dir_abs: &'a Path,
    /// Its directory as `modules.json` records it, relative to the working directory.
    pub(super) dir_rel: &'a str,
    /// The install whose package holds it; `None`: the root package.
    pub(super) install: Option<&'a str>,
    /// Its cleaned path inside its package.
    pub(super) pkg_path: &'a str,
    /// Its key (`a.b`), which prefixes the keys of its calls; empty for the root module.
    pub(super) key: &'a str,
    /// How many calls deep it is: 0 for the root module.
    pub(super) depth: usize,
}

impl<'a> ModuleAt<'a> {
    /// The root module, in the working directory `dir`.
    pub(super) fn root(dir: &'a Path) -> Self {
        ModuleAt {
            node: None,
            dir_abs: dir,
            dir_rel: ".",
            install: None,
            pkg_path: ".",
            key: "",
            depth: 0,
        }
    }
}

/// A module call met in the walk, with the node of the module that makes it.
struct CallSite<'a> {
    /// The call's key (`a.b`).
    key: &'a str,
    call: &'a config::ModuleCall,
    /// The kind of its source ([`ModuleSource::kind`]).
    kind: &'static str,
    /// The node of the calling module; `None` for the root module.
    parent: Option<usize>,
}

impl Walker<'_> {
    pub(super) fn visit(
        &mut self,
        at: ModuleAt<'_>,
        inputs: Inputs,
    ) -> Result<(), ModuleInstallError> {
        let ModuleAt {
            node: parent,
            dir_abs,
            dir_rel,
            install,
            pkg_path,
            key: prefix,
            depth,
        } = at;
        // Positions name the module as the user sees it (`.terraform/modules/KEY/…`
        // under the working directory), never the store's copy of its package.
        let shown_as = match dir_rel {
            "." => self.opts.dir.clone(),
            rel => self.opts.dir.join(rel),
        };
        let mut module = config::load_module_requirements_shown_as(
            dir_abs,
            &shown_as,
            self.opts.flavor,
            inputs,
        )?;
        // tofu init also installs the modules the root module's test files run.
        if parent.is_none() && self.opts.flavor == tstore_tofu::flavor::Flavor::Tofu {
            module
                .module_calls
                .extend(config::test_files::test_module_calls(
                    dir_abs,
                    &self.opts.test_directory,
                )?);
        }
        self.prefetch(&module.module_calls);
        for (name, call) in module.module_calls {
            let key = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}.{name}")
            };
            let fail = |source: FetchError| ModuleInstallError::Call {
                at: call.at.clone(),
                key: key.clone(),
                address: call.source.clone(),
                source,
            };
            if depth + 1 > MAX_DEPTH {
                return Err(fail(FetchError::Package(format!(
                    "module calls nest more than {MAX_DEPTH} levels deep; a module probably calls itself"
                ))));
            }
            if self.nodes.len() >= MAX_MODULE_INSTANCES {
                return Err(fail(FetchError::Package(format!(
                    "the configuration has more than {MAX_MODULE_INSTANCES} module instances \
                     (every call counted along every path of the module tree); a module tree \
                     that fans out at every level grows exponentially: check the calls of the \
                     modules on this path"
                ))));
            }
            let parsed =
                ModuleSource::parse(&call.source, self.opts.flavor.default_registry_host())
                    .map_err(|e| fail(FetchError::Address(e.reason)))?;
            let kind = parsed.kind();
            if kind == "oci" && self.opts.flavor == tstore_tofu::flavor::Flavor::Terraform {
                return Err(fail(FetchError::Address(format!(
                    "oci:// module sources are an OpenTofu feature (1.10 and later) that terraform                      does not read; use --flavor tofu to install {:?}",
                    call.source
                ))));
            }
            let site = CallSite {
                key: &key,
                call: &call,
                kind,
                parent,
            };
            let (node, abs) = match parsed {
                ModuleSource::Unsupported { getter } => {
                    return Err(fail(FetchError::Package(format!(
                        "the {getter}:: getter is not supported by tstore (supported: local paths, \
                         module registries, git::, http(s):// archives, oci://, absolute paths)"
                    ))))
                }
                ModuleSource::Local(src) => {
                    if call.version.is_some() {
                        return Err(fail(FetchError::Address(
                            "Invalid version constraint: cannot apply a version constraint to a module with a relative local path".into(),
                        )));
                    }
                    let dir = clean_join(dir_rel, &src);
                    let (new_pkg_path, abs) = match install {
                        Some(inst) => {
                            let p = clean_join(pkg_path, &src);
                            if p.starts_with("..") {
                                return Err(fail(FetchError::Package(format!(
                                    "Local module path escapes module package: {src:?} from {pkg_path:?} \
                                     leaves the package of module \"{inst}\""
                                ))));
                            }
                            let root = &self.installs[inst].0.view;
                            let abs = if p == "." {
                                root.clone()
                            } else {
                                root.join(&p)
                            };
                            (p.clone(), abs)
                        }
                        None => (dir.clone(), self.opts.dir.join(&dir)),
                    };
                    // In the root package, tofu records the directory with its symlinks
                    // resolved (a remote package's files are never symlinked dirs).
                    let (dir, abs) = match install {
                        None if abs.is_dir() => {
                            let resolved =
                                source::eval_symlinks(&self.opts.dir, &dir).map_err(|e| {
                                    fail(FetchError::Package(format!(
                                        "Unreadable module directory: {e}"
                                    )))
                                })?;
                            let abs = self.opts.dir.join(&resolved);
                            (resolved, abs)
                        }
                        _ => (dir, abs),
                    };
                    if !abs.is_dir() {
                        return Err(fail(FetchError::Package(format!(
                            "Unreadable module directory: {} does not exist or is not a directory",
                            abs.display()
                        ))));
                    }
                    let package = install.map(|i| self.installs[i].0.id.clone());
                    (
                        Node {
                            key: key.clone(),
                            source: call.source.clone(),
                            kind,
                            version: None,
                            dir,
                            install: install.map(str::to_owned),
                            pkg_path: new_pkg_path,
                            parent,
                            package,
                            at: call.at.clone(),
                            link_to: None,
                        },
                        abs,
                    )
                }
                ModuleSource::Registry {
                    host,
                    namespace,
                    name,
                    system,
                    subdir,
                } => {
                    let constraints = match &call.version {
                        Some(v) => ModuleVersionConstraints::parse(v).map_err(|e| {
                            fail(FetchError::Package(format!(
                                "invalid version constraint: {e}"
                            )))
                        })?,
                        None => ModuleVersionConstraints::default(),
                    };
                    let m = registry::RegistryModule {
                        host: &host,
                        path: format!("{namespace}/{name}/{system}"),
                    };
                    let Resolved {
                        version,
                        location,
                        fetched,
                    } = self.registry(&m, &constraints).map_err(&fail)?;
                    let (loc_sub, loc_package) = match ModuleSource::parse(
                        &location,
                        self.opts.flavor.default_registry_host(),
                    ) {
                        Ok(ModuleSource::Remote { subdir, package }) => {
                            (subdir, package.to_string())
                        }
                        _ => return Err(fail(bad_location(&location))),
                    };
                    let sub = join_subdirs(&[fetched.subdir.clone(), loc_sub, subdir]);
                    let fetched = self
                        .again_without_dot_entries(&loc_package, fetched)
                        .map_err(&fail)?;
                    self.remote_node(&site, Some(version.to_string()), fetched, sub)
                        .map_err(fail)?
                }
                ModuleSource::Remote { package, subdir } => {
                    if call.version.is_some() {
                        return Err(fail(FetchError::Address(
                            "Invalid version constraint: cannot apply a version constraint to a module that is not from a registry".into(),
                        )));
                    }
                    if package.getter == Getter::File {
                        let fetched = local_directory(&package).map_err(&fail)?;
                        self.remote_node(&site, None, fetched, subdir)
                            .map_err(fail)?
                    } else {
                        let fetched = self.fetch(&package, 0).map_err(&fail)?;
                        let sub = join_subdirs(&[fetched.subdir.clone(), subdir]);
                        let fetched = self
                            .again_without_dot_entries(&package.to_string(), fetched)
                            .map_err(&fail)?;
                        self.remote_node(&site, None, fetched, sub).map_err(fail)?
                    }
                }
            };
            let idx = self.nodes.len();
            let (dir, inst, pp) = (
                node.dir.clone(),
                node.install.clone(),
                node.pkg_path.clone(),
            );
            self.nodes.push(node);
            let inputs = call.inputs.clone();
            let child = ModuleAt {
                node: Some(idx),
                dir_abs: &abs,
                dir_rel: &dir,
                install: inst.as_deref(),
                pkg_path: &pp,
                key: &key,
                depth: depth + 1,
            };
            self.visit(child, inputs)?;
        }
        Ok(())
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
        let mut log = FetchLog::default();
        let result = self.fetcher().without_dot_entries(&fetched, &mut log);
        self.report.fetched.extend(log.fetched);
        self.report.reused.extend(log.reused);
        result
    }

    /// The node of a call that installs a remote package (`fetched`, at `version` when a
    /// registry chose it), and the directory of the module it names: `subdir` of the
    /// package.
    fn remote_node(
        &mut self,
        site: &CallSite<'_>,
        version: Option<String>,
        fetched: Fetched,
        subdir: Option<String>,
    ) -> Result<(Node, PathBuf), FetchError> {
        let &CallSite {
            key,
            call,
            kind,
            parent,
        } = site;
        let mut pkg_path = clean_join(".", subdir.as_deref().unwrap_or("."));
        if pkg_path.starts_with("..") {
            return Err(FetchError::Package(format!(
                "subdirectory {pkg_path:?} leaves the package"
            )));
        }
        if pkg_path.contains(['*', '?']) {
            pkg_path = source::glob_subdir(&fetched.view, &pkg_path)?;
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
        let meta = match policy::load(&fetched.view) {
            Ok(m) => m,
            Err(e) => {
                self.warnings.push(format!(
                    "{}: module \"{key}\": ignoring invalid {META_FILE} of package {}: {}",
                    call.at,
                    fetched.id,
                    super::chain(&e)
                ));
                None
            }
        };
        let mut dir = self.opts.data_dir.module_dir_shown(key);
        if pkg_path != "." {
            dir = format!("{dir}/{pkg_path}");
        }
        let id = fetched.id.clone();
        let link_to = fetched.in_place.clone();
        self.installs.insert(key.to_owned(), (fetched, meta));
        Ok((
            Node {
                key: key.to_owned(),
                source: call.source.clone(),
                kind,
                version,
                dir,
                install: Some(key.to_owned()),
                pkg_path,
                parent,
                package: Some(id),
                at: call.at.clone(),
                link_to,
            },
            abs,
        ))
    }

    pub(super) fn http(&mut self) -> Result<HttpClient, FetchError> {
        if self.http.is_none() {
            self.http = Some(self.opts.network.http_client().map_err(FetchError::from)?);
        }
        Ok(self.http.clone().expect("just set"))
    }

    pub(super) fn fetcher(&self) -> Fetcher<'_> {
        Fetcher {
            store: self.store,
            slots: &self.slots,
            default_host: self.opts.flavor.default_registry_host(),
            http: self.http.clone(),
            network: &self.opts.network,
        }
    }

    /// The registry's version, download location and package for `m`, resolved once per
    /// init.
    pub(super) fn registry(
        &mut self,
        m: &registry::RegistryModule<'_>,
        constraints: &ModuleVersionConstraints,
    ) -> Result<Resolved, FetchError> {
        let key = resolve_key(m, constraints);
        if let Some(r) = self.resolved.get(&key) {
            return Ok(r.clone());
        }
        self.http()?;
        let mut log = FetchLog::default();
        let result = self
            .fetcher()
            .registry(&self.opts.network, m, constraints, &mut log);
        self.report.fetched.extend(log.fetched);
        self.report.reused.extend(log.reused);
        let r = result?;
        self.resolved.insert(key, r.clone());
        Ok(r)
    }

    /// The package at `package`, from the store or fetched into it.
    pub(super) fn fetch(
        &mut self,
        package: &RemotePackage,
        hops: usize,
    ) -> Result<Fetched, FetchError> {
        let addr = package.to_string();
        if let Some(f) = self.cache.get(&addr) {
            return Ok(f.clone());
        }
        if matches!(package.getter, Getter::Http | Getter::Oci) {
            self.http()?;
        }
        let mut log = FetchLog::default();
        let result = self.fetcher().fetch(package, hops, &mut log);
        self.report.fetched.extend(log.fetched);
        self.report.reused.extend(log.reused);
        let fetched = result?;
        self.cache.insert(addr, fetched.clone());
        Ok(fetched)
    }
}

pub(super) fn resolve_key(
    m: &registry::RegistryModule<'_>,
    constraints: &ModuleVersionConstraints,
) -> String {
    format!("{}/{} {}", m.host, m.path, constraints.to_go_string())
}

/// A registry module's selected version, the download location the registry named for it,
/// and its package.
#[derive(Clone, Debug)]
pub(super) struct Resolved {
    pub(super) version: Version,
    pub(super) location: String,
    pub(super) fetched: Fetched,
}

pub(super) fn bad_location(location: &str) -> FetchError {
    FetchError::Protocol(format!(
        "the registry's download location {location:?} is not a supported remote address"
    ))
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
    })
}
