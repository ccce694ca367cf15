//! The packages of one module's calls fetched in parallel before the walk reads them one
//! by one: each package address or registry resolution a job, run bounded (`pool.rs`: a
//! few at once, fewer per host), each result left in the walker's caches. A failure is
//! left for the walk, which retries that call alone and reports it with its file:line.

use std::collections::{BTreeMap, HashSet};

use tstore_tofu::config::ModuleCall;
use tstore_tofu::module_source::{Getter, ModuleSource, RemotePackage};
use tstore_tofu::version::ModuleVersionConstraints;

use super::Walker;
use crate::modules::fetch::{resolve_key, FetchLog, Fetched, Resolved};
use crate::modules::getters::registry;
use crate::report::Event;

impl<'a> Walker<'a> {
    /// Fetch the packages of the remote and registry calls of one module in parallel, filling
    /// the caches `visit` then reads. Failures are left for `visit`, which retries the call
    /// alone and reports it with its file:line.
    /// `prefix`: the key of the module whose calls these are. A call the module lock file
    /// pins is fetched by its pin (a registry's locked version), or not at all when the store
    /// holds the pinned package.
    pub(super) fn prefetch(&mut self, prefix: &str, calls: &BTreeMap<String, ModuleCall>) {
        enum Job<'a> {
            Remote(RemotePackage),
            Registry(
                String,
                registry::RegistryModule<'a>,
                ModuleVersionConstraints,
            ),
        }
        let parsed: Vec<_> = calls
            .iter()
            .filter_map(|(name, call)| {
                let key = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                let source = ModuleSource::parse(
                    &call.source,
                    self.opts.workdir.flavor.default_registry_host(),
                )
                .ok()?;
                Some((key, source, call))
            })
            .collect();
        let mut jobs = Vec::new();
        let mut seen = HashSet::new();
        for (key, src, call) in &parsed {
            match src {
                ModuleSource::Remote { package, subdir } if package.getter != Getter::File => {
                    let mut fetch = package.clone();
                    if let Ok((_, _, Some(entry))) =
                        self.remote_pin(key, package, subdir.as_deref())
                    {
                        if matches!(self.stored_pinned(package, entry), Ok(Some(_))) {
                            continue;
                        }
                        // A pinned call is fetched by its pin (a git call by its commit).
                        match super::pins::pinned_address(package, entry) {
                            Ok(pinned) => fetch = pinned,
                            Err(_) => continue,
                        }
                    }
                    let addr = fetch.to_string();
                    if !self.cache.contains_key(&addr) && seen.insert(addr) {
                        jobs.push(Job::Remote(fetch));
                    }
                }
                ModuleSource::Registry {
                    host,
                    namespace,
                    name,
                    system,
                    subdir,
                } => {
                    let Ok(constraints) = call.version.as_deref().map_or(
                        Ok(ModuleVersionConstraints::default()),
                        ModuleVersionConstraints::parse,
                    ) else {
                        continue;
                    };
                    let m = registry::RegistryModule {
                        host,
                        path: format!("{namespace}/{name}/{system}"),
                    };
                    let selection =
                        match self.registry_pin(key, &m, subdir.as_deref(), &constraints) {
                            (_, Some((_, v))) => match super::pins::exact(&v) {
                                Ok(exact) => exact,
                                Err(_) => continue,
                            },
                            (_, None) => constraints,
                        };
                    let key = resolve_key(&m, &selection);
                    if self.resolved.contains_key(&key) || !seen.insert(key.clone()) {
                        continue;
                    }
                    // An exact version the store holds needs no thread and no registry
                    // (under `-upgrade` the store's memo is not believed).
                    let mut log = FetchLog::default();
                    let from_store = if self.opts.workdir.upgrade {
                        Ok(None)
                    } else {
                        self.fetcher().registry_from_store(&m, &selection, &mut log)
                    };
                    if let Ok(Some(r)) = from_store {
                        self.tree.reused.extend(log.reused);
                        self.resolved.insert(key, r);
                        continue;
                    }
                    jobs.push(Job::Registry(key, m, selection));
                }
                _ => {}
            }
        }
        if jobs.len() < 2 {
            return;
        }
        let needs_http = jobs.iter().any(|j| match j {
            Job::Remote(p) => matches!(p.getter, Getter::Http | Getter::Oci),
            Job::Registry(..) => true,
        });
        if needs_http && self.http().is_err() {
            return;
        }
        let reporter = self.reporter;
        reporter.event(Event::FetchingModulePackages { total: jobs.len() });
        let fetcher = self.fetcher();
        let network = &self.opts.workdir.network;
        let upgrade = self.opts.workdir.upgrade;
        type Outcome = (
            Option<(String, Resolved)>,
            Option<(String, Fetched)>,
            FetchLog,
        );
        let host_of = |job: &Job<'_>| match job {
            Job::Remote(p) => url::Url::parse(&p.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| p.url.split(':').next().unwrap_or_default().to_owned()),
            Job::Registry(_, m, _) => m.host.to_string(),
        };
        let fetcher = &fetcher;
        let outcomes: Vec<Outcome> = super::pool::run_bounded(
            &jobs,
            super::pool::MAX_FETCHES,
            super::pool::MAX_PER_HOST,
            host_of,
            |job| {
                let mut log = FetchLog::default();
                match job {
                    Job::Remote(p) => {
                        let label = p.to_string();
                        reporter.event(Event::ModulePackageStarted { package: &label });
                        let fetched = fetcher
                            .fetch(p, 0, &mut log)
                            .ok()
                            .map(|f| (label.clone(), f));
                        reporter.event(Event::ModulePackageFinished { package: &label });
                        (None, fetched, log)
                    }
                    Job::Registry(key, m, c) => {
                        let label = format!("{}/{}", m.host, m.path);
                        reporter.event(Event::ModulePackageStarted { package: &label });
                        let resolved = fetcher
                            .registry(network, m, c, upgrade, &mut log)
                            .ok()
                            .map(|r| (key.clone(), r));
                        reporter.event(Event::ModulePackageFinished { package: &label });
                        (resolved, None, log)
                    }
                }
            },
        );
        reporter.event(Event::FetchedModulePackages);
        for (resolved, fetched, log) in outcomes {
            if let Some((k, r)) = resolved {
                if upgrade {
                    self.asked_fresh.insert(k.clone());
                }
                self.resolved.insert(k, r);
            }
            if let Some((addr, f)) = fetched {
                self.cache.entry(addr).or_insert(f);
            }
            self.tree.fetched.extend(log.fetched);
            self.tree.reused.extend(log.reused);
        }
    }
}
