//! What the provider install flow tells the binary once it is done: the [`InitReport`] of a
//! successful install (its progress goes through [`crate::report`]).

use std::path::PathBuf;

use serde::Serialize;
use tstore_store::HashRecord;

use crate::report::LockFileChange;
use crate::workdir::link::LinkOutcome;

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
    /// What was seen of the state, whose providers are installed too.
    pub state: crate::providers::StateReport,
    /// Providers installed in this run whose new lock entry holds only the checksum
    /// computed here for this platform, by display name, when the tool version warns of
    /// them (`tool_version::INCOMPLETE_LOCK_WARNING`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incomplete_lock_entries: Vec<String>,
    /// The CLI configuration's `dev_overrides`, which the binary warns of as the tools do.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dev_overrides: Vec<DevOverride>,
    /// Providers the old lock file had and the new one has not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lock_entries_dropped: Vec<String>,
}

/// A provider the CLI configuration's `dev_overrides` points at a local directory.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DevOverride {
    /// The provider, as the tool displays it.
    pub provider: String,
    /// The directory the tool runs it from.
    pub dir: PathBuf,
    /// Whether init installed it all the same (releases before
    /// `tool_version::DEV_OVERRIDES_NOT_INSTALLED`).
    pub installed: bool,
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
