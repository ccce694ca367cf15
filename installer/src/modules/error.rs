//! Why module installation failed: [`FetchError`], why one package could not be fetched or
//! read (what a getter says), and [`ModuleInstallError`], the install's error, which adds
//! the call a package belongs to ([`ModuleInstallError::Call`]).

use std::io;
use std::path::PathBuf;

use tstore_tofu::config::{self, SourcePos};
use tstore_tofu::module_lock;

use tstore_diagnostic::Diagnostic;
use tstore_store::StoreError;

use super::package_meta::{self, META_FILE};
use crate::net::discovery::DiscoveryError;
use crate::net::http::HttpError;
use crate::redact::display_url;

/// One module package's failure.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The source address cannot be used as written.
    #[error("{0}")]
    Address(String),
    /// `git` could not be started.
    #[error("cannot run git ({what})")]
    GitSpawn {
        /// The git operation.
        what: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A `git` command failed; its own message says why.
    #[error("git {what} failed: {stderr}")]
    Git {
        /// The git operation.
        what: String,
        /// git's stderr, trimmed.
        stderr: String,
    },
    /// The ref names no branch or tag of the repository.
    #[error(
        "the repository {} has no branch or tag {reference:?}",
        display_url(repo)
    )]
    NoSuchRef {
        /// The repository (messages show it by [`display_url`]).
        repo: String,
        /// The `?ref=` value.
        reference: String,
    },
    /// An HTTP request failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A URL the source or a registry gave is malformed.
    #[error("invalid URL: {0}")]
    Url(#[from] url::ParseError),
    /// Service discovery failed.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// The registry does not have the module.
    #[error("Module not found: the registry at {host} has no module {path}")]
    ModuleNotFound {
        /// Registry host.
        host: String,
        /// `NAMESPACE/NAME/SYSTEM`.
        path: String,
    },
    /// No listed version satisfies the call's constraint.
    #[error(
        "Unresolvable module version constraint: there is no available version of module \
         \"{module}\" which matches the given version constraint {constraint:?}.{}",
        newest.as_ref().map(|v| format!(" The newest available version is {v}.")).unwrap_or_default()
    )]
    Unresolvable {
        /// `HOST/NAMESPACE/NAME/SYSTEM`.
        module: String,
        /// The constraint as written.
        constraint: String,
        /// The newest release the registry lists.
        newest: Option<String>,
    },
    /// Under the cooldown, no version the constraint allows is old enough.
    #[error(
        "No version of module \"{module}\" that matches {constraint:?} is old enough under \
         {policy}; held back: {}",
        held.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    HeldBack {
        /// `HOST/NAMESPACE/NAME/SYSTEM`.
        module: String,
        /// The constraint as written.
        constraint: String,
        /// The versions held back, newest first.
        held: Vec<crate::HeldBack>,
        /// The policy and who set it.
        policy: String,
    },
    /// Under the cooldown, a git tag has not named its commit on this machine for long
    /// enough.
    #[error(
        "the tag {reference:?} of {} names commit {commit}, which {} first saw it name {}; it \
         becomes eligible {} under {policy}",
        display_url(repo),
        held.published.map_or("this machine", |p| p.source.who()),
        held.published.map(|p| crate::cooldown::day(p.at)).unwrap_or_default(),
        held.eligible_at.map(crate::cooldown::day).unwrap_or_default()
    )]
    TagHeldBack {
        /// The repository.
        repo: String,
        /// The tag.
        reference: String,
        /// The commit it names now.
        commit: String,
        /// The tag held back.
        held: crate::HeldBack,
        /// The policy and who set it.
        policy: String,
    },
    /// Under the cooldown, the registry's package of a version is not the one the module
    /// mirror's first-seen date is for.
    #[error(
        "the registry's package of {module} {version} is not the one the module mirror first \
         saw as that version ({h1}): a version published again with other content is a new \
         release, and its cooldown starts again"
    )]
    NotWhatTheMirrorDated {
        /// `HOST/NAMESPACE/NAME/SYSTEM`.
        module: String,
        /// The version.
        version: String,
        /// The `h1:` of the package the mirror's resolution names.
        h1: String,
    },
    /// A registry or a web page answered something tstore cannot use.
    #[error("{0}")]
    Protocol(String),
    /// An archive cannot be decoded.
    #[error("corrupt archive: {0}")]
    CorruptArchive(String),
    /// An archive breaks a safety rule (paths, links, sizes, entry counts).
    #[error("{0}")]
    HostileArchive(String),
    /// The package lacks what the call names (a subdirectory, a local path).
    #[error("{0}")]
    Package(String),
    /// The package is not the one the module lock file records for its call.
    #[error(
        "the module lock file .tstore.lock.hcl does not allow this package of {}: {what}",
        display_url(source_address)
    )]
    LockMismatch {
        /// The call's source, as the lock writes it.
        source_address: String,
        /// What differs: expected and got.
        what: String,
    },
    /// The module mirror's package for a lock entry's `h1:` is another tree: a tampered or
    /// re-pointed tag. Nothing is installed from it.
    #[error(
        "the module mirror {mirror} serves other content under {tag}: the module lock file \
         .tstore.lock.hcl expects {expected}, the mirror's package has {received}; nothing was \
         installed from it. Whoever fills the mirror should push the package again (tstore push \
         --modules --force from a store that holds it)"
    )]
    MirrorMismatch {
        /// The mirror, `oci://REGISTRY/REPOSITORY`.
        mirror: String,
        /// The tag asked.
        tag: String,
        /// The lock entry's `h1:`.
        expected: String,
        /// The `h1:` of what the mirror served.
        received: String,
    },
    /// The module lock file's entry for the call lists no hash tstore can check.
    #[error(
        "the module lock file .tstore.lock.hcl pins {} with no h1: or zh: checksum, so \
         nothing it installs could be verified",
        display_url(source_address)
    )]
    LockEntryWithoutHash {
        /// The call's source, as the lock writes it.
        source_address: String,
    },
    /// The ref a git call names does not reach the commit its lock entry pins: the entry
    /// names a commit of another branch, a fork, a pull request, or history rewritten since.
    #[error(
        "the module lock file .tstore.lock.hcl pins commit {locked} of {}, which {reference:?} \
         (now at {tip}) does not reach",
        display_url(repo)
    )]
    LockedCommitNotReached {
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The commit the lock pins.
        locked: String,
        /// The commit the ref names at the remote now.
        tip: String,
    },
    /// The remote no longer has the commit the lock pins (and the ref no longer names it).
    #[error(
        "the module lock file .tstore.lock.hcl pins commit {locked} of {}, which the remote no \
         longer has ({reference:?} is at {tip} now)",
        display_url(repo)
    )]
    LockedCommitGone {
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The commit the lock pins.
        locked: String,
        /// The commit the ref names now.
        tip: String,
    },
    /// The ref a git call names no longer exists at the remote: whether it reaches the
    /// locked commit cannot be told.
    #[error(
        "the module lock file .tstore.lock.hcl pins commit {locked} of {} by {reference:?}, \
         which the remote no longer has",
        display_url(repo)
    )]
    LockedRefGone {
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The commit the lock pins.
        locked: String,
    },
    /// Whether the ref reaches the locked commit cannot be asked (the remote is unreachable)
    /// and this machine has no record of an earlier check.
    #[error(
        "cannot check that {reference:?} of {} still reaches the locked commit {locked}: the \
         remote cannot be asked ({why}), and this machine has no record of an earlier \
         check{}",
        display_url(repo),
        mirror_miss.as_ref().map_or(String::new(), |m| format!(" ({m})"))
    )]
    LockedRefUnchecked {
        /// The repository.
        repo: String,
        /// The ref the call names.
        reference: String,
        /// The commit the lock pins.
        locked: String,
        /// Why the remote could not be asked.
        why: String,
        /// Why the module mirror's reach record did not count, when a mirror was asked.
        mirror_miss: Option<String>,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Local I/O failed (the message names the path).
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl FetchError {
    /// What to do, when the store refused the package: a store error is shown as itself
    /// ([`FetchError::Store`] is transparent), with its hint.
    pub(crate) fn hint(&self) -> Option<String> {
        match self {
            FetchError::Store(e) => e.hint(),
            FetchError::LockMismatch { .. } => Some(
                "the source changed since the lock was written (a moved tag, a re-published \
                 version, a changed archive). If that change is intended, run \"tstore init \
                 -upgrade\" to accept it and record the new checksums; otherwise keep the \
                 lock file and find out who changed the source."
                    .to_owned(),
            ),
            FetchError::LockedCommitNotReached { .. } => Some(format!(
                "a lock entry installs a commit only where the ref its call names reaches it, \
                 as the remote answers. A runner that found the ref reaching it believes that \
                 check (its git-reach.json) for {window} without asking again, so for up to \
                 {window} after a ref's history is rewritten such a runner may still install \
                 the commit refused here. If the lock was edited to name another commit \
                 (another branch, a fork, a pull request), restore it; if the ref's history \
                 was rewritten on purpose, run \"tstore init -upgrade\" to lock the ref's \
                 commit.",
                window = crate::modules::getters::git_reach::window_in_words()
            )),
            FetchError::TagHeldBack { .. } => Some(
                "wait until then (a tag moved to another commit starts its cooldown again); or \
                 take this source without the cooldown with a min_release_age_exclude pattern \
                 in .tstore.hcl; or lock the commit by hand (its entry in .tstore.lock.hcl), \
                 which is installed as locked."
                    .to_owned(),
            ),
            FetchError::HeldBack { module, .. } => Some(format!(
                "wait until a version is old enough; or take this module without the cooldown \
                 with min_release_age_exclude = [\"{module}\"] in .tstore.hcl; or lock a \
                 version by hand (its entry in .tstore.lock.hcl), which is installed as locked."
            )),
            FetchError::LockedCommitGone { .. } | FetchError::LockedRefGone { .. } => Some(
                "run \"tstore init -upgrade\" to lock what the ref names now, or point the call \
                 at a ref that still exists."
                    .to_owned(),
            ),
            FetchError::LockedRefUnchecked { mirror_miss, .. } => Some(format!(
                "retry when the remote can be reached{}; to install what the lock's checksums \
                 pin without that check (an outage), set TSTORE_TRUST_LOCK=1 or pass \
                 --trust-lock.",
                if mirror_miss.is_some() {
                    ", or run \"tstore push --modules\" with the lock file from a machine \
                     that reaches it, so that the module mirror records the check"
                } else {
                    ""
                }
            )),
            FetchError::LockEntryWithoutHash { .. } => Some(
                "the entry was written or edited by hand. Run \"tstore modules lock -upgrade \
                 -module=CALL\" (or \"tstore init -upgrade\") to record the package's \
                 checksums, and review the change before committing it."
                    .to_owned(),
            ),
            _ => None,
        }
    }
}

/// Why module installation failed.
#[derive(Debug, thiserror::Error)]
pub enum ModuleInstallError {
    /// One call cannot be installed.
    #[error(
        "{at}: cannot install module \"{key}\" (source {:?})",
        crate::redact::display_url(address)
    )]
    Call {
        /// Where the call is.
        at: SourcePos,
        /// Its key.
        key: String,
        /// Its source as written (messages show it by
        /// [`display_url`](crate::redact::display_url)).
        address: String,
        /// What went wrong.
        #[source]
        source: FetchError,
    },
    /// A module's configuration is invalid.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The root package's meta file is invalid.
    #[error("{}: invalid {META_FILE}", path.display())]
    Meta {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: package_meta::MetaError,
    },
    /// The module lock file cannot be read.
    #[error(transparent)]
    Lock(#[from] module_lock::ModuleLockError),
    /// `-lockfile=readonly` and the module lock file would change.
    #[error(
        "the module lock file {} would change ({}), and -lockfile=readonly forbids it",
        module_lock::FILE_NAME,
        changes.join("; ")
    )]
    LockReadonly {
        /// What would change, per call.
        changes: Vec<String>,
    },
    /// `modules outdated` without a module lock file: nothing is pinned to compare.
    #[error("there is no module lock file {}: nothing is pinned, so nothing can be outdated", path.display())]
    NoLockFile {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// An upgrade names a call the configuration does not make.
    #[error("the configuration has no module call \"{call}\" to upgrade")]
    UnknownCall {
        /// The call path as given.
        call: String,
    },
    /// Writing `.terraform/modules` failed.
    #[error("cannot update {}: {message}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Diagnostic for ModuleInstallError {
    fn hint(&self) -> Option<String> {
        match self {
            ModuleInstallError::Call { source, .. } => source.hint(),
            ModuleInstallError::LockReadonly { .. } => Some(format!(
                "run \"tstore init\" without -lockfile=readonly to record the changes, and \
                 commit {}",
                module_lock::FILE_NAME
            )),
            ModuleInstallError::UnknownCall { .. } => Some(format!(
                "name a call as {} keys it: a module block's label, nested calls joined by \
                 dots (\"vpc\", \"vpc.label\")",
                module_lock::FILE_NAME
            )),
            ModuleInstallError::NoLockFile { .. } => Some(
                "run \"tstore modules lock\" (or \"tstore init\") to pin the calls, and commit \
                 the file"
                    .into(),
            ),
            ModuleInstallError::Config(_)
            | ModuleInstallError::Meta { .. }
            | ModuleInstallError::Lock(_)
            | ModuleInstallError::Write { .. } => None,
        }
    }
}

/// An error and its sources on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Why a policy cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file cannot be read: a symlink, not a regular file, or larger than tstore reads.
    #[error("{}: {}", .0.display(), .1)]
    Read(PathBuf, #[source] crate::own_files::OwnFileError),
    /// It is not valid HCL (said without quoting the file: it may not be what it seems).
    #[error("{origin}: {message}")]
    Syntax {
        /// The file or block.
        origin: String,
        /// The parser's message and position.
        message: String,
    },
    /// It breaks a rule of the format.
    #[error("{origin}: {message}")]
    Invalid {
        /// The file or block.
        origin: String,
        /// What is wrong.
        message: String,
    },
}
