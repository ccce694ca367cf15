//! `tstore push --modules oci://REGISTRY/REPOSITORY`: the store's module packages into a
//! module mirror (`modules::mirror` has the layout), each under the tag its `h1:` names,
//! with the registry resolutions the store knows for them and this machine's checks that
//! git refs reach locked commits ([`reach`](super::reach)).
//!
//! What is pushed: every module package the store holds, or the packages, registry
//! resolutions and reach checks that given module lock files pin (`--recursive`; an entry
//! the store cannot serve, or whose reach cannot be checked, fails the push before anything
//! is uploaded, naming the lock file and the call).
//! Packages made from another by leaving out its dot entries (`…-nodot`) are not pushed: a
//! lock entry names the package as fetched, and a runner makes the other itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tstore_store::{Hash, PackageKey, Store};
use tstore_tofu::module_lock::ModuleLock;
use tstore_tofu::module_source::ModuleSource;

use super::existing_tag::{ExistingTag, PublishedTag};
use super::module::{push_module, PushedModule};
use super::reach::{self, PushedReach};
use super::PushError;
use crate::modules::mirror::{package_tag, resolution_tag, Resolution, RESOLUTION_ARTIFACT_TYPE};
use crate::net::oci::{OciClient, OciRepository, MANIFEST_MEDIA_TYPE};

/// Which module packages a push to a module mirror takes.
#[derive(Clone, Debug)]
pub enum ModuleSelection {
    /// Every module package the store holds, with every registry resolution it knows.
    All,
    /// What these module lock files pin (each with its path, for messages).
    Pinned(Vec<(PathBuf, ModuleLock)>),
}

/// What a push did for one registry module version's resolution.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PushedResolution {
    /// `HOST/NAMESPACE/NAME/SYSTEM`.
    pub module: String,
    /// The version.
    pub version: String,
    /// `registry/repository:tag`.
    pub reference: String,
    /// Whether the tag was written now (false: it already named this resolution).
    pub written: bool,
    /// When the mirror first held this resolution (seconds since the epoch): the stamp the
    /// tag carried for it, or this push's time.
    pub first_seen_at: u64,
}

/// What a push to a module mirror did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PushedModules {
    /// Each package, by tag.
    pub packages: Vec<PushedModule>,
    /// Each registry resolution, by module and version.
    pub resolutions: Vec<PushedResolution>,
    /// Each reach check, by tag.
    pub reach_records: Vec<PushedReach>,
}

/// A push to a module mirror: where, what, and how.
#[derive(Clone, Copy, Debug)]
pub struct ModulePush<'a> {
    /// The mirror's repository.
    pub repo: &'a OciRepository,
    /// Which packages.
    pub selection: &'a ModuleSelection,
    /// The registry host of a source that names none (the flavor's).
    pub default_host: &'a str,
    /// What to do with a tag that names something else.
    pub existing: ExistingTag,
    /// This machine's records of git refs found reaching locked commits
    /// (`$XDG_STATE_HOME/tstore/git-reach.json`); `None`: no state directory.
    pub reach_records: Option<&'a Path>,
    /// The run the push is part of (the remotes' answers it asks once).
    pub run: &'a crate::Run,
}

/// The store's module packages by `h1:` (one package per tree hash: the first by id).
fn packages_by_h1(store: &Store) -> Result<BTreeMap<Hash, String>, PushError> {
    let mut by_h1 = BTreeMap::new();
    for package in store.packages()? {
        let PackageKey::Module { id } = &package.key else {
            continue;
        };
        if id.ends_with("-nodot") {
            continue;
        }
        for record in &package.hashes {
            if matches!(record.hash, Hash::H1(_)) {
                by_h1
                    .entry(record.hash.clone())
                    .or_insert_with(|| id.clone());
            }
        }
    }
    Ok(by_h1)
}

