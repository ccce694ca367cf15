//! `tstore fetch`: every provider a lock file pins, for each platform asked, brought into
//! the store and checked against the lock's hashes as `init` checks them (a package the
//! store holds with a lock hash needs no source at all), nothing linked and nothing
//! written in the working directory.

use serde::Serialize;
use tstore_store::Store;
use tstore_tofu::addr::Platform;
use tstore_tofu::lockfile::LockFile;
use tstore_tofu::version::VersionConstraints;

use crate::net::LazyHttpClient;
use crate::providers::{
    obtain, InstallError, ObtainContext, ObtainMode, Obtained, ProviderOptions, ProviderRequest,
    Reporter, LOCK_FILE_NAME,
};

/// One locked provider's package for one platform, now in the store.
#[derive(Clone, Debug, Serialize)]
pub struct FetchedProvider {
    /// Fully-qualified address.
    pub provider: String,
    /// The locked version.
    pub version: String,
    /// `os_arch`.
    pub platform: String,
    /// How its content reached the store (`store_by_lock`: it was there).
    pub obtained: Obtained,
}

/// Bring every provider `.terraform.lock.hcl` of `opts.workdir.dir` pins into `store`, for
/// each of `platforms`, from `opts.methods`; nothing when there is no lock file.
pub fn fetch_locked_providers(
    store: &Store,
    opts: &ProviderOptions,
    platforms: &[Platform],
    reporter: &dyn Reporter,
) -> Result<Vec<FetchedProvider>, InstallError> {
    let Some(lock) = LockFile::load(&opts.workdir.dir.join(LOCK_FILE_NAME))? else {
        return Ok(Vec::new());
    };
    let http = LazyHttpClient::new(&opts.workdir.network);
    let mut fetched = Vec::new();
    for (addr, entry) in lock.providers.iter().filter(|(a, _)| !a.is_builtin()) {
        let exact = VersionConstraints::parse(&format!("= {}", entry.version)).map_err(|e| {
            InstallError::NoMatchingVersion {
                provider: addr.to_string(),
                constraints: format!("= {} ({e})", entry.version),
            }
        })?;
        for platform in platforms {
            let popts = ProviderOptions {
                platform: platform.clone(),
                ..opts.clone()
            };
            let cx = ObtainContext {
                store,
                opts: &popts,
                http: &http,
                reporter,
            };
            let request = ProviderRequest {
                addr,
                constraints: &exact,
                locked: Some(entry),
            };
            let planned = obtain(cx, request, ObtainMode::Init)?;
            if planned.obtained != Obtained::StoreByLock {
                planned.commit(store)?;
            }
            fetched.push(FetchedProvider {
                provider: addr.to_string(),
                version: entry.version.to_string(),
                platform: platform.to_string(),
                obtained: planned.obtained,
            });
        }
    }
    Ok(fetched)
}
