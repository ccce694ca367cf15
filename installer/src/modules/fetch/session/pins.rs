//! A pinned call without its origin: the package or registry resolution a lock entry pins,
//! from the store, else from the module mirror (`fetch::mirror` has the rules of what a
//! mirror's answer may name), asked one by one by the walk or all at once by its prefetch.

use std::collections::HashSet;

use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{Getter, RemotePackage};
use tstore_tofu::version::{ModuleVersionConstraints, Version};

use super::FetchSession;
use crate::modules::fetch::mirror::FromMirror;
use crate::modules::fetch::pool::{run_bounded, MAX_FETCHES, MAX_PER_HOST};
use crate::modules::fetch::{resolve_key, FetchLog, Fetched, Resolved};
use crate::modules::getters::git_reach::MirrorRecord;
use crate::modules::getters::registry::RegistryModule;
use crate::modules::locked;
use crate::modules::mirror::{ModuleMirror, Resolution};
use crate::modules::FetchError;
use crate::net::oci::OciClient;

/// One pinned call the module mirror may serve.
#[derive(Clone, Copy)]
pub(in crate::modules) enum MirrorAsk<'p, 'm> {
    /// A pinned package address (a git call at its locked commit, an archive URL).
    Package {
        package: &'p RemotePackage,
        entry: &'p ModuleLockEntry,
    },
    /// A registry call the lock pins at `version`, selected by `selection`.
    Registry {
        module: &'p RegistryModule<'m>,
        selection: &'p ModuleVersionConstraints,
        version: &'p Version,
        entry: &'p ModuleLockEntry,
    },
}

/// What the mirror answered for one [`MirrorAsk`].
enum MirrorAnswer {
    Package(FromMirror<Fetched>),
    Registry(FromMirror<(Resolution, Fetched)>),
}

impl<'a> FetchSession<'a> {
    /// The package of a pinned call without asking its origin: from the store (a git
    /// entry's commit, the package an archive URL or OCI layer last gave when it has the
    /// entry's hash, a tree with the entry's `h1:`), then from the module mirror. `None`:
    /// it has to be fetched from its origin (and is then checked against the entry). Asked
    /// by the prefetch, then by the walk: the store and the mirror are asked once per init.
    pub(in crate::modules) fn pinned_without_origin(
        &mut self,
        package: &RemotePackage,
        entry: &ModuleLockEntry,
    ) -> Result<Option<Fetched>, FetchError> {
        let memo_key = pin_key(package, entry);
        if let Some(found) = self.stored_pins.get(&memo_key) {
            return Ok(found.clone());
        }
        let found = match self.stored_pin(package, entry)? {
            Some(f) => Some(f),
            None => match self.mirror()? {
                Some(mirror) => {
                    let client = self.mirror_client.as_ref().expect("made by mirror()");
                    let mut log = FetchLog::default();
                    let asked = self
                        .fetcher()
                        .pinned_from_mirror(mirror, client, package, entry, &mut log)?;
                    self.logged(log, ());
                    match asked {
                        FromMirror::Found(f) => Some(f),
                        FromMirror::Missing(why) => {
                            self.mirror_misses.insert(miss_key(entry), why);
                            None
                        }
                    }
                }
                None => None,
            },
        };
        self.stored_pins.insert(memo_key, found.clone());
        Ok(found)
    }

    /// The package of a pinned call from the store alone (see
    /// [`FetchSession::pinned_without_origin`]).
    fn stored_pin(
        &mut self,
        package: &RemotePackage,
        entry: &ModuleLockEntry,
    ) -> Result<Option<Fetched>, FetchError> {
        let mut log = FetchLog::default();
        let found = match (&package.getter, &entry.commit) {
            (Getter::Git, Some(commit)) => {
                self.fetcher()
                    .stored_git_commit(&package.url, commit, &mut log)?
            }
            (Getter::Http, _) => match self.fetcher().stored_archive(&package.url)? {
                Some(f)
                    if locked::package_hashes(self.store, &f)?
                        .iter()
                        .any(|h| entry.hashes.contains(h)) =>
                {
                    log.reused.push(f.id.clone());
                    Some(f)
                }
                _ => None,
            },
            _ => None,
        };
        // Not under its name: content with the entry's h1: (a restored store's verified
        // trees, what a module mirror served before), which the entry vouches for.
        let found = match found {
            Some(f) => Some(f),
            None => self.fetcher().mirrored_before(package, entry, &mut log)?,
        };
        let found = match found {
            Some(f) => Some(f),
            None => self
                .fetcher()
                .stored_by_lock_hash(package, entry, &mut log)?,
        };
        Ok(self.logged(log, found))
    }

