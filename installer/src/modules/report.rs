//! What a module install reports: per call (its action, its package, the reason, its
//! standing in the module lock), per package (fetched or reused), the warnings it went on
//! without, and what `tstore modules lock` did. `init --json` serializes them as they are.

use std::path::PathBuf;

use serde::Serialize;
use tstore_tofu::config::SourcePos;

use super::package_meta::{ReadOnlyStatus, META_FILE};
use crate::report::LockFileChange;

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
    /// Source as written, as [`display_url`](crate::redact::display_url) shows it.
    pub source: String,
    /// `local`, `registry`, `git`, `http`, `file`.
    pub kind: &'static str,
    /// Selected registry version.
    pub version: Option<String>,
    /// `Dir` in modules.json.
    pub dir: String,
    /// Store package id (remote calls and modules inside them).
    pub package: Option<String>,
    /// What vouches for the package's name: `origin` (the source gave it), `lock` (content
    /// the store held with the lock entry's `h1:`) or `mirror` (the module mirror's, checked
    /// against that `h1:`).
    pub vouched_by: Option<tstore_store::Provenance>,
    /// What was done.
    pub action: Action,
    /// The module's read-only status.
    pub read_only: ReadOnlyStatus,
    /// Why.
    pub reason: String,
    /// For a private copy, the bytes of its files (what it costs without reflinks).
    pub copy_bytes: Option<u64>,
    /// Where the call is (`file:line`).
    pub at: String,
    /// A remote call's standing in the module lock file.
    pub lock: Option<CallLock>,
    /// Where a remote call's version or commit came from: `lock`, `constraint` (the newest
    /// the call allows, or the ref it names) or `upgrade`.
    pub selected_by: Option<&'static str>,
    /// Under the cooldown (`min_release_age`), when the version chosen was published and
    /// who says so.
    pub published: Option<crate::Published>,
    /// Where a remote call's package came from in this run: the store, the module mirror,
    /// or its origin.
    pub obtained: Option<ObtainedFrom>,
    /// With a module mirror, why the origin served it.
    pub origin_why: Option<String>,
}

/// Where a remote call's package came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObtainedFrom {
    /// The store held it.
    Store,
    /// The module mirror, by the lock entry's `h1:`.
    Mirror,
    /// The call's source (a registry, a git remote, an archive URL, an OCI registry).
    Origin,
}

/// A remote call's standing in the module lock file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallLock {
    /// Its entry pinned what was installed, and the package matched it.
    Verified,
    /// It had no entry; one was added.
    Added,
    /// Its entry was replaced (`-upgrade`, a changed source or constraint).
    Changed,
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
    /// Package ids fetched from the module mirror in this run.
    pub mirrored: Vec<String>,
    /// The module mirror, `oci://REGISTRY/REPOSITORY`, when one is set.
    pub mirror: Option<String>,
    /// What happened to the module lock file.
    pub lock_file: LockFileChange,
}

