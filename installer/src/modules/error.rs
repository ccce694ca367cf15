//! Why a module package could not be fetched or read, as the installer's typed error. The
//! call it belongs to is added by [`ModuleInstallError::Call`](super::ModuleInstallError).

use std::io;

use tstore_store::{Diagnostic, StoreError};

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
