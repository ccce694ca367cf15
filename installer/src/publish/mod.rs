//! Publishing the store's packages to an OCI registry in OpenTofu's layout, so that a plain
//! `tofu init` with an `oci_mirror`, and another machine's `tstore init`, install from it.
//!
//! A module package becomes one tag naming a manifest (`artifactType`
//! [`MODULE_ARTIFACT_TYPE`]) whose one layer is the package as a zip, as `oci://` module
//! sources read it.
//!
//! A provider version becomes one repository tag (the version, `+` written `_`) naming an
//! image index (`artifactType` [`PROVIDER_ARTIFACT_TYPE`]) with one image manifest per
//! platform the store holds (`artifactType` [`PROVIDER_TARGET_ARTIFACT_TYPE`], the
//! platform in the descriptor), whose one layer is the package as a zip
//! ([`ZIP_LAYER_MEDIA_TYPE`]) and whose config is the empty JSON document.
//!
//! A provider's layer is the source's own zip, kept by the store ([`Store::kept_archive`]
//! by the package's `zh:`; `--keep-archives` at install, or fetched again before the push by
//! [`crate::providers::keep_source_archive`] for the packages
//! [`packages_without_source_zip`] lists): its digest is then a `zh:` every lock file
//! written from that source already holds, which plain `tofu init` requires (it checks a
//! layer's digest against the lock's `zh:` hashes before downloading). Otherwise (the zip
//! could not be had, or `--rebuild-layers`), and for modules, the zip is built from the
//! stored tree ([`package_zip`]): its digest is a new
//! `zh:`, and installs from it verify through the package's `h1:`, which is the same; the
//! push reports those platforms as rebuilt. The built zip is deterministic (sorted entries,
//! fixed times and modes), so pushing the same package twice gives the same blobs,
//! manifests and index, and uploads nothing the second time.
//!
//! A push never makes two providers share a repository, and never replaces a published
//! package unless told to:
//!
//! - the target template is checked as an `oci_mirror`'s is when the CLI configuration is
//!   read ([`check_push_target`], by
//!   [`tstore_tofu::cliconfig::check_repository_template`]), the `--provider` selections
//!   playing the part of `include` patterns: with none, every provider of the store is
//!   pushed, so the template must name `${hostname}`, `${namespace}` and `${type}`;
//! - a tag that already names something is read first. For a provider version, a platform
//!   whose manifest there holds another zip is another package: a conflict
//!   ([`PushError::TagTaken`]) found before that platform is uploaded, unless
//!   [`ExistingTag::Replace`]. A manifest around the same zip is the same package and
//!   stays; the platforms the tag names and this store lacks stay in the new index, so
//!   runners of different platforms can each push their own; a tag that already names each
//!   of this store's packages is not written. A tag naming anything else than a provider
//!   index, and a module tag naming another manifest, are conflicts too. Registries have
//!   no compare-and-swap for tags: two pushes at the same moment can still race.

mod package_zip;

use std::collections::BTreeMap;

use serde_json::json;
use sha2::Digest as _;
use tstore_store::{Diagnostic, Hash, Package, PackageKey, Store};
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::cliconfig::{check_repository_template, RepositoryTemplateError};
use tstore_tofu::version::Version;

use crate::net::oci::{
    OciClient, OciError, OciRepository, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, ZIP_LAYER_MEDIA_TYPE,
};
use crate::providers::sources::oci_mirror::{
    version_to_tag, OciMirror, OciMirrorError, PROVIDER_ARTIFACT_TYPE,
    PROVIDER_TARGET_ARTIFACT_TYPE,
};

pub(crate) use self::package_zip::package_zip;

/// The media type of the empty config blob (`{}`).
pub(crate) const EMPTY_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";

