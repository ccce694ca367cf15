//! Module installation (issue 5): every module call of the configuration, its package in the
//! store, `.terraform/modules/KEY` linked to the store's read-only view or privately copied
//! as `module-package.meta.hcl` says, and `.terraform/modules/modules.json` as terraform
//! writes it.
//!
//! # Flow
//!
//! 1. **Walk** the module tree from the root (override files applied by [`tstore_tofu::config`]).
//!    Local calls resolve against the caller (inside a remote package they stay inside it);
//!    remote calls are fetched into the store (or found there), then read from the view.
//!    The packages of one module's calls are fetched in parallel first (`Walker::prefetch`,
//!    one fetch per package address), with a progress bar on a terminal.
//! 2. **Decide** per remote call (one `.terraform/modules/KEY` = one package instance):
//!    *link* when every module of the instance is read-only, *private copy* otherwise
//!    ([`policy`]). Nothing in the working directory has been touched so far: a failed
//!    fetch leaves `.terraform/modules` as it was.
//! 3. **Apply**: links (`KEY -> $TSTORE_MOUNT/modules/<id>`), copies (reflink or copy,
//!    writable), stale installs removed, `modules.json` written atomically.
//!
//! # Layout in the working directory
//!
//! ```text
//! .terraform/modules/modules.json       terraform's manifest (one line, sorted by Key)
//! .terraform/modules/KEY -> $TSTORE_MOUNT/modules/<package id>    linked install
//! .terraform/modules/KEY/…              private copy (writable)
//! .terraform/modules/.tstore-installs.json   KEY -> package id and action (tstore's own)
//! ```
//!
//! # Package ids
//!
//! `<kind>-<readable slug>-<20 hex of SHA-256(identity)>`, where the identity is
//! `git\0REPO\0COMMIT`, `http\0FINAL_URL\0SHA256(archive)` or `file\0PATH\0TREE`: one
//! segment, filesystem-safe, and equal for `?ref=v1.0.0` and `?ref=<its commit>`.
//!
//! # Not fetching again (issue 5 item 6)
//!
//! The store's `module_sources` memos ([`tstore_store::ModuleSourceMemo`]), used only when
//! their package is intact ([`Store::trusted_package`]): a registry `(module, exact
//! version)` is immutable, so its download endpoint and location are skipped (the version
//! listing is still read); a plain archive URL is revalidated with a conditional GET
//! (`ETag`/`Last-Modified`) and reused on `304`; git refs are re-resolved with `ls-remote`
//! every init (spec §8: tags move). See ARCHITECTURE.md, Modules.

pub mod archive;
pub mod git;
pub mod manifest;
pub mod policy;
mod progress;
pub mod registry;
pub mod source;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use policy::{Meta, ReadOnlyStatus, META_FILE};
use progress::Progress;
use serde::Serialize;
use sha2::{Digest, Sha256};
use source::{clean_join, Getter, ModuleSource, RemotePackage};
use tstore_store::{HashRecord, ModuleSourceMemo, PackageKey, Store};
use tstore_tofu::config::{self, SourcePos};
use tstore_tofu::version::{Version, VersionConstraints};

use crate::net::http::{HttpClient, Validators};
use crate::net::NetworkSettings;
use crate::workdir::atomic::write_atomic;

/// How deep module calls may nest before we assume a cycle.
const MAX_DEPTH: usize = 64;

/// tstore's own record of what it installed under `.terraform/modules`.
const STATE_FILE: &str = ".tstore-installs.json";

/// What `install` needs.
#[derive(Clone, Debug)]
pub struct ModuleOptions {
    /// The working directory (root module).
    pub dir: PathBuf,
    /// `TSTORE_MOUNT`: links point here.
    pub mount: PathBuf,
    /// `-upgrade`: replace private copies even when unchanged.
    pub upgrade: bool,
    /// Default registry host of the flavor.
    pub default_host: String,
    /// Registries and TLS.
    pub network: NetworkSettings,
    /// Link packages whose read-only status is unknown (`--assume-read-only`).
    pub assume_read_only: bool,
    /// Show a progress bar on stderr while packages are fetched in parallel (only drawn
    /// when stderr is a terminal).
    pub progress: bool,
}

/// What happened to one module call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `.terraform/modules/KEY` links to the store.
    Link,
    /// `.terraform/modules/KEY` is a private, writable copy.
    Copy,
    /// Read where it is (a local call, or a module inside its caller's install).
    InPlace,
}

