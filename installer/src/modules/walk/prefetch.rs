//! The packages of one module's calls fetched in parallel before the walk reads them one
//! by one: each call's [`plan`](super::plan) turned into a job of the fetch session when
//! this init lacks what it needs (a pinned package the store holds needs none). A failure
//! is left for the walk, which asks that call alone and reports it with its file:line.

use std::collections::{BTreeMap, HashSet};

use tstore_tofu::config::ModuleCall;
use tstore_tofu::module_source::ModuleSource;

use super::plan::Plan;
use super::{pins, Walker};
use crate::modules::fetch::{resolve_key, Job, MirrorAsk};

impl<'a> Walker<'a> {
    /// Fetch the packages of the calls of one module in parallel (`prefix`: the key of the
    /// module whose calls these are). A call the module lock file pins is fetched by its
    /// pin (a registry's locked version, a git call's commit), or not at all when the store
    /// holds the pinned package.
    pub(super) fn prefetch(&mut self, prefix: &str, calls: &BTreeMap<String, ModuleCall>) {
        let default_host = self.opts.workdir.flavor.default_registry_host();
        let sources: Vec<_> = calls
            .iter()
            .filter_map(|(name, call)| {
                let key = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                let source = ModuleSource::parse(&call.source, default_host).ok()?;
                Some((key, source, call))
            })
            .collect();
        let upgrade = self.opts.workdir.upgrade;
        let plans: Vec<_> = sources
            .iter()
            .map(|(key, source, call)| (key, call, self.plan(key, source, call.version.as_deref())))
            .collect();
        // What the lock pins and the store lacks, asked of the module mirror all at once.
        let asks: Vec<MirrorAsk<'_, '_>> = plans
            .iter()
            .filter_map(|(_, _, plan)| match plan {
                Ok(Plan::Remote(plan)) => plan.pinned.map(|entry| MirrorAsk::Package {
                    package: plan.package,
                    entry,
                }),
                Ok(Plan::Registry(plan)) => {
                    plan.pinned
                        .as_ref()
                        .map(|(entry, version)| MirrorAsk::Registry {
                            module: &plan.module,
                            selection: &plan.selection,
                            version,
                            entry,
                        })
                }
                _ => None,
            })
            .collect();
        self.session.ask_mirror(&asks);
        drop(asks);
        let mut jobs = Vec::new();
        // The call that asked for each job, to say "Downloading … for KEY..." before it.
        let mut asked: Vec<(&str, &str)> = Vec::new();
        let mut seen = HashSet::new();
        for (key, call, plan) in plans {
            match plan {
                Ok(Plan::Remote(plan)) => {
                    let fetch = match plan.pinned {
                        Some(entry) => {
                            if matches!(
                                self.session.pinned_without_origin(plan.package, entry),
                                Ok(Some(_))
                            ) {
                                continue;
                            }
                            match pins::pinned_address(plan.package, entry) {
                                Ok(pinned) => pinned,
                                Err(_) => continue,
                            }
                        }
                        None => plan.package.clone(),
                    };
                    let addr = fetch.to_string();
                    if !self.session.has_package(&addr) && seen.insert(addr) {
                        jobs.push(Job::Package(fetch));
                        asked.push((call.source.as_str(), key.as_str()));
                    }
                }
                Ok(Plan::Registry(plan)) => {
                    if let Some((entry, version)) = &plan.pinned {
                        // A failure is left for the walk, which asks again and says it.
                        let _ = self.session.registry_pinned(
                            &plan.module,
                            &plan.selection,
                            version,
                            entry,
                        );
                    }
                    if !seen.insert(resolve_key(&plan.module, &plan.selection))
                        || self
                            .session
                            .has_resolution(&plan.module, &plan.selection, upgrade)
                    {
                        continue;
                    }
                    // The cooldown governs choosing: a version the lock names is as locked.
                    let cooldown = match plan.pinned {
                        Some(_) => None,
                        None => self.opts.workdir.release_age.clone(),
                    };
                    // Its "Downloading" line names the version chosen: the walk says it.
                    jobs.push(Job::Registry(plan.module, plan.selection, cooldown));
                }
                Ok(Plan::Local(_) | Plan::Directory { .. } | Plan::Unsupported(_)) | Err(_) => {}
            }
        }
        // Fewer than two jobs are left for the walk, which says them as it fetches.
        if jobs.len() >= 2 {
            for (source, key) in &asked {
                self.reporter
                    .event(crate::report::Event::DownloadingModule { source, key });
            }
        }
        self.session.prefetch(&jobs, upgrade, self.reporter);
    }
}
