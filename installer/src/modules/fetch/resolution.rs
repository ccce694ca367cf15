//! A registry module's resolution: the version its constraints select (under the cooldown,
//! the newest old enough), the download location the registry names for it, and its
//! package; the store's memo of a (module, exact version) that spares asking again.

use tstore_store::{ModuleSourceMemo, Provenance};
use tstore_tofu::module_source::{Getter, ModuleSource};
use tstore_tofu::version::{ModuleVersionConstraints, Version};

use super::{FetchError, FetchLog, Fetched, Fetcher};
use crate::modules::getters::registry;
use crate::net::NetworkSettings;
use crate::redact::display_url;

/// The store's memo key of a registry module's version: `(module, exact version)` names
/// one package for good.
fn registry_memo_key(m: &registry::RegistryModule<'_>, version: &Version) -> String {
    format!(
        "registry\0{}/{}\0{version}",
        m.host.to_ascii_lowercase(),
        m.path
    )
}

/// The key of one registry resolution in this init: `HOST/PATH CONSTRAINTS`.
pub(in crate::modules) fn resolve_key(
    m: &registry::RegistryModule<'_>,
    constraints: &ModuleVersionConstraints,
) -> String {
    format!("{}/{} {}", m.host, m.path, constraints.to_go_string())
}

/// A registry module's selected version, the download location the registry named for it,
/// and its package.
#[derive(Clone, Debug)]
pub(in crate::modules) struct Resolved {
    pub(in crate::modules) version: Version,
    pub(in crate::modules) location: String,
    pub(in crate::modules) fetched: Fetched,
    /// Under the cooldown, when the chosen version was published (and who says so).
    pub(in crate::modules) published: Option<crate::Published>,
    /// Under the cooldown, the newer versions held back.
    pub(in crate::modules) held_back: Vec<crate::HeldBack>,
}

pub(in crate::modules) fn bad_location(location: &str) -> FetchError {
    FetchError::Protocol(format!(
        "the registry's download location {:?} is not a supported remote address",
        display_url(location)
    ))
}

impl Fetcher<'_> {
    /// A registry module: the newest version matching `constraints` (the version listing is
    /// read every init, unless the constraint names one exact version the store holds),
    /// then its package. A (module address, exact version) names one
    /// package for good (the registry contract: a published version is never replaced), so
    /// when the store's memo for it names a package the store holds intact, neither the
    /// download endpoint nor the location it names is asked again. Locations read by the file
    /// getter (re-read every init) are not memoized. `fresh` (`-upgrade`, or a memo whose
    /// package is not the one a lock entry pins): the memo is not believed, the registry's
    /// download endpoint and the location it names are asked again, and the memo replaced.
    pub(super) fn registry(
        &self,
        network: &NetworkSettings,
        m: &registry::RegistryModule<'_>,
        constraints: &ModuleVersionConstraints,
        fresh: bool,
        cooldown: Option<&crate::ReleaseAge>,
        log: &mut FetchLog,
    ) -> Result<Resolved, FetchError> {
        if !fresh && cooldown.is_none() {
            if let Some(resolved) = self.registry_from_store(m, constraints, log)? {
                return Ok(resolved);
            }
        }
        let memo_key_of = |version: &Version| registry_memo_key(m, version);
        let http = self
            .http
            .as_ref()
            .ok_or_else(|| FetchError::Protocol("no HTTP client".into()))?;
        let module = format!("{}/{}", m.host.to_ascii_lowercase(), m.path);
        let mirror_date = |v: &Version| {
            let (mirror, client) = self.mirror?;
            cooldown.filter(|p| mirror.dates_count_under(p))?;
            super::mirror::resolution_first_seen(client, mirror, &module, &v.to_string())
        };
        let registry::Selected {
            version,
            download,
            published,
            held_back,
            vouched_h1,
        } = registry::select(
            self.run,
            http,
            network,
            m,
            constraints,
            cooldown,
            &mirror_date,
        )?;
        let memo_key = memo_key_of(&version);
        if let Some(memo) = self.memo(&memo_key)?.filter(|_| !fresh) {
            log.reused.push(memo.package.clone());
            let mut fetched = self.fetched(&memo.package, Provenance::Origin)?;
            fetched.subdir = (!memo.subdir.is_empty()).then_some(memo.subdir);
            self.is_vouched(&module, &version, vouched_h1.as_deref(), &fetched)?;
            return Ok(Resolved {
                version,
                location: memo.location,
                fetched,
                published,
                held_back,
            });
        }
        let location = registry::location(http, network, m, &download)?;
        let package = match ModuleSource::parse(&location, self.default_host) {
            Ok(ModuleSource::Remote { package, .. }) => package,
            _ => return Err(bad_location(&location)),
        };
        let fetched = self.fetch(&package, 0, log)?;
        self.is_vouched(&module, &version, vouched_h1.as_deref(), &fetched)?;
        if package.getter != Getter::File {
            self.remember(
                &memo_key,
                &ModuleSourceMemo {
                    package: fetched.id.clone(),
                    location: location.clone(),
                    subdir: fetched.subdir.clone().unwrap_or_default(),
                    etag: None,
                    last_modified: None,
                },
            )?;
        }
        Ok(Resolved {
            version,
            location,
            fetched,
            published,
            held_back,
        })
    }

    /// Refuse `fetched` as `module` at `version` unless it is the package (`h1:`) whose
    /// resolution the module mirror's date is for: a version re-published with other
    /// content is another release, and its cooldown starts again.
    fn is_vouched(
        &self,
        module: &str,
        version: &Version,
        vouched_h1: Option<&str>,
        fetched: &Fetched,
    ) -> Result<(), FetchError> {
        let Some(h1) = vouched_h1 else {
            return Ok(());
        };
        if crate::modules::locked::package_hashes(self.store, fetched)?.contains(h1) {
            return Ok(());
        }
        Err(FetchError::NotWhatTheMirrorDated {
            module: module.to_owned(),
            version: version.to_string(),
            h1: h1.to_owned(),
        })
    }

    /// A registry module whose constraint names one exact version the store holds, resolved
    /// with no registry at all (and no HTTP client): any version list could only select
    /// that version, and a published version is never replaced. `None`: ask the registry.
    pub(super) fn registry_from_store(
        &self,
        m: &registry::RegistryModule<'_>,
        constraints: &ModuleVersionConstraints,
        log: &mut FetchLog,
    ) -> Result<Option<Resolved>, FetchError> {
        let Some(version) = constraints.exact() else {
            return Ok(None);
        };
        let Some(memo) = self.memo(&registry_memo_key(m, version))? else {
            return Ok(None);
        };
        log.reused.push(memo.package.clone());
        let mut fetched = self.fetched(&memo.package, Provenance::Origin)?;
        fetched.subdir = (!memo.subdir.is_empty()).then_some(memo.subdir);
        Ok(Some(Resolved {
            version: version.clone(),
            location: memo.location,
            fetched,
            published: None,
            held_back: Vec::new(),
        }))
    }
}
