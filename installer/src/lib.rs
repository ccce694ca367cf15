//! Installing OpenTofu/Terraform providers and modules into tstore's store and linking them
//! into working directories: the install flows behind `tstore init` and
//! `tstore providers lock`, their sources, and the network they talk to.
//!
//! The language (addresses, versions, the lock file, configuration, the CLI configuration)
//! is `tstore-tofu`; the store is `tstore-store`. Rooms:
//!
//! - [`init`](mod@init): `init` of one working directory, the protocol in one place (locks,
//!   mount, modules, providers, the root recorded), and the roots under a directory;
//! - [`net`]: HTTP, service discovery, signatures;
//! - [`providers`]: the provider install flow, `providers lock`, and the installation
//!   sources (filesystem mirror, registry, network mirror, OCI mirror);
//! - [`modules`]: module sources, the read-only policy, `modules.json`;
//! - [`publish`]: the store's packages pushed to an OCI registry in OpenTofu's layout;
//! - [`workdir`]: what tstore writes under a working directory's `.terraform/`.

#![allow(clippy::result_large_err)] // errors carry their context (paths, versions) by value; they are cold.

mod ci_cache;
mod cooldown;
mod facts;
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzz_entry;
mod init;
mod modules;
mod net;
mod options;
mod own_files;
mod providers;
mod publish;
mod redact;
mod report;
mod run;
mod state_record;
mod wildcard;
mod workdir;

pub use crate::cooldown::{
    day as published_day, policy_seen_before, AgeSource, Chosen, HeldBack, Published, ReleaseAge,
};
pub use crate::facts::{check_facts, keep_facts_in, FactsCheck, FactsKept, FactsMismatch};
pub use crate::init::{
    find_roots, init, InitError, InitHooks, InitOptions, InitOutcome, InstalledModules,
    RootSearchError,
};
pub use crate::modules::policy::{
    find_repository_flavor, find_repository_module_mirror, find_repository_rules,
    parse_machine_rules, ModulePolicy,
};
pub use crate::modules::repository_file::{find_repository_release_age, RepositoryReleaseAge};
pub use crate::modules::PolicyError;
pub use crate::modules::{
    claims_origin as module_id_claims_origin, install as install_modules, lock as lock_modules,
    outdated as outdated_modules, prefetch as prefetch_modules, Action, CallLock, CallReport,
    LockedCall, ModuleInstallError, ModuleLockReport, ModuleMirror, ModuleOptions, ModuleWarning,
    ModulesReport, NewerTag, ObtainedFrom, OutdatedCall, OutdatedReport, META_FILE,
};
pub use crate::net::oci::{OciClient, OciRepository};
pub use crate::net::NetworkSettings;
pub use crate::options::WorkdirOptions;
pub use crate::own_files::OwnFileError;
pub use crate::providers::lock_platforms::{
    lock as lock_providers, LockOptions, LockReport, LockSource, PlatformReport, ProviderLockReport,
};
pub use crate::providers::sources::fs_mirror::{
    providers_in as mirror_providers_in, FilesystemMirror, MirrorLocation, MirrorPackage,
};
pub use crate::providers::{
    display_name, fetch_locked_providers, ingest_mirror_package, install as install_providers,
    keep_source_archive, outdated_providers, DevOverride, FetchedProvider, InitReport,
    InstallError, Obtained, OutdatedProvider, ProviderOptions, ProviderReport,
    ProvidersOutdatedReport, RewrittenLockEntry, StateReport, StateSeen, LOCK_FILE_NAME,
    SIGNING_SKIPPED,
};
pub use crate::publish::{
    check_push_target, oci_client, packages_without_source_zip, push_module, push_modules,
    push_providers, ExistingTag, ModulePush, ModuleSelection, ProviderSelection, PushError,
    PushedModule, PushedModules, PushedReach, PushedResolution, PushedVersion, WithoutSourceZip,
};
pub use crate::redact::display_url as redacted_url;
pub use crate::report::{Event, LockFileChange, Reporter};
pub use crate::workdir::data_dir::DataDir;
pub use crate::workdir::link::LinkOutcome;
pub use crate::workdir::{interrupt, plugin_path};

pub use crate::run::Run;
pub use ci_cache::{ci_keep, CiCacheError, CiKeep};
pub use state_record::first_said_on_this_machine;
