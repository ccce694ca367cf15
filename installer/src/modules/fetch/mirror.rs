//! A pinned call's package from the module mirror (`modules::mirror` has the layout and the
//! rules): found by the lock entry's `h1:`, believed only when the tree its layer unpacks to
//! has that hash.
//!
//! **Rule:** a mirror vouches for content, never for a name. Its package is committed under
//! the hash's own name (`mirror_id`, provenance `mirror`), so the next init of a call pinned
//! by that `h1:` finds it with no mirror and no origin, and no lookup by an origin's name (a
//! commit, a URL, a registry version) ever sees it; a registry resolution it serves answers
//! for the run that asked, and is not remembered.

use tstore_store::{Hash, Provenance};
use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{Getter, ModuleSource, RemotePackage};

use super::{mirror_id, FetchLog, Fetched, Fetcher};
use crate::modules::getters::git_reach::MirrorRecord;
use crate::modules::getters::oci::layer_of_module_manifest;
use crate::modules::mirror::{
    package_tag, reach_tag, resolution_tag, ModuleMirror, ReachRecord, Resolution,
    REACH_ARTIFACT_TYPE, RESOLUTION_ARTIFACT_TYPE,
};
use crate::modules::FetchError;
use crate::net::http::HttpError;
use crate::net::oci::{FetchedManifest, OciClient, OciError};

/// What asking the mirror found.
pub(in crate::modules) enum FromMirror<T> {
    /// The mirror had it, and it checked out.
    Found(T),
    /// The mirror does not have it, or could not be asked: the origin is asked instead, and
    /// this says why.
    Missing(String),
}

/// The `h1:` hashes a lock entry names.
pub(super) fn entry_h1s(entry: &ModuleLockEntry) -> Vec<Hash> {
    entry
        .hashes
        .iter()
        .filter_map(|h| h.parse::<Hash>().ok())
        .filter(|h| matches!(h, Hash::H1(_)))
        .collect()
}

/// The manifest the mirror's `tag` names (`what` it is, for the reason it is missing): a tag
/// that is not there, or a mirror that cannot be asked, is missing, not an error.
fn tagged(
    client: &OciClient,
    mirror: &ModuleMirror,
    tag: &str,
    what: &str,
) -> FromMirror<FetchedManifest> {
    match client.manifest(&mirror.repository, tag) {
        Ok(m) => FromMirror::Found(m),
        Err(OciError::Http(HttpError::Status { status: 404, .. })) => {
            FromMirror::Missing(format!("the module mirror has no {what}"))
        }
        Err(e) => FromMirror::Missing(format!("the module mirror failed: {e}")),
    }
}

/// The mirror's record that `reference` of `repo` reaches `commit`: one the mirror's tag
/// for exactly that claim holds, of the reach artifact type, whose annotations name that
/// claim; `Err(why)` otherwise (no such tag, a mirror that cannot be asked, another claim).
pub(in crate::modules) fn reach_from_mirror(
    client: &OciClient,
    mirror: &ModuleMirror,
    repo: &str,
    reference: &str,
    commit: &str,
) -> Result<MirrorRecord, String> {
    let tag = reach_tag(repo, reference, commit);
    let what = format!("record of {reference:?} reaching {commit}");
    let manifest = match tagged(client, mirror, &tag, &what) {
        FromMirror::Found(m) => m,
        FromMirror::Missing(why) => return Err(why),
    };
    let doc: serde_json::Value = serde_json::from_slice(&manifest.bytes).unwrap_or_default();
    let record = (doc["artifactType"] == REACH_ARTIFACT_TYPE)
        .then(|| ReachRecord::from_annotations(&doc["annotations"]))
        .flatten();
    match record {
        Some(record) if record.is_of(repo, reference, commit) => Ok(MirrorRecord {
            mirror: match mirror.origin.as_str() {
                "TSTORE_MODULE_MIRROR" => format!("{mirror} (TSTORE_MODULE_MIRROR)"),
                origin => format!("{mirror}, named by {origin}"),
            },
            checked: record.checked,
            first_seen: record.first_seen,
        }),
        Some(_) => Err(format!(
            "the module mirror's {mirror}:{tag} names another repository, ref or commit"
        )),
        None => Err(format!(
            "the module mirror's {mirror}:{tag} is not a reach record tstore wrote"
        )),
    }
}

