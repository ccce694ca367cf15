//! Which provider packages a push takes: the `--provider` selections, the store's packages
//! they match, and whether the target gives each selected provider a repository of its own.

use std::collections::BTreeMap;

use tstore_store::{Package, PackageKey, Store};
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::cliconfig::check_repository_template;
use tstore_tofu::version::Version;

use super::PushError;

/// Check that `template` (an `oci_mirror` repository template, after `oci://`) gives each
/// provider the push would publish a repository of its own, as the CLI configuration's
/// `oci_mirror` templates are checked: the selections are the `include` patterns (none:
/// every provider).
pub fn check_push_target(
    template: &str,
    selections: &[ProviderSelection],
) -> Result<(), PushError> {
    let patterns: Vec<String> = selections.iter().map(|s| s.addr.to_string()).collect();
    check_repository_template(template, &patterns).map_err(|source| PushError::Target {
        template: template.to_owned(),
        source,
    })
}

/// Which providers to push: an address, and a version or all the store holds.
#[derive(Clone, Debug)]
pub struct ProviderSelection {
    /// As the user wrote it (for messages).
    pub text: String,
    /// The provider.
    pub addr: ProviderAddr,
    /// One version, or every version in the store.
    pub version: Option<Version>,
}

impl ProviderSelection {
    /// Parse `[HOST/]NAMESPACE/TYPE[@VERSION]`; a short address takes `default_host`.
    pub fn parse(text: &str, default_host: &str) -> Result<ProviderSelection, PushError> {
        let bad = |message: String| PushError::BadSelection {
            selection: text.to_owned(),
            message,
        };
        let (addr, version) = match text.split_once('@') {
            Some((a, v)) => (a, Some(Version::parse(v).map_err(|e| bad(e.to_string()))?)),
            None => (text, None),
        };
        let addr =
            ProviderAddr::parse_source(addr, default_host).map_err(|e| bad(e.to_string()))?;
        Ok(ProviderSelection {
            text: text.to_owned(),
            addr,
            version,
        })
    }
}

/// The provider packages the selections match (all provider packages of the store when
/// there is none), by (address, version) and then platform.
pub(super) type SelectedVersions = BTreeMap<(String, String), BTreeMap<String, Package>>;

pub(super) fn selected_versions(
    store: &Store,
    selections: &[ProviderSelection],
) -> Result<SelectedVersions, PushError> {
    // What is pushed is what the store vouches for: a restored store is re-verified first.
    store.ensure_trusted()?;
    let mut versions = SelectedVersions::new();
    let mut matched = vec![false; selections.len()];
    for package in store.packages()? {
        let PackageKey::Provider {
            addr,
            version,
            platform,
        } = &package.key
        else {
            continue;
        };
        let wanted = if selections.is_empty() {
            true
        } else {
            let mut any = false;
            for (i, s) in selections.iter().enumerate() {
                let same_version = s.version.as_ref().is_none_or(|v| v.to_string() == *version);
                if s.addr.to_string() == *addr && same_version {
                    matched[i] = true;
                    any = true;
                }
            }
            any
        };
        if wanted {
            versions
                .entry((addr.clone(), version.clone()))
                .or_default()
                .insert(platform.clone(), package.clone());
        }
    }
    if let Some(i) = matched.iter().position(|m| !m) {
        return Err(PushError::NothingSelected {
            selection: selections[i].text.clone(),
        });
    }
    Ok(versions)
}

/// A selected provider package whose source zip the store did not keep.
#[derive(Clone, Debug)]
pub struct WithoutSourceZip {
    /// The provider.
    pub addr: ProviderAddr,
    /// Its version.
    pub version: Version,
    /// The package's platform.
    pub platform: tstore_tofu::addr::Platform,
}

/// The selected provider packages (as [`push_providers`] selects them) whose source zip the
/// store did not keep: their layers would be rebuilt unless the zips are fetched first
/// ([`crate::providers::keep_source_archive`]).
///
/// [`push_providers`]: super::push_providers
pub fn packages_without_source_zip(
    store: &Store,
    selections: &[ProviderSelection],
) -> Result<Vec<WithoutSourceZip>, PushError> {
    let mut without = Vec::new();
    for ((addr, version), platforms) in selected_versions(store, selections)? {
        for (platform, package) in platforms {
            if store.kept_archive_of(&package.hashes)?.is_some() {
                continue;
            }
            // The store records the keys it was given, parsed; a row that no longer parses
            // is left to the push to build from its files.
            let (Ok(addr), Ok(version), Ok(platform)) = (
                ProviderAddr::parse_source(&addr, ""),
                Version::parse(&version),
                platform.parse(),
            ) else {
                continue;
            };
            without.push(WithoutSourceZip {
                addr,
                version,
                platform,
            });
        }
    }
    Ok(without)
}