/// Errors of a push.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The registry exchange failed.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// The repository template gives no repository for a provider.
    #[error(transparent)]
    Template(#[from] OciMirrorError),
    /// The target would give two providers one repository.
    #[error("the push target oci://{template} does not give each provider it would push a repository of its own (without --provider, every provider in the store is pushed): name the missing part in the target, or select providers that share it with --provider")]
    Target {
        /// The template (after `oci://`).
        template: String,
        /// Which part it leaves out.
        #[source]
        source: RepositoryTemplateError,
    },
    /// A tag already names another package, and the push was not told to replace it.
    #[error("{reference} already names {what} ({existing}; this push's is {ours}); a push does not replace a published package: check which is right, and push with --force to replace it")]
    TagTaken {
        /// `registry/repository:tag`.
        reference: String,
        /// What the tag names, e.g. `another package for linux_amd64`.
        what: String,
        /// The digest of what the tag names now (the platform's manifest, or the tag's
        /// document).
        existing: String,
        /// The digest this push would put there.
        ours: String,
    },
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] tstore_store::StoreError),
    /// A package's files could not be zipped.
    #[error("cannot zip the package {package}")]
    Zip {
        /// The package.
        package: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A kept archive could not be read.
    #[error("cannot read the store's copy of an archive, {path}")]
    ReadArchive {
        /// Its blob file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A kept archive's bytes are not those of its `zh:`.
    #[error(
        "the store's copy of {zh} ({path}) is damaged; `tstore store verify --repair` removes it"
    )]
    DamagedArchive {
        /// The hash it should have.
        zh: String,
        /// Its blob file.
        path: std::path::PathBuf,
    },
    /// Registry logins could not be read.
    #[error(transparent)]
    Credentials(#[from] crate::net::oci::auth::CredentialsError),
    /// A `--provider` selection matched nothing in the store.
    #[error("the store holds no provider package matching {selection:?}; `tstore store ls` lists what it holds")]
    NothingSelected {
        /// The selection as given.
        selection: String,
    },
    /// A `--provider` selection is not `[HOST/]NAMESPACE/TYPE[@VERSION]`.
    #[error("invalid provider selection {selection:?}: {message}")]
    BadSelection {
        /// The selection as given.
        selection: String,
        /// What is wrong.
        message: String,
    },
}

impl Diagnostic for PushError {
    /// A store error is shown as itself ([`PushError::Store`] is transparent), with its hint.
    fn hint(&self) -> Option<String> {
        match self {
            PushError::Store(e) => e.hint(),
            _ => None,
        }
    }
}

/// The OCI client for a push: the network settings' TLS roots, and the registry logins of
/// docker-style `config.json` files where the settings say.
pub fn oci_client(network: &crate::net::NetworkSettings) -> Result<OciClient, PushError> {
    let http = network
        .http_client()
        .map_err(|e| PushError::Oci(OciError::Http(e)))?;
    let credentials = network.oci_logins()?;
    Ok(OciClient::new(http, credentials))
}

/// What a push does with a tag that already names another package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExistingTag {
    /// Fail, leaving the tag as it is ([`PushError::TagTaken`]).
    Refuse,
    /// Put this push's package there (`tstore push --force`).
    Replace,
}

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

/// What a push did for one provider version.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PushedVersion {
    /// `host/namespace/type`.
    pub provider: String,
    /// The version.
    pub version: String,
    /// `registry/repository:tag`.
    pub reference: String,
    /// The index's digest.
    pub digest: String,
    /// The platforms pushed.
    pub platforms: Vec<String>,
    /// The platforms whose layer was built from the stored files, because the store did not
    /// keep the origin's zip: a lock from the origin lacks that layer's `zh:`.
    pub rebuilt: Vec<String>,
    /// Blobs uploaded now.
    pub blobs_uploaded: usize,
    /// Blobs the registry already had.
    pub blobs_present: usize,
}

/// The provider packages the selections match (all provider packages of the store when
/// there is none), by (address, version) and then platform.
type SelectedVersions = BTreeMap<(String, String), BTreeMap<String, Package>>;

