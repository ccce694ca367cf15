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
//! stored tree ([`package_zip`](fn@package_zip)): its digest is a new
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
//!
//! Parts: [`selection`] (which packages a push takes, and the target check), [`provider`]
//! (a provider version's index and manifests), [`module`] (a module package's manifest),
//! [`existing_tag`] (what a tag names before a push), [`package_zip`](mod@package_zip)
//! (the built zip).
//!
//! [`MODULE_ARTIFACT_TYPE`]: module::MODULE_ARTIFACT_TYPE
//! [`PROVIDER_ARTIFACT_TYPE`]: crate::providers::sources::oci_mirror::PROVIDER_ARTIFACT_TYPE
//! [`PROVIDER_TARGET_ARTIFACT_TYPE`]: crate::providers::sources::oci_mirror::PROVIDER_TARGET_ARTIFACT_TYPE
//! [`ZIP_LAYER_MEDIA_TYPE`]: crate::net::oci::ZIP_LAYER_MEDIA_TYPE
//! [`Store::kept_archive`]: tstore_store::Store::kept_archive

mod existing_tag;
mod module;
mod module_mirror;
mod package_zip;
mod provider;
mod reach;
mod selection;
#[cfg(test)]
mod tests;

use tstore_diagnostic::Diagnostic;
use tstore_tofu::cliconfig::RepositoryTemplateError;

use crate::net::oci::{OciClient, OciError};
use crate::providers::sources::oci_mirror::OciMirrorError;

pub use self::existing_tag::ExistingTag;
pub use self::module::{push_module, PushedModule};
pub use self::module_mirror::{
    push_modules, ModulePush, ModuleSelection, PushedModules, PushedResolution,
};
pub(crate) use self::package_zip::package_zip;
pub use self::provider::{push_providers, PushedVersion};
pub use self::reach::PushedReach;
pub use self::selection::{
    check_push_target, packages_without_source_zip, ProviderSelection, WithoutSourceZip,
};

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
    /// A module lock entry names a package (or, for a registry module, a resolution) the
    /// store does not hold, so a push of what the lock files pin cannot be complete.
    #[error("the store holds no package for module \"{key}\" of {}, whose hashes it pins; run `tstore fetch` on its directory first, then push again", lock_file.display())]
    NotInStore {
        /// The module lock file.
        lock_file: std::path::PathBuf,
        /// The call's key.
        key: String,
    },
    /// A pinned git call's reach of its locked commit cannot be checked (or its ref does not
    /// reach it), so the module mirror cannot record it.
    #[error("cannot check that the ref of module \"{key}\" of {} reaches its locked commit, so the module mirror cannot record that it does", lock_file.display())]
    ReachUnchecked {
        /// The module lock file.
        lock_file: std::path::PathBuf,
        /// The call's key.
        key: String,
        /// Why.
        #[source]
        source: Box<crate::modules::FetchError>,
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
            PushError::ReachUnchecked { source, .. } => source.hint(),
            _ => None,
        }
    }
}

/// The manifest of an artifact that is only its annotations (a registry resolution, a
/// reach record): OCI's empty config and one empty layer, as the distribution spec
/// describes an artifact without content.
pub(super) fn annotations_manifest(artifact_type: &str, annotations: serde_json::Value) -> Vec<u8> {
    let empty = crate::net::oci::sha256_digest(b"{}");
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": crate::net::oci::MANIFEST_MEDIA_TYPE,
        "artifactType": artifact_type,
        "config": {"mediaType": EMPTY_CONFIG_MEDIA_TYPE, "digest": empty, "size": 2},
        "layers": [{"mediaType": EMPTY_CONFIG_MEDIA_TYPE, "digest": empty, "size": 2}],
        "annotations": annotations,
    }))
    .expect("JSON")
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
