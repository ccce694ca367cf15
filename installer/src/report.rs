//! Progress of an install as events: the providers' and modules' flows send [`Event`]s to a
//! [`Reporter`] the binary implements, and the binary alone turns them into text, bars or
//! nothing (`--json`).

use serde::Serialize;
use tstore_tofu::addr::Platform;
use tstore_tofu::version::Version;

/// Progress of an install, for the binary to render.
#[derive(Debug)]
pub enum Event<'a> {
    // Providers.
    /// The lock file pins this provider's version.
    ReusingLocked {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// The locked version.
        version: &'a Version,
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
    /// `providers lock` (from terraform 1.2.6, and OpenTofu): this platform's package was
    /// retrieved and authenticated.
    Retrieved {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// Selected version.
        version: &'a Version,
        /// The platform.
        platform: &'a Platform,
        /// How the package was authenticated.
        auth: &'a str,
    },
    /// `providers lock` (from terraform 1.2.6, and OpenTofu): what this platform's checksums
    /// did to the lock entry, once every package was retrieved.
    ChecksumsTracked {
        /// Provider as tofu displays it.
        provider: &'a str,
        /// The platform.
        platform: &'a Platform,
        /// What changed, in the tools' sentence.
        change: &'static str,
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

    // Modules.
    /// The module phase begins and the configuration calls modules: said first, before any
    /// package is fetched ("Initializing modules...").
    InitializingModules,
    /// A call's package is about to be fetched from its source (not found in the store):
    /// the tools' "Downloading SOURCE for KEY...".
    DownloadingModule {
        /// The call's source as written (a registry call: with the version selected, when
        /// it is known).
        source: &'a str,
        /// The call's key.
        key: &'a str,
    },
    /// A module archive's download has begun (its bytes follow as `DownloadProgress`, keyed
    /// by `package`).
    DownloadingModuleArchive {
        /// The package's address, shown without secrets.
        package: &'a str,
    },
    /// A module archive's download is over (done, refused or unchanged).
    DownloadedModuleArchive {
        /// As in `DownloadingModuleArchive`.
        package: &'a str,
    },
    /// The packages of one module's calls are fetched in parallel: `total` of them (each
    /// fetched, or found in the store).
    FetchingModulePackages {
        /// How many.
        total: usize,
    },
    /// One package of the batch started: its address (`git::…`, `https://…`, `oci://…`)
    /// or registry module (`HOST/NAMESPACE/NAME/SYSTEM`).
    ModulePackageStarted {
        /// The address.
        package: &'a str,
    },
    /// One package of the batch finished: fetched, found in the store or failed (a failure
    /// is reported by the call that needs it).
    ModulePackageFinished {
        /// The address, as in `ModulePackageStarted`.
        package: &'a str,
    },
    /// The batch is over.
    FetchedModulePackages,
}

/// Receives [`Event`]s as the install proceeds. Packages are obtained in parallel, so
/// events of different packages interleave.
pub trait Reporter: Sync {
    /// Called for each event, in order.
    fn event(&self, event: Event<'_>);
}

/// What happened to a lock file (the providers' `.terraform.lock.hcl`, the modules'
/// `.tstore.lock.hcl`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockFileChange {
    /// There was none; it was written.
    Created,
    /// Its selections or hashes changed; it was rewritten.
    Updated,
    /// Nothing changed; it was left alone.
    #[default]
    Unchanged,
    /// `-lockfile=readonly`: only checksums or constraints would change; it was left
    /// alone and the binary warns, as tofu does.
    NotUpdated,
}