fn selected_versions(
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

/// Push every provider version the selections match (all provider packages of the store
/// when there is none) to the repositories `template` gives
/// (`REGISTRY/PATH/${namespace}/${type}`, as an `oci_mirror`'s `repository_template`).
/// The target is checked first ([`check_push_target`]); a tag that names another package
/// is left alone unless `existing` is [`ExistingTag::Replace`].
pub fn push_providers(
    store: &Store,
    client: &OciClient,
    template: &str,
    selections: &[ProviderSelection],
    existing: ExistingTag,
    on_version: &dyn Fn(&PushedVersion),
) -> Result<Vec<PushedVersion>, PushError> {
    check_push_target(template, selections)?;
    let mirror = OciMirror {
        template: template.to_owned(),
    };
    let mut pushed = Vec::new();
    for ((addr, version), platforms) in selected_versions(store, selections)? {
        let parsed = ProviderAddr::parse_source(&addr, "")
            .expect("the store records normalized provider addresses");
        let repo = mirror.repository(&parsed)?;
        let target = VersionTarget {
            repo: &repo,
            addr: &addr,
            version: &version,
            existing,
        };
        let done = push_provider_version(store, client, &target, &platforms)?;
        on_version(&done);
        pushed.push(done);
    }
    Ok(pushed)
}

/// Where one provider version goes, and what to do with a tag already there.
struct VersionTarget<'a> {
    repo: &'a OciRepository,
    addr: &'a str,
    version: &'a str,
    existing: ExistingTag,
}

fn push_provider_version(
    store: &Store,
    client: &OciClient,
    target: &VersionTarget<'_>,
    platforms: &BTreeMap<String, Package>,
) -> Result<PushedVersion, PushError> {
    let VersionTarget {
        repo,
        addr,
        version,
        existing,
    } = *target;
    let tag = version_to_tag(version);
    let reference = format!("{repo}:{tag}");
    let published = PublishedTag::read(client, repo, &tag)?;
    if let (Some(published), ExistingTag::Refuse) = (&published, existing) {
        if published.platforms.is_none() {
            return Err(PushError::TagTaken {
                reference,
                what: "something else than an OpenTofu provider index".into(),
                existing: published.digest.clone(),
                ours: "an OpenTofu provider index".into(),
            });
        }
    }
    let mut rebuilt = Vec::new();
    let mut uploaded = 0;
    let mut present = 0;
    let mut count = |fresh: bool| {
        if fresh {
            uploaded += 1
        } else {
            present += 1
        }
    };
    let config = crate::net::oci::sha256_digest(b"{}");
    let mut config_pushed = false;
    // Whether the tag is to name something new: written only then.
    let mut changed = published.is_none();
    // By `OS_ARCH`: the index lists its platforms in that order.
    let mut descriptors = BTreeMap::new();
    for (platform, package) in platforms {
        let zip = match kept_zip(store, package)? {
            Some(zip) => zip,
            None => {
                rebuilt.push(platform.clone());
                package_zip(&store.view_dir(&package.key)?).map_err(|source| PushError::Zip {
                    package: format!("{addr} {version} {platform}"),
                    source,
                })?
            }
        };
        let layer = crate::net::oci::sha256_digest(&zip);
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "artifactType": PROVIDER_TARGET_ARTIFACT_TYPE,
            "config": {"mediaType": EMPTY_CONFIG_MEDIA_TYPE, "digest": config, "size": 2},
            "layers": [{
                "mediaType": ZIP_LAYER_MEDIA_TYPE,
                "digest": layer,
                "size": zip.len(),
                "annotations": {
                    "org.opencontainers.image.title":
                        format!("terraform-provider-{}_{version}_{platform}.zip",
                            addr.rsplit('/').next().unwrap_or_default()),
                },
            }],
        }))
        .expect("JSON");
        let digest = crate::net::oci::sha256_digest(&manifest);
        // A platform the tag already names with another manifest: the same zip is the same
        // package, and its manifest stays; another zip is another package, not replaced,
        // and nothing of this one uploaded, unless told to.
        let theirs = published.as_ref().and_then(|p| p.manifest_of(platform));
        if let Some(theirs) = theirs {
            if theirs != digest {
                let their_zip = zip_layer_of(client, repo, theirs)?;
                if their_zip.as_deref() == Some(layer.as_str()) {
                    count(false);
                    continue;
                }
                if existing == ExistingTag::Refuse {
                    return Err(PushError::TagTaken {
                        reference,
                        what: format!("another package for {platform}"),
                        existing: format!(
                            "its zip {}",
                            their_zip.unwrap_or_else(|| format!("in manifest {theirs}"))
                        ),
                        ours: layer,
                    });
                }
            }
        }
        changed |= theirs != Some(digest.as_str());
        if !config_pushed {
            let (_, fresh) = client.push_blob(repo, b"{}")?;
            count(fresh);
            config_pushed = true;
        }
        let (_, fresh) = client.push_blob(repo, &zip)?;
        count(fresh);
        client.push_manifest(repo, &digest, MANIFEST_MEDIA_TYPE, &manifest)?;
        let (os, arch) = platform.split_once('_').unwrap_or((platform.as_str(), ""));
        descriptors.insert(
            platform.clone(),
            json!({
                "mediaType": MANIFEST_MEDIA_TYPE,
                "artifactType": PROVIDER_TARGET_ARTIFACT_TYPE,
                "digest": digest,
                "size": manifest.len(),
                "platform": {"os": os, "architecture": arch},
            }),
        );
    }
    // The platforms the tag names and this store lacks stay: each runner pushes its own.
    if let Some(theirs) = published.as_ref().and_then(|p| p.platforms.as_ref()) {
        for (platform, descriptor) in theirs {
            descriptors
                .entry(platform.clone())
                .or_insert_with(|| descriptor.clone());
        }
    }
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "artifactType": PROVIDER_ARTIFACT_TYPE,
        "manifests": descriptors.into_values().collect::<Vec<_>>(),
    }))
    .expect("JSON");
    // A tag that already names each of this store's packages stays as it is (its index may
    // be written differently, by another tool).
    let digest = match (&published, changed) {
        (Some(published), false) => published.digest.clone(),
        _ => client.push_manifest(repo, &tag, INDEX_MEDIA_TYPE, &index)?,
    };
    Ok(PushedVersion {
        provider: addr.to_owned(),
        version: version.to_owned(),
        reference,
        digest,
        platforms: platforms.keys().cloned().collect(),
        rebuilt,
        blobs_uploaded: uploaded,
        blobs_present: present,
    })
}