    /// Ask the module mirror, in parallel (bounded: `pool.rs`), for what `asks` pin that
    /// neither this init nor the store has, keeping each answer as the one-by-one asks
    /// would ([`FetchSession::pinned_without_origin`], [`FetchSession::registry_pinned`]),
    /// which then find it. A failure is not kept: the walk asks that call again, alone, and
    /// reports it with its file:line. Fewer than two asks are left to the walk.
    pub(in crate::modules) fn ask_mirror(&mut self, asks: &[MirrorAsk<'_, '_>]) {
        if asks.len() < 2 {
            return;
        }
        let Ok(Some(mirror)) = self.mirror() else {
            return;
        };
        let mut todo = Vec::new();
        let mut seen = HashSet::new();
        let mut pinned_trees = HashSet::new();
        for ask in asks {
            let wanted = match *ask {
                MirrorAsk::Package { package, entry } => {
                    let key = pin_key(package, entry);
                    if self.stored_pins.contains_key(&key) || !seen.insert(key.clone()) {
                        continue;
                    }
                    match self.stored_pin(package, entry) {
                        Ok(None) => true,
                        Ok(Some(found)) => {
                            self.stored_pins.insert(key, Some(found));
                            false
                        }
                        Err(_) => false,
                    }
                }
                MirrorAsk::Registry {
                    module,
                    selection,
                    entry,
                    ..
                } => {
                    seen.insert(resolve_key(module, selection))
                        && !self.has_resolution(module, selection, false)
                        && !self.mirror_misses.contains_key(&miss_key(entry))
                }
            };
            // One content is downloaded once: an ask whose entry pins a tree another ask
            // fetches is left for the walk, which then finds that tree in the store.
            let entry = match *ask {
                MirrorAsk::Package { entry, .. } | MirrorAsk::Registry { entry, .. } => entry,
            };
            let h1s = crate::modules::fetch::mirror::entry_h1s(entry);
            if wanted && h1s.iter().all(|h| !pinned_trees.contains(h)) {
                pinned_trees.extend(h1s);
                todo.push(ask);
            }
        }
        if todo.is_empty() {
            return;
        }
        let client = self.mirror_client.as_ref().expect("made by mirror()");
        let fetcher = &self.fetcher();
        let host = mirror.to_string();
        let answers = run_bounded(
            &todo,
            MAX_FETCHES,
            MAX_PER_HOST,
            |_| host.clone(),
            |ask| {
                let mut log = FetchLog::default();
                let answer = match **ask {
                    MirrorAsk::Package { package, entry } => fetcher
                        .pinned_from_mirror(mirror, client, package, entry, &mut log)
                        .map(MirrorAnswer::Package),
                    MirrorAsk::Registry {
                        module,
                        version,
                        entry,
                        ..
                    } => {
                        let name = format!("{}/{}", module.host.to_ascii_lowercase(), module.path);
                        fetcher
                            .registry_from_mirror(
                                mirror,
                                client,
                                &name,
                                &version.to_string(),
                                entry,
                                &mut log,
                            )
                            .map(MirrorAnswer::Registry)
                    }
                };
                (answer, log)
            },
        );
        for (ask, (answer, log)) in todo.into_iter().zip(answers) {
            let Ok(answer) = self.logged(log, answer) else {
                continue;
            };
            match (ask, answer) {
                (MirrorAsk::Package { package, entry }, MirrorAnswer::Package(found)) => {
                    let found = match found {
                        FromMirror::Found(f) => Some(f),
                        FromMirror::Missing(why) => {
                            self.mirror_misses.insert(miss_key(entry), why);
                            None
                        }
                    };
                    self.stored_pins.insert(pin_key(package, entry), found);
                }
                (
                    MirrorAsk::Registry {
                        module,
                        selection,
                        version,
                        entry,
                    },
                    MirrorAnswer::Registry(found),
                ) => self.keep_mirror_resolution(module, selection, version, entry, found),
                _ => unreachable!("an answer is of its ask's kind"),
            }
        }
    }

