//! `tstore providers outdated`: per provider the lock file pins, the version `init -upgrade`
//! would choose now from the CLI configuration's installation sources (under the cooldown,
//! the newest old enough), and the newer versions the cooldown holds back with the date each
//! becomes eligible. It asks the sources and writes nothing.

use serde::Serialize;
use tstore_tofu::lockfile::LockFile;

use crate::net::LazyHttpClient;
use crate::providers::{obtain, InstallError, ProviderOptions, LOCK_FILE_NAME};

/// What `providers outdated` found.
#[derive(Clone, Debug, Serialize)]
pub struct ProvidersOutdatedReport {
    /// Whether the working directory has a lock file (none: nothing is checked).
    pub lock_file: bool,
    /// Locked providers checked.
    pub checked: usize,
    /// Those an upgrade would move, or whose newer versions the cooldown holds back.
    pub providers: Vec<OutdatedProvider>,
}

/// One locked provider.
#[derive(Clone, Debug, Serialize)]
pub struct OutdatedProvider {
    /// Fully-qualified address.
    pub provider: String,
    /// The version the lock file pins.
    pub locked: String,
    /// The version `init -upgrade` would choose now (`None`: none the constraints allow
    /// is old enough).
    pub latest: Option<String>,
    /// Whether an upgrade would change the lock file's version.
    pub moved: bool,
    /// Under the cooldown, the newer versions not old enough yet.
    pub held_back: Vec<crate::HeldBack>,
}

/// `providers outdated` for `opts.workdir.dir`.
pub fn outdated(opts: &ProviderOptions) -> Result<ProvidersOutdatedReport, InstallError> {
    let requirements = opts.workdir.configuration_requirements()?;
    let Some(lock) = LockFile::load(&opts.workdir.dir.join(LOCK_FILE_NAME))? else {
        return Ok(ProvidersOutdatedReport {
            lock_file: false,
            checked: 0,
            providers: Vec::new(),
        });
    };
    let http = LazyHttpClient::new(&opts.workdir.network);
    let mut report = ProvidersOutdatedReport {
        lock_file: true,
        checked: 0,
        providers: Vec::new(),
    };
    for (addr, constraints) in &requirements.providers {
        let Some(locked) = lock.providers.get(addr).filter(|_| !addr.is_builtin()) else {
            continue;
        };
        report.checked += 1;
        let (latest, held_back) = obtain::newest_allowed(opts, &http, addr, constraints)?;
        let moved = latest.as_ref().is_some_and(|v| *v != locked.version);
        if moved || !held_back.is_empty() {
            report.providers.push(OutdatedProvider {
                provider: addr.to_string(),
                locked: locked.version.to_string(),
                latest: latest.map(|v| v.to_string()),
                moved,
                held_back,
            });
        }
    }
    Ok(report)
}