/// The digest of the one zip layer of `repo`'s manifest `digest`; `None` when the manifest
/// has no single zip layer (then it is not the same package as any).
fn zip_layer_of(
    client: &OciClient,
    repo: &OciRepository,
    digest: &str,
) -> Result<Option<String>, PushError> {
    let fetched = client.manifest(repo, digest)?;
    Ok(OciClient::parse_manifest(&fetched, digest)
        .ok()
        .and_then(|m| crate::net::oci::single_zip_layer(&m).ok()))
}

/// What a tag named before a push.
struct PublishedTag {
    /// The digest of the document the tag names.
    digest: String,
    /// When it is an OpenTofu provider index: its manifest descriptors by `OS_ARCH`.
    platforms: Option<BTreeMap<String, serde_json::Value>>,
}

impl PublishedTag {
    /// What `repo:tag` names; `None` when the registry has no such tag.
    fn read(
        client: &OciClient,
        repo: &OciRepository,
        tag: &str,
    ) -> Result<Option<PublishedTag>, PushError> {
        let fetched = match client.manifest(repo, tag) {
            Ok(fetched) => fetched,
            Err(OciError::Http(crate::net::http::HttpError::Status { status: 404, .. })) => {
                return Ok(None)
            }
            Err(e) => return Err(e.into()),
        };
        let digest = crate::net::oci::sha256_digest(&fetched.bytes);
        let doc: serde_json::Value = serde_json::from_slice(&fetched.bytes).unwrap_or_default();
        let is_provider_index = fetched.media_type == INDEX_MEDIA_TYPE
            && doc["artifactType"].as_str() == Some(PROVIDER_ARTIFACT_TYPE);
        let platforms = is_provider_index.then(|| {
            doc["manifests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| {
                    let os = d["platform"]["os"].as_str()?;
                    let arch = d["platform"]["architecture"].as_str()?;
                    Some((format!("{os}_{arch}"), d.clone()))
                })
                .collect()
        });
        Ok(Some(PublishedTag { digest, platforms }))
    }

    /// The manifest digest the tag names for `platform` (`OS_ARCH`), if any.
    fn manifest_of(&self, platform: &str) -> Option<&str> {
        self.platforms.as_ref()?.get(platform)?["digest"].as_str()
    }
}