/// Every registry resolution the store's memos hold, by (module, version).
fn resolutions(store: &Store) -> Result<BTreeMap<(String, String), Resolution>, PushError> {
    let mut found = BTreeMap::new();
    for (package, source) in store.memos().module_sources()? {
        let mut parts = source.split('\0');
        let (Some("registry"), Some(module), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Some(memo) = store.memos().module_source(&source)? else {
            continue;
        };
        let h1 = store
            .package(&PackageKey::module(package.clone()))?
            .and_then(|p| p.hashes.into_iter().find(|r| matches!(r.hash, Hash::H1(_))))
            .map(|r| r.hash.to_string());
        let Some(h1) = h1 else { continue };
        found.insert(
            (module.to_owned(), version.to_owned()),
            Resolution {
                module: module.to_owned(),
                version: version.to_owned(),
                // The mirror is read by other runners: the location as every message shows
                // it, without user information or secret-looking query values.
                location: crate::redact::display_url(&memo.location),
                subdir: memo.subdir,
                h1,
                first_seen: None,
            },
        );
    }
    Ok(found)
}

/// What the selection takes: package ids by `h1:`, the resolutions, the reach checks.
struct Selected {
    packages: BTreeMap<Hash, String>,
    resolutions: Vec<Resolution>,
    reaches: Vec<reach::Check>,
}

fn select(store: &Store, push: &ModulePush<'_>) -> Result<Selected, PushError> {
    store.ensure_trusted()?;
    let by_h1 = packages_by_h1(store)?;
    let known = resolutions(store)?;
    let ModuleSelection::Pinned(locks) = push.selection else {
        return Ok(Selected {
            packages: by_h1,
            resolutions: known.into_values().collect(),
            reaches: reach::recorded(push.run, push.reach_records),
        });
    };
    let default_host = push.default_host;
    let mut packages = BTreeMap::new();
    let mut wanted = BTreeMap::new();
    let mut reaches = BTreeMap::new();
    for (path, lock) in locks {
        for (key, entry) in &lock.entries {
            if let Some((tag, record)) = reach::pinned(
                push.run,
                store,
                path,
                key,
                entry,
                default_host,
                push.reach_records,
            )? {
                reaches.insert(tag, record);
            }
            let missing = || PushError::NotInStore {
                lock_file: path.clone(),
                key: key.clone(),
            };
            let h1 = entry
                .hashes
                .iter()
                .filter_map(|h| h.parse::<Hash>().ok())
                .find(|h| by_h1.contains_key(h))
                .ok_or_else(missing)?;
            packages.insert(h1.clone(), by_h1[&h1].clone());
            if let (
                Ok(ModuleSource::Registry {
                    host,
                    namespace,
                    name,
                    system,
                    ..
                }),
                Some(version),
            ) = (
                ModuleSource::parse(&entry.source, default_host),
                &entry.version,
            ) {
                let module = format!("{}/{namespace}/{name}/{system}", host.to_ascii_lowercase());
                let resolution = known
                    .get(&(module, version.clone()))
                    .filter(|r| r.h1 == h1.to_string())
                    .ok_or_else(missing)?;
                wanted.insert(
                    (resolution.module.clone(), resolution.version.clone()),
                    resolution.clone(),
                );
            }
        }
    }
    Ok(Selected {
        packages,
        resolutions: wanted.into_values().collect(),
        reaches: reaches.into_iter().collect(),
    })
}

/// Push the selected module packages, registry resolutions and reach checks to the module
/// mirror. A tag that names other content is a conflict ([`PushError::TagTaken`]) unless
/// the push replaces tags ([`ExistingTag::Replace`]); a tag that names this push's manifest
/// already is left as it is, and nothing is uploaded for it (a reach check's tag: also one
/// holding a newer check of the same claim). `each` is told of every package as it is
/// pushed.
pub fn push_modules(
    store: &Store,
    client: &OciClient,
    push: &ModulePush<'_>,
    each: &dyn Fn(&PushedModule),
) -> Result<PushedModules, PushError> {
    let selected = select(store, push)?;
    let (repo, existing) = (push.repo, push.existing);
    let mut pushed = PushedModules::default();
    for (h1, id) in &selected.packages {
        let tag = package_tag(h1).expect("the store keeps well-formed h1: hashes");
        let one = push_module(store, client, repo, &tag, id, existing)?;
        each(&one);
        pushed.packages.push(one);
    }
    for resolution in selected.resolutions {
        pushed
            .resolutions
            .push(push_resolution(client, repo, &resolution, existing)?);
    }
    for check in &selected.reaches {
        pushed
            .reach_records
            .push(reach::push(client, repo, check, existing)?);
    }
    Ok(pushed)
}

/// Push one resolution: a manifest whose annotations carry it, with the empty config and
/// the empty layer (OCI's descriptor for an artifact without content). A tag holding the
/// same claim keeps its first-seen stamp (`modules::mirror`): it is left as it is, or, when
/// it has no stamp yet, rewritten with this push's time.
fn push_resolution(
    client: &OciClient,
    repo: &OciRepository,
    resolution: &Resolution,
    existing: ExistingTag,
) -> Result<PushedResolution, PushError> {
    let tag = resolution_tag(&resolution.module, &resolution.version);
    let reference = format!("{repo}:{tag}");
    let published = PublishedTag::read(client, repo, &tag)?;
    let theirs = published
        .as_ref()
        .filter(|p| p.artifact_type.as_deref() == Some(RESOLUTION_ARTIFACT_TYPE))
        .and_then(|p| Resolution::from_annotations(&p.annotations))
        .filter(|theirs| theirs.same_claim(resolution));
    if let Some(first_seen) = theirs.as_ref().and_then(|t| t.first_seen) {
        return Ok(PushedResolution {
            module: resolution.module.clone(),
            version: resolution.version.clone(),
            reference,
            written: false,
            first_seen_at: first_seen,
        });
    }
    let stamped = Resolution {
        first_seen: Some(crate::cooldown::now()),
        ..resolution.clone()
    };
    let manifest = super::annotations_manifest(RESOLUTION_ARTIFACT_TYPE, stamped.annotations());
    let digest = crate::net::oci::sha256_digest(&manifest);
    if let (Some(published), ExistingTag::Refuse, None) = (&published, existing, &theirs) {
        return Err(PushError::TagTaken {
            reference,
            what: format!(
                "another resolution of {} {}",
                resolution.module, resolution.version
            ),
            existing: published.digest.clone(),
            ours: digest,
        });
    }
    client.push_blob(repo, b"{}")?;
    client.push_manifest(repo, &tag, MANIFEST_MEDIA_TYPE, &manifest)?;
    Ok(PushedResolution {
        module: resolution.module.clone(),
        version: resolution.version.clone(),
        reference,
        written: true,
        first_seen_at: stamped.first_seen.expect("stamped"),
    })
}