/// What the module install ignored and went on without, for the binary to say.
#[derive(Clone, Debug)]
pub enum ModuleWarning {
    /// A package's `module-package.meta.hcl` is invalid: its statements are ignored (the
    /// package is judged as one that makes none).
    InvalidMeta {
        /// The call that installs the package.
        at: SourcePos,
        /// Its key.
        key: String,
        /// The package id.
        package: String,
        /// What is wrong with the file.
        error: String,
    },
    /// tstore's install state under `.terraform/modules` cannot be read: no earlier install
    /// of tstore's is removed.
    UnreadableInstallState {
        /// Why.
        error: String,
    },
    /// An entry of the install state that is not a module key tstore writes: ignored, never
    /// followed.
    ForeignStateEntry {
        /// The state file.
        state_file: PathBuf,
        /// The entry's key.
        key: String,
    },
    /// A directory tstore did not create filled a call's slot (terraform's copy of the
    /// package) and held more than the package (files a module wrote there, edits): moved
    /// aside, not deleted.
    KeptForeignCopy {
        /// The slot, `.terraform/modules/KEY`.
        slot: PathBuf,
        /// Where the directory is now.
        kept_as: PathBuf,
    },
    /// A git call's ref moved on from the commit the lock pins and still reaches it: the
    /// locked commit is installed. A tag (`tag`) should never move.
    RefMovedOn {
        /// The call.
        key: String,
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The commit installed (the lock's).
        locked: String,
        /// The commit the ref names now.
        tip: String,
        /// Whether the ref is a tag.
        tag: bool,
    },
    /// A module that writes into its own directory is called under `count` or `for_each`
    /// (its own call's or an enclosing one's): every instance reads and writes the one
    /// directory installed for the call.
    SharedByInstances {
        /// The module's key.
        key: String,
        /// The repeated call: the module's own, or the enclosing one.
        repeated: String,
        /// `count` or `for_each`.
        by: &'static str,
        /// The directory they share.
        dir: String,
    },
    /// Whether a git call's ref reaches its locked commit was not checked: the remote could
    /// not be asked, and the user trusts the lock (`TSTORE_TRUST_LOCK`). Said once per run
    /// for its repository and ref ([`ModuleWarning::once_per_run`]).
    RefUnchecked {
        /// The call (the first one of the run that met it).
        key: String,
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// Why the remote could not be asked, in one line.
        why: String,
    },
    /// This machine's check that a git call's ref reaches its locked commit is older than
    /// the window in which it is believed unasked, and the remote could not be asked again:
    /// the old check was believed (a runner without one refuses). Said once per run for its
    /// repository and ref ([`ModuleWarning::once_per_run`]).
    RefCheckedLongAgo {
        /// The call (the first one of the run that met it).
        key: String,
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// Seconds since the check; `None`: not known.
        ago: Option<u64>,
        /// Why the remote could not be asked, in one line.
        why: String,
    },
    /// A git call's remote could not be asked whether its ref reaches the locked commit,
    /// this machine has no check of its own, and the module mirror's record of its pusher's
    /// check was believed for this run. Said once per run for its repository and ref
    /// ([`ModuleWarning::once_per_run`]).
    RefCheckedByMirror {
        /// The call (the first one of the run that met it).
        key: String,
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The mirror, as messages show it, with where it was set.
        mirror: String,
        /// Seconds since its pusher's check; `None`: a time ahead of this machine's clock.
        ago: Option<u64>,
        /// Why the remote could not be asked, in one line.
        why: String,
    },
}

impl ModuleWarning {
    /// What the warning is about, when it says the same for every call and root of a run
    /// that meets it (a ref left unchecked): the binary says it once per run, not once per
    /// root of an `init --recursive`.
    pub fn once_per_run(&self) -> Option<String> {
        match self {
            ModuleWarning::RefUnchecked {
                repo, reference, ..
            } => Some(format!(
                "unchecked\u{0}{}\u{0}{reference}",
                crate::redact::url_identity(repo)
            )),
            ModuleWarning::RefCheckedLongAgo {
                repo, reference, ..
            } => Some(format!(
                "checked long ago\u{0}{}\u{0}{reference}",
                crate::redact::url_identity(repo)
            )),
            ModuleWarning::RefCheckedByMirror {
                repo, reference, ..
            } => Some(format!(
                "checked by the mirror\u{0}{}\u{0}{reference}",
                crate::redact::url_identity(repo)
            )),
            _ => None,
        }
    }
}

/// `secs` in the largest whole unit, for "checked 3 hours ago".
fn ago_in_words(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s >= 2 * 86_400 => (s / 86_400, "days"),
        s if s >= 2 * 3_600 => (s / 3_600, "hours"),
        s if s >= 2 * 60 => (s / 60, "minutes"),
        s => (s, "seconds"),
    };
    format!("{n} {unit}")
}

