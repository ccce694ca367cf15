//! The fetch state of one install: what this init has already fetched, resolved or found,
//! so that each package address, registry resolution and pinned package is asked once per
//! init, whether the walk asks or its prefetch did; and the prefetch's parallel run, which
//! fills that state before the walk reads it.
//!
//! Rules:
//! - A registry resolution asked `fresh` (without believing the store's memo: `-upgrade`,
//!   or a memo whose package is not the one a lock entry pins) is asked fresh once per init;
//!   a resolution made from the memo does not answer a fresh question.
//! - A failed fetch or resolution is not remembered: the walk asks again, alone, and reports
//!   the failure with the call's file:line.
//! - The HTTP client (TLS roots read, an agent built) is made only when a network getter or
//!   a registry is first asked.

use std::collections::{HashMap, HashSet};

use tstore_store::Store;
use tstore_tofu::module_source::{Getter, RemotePackage};
use tstore_tofu::version::ModuleVersionConstraints;

use super::pool::{run_bounded, MAX_FETCHES, MAX_PER_HOST};
use super::{resolve_key, FetchLog, Fetched, Fetcher, Resolved, Slots};
use crate::modules::getters::registry::RegistryModule;
use crate::modules::mirror::ModuleMirror;
use crate::modules::FetchError;
use crate::net::http::HttpClient;
use crate::net::oci::OciClient;
use crate::net::NetworkSettings;
use crate::report::{Event, Reporter};

mod pins;
pub(in crate::modules) use pins::MirrorAsk;

/// One job of a prefetch: what one call needs that this init does not have yet.
pub(in crate::modules) enum Job<'m> {
    /// A package address to fetch (a pinned git call: at its locked commit).
    Package(RemotePackage),
    /// A registry module's version, location and package for a selection, chosen under the
    /// cooldown when one is given (a call the lock does not pin).
    Registry(
        RegistryModule<'m>,
        ModuleVersionConstraints,
        Option<crate::ReleaseAge>,
    ),
}

/// The fetch state of one install.
pub(in crate::modules) struct FetchSession<'a> {
    store: &'a Store,
    network: &'a NetworkSettings,
    default_host: &'a str,
    http: Option<HttpClient>,
    /// Per package address, the result of its fetch in flight (see [`Fetcher::slots`]).
    slots: Slots,
    /// Package address → its package, fetched or found in this init.
    packages: HashMap<String, Fetched>,
    /// Registry resolutions (`HOST/PATH CONSTRAINTS` → version, location, package).
    resolved: HashMap<String, Resolved>,
    /// The keys of `resolved` asked of the registry without the store's memo.
    asked_fresh: HashSet<String>,
    /// The keys of `resolved` whose version the registry's listing chose (not the store).
    asked_registry: HashSet<String>,
    /// A pinned package's lookup in the store, by address and pin.
    stored_pins: HashMap<String, Option<Fetched>>,
    /// The package ids fetched and found in the store so far.
    log: FetchLog,
    /// Where download progress goes.
    reporter: &'a dyn crate::report::Reporter,
    /// The module mirror pinned packages the store lacks are asked of first, and its
    /// client (made when first asked).
    mirror: Option<&'a ModuleMirror>,
    mirror_client: Option<OciClient>,
    /// Why the mirror did not serve a lock entry (by the entry's hashes), for the walk to
    /// say where the call went to its origin.
    mirror_misses: HashMap<String, String>,
    /// The run this install is part of (its remotes' answers).
    run: &'a crate::Run,
}