/// The origin's zip of `package`, if the store kept it: the kept archive of one of its
/// `zh:` hashes, checked against that hash.
fn kept_zip(store: &Store, package: &Package) -> Result<Option<Vec<u8>>, PushError> {
    let Some((zh, path)) = store.kept_archive_of(&package.hashes)? else {
        return Ok(None);
    };
    let bytes = fs_err::read(&path).map_err(|source| PushError::ReadArchive {
        path: path.clone(),
        source,
    })?;
    let sha256: [u8; 32] = sha2::Sha256::digest(&bytes).into();
    if Hash::zh_from_sha256(&sha256) != zh {
        return Err(PushError::DamagedArchive {
            zh: zh.to_string(),
            path,
        });
    }
    Ok(Some(bytes))
}

/// `artifactType` of a module package's manifest (what `oci://` module sources read).
pub(crate) const MODULE_ARTIFACT_TYPE: &str = "application/vnd.opentofu.modulepkg";

/// What a push did for one module package.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PushedModule {
    /// The store's package id.
    pub package: String,
    /// `registry/repository:tag`.
    pub reference: String,
    /// The manifest's digest (for `?digest=` sources).
    pub digest: String,
    /// Blobs uploaded now.
    pub blobs_uploaded: usize,
    /// Blobs the registry already had.
    pub blobs_present: usize,
}

/// Push the module package `id` (as `tstore store ls` names it) to `repo` under `tag`: a
/// manifest whose one layer is the package as a deterministic zip. A tag naming another
/// manifest is left alone unless `existing` is [`ExistingTag::Replace`].
pub fn push_module(
    store: &Store,
    client: &OciClient,
    repo: &OciRepository,
    tag: &str,
    id: &str,
    existing: ExistingTag,
) -> Result<PushedModule, PushError> {
    let key = PackageKey::module(id);
    if store.package(&key)?.is_none() {
        return Err(PushError::NothingSelected {
            selection: id.to_owned(),
        });
    }
    let zip = package_zip(&store.view_dir(&key)?).map_err(|source| PushError::Zip {
        package: id.to_owned(),
        source,
    })?;
    let config = crate::net::oci::sha256_digest(b"{}");
    let layer = crate::net::oci::sha256_digest(&zip);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": MODULE_ARTIFACT_TYPE,
        "config": {"mediaType": EMPTY_CONFIG_MEDIA_TYPE, "digest": config, "size": 2},
        "layers": [{"mediaType": ZIP_LAYER_MEDIA_TYPE, "digest": layer, "size": zip.len()}],
    }))
    .expect("JSON");
    let digest = crate::net::oci::sha256_digest(&manifest);
    let published = PublishedTag::read(client, repo, tag)?;
    if let (Some(published), ExistingTag::Refuse) = (&published, existing) {
        if published.digest != digest {
            return Err(PushError::TagTaken {
                reference: format!("{repo}:{tag}"),
                what: "another manifest".into(),
                existing: published.digest.clone(),
                ours: digest,
            });
        }
    }
    let (_, config_new) = client.push_blob(repo, b"{}")?;
    let (_, layer_new) = client.push_blob(repo, &zip)?;
    if published.map(|p| p.digest) != Some(digest.clone()) {
        client.push_manifest(repo, tag, MANIFEST_MEDIA_TYPE, &manifest)?;
    }
    let uploaded = usize::from(config_new) + usize::from(layer_new);
    Ok(PushedModule {
        package: id.to_owned(),
        reference: format!("{repo}:{tag}"),
        digest,
        blobs_uploaded: uploaded,
        blobs_present: 2 - uploaded,
    })
}