/// One module call, as `init --json` and `--explain` report it.
#[derive(Clone, Debug, Serialize)]
pub struct CallReport {
    /// Module key (`a.b`).
    pub key: String,
    /// Source as written.
    pub source: String,
    /// `local`, `registry`, `git`, `http`, `file`.
    pub kind: &'static str,
    /// Selected registry version.
    pub version: Option<String>,
    /// `Dir` in modules.json.
    pub dir: String,
    /// Store package id (remote calls and modules inside them).
    pub package: Option<String>,
    /// What was done.
    pub action: Action,
    /// The module's read-only status.
    pub read_only: ReadOnlyStatus,
    /// Why.
    pub reason: String,
    /// Where the call is (`file:line`).
    pub at: String,
}

/// The result of installing modules.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ModulesReport {
    /// Every call, sorted by key.
    pub calls: Vec<CallReport>,
    /// Package ids fetched in this run.
    pub fetched: Vec<String>,
    /// Package ids found in the store.
    pub reused: Vec<String>,
}

impl ModulesReport {
    /// Human output in tofu's words (`Initializing modules...`, `- KEY in DIR`), with the
    /// link/copy decision and its reason per call when `explain`.
    pub fn render(&self, explain: bool) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if self.calls.is_empty() {
            return s;
        }
        s.push_str("\nInitializing modules...\n");
        for c in &self.calls {
            let _ = write!(s, "- {} in {}", c.key, c.dir);
            if let Some(v) = &c.version {
                let _ = write!(s, " ({v})");
            }
            s.push('\n');
            if explain {
                let action = match c.action {
                    Action::Link => "linked read-only to the store",
                    Action::Copy => "private copy",
                    Action::InPlace => "read in place",
                };
                let _ = writeln!(s, "    {action}: {}", c.reason);
            }
        }
        s
    }
}

