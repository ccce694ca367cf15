//! The cooldown of a git tag: the commit a tag names is installed, for a call the lock does
//! not pin, only once this machine has seen the tag name that commit for the policy's age
//! (`git-first-seen.json` in the state directory, beside the reach records: never in the
//! store, so a restored cache cannot make a commit look old). A tag moved to another commit
//! starts a new cooldown. A tag's or commit's own date is not used: its author sets it.
//! Branches are not versions and are not held back; a call naming a commit by id names
//! it by hand.

use std::path::Path;

use super::git::{self, GitAddress, RefKind};
use super::reach_records;
use crate::cooldown::{AgeSource, Published};
use crate::modules::FetchError;

/// The file of first sightings in the state directory of `reach_records` (its sibling).
fn path_beside(reach_records: &Path) -> std::path::PathBuf {
    reach_records.with_file_name("git-first-seen.json")
}

/// When this machine first saw the tag `tag` of `repo` name `commit` (now, if this is the
/// first time; recorded then). `records`: the reach record file (`None`: no state
/// directory, every sighting is a first one).
pub(crate) fn sighted(
    run: &crate::Run,
    repo: &str,
    tag: &str,
    commit: &str,
    records: Option<&Path>,
) -> u64 {
    let key = reach_records::key(repo, tag, &commit.to_ascii_lowercase());
    match records {
        Some(path) => reach_records::first_seen(&run.first_seen, &path_beside(path), &key),
        None => crate::cooldown::now(),
    }
}

/// When the team's module mirror first held the claim that a tag of a repository names a
/// commit (its reach record's stamp), under a policy; `None`: not asked, or no stamp.
pub(crate) type MirrorSeen<'a> = &'a mut dyn FnMut(&crate::ReleaseAge) -> Option<u64>;

/// Under `policy`, whether the tag `addr` names may give `commit` now: `Ok(Some)` when it
/// has named it for long enough (and since when), `Ok(None)` when the policy does not
/// apply (no policy, an excluded source, not a tag), an error naming when it becomes
/// eligible otherwise. The date is the module mirror's first sighting where it has one
/// (`mirror_seen`), else this machine's. `records` is the reach record file (`None`: no
/// state directory, so every sighting is a first one).
pub(crate) fn check(
    run: &crate::Run,
    source: &str,
    addr: &GitAddress,
    commit: &str,
    records: Option<&Path>,
    policy: Option<&crate::ReleaseAge>,
    mirror_seen: MirrorSeen<'_>,
) -> Result<Option<Published>, FetchError> {
    if !matches!(git::resolve_ref(run, addr)?, Some((_, RefKind::Tag))) {
        return Ok(None);
    }
    // Every sighting is recorded, with a policy or without: its clock runs from the first.
    let reference = addr.reference.clone().unwrap_or_else(|| "HEAD".to_owned());
    let at = sighted(run, &addr.repo, &reference, commit, records);
    let Some(policy) = policy.filter(|p| p.applies_to(&[source.to_owned()])) else {
        return Ok(None);
    };
    let published = match mirror_seen(policy) {
        Some(stamp) => Published::by(stamp, AgeSource::Mirror),
        None => Published::by(at, AgeSource::FirstSeen),
    };
    match policy.choose(
        &[(reference.clone(), Some(published))],
        crate::cooldown::now(),
    ) {
        Ok(_) => Ok(Some(published)),
        Err(held) => Err(FetchError::TagHeldBack {
            repo: addr.repo.clone(),
            reference,
            commit: commit.to_owned(),
            held: held.into_iter().next().expect("one candidate"),
            policy: policy.describe(),
        }),
    }
}
