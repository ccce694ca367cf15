//! What the install flow tells the binary: progress [`Event`]s for a [`Reporter`], and the
//! [`InitReport`] of a successful install.

use std::path::PathBuf;

use serde::Serialize;
use tstore_store::HashRecord;
use tstore_tofu::addr::Platform;
use tstore_tofu::version::Version;

use crate::workdir::link::LinkOutcome;

/// Progress of an install, for the binary to render.
#[derive(Debug)]
pub enum Event<'a> {
    /// The lock file pins this provider's version.
    ReusingLocked {
        /// Provider as tofu displays it.
        provider: &'a str,
    },
    /// Looking for the newest version matching the constraints (empty: any).
    Finding {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// The merged constraints, canonical form.
        constraints: &'a str,
    },
    /// The working directory already links the right package.
    UsingPreviouslyInstalled {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
    },
    /// The lock file pins a version whose package the store holds with a matching hash
    /// (fresh or re-verified): no installation source is consulted.
    UsingFromStore {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Locked version.
        version: &'a Version,
    },
    /// `providers lock`: this platform's package was fetched (or found) for checksums.
    Fetching {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// The platform.
        platform: &'a Platform,
    },
    /// `providers lock`: this platform's checksums were obtained and authenticated.
    ObtainedChecksums {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// The platform.
        platform: &'a Platform,
        /// How the package was authenticated.
        auth: &'a str,
    },
    /// About to install.
    Installing {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
    },
    /// A package download starts (registry or network mirror).
    Downloading {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// The archive URL.
        url: &'a str,
    },
    /// Bytes of a download received so far (called often; render cheaply).
    DownloadProgress {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Bytes received.
        bytes: u64,
        /// `Content-Length`, if the server sent one.
        total: Option<u64>,
    },
    /// Installed (linked).
    Installed {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// How the package was authenticated ("unauthenticated" for mirrors).
        auth: &'a str,
        /// Whether the package content came from the store without reading the source.
        from_store: bool,
    },
}

/// Receives [`Event`]s as the install proceeds. Providers are obtained in parallel, so
/// events of different providers interleave.
pub trait Reporter: Sync {
    /// Called for each event, in order.
    fn event(&self, event: Event<'_>);
}

/// How the package content was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Obtained {
    /// Read from the source and ingested into the store.
    Ingested,
    /// Recognized from the store's memo of an unchanged source: nothing read or hashed.
    Memoized,
    /// Downloaded from a registry or network mirror and ingested into the store.
    Downloaded,
    /// Already in the store with the archive hash the (signed) source promises: nothing
    /// downloaded.
    InStore,
    /// The lock file pins the version and the store holds the package with one of the
    /// lock's hashes, its files unchanged since verified: no source consulted, no network.
    StoreByLock,
}

/// What happened to the lock file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockFileChange {
    /// There was none; it was written.
    Created,
    /// Its selections or hashes changed; it was rewritten.
    Updated,
    /// Nothing changed; it was left alone.
    Unchanged,
    /// `-lockfile=readonly`: only checksums or constraints would change; it was left
    /// alone and the binary warns, as tofu does.
    NotUpdated,
}

/// One installed provider, as reported by `init --json`.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderReport {
    /// Fully-qualified provider address.
    pub provider: String,
    /// Selected version.
    pub version: String,
    /// Platform installed.
    pub platform: String,
    /// Where the package came from: `filesystem_mirror:/path/to/zip`,
    /// `registry:https://…/x.zip` or `network_mirror:https://…/x.zip`.
    pub source: String,
    /// How the package was authenticated, as tofu words it (`signed, key ID …`,
    /// `verified checksum`, `unauthenticated`).
    pub auth: String,
    /// How its content reached the store.
    pub obtained: Obtained,
    /// The hashes known for the package, with their dispositions.
    pub hashes: Vec<HashRecord>,
    /// The link in the working directory.
    pub link: PathBuf,
    /// Where the link points.
    pub target: PathBuf,
    /// What was done to the link.
    pub link_outcome: LinkOutcome,
}

/// The result of a successful `init`.
#[derive(Clone, Debug, Serialize)]
pub struct InitReport {
    /// Installed providers, sorted by address.
    pub providers: Vec<ProviderReport>,
    /// What happened to `.terraform.lock.hcl`.
    pub lock_file: LockFileChange,
    /// Content bytes this run read and hashed (0 when everything came from the store).
    pub bytes_hashed: u64,
    /// Lock entries of terraform's registry moved to OpenTofu's under the tofu flavor, as
    /// OpenTofu moves them (same version, new hashes); absent when none was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lock_entries_rewritten: Vec<RewrittenLockEntry>,
}

/// A lock entry the tofu flavor moved to OpenTofu's registry
/// (`LockFile::upgrade_from_predecessor`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RewrittenLockEntry {
    /// The entry as the lock file had it (`registry.terraform.io/hashicorp/TYPE`).
    pub from: String,
    /// The entry that replaces it, at the same version.
    pub to: String,
}