/// Why module installation failed.
#[derive(Debug, thiserror::Error)]
pub enum ModuleInstallError {
    /// One call cannot be installed.
    #[error("{at}: cannot install module \"{key}\" (source {address:?}): {message}")]
    Call {
        /// Where the call is.
        at: SourcePos,
        /// Its key.
        key: String,
        /// Its source as written.
        address: String,
        /// What went wrong.
        message: String,
    },
    /// A module's configuration is invalid.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The root package's meta file is invalid.
    #[error("{}: invalid {META_FILE}: {message}", path.display())]
    Meta {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Writing `.terraform/modules` failed.
    #[error("cannot update {}: {message}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// An error and its sources on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[derive(Clone, Debug)]
struct Fetched {
    id: String,
    view: PathBuf,
    /// A `//subdir` named by a registry location or `X-Terraform-Get`.
    subdir: Option<String>,
}

#[derive(Clone, Debug)]
struct Node {
    key: String,
    source: String,
    kind: &'static str,
    version: Option<String>,
    dir: String,
    /// The install (remote call key) whose package holds this module; `None`: root package.
    install: Option<String>,
    /// Cleaned path inside its package.
    pkg_path: String,
    parent: Option<usize>,
    package: Option<String>,
    at: SourcePos,
}

struct Walker<'a> {
    store: &'a Store,
    opts: &'a ModuleOptions,
    http: Option<HttpClient>,
    cache: HashMap<String, Fetched>,
    /// Registry resolutions (`HOST/PATH CONSTRAINTS` → version, location, package) of this
    /// init.
    resolved: HashMap<String, Resolved>,
    slots: Slots,
    nodes: Vec<Node>,
    /// Install key → (package root in the store view, its meta file).
    installs: BTreeMap<String, (Fetched, Option<Meta>)>,
    report: ModulesReport,
    warnings: Vec<String>,
}

/// Install every module of the configuration at `opts.dir`.
pub fn install(
    store: &Store,
    opts: &ModuleOptions,
) -> Result<(ModulesReport, Vec<String>), ModuleInstallError> {
    let root_meta = policy::load(&opts.dir).map_err(|message| ModuleInstallError::Meta {
        path: opts.dir.join(META_FILE),
        message,
    })?;
    let mut w = Walker {
        store,
        opts,
        http: None,
        cache: HashMap::new(),
        resolved: HashMap::new(),
        slots: Slots::default(),
        nodes: Vec::new(),
        installs: BTreeMap::new(),
        report: ModulesReport::default(),
        warnings: Vec::new(),
    };
    w.visit(None, &opts.dir.clone(), ".", None, ".", "", 0)?;
    let decisions = decide(
        &w.nodes,
        &w.installs,
        root_meta.as_ref(),
        opts.assume_read_only,
    );
    apply(store, opts, &mut w, &decisions)?;
    let mut report = w.report;
    report.calls.sort_by(|a, b| a.key.cmp(&b.key));
    report.fetched.sort();
    report.fetched.dedup();
    report.reused.sort();
    report.reused.dedup();
    Ok((report, w.warnings))
}

impl Walker<'_> {
    #[allow(clippy::too_many_arguments)]
    fn visit(
        &mut self,
        parent: Option<usize>,
        dir_abs: &Path,
        dir_rel: &str,
        install: Option<&str>,
        pkg_path: &str,
        prefix: &str,
        depth: usize,
    ) -> Result<(), ModuleInstallError> {
        // Positions name the module as the user sees it (`.terraform/modules/KEY/…`
        // under the working directory), never the store's copy of its package.
        let shown_as = match dir_rel {
            "." => self.opts.dir.clone(),
            rel => self.opts.dir.join(rel),
        };
        let module =
            config::load_module_requirements_shown_as(dir_abs, &shown_as, &self.opts.default_host)?;
        self.prefetch(&module.module_calls);
        for (name, call) in module.module_calls {
            let key = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}.{name}")
            };
            let fail = |message: String| ModuleInstallError::Call {
                at: call.at.clone(),
                key: key.clone(),
                address: call.source.clone(),
                message,
            };
            if depth + 1 > MAX_DEPTH {
                return Err(fail(format!(
                    "module calls nest more than {MAX_DEPTH} levels deep; a module probably calls itself"
                )));
            }
            let parsed = ModuleSource::parse(&call.source, &self.opts.default_host)
                .map_err(|e| fail(e.reason))?;
            let kind = parsed.kind();
            let (node, abs) = match parsed {
                ModuleSource::Unsupported { getter } => {
                    return Err(fail(format!(
                        "the {getter}:: getter is not supported by tstore (supported: local paths, \
                         module registries, git::, http(s):// archives, absolute paths)"
                    )))
                }
                ModuleSource::Local(src) => {
                    if call.version.is_some() {
                        return Err(fail(
                            "Cannot apply a version constraint to a module with a relative local path"
                                .into(),
                        ));
                    }
                    let dir = clean_join(dir_rel, &src);
                    let (new_pkg_path, abs) = match install {
                        Some(inst) => {
                            let p = clean_join(pkg_path, &src);
                            if p.starts_with("..") {
                                return Err(fail(format!(
                                    "Local module path escapes module package: {src:?} from {pkg_path:?} \
                                     leaves the package of module \"{inst}\""
                                )));
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
                    if !abs.is_dir() {
                        return Err(fail(format!(
                            "Unreadable module directory: {} does not exist or is not a directory",
                            abs.display()
                        )));
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
                        Some(v) => VersionConstraints::parse(v)
                            .map_err(|e| fail(format!("invalid version constraint: {e}")))?,
                        None => VersionConstraints::default(),
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
                    let loc_sub = match ModuleSource::parse(&location, &self.opts.default_host) {
                        Ok(ModuleSource::Remote { subdir, .. }) => subdir,
                        _ => return Err(fail(bad_location(&location))),
                    };
                    let sub = join_subdirs(&[fetched.subdir.clone(), loc_sub, subdir]);
                    self.remote_node(
                        &key,
                        &call,
                        kind,
                        Some(version.to_string()),
                        fetched,
                        sub,
                        parent,
                    )
                    .map_err(fail)?
                }
                ModuleSource::Remote { package, subdir } => {
                    if call.version.is_some() {
                        return Err(fail(
                            "Cannot apply a version constraint to a module that is not from a registry"
                                .into(),
                        ));
                    }
                    let fetched = self.fetch(&package, 0).map_err(&fail)?;
                    let sub = join_subdirs(&[fetched.subdir.clone(), subdir]);
                    self.remote_node(&key, &call, kind, None, fetched, sub, parent)
                        .map_err(fail)?
                }
            };
            let idx = self.nodes.len();
            let (dir, inst, pp) = (
                node.dir.clone(),
                node.install.clone(),
                node.pkg_path.clone(),
            );
            self.nodes.push(node);
            self.visit(Some(idx), &abs, &dir, inst.as_deref(), &pp, &key, depth + 1)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn remote_node(
        &mut self,
        key: &str,
        call: &config::ModuleCall,
        kind: &'static str,
        version: Option<String>,
        fetched: Fetched,
        subdir: Option<String>,
        parent: Option<usize>,
    ) -> Result<(Node, PathBuf), String> {
        let pkg_path = clean_join(".", subdir.as_deref().unwrap_or("."));
        if pkg_path.starts_with("..") {
            return Err(format!("subdirectory {pkg_path:?} leaves the package"));
        }
        let abs = if pkg_path == "." {
            fetched.view.clone()
        } else {
            fetched.view.join(&pkg_path)
        };
        if !abs.is_dir() {
            return Err(format!("the package has no subdirectory {pkg_path:?}"));
        }
        let meta = match policy::load(&fetched.view) {
            Ok(m) => m,
            Err(e) => {
                self.warnings.push(format!(
                    "{}: module \"{key}\": ignoring invalid {META_FILE} of package {}: {e}",
                    call.at, fetched.id
                ));
                None
            }
        };
        let mut dir = format!(".terraform/modules/{key}");
        if pkg_path != "." {
            dir = format!("{dir}/{pkg_path}");
        }
        let id = fetched.id.clone();
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
            },
            abs,
        ))
    }

    fn http(&mut self) -> Result<HttpClient, String> {
        if self.http.is_none() {
            self.http = Some(
                HttpClient::new(self.opts.network.ssl_cert_file.as_deref())
                    .map_err(|e| chain(&e))?,
            );
        }
        Ok(self.http.clone().expect("just set"))
    }

    fn fetcher(&self) -> Fetcher<'_> {
        Fetcher {
            store: self.store,
            slots: &self.slots,
            default_host: &self.opts.default_host,
            http: self.http.clone(),
        }
    }