    /// A pinned registry call's resolution without asking the registry, made ready for
    /// [`FetchSession::registry`] to answer: from the store's memo (the registry's own
    /// answer), else from the module mirror (for this run only).
    pub(in crate::modules) fn registry_pinned(
        &mut self,
        m: &RegistryModule<'_>,
        selection: &ModuleVersionConstraints,
        version: &Version,
        entry: &ModuleLockEntry,
    ) -> Result<(), FetchError> {
        if self.mirror.is_none() || self.has_resolution(m, selection, false) {
            return Ok(());
        }
        if self.mirror_misses.contains_key(&miss_key(entry)) {
            return Ok(());
        }
        let Some(mirror) = self.mirror()? else {
            return Ok(());
        };
        let client = self.mirror_client.as_ref().expect("made by mirror()");
        let module = format!("{}/{}", m.host.to_ascii_lowercase(), m.path);
        let mut log = FetchLog::default();
        let found = self.fetcher().registry_from_mirror(
            mirror,
            client,
            &module,
            &version.to_string(),
            entry,
            &mut log,
        );
        let found = self.logged(log, found)?;
        self.keep_mirror_resolution(m, selection, version, entry, found);
        Ok(())
    }

    /// Keep the mirror's answer for a pinned registry call: its resolution for this run only
    /// (the store remembers a registry's own answers, not a mirror's), or why it had none.
    fn keep_mirror_resolution(
        &mut self,
        m: &RegistryModule<'_>,
        selection: &ModuleVersionConstraints,
        version: &Version,
        entry: &ModuleLockEntry,
        found: FromMirror<(Resolution, Fetched)>,
    ) {
        match found {
            FromMirror::Found((resolution, fetched)) => {
                let subdir = (!resolution.subdir.is_empty()).then_some(resolution.subdir);
                self.resolved.insert(
                    resolve_key(m, selection),
                    Resolved {
                        version: version.clone(),
                        location: resolution.location,
                        fetched: Fetched { subdir, ..fetched },
                        published: None,
                        held_back: Vec::new(),
                    },
                );
            }
            FromMirror::Missing(why) => {
                self.mirror_misses.insert(miss_key(entry), why);
            }
        }
    }

    /// The module mirror's record that `reference` of `repo` reaches `commit` (for the reach
    /// check of a runner that cannot ask the remote): `Ok(None)` without a mirror.
    pub(in crate::modules) fn mirror_reach(
        &mut self,
        repo: &str,
        reference: &str,
        commit: &str,
    ) -> Result<Option<MirrorRecord>, String> {
        let Some(mirror) = self.mirror().map_err(|e| crate::modules::chain(&e))? else {
            return Ok(None);
        };
        let client = self.mirror_client.as_ref().expect("made by mirror()");
        crate::modules::fetch::mirror::reach_from_mirror(client, mirror, repo, reference, commit)
            .map(Some)
    }

    /// When the module mirror first held its record that `reference` of `repo` reaches
    /// `commit` (the cooldown's date of a tag naming a commit): only from a mirror whose
    /// dates count under `policy`, and only a stamped record of exactly that claim.
    pub(in crate::modules) fn mirror_first_seen(
        &mut self,
        repo: &str,
        reference: &str,
        commit: &str,
        policy: &crate::ReleaseAge,
    ) -> Option<u64> {
        let mirror = self.mirror().ok()??;
        if !mirror.dates_count_under(policy) {
            return None;
        }
        let client = self.mirror_client.as_ref().expect("made by mirror()");
        crate::modules::fetch::mirror::reach_from_mirror(client, mirror, repo, reference, commit)
            .ok()?
            .first_seen
    }

    /// Why the module mirror did not serve the lock entry `entry` in this init, if it was
    /// asked and did not.
    pub(in crate::modules) fn mirror_miss(&self, entry: &ModuleLockEntry) -> Option<&str> {
        self.mirror_misses.get(&miss_key(entry)).map(String::as_str)
    }

    /// The module mirror, with its client (`mirror_client`) made when first asked.
    pub(super) fn mirror(&mut self) -> Result<Option<&'a ModuleMirror>, FetchError> {
        let Some(mirror) = self.mirror else {
            return Ok(None);
        };
        if self.mirror_client.is_none() {
            let http = self.http()?;
            let logins = self
                .network
                .oci_logins()
                .map_err(|e| FetchError::Protocol(e.to_string()))?;
            self.mirror_client = Some(OciClient::new(http, logins));
        }
        Ok(Some(mirror))
    }
}

/// The key of a lock entry's mirror lookup: its hashes.
fn miss_key(entry: &ModuleLockEntry) -> String {
    entry
        .hashes
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The key of a pinned call's lookup without its origin: its address and the entry's pins.
fn pin_key(package: &RemotePackage, entry: &ModuleLockEntry) -> String {
    format!("{package}\0{:?}\0{:?}", entry.commit, entry.hashes)
}
