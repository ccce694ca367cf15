//! The packages of one module's calls, fetched in parallel before the walk visits them.

use std::collections::BTreeMap;

use tstore_tofu::config;
use tstore_tofu::version::ModuleVersionConstraints;

use super::fetch::FetchLog;
use super::progress::Progress;
use super::registry;
use super::source::{Getter, ModuleSource, RemotePackage};
use super::walk::{resolve_key, Fetched, Resolved, Walker};

impl Walker<'_> {
    /// Fetch the packages of the remote and registry calls of one module in parallel, filling
    /// the caches `visit` then reads. Failures are left for `visit`, which retries the call
    /// alone and reports it with its file:line.
    pub(super) fn prefetch(&mut self, calls: &BTreeMap<String, config::ModuleCall>) {
        enum Job<'a> {
            Remote(RemotePackage),
            Registry(
                String,
                registry::RegistryModule<'a>,
                ModuleVersionConstraints,
            ),
        }
        let parsed: Vec<_> = calls
            .values()
            .filter_map(|call| {
                Some((
                    ModuleSource::parse(&call.source, self.opts.flavor.default_registry_host())
                        .ok()?,
                    call,
                ))
            })
            .collect();
        let mut jobs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (src, call) in &parsed {
            match src {
                ModuleSource::Remote { package, .. } if package.getter != Getter::File => {
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
            Job::Remote(p) => matches!(p.getter, Getter::Http | Getter::Oci),
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
