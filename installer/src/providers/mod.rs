//! Provider installation: the three-phase flow of `tstore init`'s provider phase
//! ([`install`](install())), `tstore providers lock` ([`lock_platforms`]) and the
//! installation sources ([`sources`]).

mod archives;
mod error;
mod fetch;
mod install;
pub(crate) mod lock_platforms;
mod obtain;
mod outdated;
mod report;
pub(crate) mod sources;
mod state;

pub use self::archives::keep_source_archive;
pub use self::error::InstallError;
pub(crate) use self::error::RemoteError;
pub use self::fetch::{fetch_locked_providers, FetchedProvider};
pub use self::install::{display_name, install, ProviderOptions, LOCK_FILE_NAME};
pub(crate) use self::install::{render, ObtainMode, Planned};
pub(crate) use self::obtain::{
    auth_summary, download_and_ingest, join_hashes, obtain, record, reuse, ObtainContext,
    Obtainment, ProviderRequest,
};
pub use self::obtain::{ingest_mirror_package, SIGNING_SKIPPED};
pub use self::outdated::{
    outdated as outdated_providers, OutdatedProvider, ProvidersOutdatedReport,
};
pub use self::report::{DevOverride, InitReport, Obtained, ProviderReport, RewrittenLockEntry};
pub use self::state::{StateReport, StateSeen};
pub(crate) use crate::report::{Event, LockFileChange, Reporter};