/// The warning in words, as the binary prints it.
impl std::fmt::Display for ModuleWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleWarning::InvalidMeta {
                at,
                key,
                package,
                error,
            } => write!(
                f,
                "{at}: module \"{key}\": ignoring invalid {META_FILE} of package {package}: {error}"
            ),
            ModuleWarning::UnreadableInstallState { error } => {
                write!(f, "{error}; ignoring tstore's install state")
            }
            ModuleWarning::ForeignStateEntry { state_file, key } => write!(
                f,
                "{}: ignoring the entry {key:?}, which is not a module key tstore writes",
                state_file.display()
            ),
            ModuleWarning::RefMovedOn {
                key,
                repo,
                reference,
                locked,
                tip,
                tag,
            } => {
                let repo = crate::redact::display_url(repo);
                if *tag {
                    write!(
                        f,
                        "module \"{key}\": the tag {reference:?} of {repo} MOVED since the lock \
                         was written: it named {locked}, it names {tip} now. Tags should never \
                         move: the locked commit {locked}, which the tag's new commit descends \
                         from, was installed. Find out who moved the tag; run `tstore init \
                         -upgrade` only to take its new commit."
                    )
                } else {
                    write!(
                        f,
                        "module \"{key}\": {reference:?} of {repo} moved on since the lock was \
                         written (to {tip}); the locked commit {locked}, which it still reaches, \
                         was installed. Run `tstore init -upgrade` to take the new commit."
                    )
                }
            }
            ModuleWarning::RefUnchecked {
                repo,
                reference,
                why,
                ..
            } => write!(
                f,
                "{reference:?} of {}: not checked that it still reaches the locked commit (the \
                 remote cannot be asked: {why}); installed on the lock's checksums alone \
                 (TSTORE_TRUST_LOCK)",
                crate::redact::display_url(repo)
            ),
            ModuleWarning::RefCheckedLongAgo {
                repo,
                reference,
                ago,
                why,
                ..
            } => write!(
                f,
                "{reference:?} of {}: not checked again that it still reaches the locked commit \
                 (the remote cannot be asked: {why}); this machine's own check, made {}, was \
                 believed (a runner without one refuses unless TSTORE_TRUST_LOCK=1)",
                crate::redact::display_url(repo),
                match ago {
                    Some(secs) => format!("{} ago", ago_in_words(*secs)),
                    None => "at an unknown time".to_owned(),
                }
            ),
            ModuleWarning::RefCheckedByMirror {
                repo,
                reference,
                mirror,
                ago,
                why,
                ..
            } => write!(
                f,
                "{reference:?} of {}: the remote cannot be asked ({why}); the module mirror \
                 {mirror} records that the machine that pushed it found it reaching the locked \
                 commit {}, believed for this run",
                crate::redact::display_url(repo),
                match ago {
                    Some(secs) => format!("{} ago", ago_in_words(*secs)),
                    None => "at a time ahead of this machine's clock".to_owned(),
                }
            ),
            ModuleWarning::SharedByInstances {
                key,
                repeated,
                by,
                dir,
            } => {
                let under = if repeated == key {
                    format!("it is called with {by}")
                } else {
                    format!("module \"{repeated}\" around it is called with {by}")
                };
                write!(
                    f,
                    "module \"{key}\" writes into its own directory, and {under}: every \
                     instance shares {dir}, as with terraform, so their writes land in one place \
                     and may overwrite each other. Give each instance its own module call if \
                     they must not."
                )
            }
            ModuleWarning::KeptForeignCopy { slot, kept_as } => write!(
                f,
                "{} was not made by tstore and held files its package does not (written there \
                 by the module, or edited): it was moved to {} instead of being replaced. Take \
                 what you need from it, then delete it.",
                slot.display(),
                kept_as.display()
            ),
        }
    }
}

/// One remote call of `tstore modules lock`.
#[derive(Clone, Debug, Serialize)]
pub struct LockedCall {
    /// Module key (`a.b`).
    pub key: String,
    /// Its source, as the lock file writes it.
    pub source: String,
    /// Registry version, or git ref.
    pub version: Option<String>,
    /// Git commit.
    pub commit: Option<String>,
    /// Its standing in the lock file.
    pub lock: CallLock,
}