    /// The registry's version, download location and package for `m`, resolved once per
    /// init.
    fn registry(
        &mut self,
        m: &registry::RegistryModule<'_>,
        constraints: &VersionConstraints,
    ) -> Result<Resolved, String> {
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
    fn fetch(&mut self, package: &RemotePackage, hops: usize) -> Result<Fetched, String> {
        let addr = package.to_string();
        if let Some(f) = self.cache.get(&addr) {
            return Ok(f.clone());
        }
        if package.getter == Getter::Http {
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

    /// Fetch the packages of the remote and registry calls of one module in parallel
    /// (issue 5 item 6), filling the caches `visit` then reads. Failures are left for
    /// `visit`, which retries the call alone and reports it with its file:line.
    fn prefetch(&mut self, calls: &BTreeMap<String, config::ModuleCall>) {
        enum Job<'a> {
            Remote(RemotePackage),
            Registry(String, registry::RegistryModule<'a>, VersionConstraints),
        }
        let parsed: Vec<_> = calls
            .values()
            .filter_map(|call| {
                Some((
                    ModuleSource::parse(&call.source, &self.opts.default_host).ok()?,
                    call,
                ))
            })
            .collect();
        let mut jobs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (src, call) in &parsed {
            match src {
                ModuleSource::Remote { package, .. } => {
                    let addr = package.to_string();
                    if !self.cache.contains_key(&addr) && seen.insert(addr) {
                        jobs.push(Job::Remote(package.clone()));
                    }
                }
                ModuleSource::Registry {
                    host,
                    namespace,
                    name,
                    system,
                    ..
                } => {
                    let Ok(constraints) = call
                        .version
                        .as_deref()
                        .map_or(Ok(VersionConstraints::default()), VersionConstraints::parse)
                    else {
                        continue;
                    };
                    let m = registry::RegistryModule {
                        host,
                        path: format!("{namespace}/{name}/{system}"),
                    };
                    let key = resolve_key(&m, &constraints);
                    if !self.resolved.contains_key(&key) && seen.insert(key.clone()) {
                        jobs.push(Job::Registry(key, m, constraints));
                    }
                }
                _ => {}
            }
        }
        if jobs.len() < 2 {
            return;
        }
        let needs_http = jobs.iter().any(|j| match j {
            Job::Remote(p) => p.getter == Getter::Http,
            Job::Registry(..) => true,
        });
        if needs_http && self.http().is_err() {
            return;
        }
        let progress = Progress::new(self.opts.progress, jobs.len());
        let fetcher = self.fetcher();
        let network = &self.opts.network;
        type Outcome = (
            Option<(String, Resolved)>,
            Option<(String, Fetched)>,
            FetchLog,
        );
        let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|job| {
                    let (fetcher, progress) = (&fetcher, &progress);
                    scope.spawn(move || {
                        let mut log = FetchLog::default();
                        let outcome = match job {
                            Job::Remote(p) => {
                                let label = p.to_string();
                                progress.start(&label);
                                let fetched = fetcher
                                    .fetch(p, 0, &mut log)
                                    .ok()
                                    .map(|f| (label.clone(), f));
                                progress.done(&label);
                                (None, fetched, log)
                            }
                            Job::Registry(key, m, c) => {
                                let label = format!("{}/{}", m.host, m.path);
                                progress.start(&label);
                                let resolved = fetcher
                                    .registry(network, m, c, &mut log)
                                    .ok()
                                    .map(|r| (key.clone(), r));
                                progress.done(&label);
                                (resolved, None, log)
                            }
                        };
                        outcome
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        progress.finish();
        for (resolved, fetched, log) in outcomes {
            if let Some((k, r)) = resolved {
                self.resolved.insert(k, r);
            }
            if let Some((addr, f)) = fetched {
                self.cache.entry(addr).or_insert(f);
            }
            self.report.fetched.extend(log.fetched);
            self.report.reused.extend(log.reused);
        }
    }
}

fn resolve_key(m: &registry::RegistryModule<'_>, constraints: &VersionConstraints) -> String {
    format!("{}/{} {}", m.host, m.path, constraints.to_lock_string())
}

/// A registry module's selected version, the download location the registry named for it,
/// and its package.
#[derive(Clone, Debug)]
struct Resolved {
    version: Version,
    location: String,
    fetched: Fetched,
}

fn bad_location(location: &str) -> String {
    format!("the registry's download location {location:?} is not a supported remote address")
}

/// Package ids one fetch fetched or found in the store.
#[derive(Debug, Default)]
struct FetchLog {
    fetched: Vec<String>,
    reused: Vec<String>,
}

/// Fetches packages into the store; shared by the threads of [`Walker::prefetch`].
struct Fetcher<'a> {
    store: &'a Store,
    /// Per package address, the result of its fetch in this init: the first thread to ask
    /// fetches it while the others wait, so two calls (or an `X-Terraform-Get` hop and a
    /// call) naming one address download it once.
    slots: &'a Slots,
    default_host: &'a str,
    /// Set by the walker before any http(s) or registry package is fetched.
    http: Option<HttpClient>,
}

type Slots = std::sync::Mutex<HashMap<String, std::sync::Arc<std::sync::Mutex<Option<Fetched>>>>>;

impl Fetcher<'_> {
    /// A registry module: the newest version matching `constraints` (the version listing is
    /// read every init), then its package. A (module address, exact version) names one
    /// package for good (the registry contract; spec §8), so when the store's memo for it
    /// names a package the store holds intact, neither the download endpoint nor the
    /// location it names is asked again. Locations read by the file getter (re-read every
    /// init) are not memoized.
    fn registry(
        &self,
        network: &NetworkSettings,
        m: &registry::RegistryModule<'_>,
        constraints: &VersionConstraints,
        log: &mut FetchLog,
    ) -> Result<Resolved, String> {
        let http = self
            .http
            .as_ref()
            .ok_or_else(|| "no HTTP client".to_owned())?;
        let (version, download) = registry::select(http, network, m, constraints)?;
        let memo_key = format!(
            "registry\0{}/{}\0{version}",
            m.host.to_ascii_lowercase(),
            m.path
        );
        if let Some(memo) = self.memo(&memo_key)? {
            log.reused.push(memo.package.clone());
            let mut fetched = self.fetched(&memo.package)?;
            fetched.subdir = (!memo.subdir.is_empty()).then_some(memo.subdir);
            return Ok(Resolved {
                version,
                location: memo.location,
                fetched,
            });
        }
        let location = registry::location(http, network, m, &download)?;
        let package = match ModuleSource::parse(&location, self.default_host) {
            Ok(ModuleSource::Remote { package, .. }) => package,
            _ => return Err(bad_location(&location)),
        };
        let fetched = self.fetch(&package, 0, log)?;
        if package.getter != Getter::File {
            self.remember(
                &memo_key,
                &ModuleSourceMemo {
                    package: fetched.id.clone(),
                    location: location.clone(),
                    subdir: fetched.subdir.clone().unwrap_or_default(),
                    etag: None,
                    last_modified: None,
                },
            )?;
        }
        Ok(Resolved {
            version,
            location,
            fetched,
        })
    }

    /// The store's memo for `source`, when the package it names is intact in the store.
    fn memo(&self, source: &str) -> Result<Option<ModuleSourceMemo>, String> {
        match self.store.module_source(source).map_err(|e| chain(&e))? {
            Some(memo) if self.known(&memo.package)? => Ok(Some(memo)),
            _ => Ok(None),
        }
    }

    fn remember(&self, source: &str, memo: &ModuleSourceMemo) -> Result<(), String> {
        self.store
            .record_module_source(source, memo)
            .map(|_| ())
            .map_err(|e| chain(&e))
    }

    /// The package at `package`, from the store or fetched into it (once per init).
    fn fetch(
        &self,
        package: &RemotePackage,
        hops: usize,
        log: &mut FetchLog,
    ) -> Result<Fetched, String> {
        if hops > 8 {
            return Err("too many X-Terraform-Get redirections".into());
        }
        let slot = {
            let mut slots = self
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(package.to_string()).or_default().clone()
        };
        let mut slot = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = &*slot {
            return Ok(f.clone());
        }
        let fetched = self.fetch_uncached(package, hops, log)?;
        *slot = Some(fetched.clone());
        Ok(fetched)
    }

    fn fetch_uncached(
        &self,
        package: &RemotePackage,
        hops: usize,
        log: &mut FetchLog,
    ) -> Result<Fetched, String> {
        let fetched = match package.getter {
            Getter::Git => self.fetch_git(&package.url, log)?,
            Getter::File => {
                let path = package.url.trim_start_matches("file://");
                let ingested = self
                    .store
                    .ingest_module_dir(Path::new(path))
                    .map_err(|e| chain(&e))?;
                let id = package_id("file", path, &format!("file\0{path}\0{}", ingested.tree));
                self.commit(&id, &ingested.tree, ingested.h1.into_iter().collect())?
            }
            Getter::Http => {
                let http = self
                    .http
                    .as_ref()
                    .ok_or_else(|| "no HTTP client".to_owned())?;
                let tmp = self.tmpdir()?;
                let file = tmp.path().join("archive");
                // An archive URL's package is revalidated, never trusted blindly: the memo's
                // validators make the GET conditional, and only `304` reuses its package.
                let memo_key = format!("http\0{}", package.url);
                let memo = self.memo(&memo_key)?;
                let since = memo.as_ref().map(|m| Validators {
                    etag: m.etag.clone(),
                    last_modified: m.last_modified.clone(),
                });
                match archive::fetch(http, &package.url, &file, since.as_ref())? {
                    archive::HttpFetch::NotModified => {
                        let memo = memo.expect("a conditional request needs a memo");
                        log.reused.push(memo.package.clone());
                        self.fetched(&memo.package)?
                    }
                    archive::HttpFetch::Redirect(next) => {
                        let (pkg, sub) = match ModuleSource::parse(&next, self.default_host) {
                            Ok(ModuleSource::Remote { package, subdir }) => (package, subdir),
                            _ => {
                                return Err(format!(
                                    "{} names {next:?} (X-Terraform-Get), which is not a supported \
                                     remote address",
                                    package.url
                                ))
                            }
                        };
                        let mut f = self.fetch(&pkg, hops + 1, log)?;
                        f.subdir = join_subdirs(&[f.subdir.take(), sub]);
                        f
                    }
                    archive::HttpFetch::Archive {
                        kind,
                        sha256,
                        validators,
                    } => {
                        let id = package_id(
                            "http",
                            &package.url,
                            &format!("http\0{}\0{}", package.url, hex::encode(sha256)),
                        );
                        let f =
                            self.http_archive(&id, kind, &file, tmp.path(), &package.url, log)?;
                        if validators.etag.is_some() || validators.last_modified.is_some() {
                            self.remember(
                                &memo_key,
                                &ModuleSourceMemo {
                                    package: id,
                                    location: String::new(),
                                    subdir: String::new(),
                                    etag: validators.etag,
                                    last_modified: validators.last_modified,
                                },
                            )?;
                        }
                        f
                    }
                }
            }
        };
        Ok(fetched)
    }

    /// The package `id` of a downloaded archive: found in the store, or ingested.
    fn http_archive(
        &self,
        id: &str,
        kind: archive::ArchiveKind,
        file: &Path,
        tmp: &Path,
        url: &str,
        log: &mut FetchLog,
    ) -> Result<Fetched, String> {
        if self.known(id)? {
            log.reused.push(id.to_owned());
            return self.fetched(id);
        }
        let (tree, hashes) = match kind {
            archive::ArchiveKind::Zip => {
                let a = self.store.ingest_zip(file).map_err(|e| chain(&e))?;
                (a.ingested.tree, vec![a.ingested.h1, a.zh])
            }
            archive::ArchiveKind::TarGz
            | archive::ArchiveKind::Tar
            | archive::ArchiveKind::TarXz
            | archive::ArchiveKind::TarBz2 => {
                let dest = tmp.join("x");
                fs_err::create_dir(&dest).map_err(|e| e.to_string())?;
                archive::extract_tar(file, kind, &dest, self.store.limits())
                    .map_err(|e| format!("{url}: {e}"))?;
                let i = self.store.ingest_module_dir(&dest).map_err(|e| chain(&e))?;
                (i.tree, i.h1.into_iter().collect())
            }
        };
        log.fetched.push(id.to_owned());
        self.commit(id, &tree, hashes)
    }

    fn fetch_git(&self, url: &str, log: &mut FetchLog) -> Result<Fetched, String> {
        let addr = git::GitAddress::parse(url)?;
        if let Some(commit) = git::resolve(&addr)? {
            let id = git_id(&addr.repo, &commit);
            if self.known(&id)? {
                log.reused.push(id.clone());
                return self.fetched(&id);
            }
        } else if addr
            .reference
            .as_deref()
            .is_some_and(|r| !looks_like_sha(r))
        {
            return Err(format!(
                "the repository {} has no branch or tag {:?}",
                addr.repo,
                addr.reference.as_deref().unwrap_or_default()
            ));
        }
        let tmp = self.tmpdir()?;
        let dest = tmp.path().join("checkout");
        let commit = git::checkout(&addr, &dest)?;
        let id = git_id(&addr.repo, &commit);
        let ingested = self.store.ingest_module_dir(&dest).map_err(|e| chain(&e))?;
        log.fetched.push(id.clone());
        self.commit(&id, &ingested.tree, ingested.h1.into_iter().collect())
    }

    fn tmpdir(&self) -> Result<tempfile::TempDir, String> {
        let base = self.store.root().join("tmp");
        fs_err::create_dir_all(&base).map_err(|e| e.to_string())?;
        tempfile::Builder::new()
            .prefix("module-")
            .tempdir_in(&base)
            .map_err(|e| e.to_string())
    }

    /// Whether the store holds this package intact (a damaged one is removed and fetched
    /// again rather than linked).
    fn known(&self, id: &str) -> Result<bool, String> {
        let key = PackageKey::module(id);
        Ok(self
            .store
            .trusted_package(&key)
            .map_err(|e| chain(&e))?
            .is_some()
            && self.store.view_dir(&key).map_err(|e| chain(&e))?.is_dir())
    }

    fn fetched(&self, id: &str) -> Result<Fetched, String> {
        Ok(Fetched {
            id: id.to_owned(),
            view: self
                .store
                .view_dir(&PackageKey::module(id))
                .map_err(|e| chain(&e))?,
            subdir: None,
        })
    }

    fn commit(
        &self,
        id: &str,
        tree: &tstore_store::TreeId,
        hashes: Vec<tstore_store::Hash>,
    ) -> Result<Fetched, String> {
        let key = PackageKey::module(id);
        let records: Vec<HashRecord> = hashes
            .into_iter()
            .map(HashRecord::verified_locally)
            .collect();
        self.store
            .commit_package(&key, tree, &records, None)
            .map_err(|e| chain(&e))?;
        self.fetched(id)
    }
}

fn looks_like_sha(r: &str) -> bool {
    r.len() >= 4 && r.bytes().all(|b| b.is_ascii_hexdigit())
}

fn join_subdirs(parts: &[Option<String>]) -> Option<String> {
    let joined = parts
        .iter()
        .flatten()
        .fold(".".to_owned(), |acc, p| clean_join(&acc, p));
    (joined != ".").then_some(joined)
}

fn git_id(repo: &str, commit: &str) -> String {
    package_id(
        "git",
        repo,
        &format!("git\0{repo}\0{}", commit.to_ascii_lowercase()),
    )
    .replacen(
        "git-",
        &format!("git-{}-", &commit[..commit.len().min(12)]),
        1,
    )
}

/// `<kind>-<slug>-<20 hex>` (see the module docs).
fn package_id(kind: &str, url: &str, identity: &str) -> String {
    let last = url
        .split('?')
        .next()
        .unwrap_or(url)
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    let mut slug: String = last
        .trim_end_matches(".git")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    slug = slug.trim_matches('.').to_owned();
    if slug.is_empty() {
        slug = "pkg".into();
    }
    let digest = Sha256::digest(identity.as_bytes());
    format!("{kind}-{slug}-{}", &hex::encode(digest)[..20])
}

/// The decision for one install or local copy.
#[derive(Clone, Debug)]
struct Decision {
    action: Action,
    status: ReadOnlyStatus,
    reason: String,
}

fn decide(
    nodes: &[Node],
    installs: &BTreeMap<String, (Fetched, Option<Meta>)>,
    root_meta: Option<&Meta>,
    assume_read_only: bool,
) -> Vec<Decision> {
    let meta_of = |n: &Node| -> Option<&Meta> {
        match &n.install {
            Some(k) => installs.get(k).and_then(|(_, m)| m.as_ref()),
            None => root_meta,
        }
    };
    let root_dependencies = root_meta.and_then(|m| m.modules.get(".").and_then(|r| r.dependencies));
    let statuses: Vec<(ReadOnlyStatus, String)> = nodes
        .iter()
        .map(|n| {
            let mut inherited = None;
            let mut cur = n.parent;
            while let Some(i) = cur {
                if let Some(m) = meta_of(&nodes[i]) {
                    inherited = Some(m.entry(&nodes[i].pkg_path).dependencies.unwrap_or(true));
                    break;
                }
                cur = nodes[i].parent;
            }
            if inherited.is_none() {
                inherited = root_meta.map(|m| m.entry(".").dependencies.unwrap_or(true));
            }
            let own = meta_of(n).map(|m| (m, n.pkg_path.as_str()));
            policy::decide(&policy::Facts {
                own,
                inherited,
                root_dependencies,
            })
        })
        .collect();
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (status, reason) = statuses[i].clone();
            let is_install_root = n.install.as_deref() == Some(n.key.as_str());
            if is_install_root {
                // The whole instance: this module and every local module loaded from it.
                let members: Vec<usize> = (0..nodes.len())
                    .filter(|&j| nodes[j].install.as_deref() == Some(n.key.as_str()))
                    .collect();
                let worst = members
                    .iter()
                    .find(|&&j| statuses[j].0 == ReadOnlyStatus::SelfModifying)
                    .or_else(|| {
                        members
                            .iter()
                            .find(|&&j| statuses[j].0 == ReadOnlyStatus::Unknown)
                    });
                let (action, why) = match worst {
                    Some(&j) if statuses[j].0 == ReadOnlyStatus::SelfModifying => {
                        (Action::Copy, describe(&nodes[j], i == j, &statuses[j].1))
                    }
                    Some(&j) if assume_read_only => (
                        Action::Link,
                        format!(
                            "{}; linked because read-only is assumed",
                            describe(&nodes[j], i == j, &statuses[j].1)
                        ),
                    ),
                    Some(&j) => (
                        Action::Copy,
                        format!(
                            "{}; copied, the compatible default (--assume-read-only links)",
                            describe(&nodes[j], i == j, &statuses[j].1)
                        ),
                    ),
                    None => (
                        Action::Link,
                        format!("every module in the package instance is read-only: {reason}"),
                    ),
                };
                Decision {
                    action,
                    status,
                    reason: why,
                }
            } else if n.install.is_none() && status == ReadOnlyStatus::SelfModifying {
                Decision {
                    action: Action::Copy,
                    status,
                    reason: format!(
                        "{reason}; a local module of the root package gets its own copy"
                    ),
                }
            } else {
                Decision {
                    action: Action::InPlace,
                    status,
                    reason: if n.install.is_some() {
                        format!(
                            "inside the install of module \"{}\"; {reason}",
                            n.install.as_deref().unwrap_or("")
                        )
                    } else {
                        format!("local path, read in place; {reason}")
                    },
                }
            }
        })
        .collect()
}

fn describe(n: &Node, same: bool, reason: &str) -> String {
    if same {
        reason.to_owned()
    } else {
        format!("module \"{}\": {reason}", n.key)
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
struct InstallState {
    package: String,
    action: String,
}

fn apply(
    store: &Store,
    opts: &ModuleOptions,
    w: &mut Walker<'_>,
    decisions: &[Decision],
) -> Result<(), ModuleInstallError> {
    let modules_dir = opts.dir.join(".terraform/modules");
    if w.nodes.is_empty() && !modules_dir.exists() {
        // No module calls and nothing installed before: leave the directory untouched.
        return Ok(());
    }
    let werr = |path: &Path, e: &dyn std::fmt::Display| ModuleInstallError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    fs_err::create_dir_all(&modules_dir).map_err(|e| werr(&modules_dir, &e))?;
    let state_path = modules_dir.join(STATE_FILE);
    let old: BTreeMap<String, InstallState> = fs_err::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut new: BTreeMap<String, InstallState> = BTreeMap::new();
    let mut records = Vec::new();
    for (i, n) in w.nodes.clone().iter().enumerate() {
        let d = &decisions[i];
        let mut dir = n.dir.clone();
        let target_path = modules_dir.join(&n.key);
        match d.action {
            Action::Link => {
                let id = n.package.clone().expect("remote installs have a package");
                let target = opts.mount.join("modules").join(&id);
                remove_unless_symlink(&target_path).map_err(|e| werr(&target_path, &e))?;
                crate::workdir::link::ensure_symlink(&target_path, &target)
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
                    dir = format!(".terraform/modules/{}", n.key);
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

fn remove_unless_symlink(p: &Path) -> std::io::Result<()> {
    match fs_err::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => Ok(()),
        Ok(_) => remove_any(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Remove a file, symlink (never following it) or directory tree; absent is fine.
fn remove_any(p: &Path) -> std::io::Result<()> {
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
fn copy_tree(src: &Path, dest: &Path) -> std::io::Result<()> {
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