/// When the mirror first held its resolution of registry module `module` (`HOST/PATH`, the
/// host lowercase) at `version`, and the package (`h1:`) it names: only from the mirror's tag
/// for exactly that claim, of the resolution type, stamped; `None` otherwise (no such tag, a
/// mirror that cannot be asked, another claim, no stamp).
pub(in crate::modules) fn resolution_first_seen(
    client: &OciClient,
    mirror: &ModuleMirror,
    module: &str,
    version: &str,
) -> Option<(u64, String)> {
    let tag = resolution_tag(module, version);
    let FromMirror::Found(manifest) = tagged(client, mirror, &tag, "resolution") else {
        return None;
    };
    let doc: serde_json::Value = serde_json::from_slice(&manifest.bytes).ok()?;
    if doc["artifactType"] != RESOLUTION_ARTIFACT_TYPE {
        return None;
    }
    let resolution = Resolution::from_annotations(&doc["annotations"])?;
    if resolution.module != module || resolution.version != version {
        return None;
    }
    Some((resolution.first_seen?, resolution.h1))
}

impl Fetcher<'_> {
    /// The package of the pinned call at `package` from the mirror, committed under its
    /// `h1:`'s name (module docs); the entry's commit, if any, is the one the call installs.
    pub(super) fn pinned_from_mirror(
        &self,
        mirror: &ModuleMirror,
        client: &OciClient,
        package: &RemotePackage,
        entry: &ModuleLockEntry,
        log: &mut FetchLog,
    ) -> Result<FromMirror<Fetched>, FetchError> {
        let Some(h1) = entry_h1s(entry).into_iter().next() else {
            return Ok(FromMirror::Missing(
                "its lock entry names no h1: hash".into(),
            ));
        };
        let commit = match &package.getter {
            Getter::Git => entry.commit.as_deref().map(str::to_ascii_lowercase),
            _ => None,
        };
        let id = mirror_id(&package.url, &h1);
        let found = self.package_from_mirror(mirror, client, &h1, &id, log)?;
        let FromMirror::Found(fetched) = found else {
            return Ok(found);
        };
        Ok(FromMirror::Found(Fetched { commit, ..fetched }))
    }

    /// The package a module mirror served earlier for the pinned call at `package` with
    /// one of its lock entry's `h1:` hashes, found in the store by that hash's name with no
    /// mirror asked (the one way a mirror's content is found again: by the entry's hash).
    pub(super) fn mirrored_before(
        &self,
        package: &RemotePackage,
        entry: &ModuleLockEntry,
        log: &mut FetchLog,
    ) -> Result<Option<Fetched>, FetchError> {
        for h1 in entry_h1s(entry) {
            let id = mirror_id(&package.url, &h1);
            if self.known(&id, Provenance::Mirror)? {
                log.reused.push(id.clone());
                let commit = match &package.getter {
                    Getter::Git => entry.commit.as_deref().map(str::to_ascii_lowercase),
                    _ => None,
                };
                return Ok(Some(Fetched {
                    commit,
                    ..self.fetched(&id, Provenance::Mirror)?
                }));
            }
        }
        Ok(None)
    }

    /// The resolution of registry module `module` (`HOST/PATH`, the host lowercase) at
    /// `version`, which the lock entry `entry` pins, and its package, from the mirror: an
    /// answer for this run only (a registry's own answer is the only one the store keeps).
    pub(super) fn registry_from_mirror(
        &self,
        mirror: &ModuleMirror,
        client: &OciClient,
        module: &str,
        version: &str,
        entry: &ModuleLockEntry,
        log: &mut FetchLog,
    ) -> Result<FromMirror<(Resolution, Fetched)>, FetchError> {
        let tag = resolution_tag(module, version);
        let what = format!("resolution of {module} {version}");
        let manifest = match tagged(client, mirror, &tag, &what) {
            FromMirror::Found(m) => m,
            FromMirror::Missing(why) => return Ok(FromMirror::Missing(why)),
        };
        let doc: serde_json::Value = serde_json::from_slice(&manifest.bytes).unwrap_or_default();
        let refuse = |why: &str| {
            Ok(FromMirror::Missing(format!(
                "the module mirror's resolution of {module} {version} ({}:{tag}) {why}",
                mirror
            )))
        };
        let Some(resolution) = Resolution::from_annotations(&doc["annotations"]) else {
            return refuse("is not one tstore wrote");
        };
        if resolution.module != module || resolution.version != version {
            return refuse("names another module or version");
        }
        if !entry.hashes.contains(&resolution.h1) {
            return refuse("names a package other than the lock entry's");
        }
        // A location names a package address, never a directory of this machine; the
        // subdirectory stays inside the package.
        match ModuleSource::parse(&resolution.location, self.default_host) {
            Ok(ModuleSource::Remote { package, .. }) if package.getter != Getter::File => {}
            _ => return refuse("names a location that is not a remote package address"),
        }
        let inside = resolution.subdir.split('/').all(|part| part != "..")
            && !resolution.subdir.starts_with('/');
        if !inside {
            return refuse("names a subdirectory outside the package");
        }
        let h1: Hash = resolution
            .h1
            .parse()
            .map_err(|_| FetchError::Protocol(format!("malformed h1: in {mirror}:{tag}")))?;
        let id = mirror_id(&resolution.location, &h1);
        let fetched = match self.package_from_mirror(mirror, client, &h1, &id, log)? {
            FromMirror::Found(f) => f,
            FromMirror::Missing(why) => return Ok(FromMirror::Missing(why)),
        };
        Ok(FromMirror::Found((resolution, fetched)))
    }

    /// The package whose tree has `h1`, from the store under `id` or from the mirror's tag
    /// for it; a layer that unpacks to another tree is refused ([`FetchError::MirrorMismatch`]).
    fn package_from_mirror(
        &self,
        mirror: &ModuleMirror,
        client: &OciClient,
        h1: &Hash,
        id: &str,
        log: &mut FetchLog,
    ) -> Result<FromMirror<Fetched>, FetchError> {
        if self.known(id, Provenance::Mirror)? {
            log.reused.push(id.to_owned());
            return Ok(FromMirror::Found(self.fetched(id, Provenance::Mirror)?));
        }
        let Some(tag) = package_tag(h1) else {
            return Ok(FromMirror::Missing(format!(
                "{h1} is not a well-formed h1: hash"
            )));
        };
        let shown = format!("{mirror}?tag={tag}");
        let repo = &mirror.repository;
        let manifest = match tagged(client, mirror, &tag, &format!("package {tag}")) {
            FromMirror::Found(m) => m,
            FromMirror::Missing(why) => return Ok(FromMirror::Missing(why)),
        };
        // From here on the mirror answered for this package: what it serves must be it.
        let layer = layer_of_module_manifest(&manifest, &shown)?;
        // Content the store holds with that h1: is what the layer must unpack to: the
        // mirror's answer names it, and the bytes are not downloaded again.
        if let Some(tree) = self.store.tree_with_h1(h1).map_err(FetchError::from)? {
            log.reused.push(id.to_owned());
            return Ok(FromMirror::Found(self.commit(
                id,
                &tree,
                vec![h1.clone()],
                Provenance::Mirror,
            )?));
        }
        // The layer is unpacked as it downloads: no file of it is written, and its
        // digest is checked at its end, before its tree is recorded.
        let progress = self.progress(&shown);
        let streamed = client
            .blob_body(repo, &layer, &progress)
            .map_err(|e| FetchError::Protocol(format!("{shown}: {e}")))
            .and_then(|body| {
                // The zip reader asks for a header at a time: one read of the socket,
                // the digest and progress serve many.
                let mut buffered = std::io::BufReader::with_capacity(256 << 10, body);
                let ingested = self
                    .store
                    .ingest()
                    .zip_stream(&mut buffered, std::path::Path::new(&shown));
                // A download that failed, or brought other bytes than the layer's digest
                // names, is the reason, whatever the unpacking made of them: a refused
                // layer is read to its end to know which (`finish` says a failure kept
                // from an earlier read first).
                buffered
                    .into_inner()
                    .finish()
                    .map_err(|e| FetchError::Protocol(format!("{shown}: {e}")))?;
                ingested.map_err(FetchError::from)
            });
        self.reporter
            .event(crate::report::Event::DownloadedModuleArchive { package: &shown });
        let ingested = streamed?;
        if ingested.h1 != *h1 {
            return Err(FetchError::MirrorMismatch {
                mirror: mirror.to_string(),
                tag,
                expected: h1.to_string(),
                received: ingested.h1.to_string(),
            });
        }
        log.mirrored.push(id.to_owned());
        Ok(FromMirror::Found(self.commit(
            id,
            &ingested.tree,
            vec![ingested.h1],
            Provenance::Mirror,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(hashes: &[&str]) -> ModuleLockEntry {
        ModuleLockEntry {
            source: "git::https://git.test/vpc?ref=v1".into(),
            version: None,
            constraints: None,
            commit: None,
            hashes: hashes.iter().map(|h| (*h).to_owned()).collect(),
        }
    }

    #[test]
    fn an_entry_is_found_by_its_h1s_only() {
        let one = entry(&["h1:AAAA", "zh:00aa"]);
        assert_eq!(entry_h1s(&one), vec![Hash::H1("AAAA".into())]);
        assert!(entry_h1s(&entry(&["zh:00aa"])).is_empty());
    }

    #[test]
    fn a_mirror_id_depends_on_the_hash() {
        let a = mirror_id("git::https://git.test/vpc?ref=v1", &Hash::H1("AAAA".into()));
        let b = mirror_id("git::https://git.test/vpc?ref=v1", &Hash::H1("BBBB".into()));
        assert!(a.starts_with("mirror-vpc-"), "{a}");
        assert_ne!(a, b);
    }
}