/// The result of `tstore modules outdated`.
#[derive(Clone, Debug, Serialize)]
pub struct OutdatedReport {
    /// Locked calls resolved again.
    pub checked: usize,
    /// Those whose resolution moved, sorted by key.
    pub calls: Vec<OutdatedCall>,
}

/// A locked call that would resolve to something else now.
#[derive(Clone, Debug, Serialize)]
pub struct OutdatedCall {
    /// Module key (`a.b`).
    pub key: String,
    /// Its source, as the lock file writes it (shown without secrets).
    pub source: String,
    /// The version (registry) or ref (git) the lock records.
    pub locked_version: Option<String>,
    /// The commit the lock records (git).
    pub locked_commit: Option<String>,
    /// The version the constraint selects now, or the ref.
    pub latest_version: Option<String>,
    /// The commit the ref names now (git).
    pub latest_commit: Option<String>,
    /// Whether an upgrade would change the call's entry now.
    pub moved: bool,
    /// Under the cooldown, newer versions the call allows that are not old enough yet, with
    /// the date each becomes eligible.
    pub held_back: Vec<crate::HeldBack>,
    /// For a git call pinned to a version tag: the repository's newer version tags, newest
    /// first (a call names its tag by hand: `-upgrade` does not move it).
    pub newer_tags: Vec<NewerTag>,
}

/// A newer version tag of a tag-pinned git call's repository.
#[derive(Clone, Debug, Serialize)]
pub struct NewerTag {
    /// The tag.
    pub tag: String,
    /// The commit it names.
    pub commit: String,
    /// Under the cooldown, when it becomes eligible (seconds since the epoch: this
    /// machine's first sighting of the tag at that commit, plus the policy's age); `None`:
    /// it is eligible (or no policy applies).
    pub held_until: Option<u64>,
}

/// The result of `tstore modules lock`.
#[derive(Clone, Debug, Serialize)]
pub struct ModuleLockReport {
    /// Every remote call, sorted by key.
    pub calls: Vec<LockedCall>,
    /// Keys whose entries were dropped (calls no longer in the configuration).
    pub removed: Vec<String>,
    /// What happened to the lock file.
    pub lock_file: LockFileChange,
    /// Package ids fetched in this run.
    pub fetched: Vec<String>,
    /// Package ids found in the store.
    pub reused: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchecked_refs_are_one_line_without_credentials_and_one_per_repository_and_ref() {
        let unchecked = |key: &str, repo: &str, reference: &str| ModuleWarning::RefUnchecked {
            key: key.into(),
            repo: repo.into(),
            reference: reference.into(),
            why: "git ls-remote: unable to access the remote".into(),
        };
        let repo = "https://user:S3CRET@git.example.com/org/net.git";
        let a = unchecked("vpc", repo, "main");
        let said = a.to_string();
        assert!(!said.contains("S3CRET") && !said.contains('\n'), "{said}");
        assert!(said.starts_with("\"main\" of https://git.example.com/org/net.git: not checked"));
        // Another call, another root, the same repository without credentials: one line.
        let b = unchecked("net", "https://git.example.com/org/net.git", "main");
        assert_eq!(a.once_per_run(), b.once_per_run());
        assert_ne!(
            a.once_per_run(),
            unchecked("vpc", repo, "v1").once_per_run()
        );
        let long_ago = ModuleWarning::RefCheckedLongAgo {
            key: "vpc".into(),
            repo: repo.into(),
            reference: "main".into(),
            ago: Some(3 * 3600 + 5),
            why: "git ls-remote: unable to access the remote".into(),
        };
        let said = long_ago.to_string();
        assert!(said.contains("made 3 hours ago"), "{said}");
        assert!(!said.contains("S3CRET") && !said.contains('\n'), "{said}");
        assert_ne!(long_ago.once_per_run(), a.once_per_run());
    }
}