impl<'a> FetchSession<'a> {
    pub(in crate::modules) fn new(
        store: &'a Store,
        network: &'a NetworkSettings,
        default_host: &'a str,
        reporter: &'a dyn crate::report::Reporter,
        mirror: Option<&'a ModuleMirror>,
        run: &'a crate::Run,
    ) -> FetchSession<'a> {
        FetchSession {
            run,
            reporter,
            mirror,
            mirror_client: None,
            mirror_misses: HashMap::new(),
            store,
            network,
            default_host,
            http: None,
            slots: Slots::default(),
            packages: HashMap::new(),
            resolved: HashMap::new(),
            asked_fresh: HashSet::new(),
            asked_registry: HashSet::new(),
            stored_pins: HashMap::new(),
            log: FetchLog::default(),
        }
    }

    /// The package ids fetched and found in the store by this init.
    pub(in crate::modules) fn into_log(self) -> FetchLog {
        self.log
    }

    fn http(&mut self) -> Result<HttpClient, FetchError> {
        if self.http.is_none() {
            self.http = Some(self.network.http_client().map_err(FetchError::from)?);
        }
        Ok(self.http.clone().expect("just set"))
    }

    fn fetcher(&self) -> Fetcher<'_> {
        Fetcher {
            run: self.run,
            store: self.store,
            slots: &self.slots,
            default_host: self.default_host,
            http: self.http.clone(),
            network: self.network,
            reporter: self.reporter,
            mirror: self.mirror.zip(self.mirror_client.as_ref()),
        }
    }

    /// Keep what one fetch logged, and hand on its result.
    fn logged<T>(&mut self, log: FetchLog, result: T) -> T {
        self.log.fetched.extend(log.fetched);
        self.log.reused.extend(log.reused);
        self.log.mirrored.extend(log.mirrored);
        result
    }

    /// The package at `package`, from this init's packages, the store, or fetched into it.
    pub(in crate::modules) fn fetch(
        &mut self,
        package: &RemotePackage,
        hops: usize,
    ) -> Result<Fetched, FetchError> {
        let addr = package.to_string();
        if let Some(f) = self.packages.get(&addr) {
            return Ok(f.clone());
        }
        if matches!(package.getter, Getter::Http | Getter::Oci) {
            self.http()?;
        }
        let mut log = FetchLog::default();
        let result = self.fetcher().fetch(package, hops, &mut log);
        let fetched = self.logged(log, result)?;
        self.packages.insert(addr, fetched.clone());
        Ok(fetched)
    }

    /// Whether this init has the package at `addr` already.
    pub(in crate::modules) fn has_package(&self, addr: &str) -> bool {
        self.packages.contains_key(addr)
    }

    /// The registry's version, download location and package for `m`, resolved once per
    /// init; `fresh`: without believing the store's memo of a version (see
    /// [`Fetcher::registry`]), once per init too.
    pub(in crate::modules) fn registry(
        &mut self,
        m: &RegistryModule<'_>,
        constraints: &ModuleVersionConstraints,
        fresh: bool,
        cooldown: Option<&crate::ReleaseAge>,
    ) -> Result<Resolved, FetchError> {
        let key = resolve_key(m, constraints);
        // Under the cooldown the registry's dates decide: no memo of an earlier choice.
        let cooldown =
            cooldown.filter(|p| p.applies_to(&crate::modules::getters::registry::forms(m)));
        let asked_fresh = self.asked_fresh.contains(&key);
        if let Some(r) = self.resolved.get(&key).filter(|_| !fresh || asked_fresh) {
            return Ok(r.clone());
        }
        let mut log = FetchLog::default();
        let from_store = if fresh || cooldown.is_some() {
            None
        } else {
            self.fetcher()
                .registry_from_store(m, constraints, &mut log)?
        };
        let asked = from_store.is_none();
        let result = match from_store {
            Some(resolved) => Ok(resolved),
            None => {
                self.http()?;
                if cooldown.is_some() {
                    self.mirror()?;
                }
                self.fetcher()
                    .registry(self.network, m, constraints, fresh, cooldown, &mut log)
            }
        };
        let r = self.logged(log, result)?;
        if fresh {
            self.asked_fresh.insert(key.clone());
        }
        if asked {
            self.asked_registry.insert(key.clone());
        }
        self.resolved.insert(key, r.clone());
        Ok(r)
    }

    /// Whether this init asked the registry to choose `m`'s version at `constraints`.
    pub(in crate::modules) fn asked_registry(
        &self,
        m: &RegistryModule<'_>,
        constraints: &ModuleVersionConstraints,
    ) -> bool {
        self.asked_registry.contains(&resolve_key(m, constraints))
    }

    /// Whether this init has a resolution of `m` at `constraints`, or can make one from the
    /// store's memo without the registry (never under `fresh`).
    pub(in crate::modules) fn has_resolution(
        &mut self,
        m: &RegistryModule<'_>,
        constraints: &ModuleVersionConstraints,
        fresh: bool,
    ) -> bool {
        let key = resolve_key(m, constraints);
        if self.resolved.contains_key(&key) {
            return true;
        }
        if fresh {
            return false;
        }
        let mut log = FetchLog::default();
        let from_store = self.fetcher().registry_from_store(m, constraints, &mut log);
        match self.logged(log, from_store) {
            Ok(Some(r)) => {
                self.resolved.insert(key, r);
                true
            }
            _ => false,
        }
    }

    /// `fetched` without the entries whose name starts with `.` (at any depth).
    pub(in crate::modules) fn without_dot_entries(
        &mut self,
        fetched: &Fetched,
    ) -> Result<Fetched, FetchError> {
        let mut log = FetchLog::default();
        let result = self.fetcher().without_dot_entries(fetched, &mut log);
        self.logged(log, result)
    }

    /// Run `jobs` in parallel (bounded: `pool.rs`),
    /// keeping what each found; `fresh`: registry resolutions not from the store's memo.
    /// Fewer than two jobs are left for the walk, which asks one by one anyway.
    pub(in crate::modules) fn prefetch(
        &mut self,
        jobs: &[Job<'_>],
        fresh: bool,
        reporter: &dyn Reporter,
    ) {
        if jobs.len() < 2 {
            return;
        }
        let needs_http = jobs.iter().any(|j| match j {
            Job::Package(p) => matches!(p.getter, Getter::Http | Getter::Oci),
            Job::Registry(..) => true,
        });
        if needs_http && self.http().is_err() {
            return;
        }
        let dated = jobs
            .iter()
            .any(|j| matches!(j, Job::Registry(_, _, Some(_))));
        if dated && self.mirror().is_err() {
            return;
        }
        reporter.event(Event::FetchingModulePackages { total: jobs.len() });
        type Outcome = (
            Option<(String, Resolved)>,
            Option<(String, Fetched)>,
            FetchLog,
        );
        let host_of = |job: &Job<'_>| match job {
            Job::Package(p) => url::Url::parse(&p.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| p.url.split(':').next().unwrap_or_default().to_owned()),
            Job::Registry(m, ..) => m.host.to_string(),
        };
        let fetcher = &self.fetcher();
        let network = self.network;
        let outcomes: Vec<Outcome> = run_bounded(jobs, MAX_FETCHES, MAX_PER_HOST, host_of, |job| {
            let mut log = FetchLog::default();
            match job {
                Job::Package(p) => {
                    let label = p.to_string();
                    reporter.event(Event::ModulePackageStarted { package: &label });
                    let fetched = fetcher
                        .fetch(p, 0, &mut log)
                        .ok()
                        .map(|f| (label.clone(), f));
                    reporter.event(Event::ModulePackageFinished { package: &label });
                    (None, fetched, log)
                }
                Job::Registry(m, c, cooldown) => {
                    let label = format!("{}/{}", m.host, m.path);
                    reporter.event(Event::ModulePackageStarted { package: &label });
                    let cooldown = cooldown
                        .as_ref()
                        .filter(|p| p.applies_to(&crate::modules::getters::registry::forms(m)));
                    let resolved = fetcher
                        .registry(network, m, c, fresh, cooldown, &mut log)
                        .ok()
                        .map(|r| (resolve_key(m, c), r));
                    reporter.event(Event::ModulePackageFinished { package: &label });
                    (resolved, None, log)
                }
            }
        });
        reporter.event(Event::FetchedModulePackages);
        for (resolved, fetched, log) in outcomes {
            if let Some((k, r)) = resolved {
                if fresh {
                    self.asked_fresh.insert(k.clone());
                }
                self.asked_registry.insert(k.clone());
                self.resolved.insert(k, r);
            }
            if let Some((addr, f)) = fetched {
                self.packages.entry(addr).or_insert(f);
            }
            self.logged(log, ());
        }
    }
}
