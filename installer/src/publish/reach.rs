//! The reach records a push to a module mirror carries (`modules::mirror` has the layout):
//! this machine's own checks that a git ref reaches a locked commit, so that a runner that
//! reaches only the mirror keeps the rule that a locked commit is installed only where its
//! ref reaches it.
//!
//! Rules:
//! - With lock files (`--recursive`), each pinned git call's check is pushed: made now
//!   unless this machine made it within the hour (a push is made from a machine that
//!   reaches the remotes). A call whose ref does not reach its locked commit, or that
//!   cannot be checked, fails the push before anything is uploaded. Without lock files,
//!   every record this machine keeps is pushed, each with the time of its check.
//! - A record is this machine's check and nothing else: never the mirror's or another
//!   machine's (those are not kept).
//! - A tag holding an older check of the same claim is replaced, one holding a check as new
//!   or newer (and a first-seen stamp) is kept; one holding anything else is a conflict
//!   ([`PushError::TagTaken`]) unless the push replaces tags.
//! - The first-seen stamp of a claim is carried over from the tag that holds it; a claim
//!   the mirror did not hold (or held unstamped) is stamped with this push's time.

use std::path::{Path, PathBuf};

use tstore_store::Store;
use tstore_tofu::module_lock::ModuleLockEntry;
use tstore_tofu::module_source::{Getter, ModuleSource};

use super::existing_tag::{ExistingTag, PublishedTag};
use super::PushError;
use crate::modules::getters::git::GitAddress;
use crate::modules::getters::git_cache::GitCache;
use crate::modules::getters::git_reach;
use crate::modules::mirror::{reach_tag, ReachRecord, REACH_ARTIFACT_TYPE};
use crate::net::oci::{OciClient, OciRepository, MANIFEST_MEDIA_TYPE};

/// What a push did for one reach record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PushedReach {
    /// The repository, as messages show it.
    pub repository: String,
    /// The git ref.
    pub git_ref: String,
    /// The commit it reaches.
    pub commit: String,
    /// When this machine checked it (seconds since the epoch).
    pub checked_at: u64,
    /// `registry/repository:tag`.
    pub reference: String,
    /// Whether the tag was written now (false: it held this check, or a newer one).
    pub written: bool,
    /// When the mirror first held this claim (seconds since the epoch): the stamp the tag
    /// carried for it, or this push's time.
    pub first_seen_at: u64,
}

/// A check to push: the mirror's tag for its claim, and the record.
pub(super) type Check = (String, ReachRecord);

/// A check of `reference` of `repo` reaching `commit`, made at `checked`.
fn check(repo: &str, reference: &str, commit: &str, checked: u64) -> Check {
    (
        reach_tag(repo, reference, commit),
        ReachRecord::new(repo, reference, commit, checked),
    )
}

/// The check of the pinned git call `key` of the lock file `lock_file`, made now unless
/// this machine made it within the hour; `None` for a call that is no git call with a
/// locked commit, or that names its commit by id.
pub(super) fn pinned(
    run: &crate::Run,
    store: &Store,
    lock_file: &Path,
    key: &str,
    entry: &ModuleLockEntry,
    default_host: &str,
    records: Option<&Path>,
) -> Result<Option<Check>, PushError> {
    let Some(commit) = &entry.commit else {
        return Ok(None);
    };
    let Ok(ModuleSource::Remote { package, .. }) = ModuleSource::parse(&entry.source, default_host)
    else {
        return Ok(None);
    };
    if package.getter != Getter::Git {
        return Ok(None);
    }
    let unchecked = |source| PushError::ReachUnchecked {
        lock_file: PathBuf::from(lock_file),
        key: key.to_owned(),
        source: Box::new(source),
    };
    // A git entry's source has no `ref`: the ref its call names is the entry's version.
    let addr = GitAddress {
        reference: entry.version.clone(),
        ..GitAddress::parse(&package.url).map_err(unchecked)?
    };
    let cache = GitCache::new(store.git_cache_dir()?);
    let Some(checked) =
        git_reach::checked_at(run, &addr, commit, &cache, records).map_err(unchecked)?
    else {
        return Ok(None);
    };
    let reference = addr.reference.as_deref().unwrap_or("HEAD");
    Ok(Some(check(&addr.repo, reference, commit, checked)))
}

/// Every check this machine keeps a record of (with its time).
pub(super) fn recorded(run: &crate::Run, records: Option<&Path>) -> Vec<Check> {
    records
        .map(|path| git_reach::all_records(run, path))
        .unwrap_or_default()
        .into_iter()
        .map(|(repo, reference, commit, checked)| check(&repo, &reference, &commit, checked))
        .collect()
}

/// Push one reach record: a manifest whose annotations carry it, with the empty config and
/// the empty layer (module docs: which tags are replaced).
pub(super) fn push(
    client: &OciClient,
    repo: &OciRepository,
    (tag, record): &Check,
    existing: ExistingTag,
) -> Result<PushedReach, PushError> {
    let reference = format!("{repo}:{tag}");
    let published = PublishedTag::read(client, repo, tag)?;
    let theirs = published
        .as_ref()
        .filter(|p| p.artifact_type.as_deref() == Some(REACH_ARTIFACT_TYPE))
        .and_then(|p| ReachRecord::from_annotations(&p.annotations))
        .filter(|t| t.is_of(&record.repository, &record.reference, &record.commit));
    let first_seen = theirs
        .as_ref()
        .and_then(|t| t.first_seen)
        .unwrap_or_else(crate::cooldown::now);
    let keep = theirs
        .as_ref()
        .is_some_and(|t| t.first_seen.is_some() && t.checked >= record.checked);
    if !keep {
        // A newer check the tag held stays the record's time.
        let checked = theirs
            .as_ref()
            .map_or(record.checked, |t| t.checked.max(record.checked));
        let stamped = ReachRecord {
            first_seen: Some(first_seen),
            checked,
            ..record.clone()
        };
        let manifest = super::annotations_manifest(REACH_ARTIFACT_TYPE, stamped.annotations());
        if let (Some(p), None, ExistingTag::Refuse) = (&published, &theirs, existing) {
            return Err(PushError::TagTaken {
                reference,
                what: format!(
                    "something other than a record of {:?} of {} reaching {}",
                    record.reference, record.repository, record.commit
                ),
                existing: p.digest.clone(),
                ours: crate::net::oci::sha256_digest(&manifest),
            });
        }
        client.push_blob(repo, b"{}")?;
        client.push_manifest(repo, tag, MANIFEST_MEDIA_TYPE, &manifest)?;
    }
    Ok(PushedReach {
        repository: record.repository.clone(),
        git_ref: record.reference.clone(),
        commit: record.commit.clone(),
        checked_at: record.checked,
        reference,
        written: !keep,
        first_seen_at: first_seen,
    })
}
