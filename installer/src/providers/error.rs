//! Why an install failed, in tofu's words.

use std::path::PathBuf;

use tstore_diagnostic::Diagnostic;
use tstore_store::StoreError;
use tstore_tofu::addr::Platform;
use tstore_tofu::config::tree::ModuleTreeError;
use tstore_tofu::lockfile::LockFileError;
use tstore_tofu::version::Version;

use crate::net::discovery::DiscoveryError;
use crate::net::http::HttpError;
use crate::providers::sources::fs_mirror::MirrorError;
use crate::providers::sources::net_mirror::NetMirrorError;
use crate::providers::sources::registry::RegistryError;
use crate::redact::{display_url, scrub};
use crate::workdir::link::LinkError;

/// Why `init` failed. Each variant maps to one of tofu's error summaries.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The configuration could not be read.
    #[error(transparent)]
    Config(#[from] ModuleTreeError),
    /// The lock file could not be read.
    #[error(transparent)]
    LockFile(#[from] LockFileError),
    /// No installation method can serve this provider.
    #[error(
        "provider {provider} was not found in any of the search locations{}",
        render_locations(.locations)
    )]
    NotFound {
        /// Fully-qualified address.
        provider: String,
        /// The places searched.
        locations: Vec<String>,
        /// The same provider under the other flavor's registry host, found in a filesystem
        /// mirror: `(address, the flavor that uses that host)`.
        other_flavor: Option<(String, &'static str)>,
        /// What the installation methods were read from, in a phrase
        /// ([`ProviderOptions::cli_config`](crate::ProviderOptions::cli_config)).
        cli_config: String,
    },
    /// A method that this version of tstore cannot use yet would be needed.
    #[error(
        "provider {provider} would be installed through the {method} installation method, \
         which this version of tstore does not support yet; add a filesystem_mirror for it \
         to the CLI configuration"
    )]
    UnsupportedMethod {
        /// Fully-qualified address.
        provider: String,
        /// Method name as written in the CLI configuration.
        method: &'static str,
    },
    /// No available version matches.
    #[error(
        "no available releases match the given constraints {constraints} for provider {provider}"
    )]
    NoMatchingVersion {
        /// Fully-qualified address.
        provider: String,
        /// Canonical constraints.
        constraints: String,
    },
    /// Under the cooldown, no version the constraints allow is old enough.
    #[error(
        "no release of provider {provider} that matches {constraints} is old enough under \
         {policy}; held back: {}",
        held.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    HeldBack {
        /// Fully-qualified address.
        provider: String,
        /// Canonical constraints.
        constraints: String,
        /// The versions held back, newest first.
        held: Vec<crate::HeldBack>,
        /// The policy and who set it.
        policy: String,
    },
    /// The lock file pins a version the configuration no longer allows.
    #[error(
        "locked provider {provider} {locked} does not match configured version constraint \
         {constraints}; must use {init} -upgrade to allow selection of new versions"
    )]
    LockedVersionExcluded {
        /// Fully-qualified address.
        provider: String,
        /// Version in the lock file.
        locked: Version,
        /// Canonical constraints.
        constraints: String,
        /// `tofu init` or `terraform init`.
        init: &'static str,
    },
    /// The selected version exists, but not for this platform.
    #[error("provider {provider} {version} is not available for {platform}")]
    NoPackageForPlatform {
        /// Fully-qualified address.
        provider: String,
        /// Selected version.
        version: Version,
        /// Target platform.
        platform: Platform,
    },
    /// The package holds no `terraform-provider-TYPE` executable, so tofu could not run it.
    #[error(
        "Error while installing {display} v{version}: provider binary not found: could not \
         find executable file starting with terraform-provider-{kind}"
    )]
    NoProviderExecutable {
        /// As tofu displays it.
        display: String,
        /// Selected version.
        version: Version,
        /// The provider type, which the executable's name must start with.
        kind: String,
    },
    /// The package does not match the lock file: nothing was linked.
    #[error(
        "Error while installing {display} v{version}: the {origin} package for {provider} {version} \
         doesn't match any of the checksums previously recorded in the dependency lock file{}{}\
         \n\n  Package {} has {computed}\n  {lock_path} records {recorded}",
        platforms_note(origin),
        more_info.map(|url| format!("; for more information: {url}")).unwrap_or_default(),
        scrub(source_path, &[])
    )]
    ChecksumMismatch {
        /// Provider as tofu displays it.
        display: String,
        /// Fully-qualified address.
        provider: String,
        /// Selected version.
        version: Version,
        /// "local" (unpacked) or "current" (archive), as tofu words it.
        origin: &'static str,
        /// The package location.
        source_path: String,
        /// Hashes computed for the package.
        computed: String,
        /// The lock file.
        lock_path: String,
        /// Hashes the lock file records.
        recorded: String,
        /// The documentation the tool version's message links to
        /// (`tool_version::checksum_mismatch_link`).
        more_info: Option<&'static str>,
    },
    /// `-upgrade` asks to change the selections `-lockfile=readonly` keeps.
    #[error("The -upgrade flag conflicts with -lockfile=readonly.")]
    UpgradeConflictsWithReadonlyLock,
    /// `-lockfile=readonly` and the selected providers or versions would change.
    #[error(
        "the lock file {lock_path} would change ({what}), but -lockfile=readonly was given; \
         run init without it to record the change"
    )]
    LockFileReadonly {
        /// The lock file.
        lock_path: String,
        /// A short description of the change.
        what: String,
    },
    /// A filesystem mirror could not be searched.
    #[error(transparent)]
    Mirror(#[from] MirrorError),
    /// A registry or network mirror failed (unreachable, malformed answer, bad signature).
    #[error("{}{provider}{} from the {}", if .version.is_some() { "cannot install " } else { "cannot list the versions of " }, .version.as_ref().map(|v| format!(" {v}")).unwrap_or_default(), scrub(what, &[]))]
    Remote {
        /// Fully-qualified address.
        provider: String,
        /// The version being installed, `None` while listing versions.
        version: Option<Version>,
        /// A short description of the step.
        what: String,
        /// The underlying error.
        #[source]
        source: RemoteError,
        /// What the CLI configuration was read from (`CliConfig::describe_files`), for the
        /// hint: a source that cannot be reached is often one the configuration did not
        /// redirect.
        cli_config: String,
    },
    /// A downloaded archive does not hash to what its source promised.
    #[error(
        "the archive of {provider} {version} downloaded from {} does not match the \
         checksums its source reported\n\n  Downloaded archive has {computed}\n  The source reported {expected}",
        display_url(url)
    )]
    ArchiveChecksum {
        /// Fully-qualified address.
        provider: String,
        /// Version.
        version: Version,
        /// The archive URL.
        url: String,
        /// What the download hashes to.
        computed: String,
        /// What the source promised.
        expected: String,
    },
    /// The store failed for one provider.
    #[error("store operation failed for provider {provider} {version}")]
    Store {
        /// Fully-qualified address.
        provider: String,
        /// Selected version.
        version: Version,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// A link in the working directory could not be written.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The lock file could not be written.
    #[error("cannot write the dependency lock file {path}")]
    WriteLockFile {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: crate::workdir::safe_fs::SafeFsError,
    },
}

/// The errors of the network sources.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Service discovery.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// The registry protocol.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The network mirror protocol.
    #[error(transparent)]
    NetMirror(#[from] NetMirrorError),
    /// The OCI mirror layout or its registry.
    #[error(transparent)]
    OciMirror(#[from] crate::providers::sources::oci_mirror::OciMirrorError),
    /// Registry credentials could not be read.
    #[error(transparent)]
    OciCredentials(#[from] crate::net::oci::auth::CredentialsError),
    /// A download.
    #[error(transparent)]
    Http(#[from] HttpError),
}

impl From<crate::net::oci::OciError> for RemoteError {
    fn from(e: crate::net::oci::OciError) -> Self {
        RemoteError::OciMirror(e.into())
    }
}

fn render_locations(locations: &[String]) -> String {
    if locations.is_empty() {
        return String::new();
    }
    let mut s = String::from(":\n");
    for l in locations {
        s.push_str("\n  - ");
        s.push_str(&scrub(l, &[]));
    }
    s
}

impl InstallError {
    /// The HTTP client could not be set up (an unreadable `SSL_CERT_FILE`).
    pub(crate) fn https_setup(source: HttpError) -> InstallError {
        InstallError::Remote {
            provider: "(all providers)".into(),
            version: None,
            what: "cannot set up HTTPS".into(),
            source: RemoteError::Http(source),
            cli_config: String::new(),
        }
    }

    /// The one-line summary tofu prints after `Error: ` for this kind of failure.
    fn tofu_summary(&self) -> &'static str {
        match self {
            InstallError::Config(_) => "Failed to load the configuration",
            InstallError::LockFile(_) => "Failed to read the dependency lock file",
            InstallError::NotFound { .. }
            | InstallError::UnsupportedMethod { .. }
            | InstallError::NoMatchingVersion { .. }
            | InstallError::HeldBack { .. }
            | InstallError::LockedVersionExcluded { .. }
            | InstallError::Mirror(_)
            | InstallError::Remote { version: None, .. } => {
                "Failed to query available provider packages"
            }
            InstallError::Remote { .. } | InstallError::ArchiveChecksum { .. } => {
                "Failed to install provider"
            }
            InstallError::NoPackageForPlatform { .. }
            | InstallError::NoProviderExecutable { .. }
            | InstallError::ChecksumMismatch { .. }
            | InstallError::Store { .. }
            | InstallError::Link(_) => "Failed to install provider",
            InstallError::LockFileReadonly { .. } => "Provider dependency changes detected",
            InstallError::UpgradeConflictsWithReadonlyLock => "Invalid flags",
            InstallError::WriteLockFile { .. } => "Failed to write the dependency lock file",
        }
    }
}

/// tofu's summary for the kind of failure, with the message as the detail below it.
impl Diagnostic for InstallError {
    fn summary(&self) -> String {
        self.tofu_summary().to_owned()
    }

    fn detail(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn hint(&self) -> Option<String> {
        match self {
            InstallError::HeldBack { provider, .. } => Some(format!(
                "wait until a release is old enough; or take this provider without the \
                 cooldown with min_release_age_exclude = [\"{provider}\"] in .tstore.hcl; or \
                 lock a version by hand (its entry in .terraform.lock.hcl), which is installed \
                 as locked."
            )),
            InstallError::ChecksumMismatch {
                origin: "local",
                recorded,
                ..
            } if recorded.split(", ").all(|h| h.starts_with("zh:")) => Some(
                "the lock file records only zh: checksums, of the provider's zip, and an \
                 unpacked mirror holds a directory, which only an h1: checksum vouches for; \
                 tstore links nothing it could not check (terraform and tofu install it \
                 unchecked: docs/decisions.md). Serve the zip (a packed mirror), or add the \
                 directory's h1: to the lock entry once you trust it (`tstore providers lock` \
                 from a source of the zip records both)"
                    .into(),
            ),
            InstallError::ChecksumMismatch { .. } => Some(
                "if the new package is expected, remove this provider's entry from the lock \
                 file (or run init with -upgrade after changing the version) and run init again"
                    .into(),
            ),
            InstallError::Remote {
                source: RemoteError::Registry(RegistryError::Signature { .. }),
                ..
            } => Some(
                "the SHA256SUMS is not signed by any key the registry lists for this provider; \
                 do not use this package, and tell the registry's operator"
                    .into(),
            ),
            InstallError::Remote {
                source: RemoteError::Registry(RegistryError::ShasumNotSigned { .. }),
                ..
            }
            | InstallError::ArchiveChecksum { .. } => Some(
                "the package was not installed because it may have been tampered with; \
                 try again later, and tell the source's operator if it persists"
                    .into(),
            ),
            InstallError::Remote { cli_config, .. } => Some(format!(
                "check that the source is reachable and serves the provider protocols \
                 (network, the CLI configuration's host blocks, SSL_CERT_FILE for a private CA){}",
                if cli_config.is_empty() {
                    String::new()
                } else {
                    format!("; tstore read {cli_config}")
                }
            )),
            InstallError::NotFound {
                other_flavor: Some((found, flavor)),
                ..
            } => Some(format!(
                "a filesystem mirror has {found}: the provider is laid out for the other \
                 tool's registry host; use --flavor {flavor} (or TSTORE_FLAVOR={flavor}), or \
                 write the full source address in required_providers"
            )),
            InstallError::NotFound { cli_config, .. } => Some(format!(
                "check the provider_installation block of your CLI configuration; tstore \
                 read {cli_config}"
            )),
            _ => None,
        }
    }
}

/// The tools' second reason for a mismatch, said of an unpacked ("local") package only.
fn platforms_note(origin: &str) -> &'static str {
    if origin == "local" {
        " (this might be because the available checksums are for packages targeting different platforms)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_no_secret(shown: &str) {
        for secret in ["s3cret", "TOK3N", "SIGV4"] {
            assert!(!shown.contains(secret), "{secret} echoed: {shown}");
        }
    }

    #[test]
    fn errors_do_not_echo_credentials() {
        let version = Version::parse("1.0.0").unwrap();
        let not_found = InstallError::NotFound {
            provider: "r.test/a/b".into(),
            locations: vec!["https://user:s3cret@m.test/?token=TOK3N (network mirror)".into()],
            other_flavor: None,
            cli_config: "the CLI configuration".into(),
        }
        .to_string();
        assert!(
            not_found.contains("https://m.test/?token=redacted (network mirror)"),
            "{not_found}"
        );
        let mismatch = InstallError::ChecksumMismatch {
            display: "r.test/a/b".into(),
            provider: "r.test/a/b".into(),
            version: version.clone(),
            origin: "current",
            source_path: "network_mirror:https://TOK3N@m.test/p.zip?X-Amz-Signature=SIGV4".into(),
            computed: "h1:x".into(),
            lock_path: ".terraform.lock.hcl".into(),
            recorded: "h1:y".into(),
            more_info: None,
        }
        .to_string();
        assert!(
            mismatch.contains("network_mirror:https://m.test/p.zip?X-Amz-Signature=redacted"),
            "{mismatch}"
        );
        let remote = InstallError::Remote {
            provider: "r.test/a/b".into(),
            version: Some(version.clone()),
            what: "archive at https://user:s3cret@cdn.test/p.zip?sig=SIGV4".into(),
            source: RemoteError::NetMirror(NetMirrorError::BadUrl {
                url: "https://TOK3N@m.test:bad/".into(),
                message: "invalid port number".into(),
            }),
            cli_config: "the CLI configuration file /c.tfrc".into(),
        };
        let remote = format!("{remote}: {}", std::error::Error::source(&remote).unwrap());
        let checksum = InstallError::ArchiveChecksum {
            provider: "r.test/a/b".into(),
            version,
            url: "https://user:s3cret@cdn.test/p.zip?X-Amz-Credential=TOK3N".into(),
            computed: "h1:x".into(),
            expected: "h1:y".into(),
        }
        .to_string();
        assert!(checksum.contains("https://cdn.test/p.zip?"), "{checksum}");
        for shown in [not_found, mismatch, remote, checksum] {
            assert_no_secret(&shown);
        }
    }
}
