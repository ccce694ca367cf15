//! Talking to remote services: HTTP with tofu's credentials and CA settings ([`http`]),
//! service discovery ([`discovery`]) and OpenPGP signature checks ([`signing`]).
//! Knows no store and no install flow.

pub(crate) mod discovery;
pub(crate) mod http;
pub(crate) mod oci;
pub(crate) mod signing;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tstore_tofu::cliconfig::{CliConfig, HostServices};

use self::http::{Credentials, HttpClient, HttpError, TransferLimits};

/// What the network sources need from the CLI configuration and the environment.
#[derive(Clone, Debug, Default)]
pub struct NetworkSettings {
    /// `host` blocks: service discovery overrides.
    pub hosts: BTreeMap<String, HostServices>,
    /// Bearer tokens (`credentials` blocks, `TF_TOKEN_…`).
    pub credentials: Credentials,
    /// `SSL_CERT_FILE`: CA certificates replacing the bundled roots.
    pub ssl_cert_file: Option<PathBuf>,
    /// `oci_credentials` blocks of the CLI configuration, by `registry[/path]` label.
    pub oci_credentials: BTreeMap<String, tstore_tofu::cliconfig::OciCredentialsBlock>,
    /// The `oci_default_credentials` block (its defaults when absent).
    pub oci_default_credentials: tstore_tofu::cliconfig::OciDefaultCredentials,
    /// The document deadline and the download cap.
    pub transfer: TransferLimits,
    /// Where docker-style login files are looked for.
    pub login_dirs: oci::auth::LoginDirs,
    /// `OPENTOFU_ENFORCE_GPG_VALIDATION=true`: what only a signature covers is trusted, even
    /// from OpenTofu's registry (its unsigned `packages` hashes are not locked).
    pub enforce_gpg_validation: bool,
    /// The keys that make a provider's signature HashiCorp's or a partner's.
    pub trust_roots: signing::TrustRoots,
}

/// The HTTP client of one run, built on first use: building one (its TLS roots) costs
/// more than a warm install whose packages the store already holds, which asks nothing.
pub(crate) struct LazyHttpClient<'a> {
    settings: &'a NetworkSettings,
    client: OnceLock<HttpClient>,
}

impl<'a> LazyHttpClient<'a> {
    pub(crate) fn new(settings: &'a NetworkSettings) -> LazyHttpClient<'a> {
        LazyHttpClient {
            settings,
            client: OnceLock::new(),
        }
    }

    /// The client, built now if this is the first request of the run.
    pub(crate) fn get(&self) -> Result<&HttpClient, HttpError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        // Two threads may both build one; the first stored wins and the other is dropped.
        let built = self.settings.http_client()?;
        Ok(self.client.get_or_init(|| built))
    }
}

impl NetworkSettings {
    /// The HTTP client for registries, network mirrors and module sources
    /// (`SSL_CERT_FILE` roots when set, the bundled ones otherwise).
    pub fn http_client(&self) -> Result<HttpClient, HttpError> {
        HttpClient::new(self.ssl_cert_file.as_deref(), self.transfer)
    }

    /// The network settings of a CLI configuration and an environment (`TF_TOKEN_…`
    /// variables, `SSL_CERT_FILE`, `TF_REGISTRY_CLIENT_TIMEOUT`), given as values: the
    /// binary reads the process environment, this library reads none.
    pub fn from_environment(cli_config: &CliConfig, env: &[(String, String)]) -> NetworkSettings {
        let var = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .filter(|v| !v.is_empty())
        };
        NetworkSettings {
            hosts: cli_config.hosts.clone(),
            credentials: Credentials::new(&cli_config.credentials, env.iter().cloned()),
            ssl_cert_file: var("SSL_CERT_FILE").map(Into::into),
            oci_credentials: cli_config.oci_credentials.clone(),
            oci_default_credentials: cli_config
                .oci_default_credentials
                .clone()
                .unwrap_or_default(),
            transfer: TransferLimits {
                document_deadline: registry_client_timeout(var("TF_REGISTRY_CLIENT_TIMEOUT")),
                ..TransferLimits::default()
            },
            login_dirs: oci::auth::LoginDirs::from_env(|k| var(k).map(str::to_owned)),
            enforce_gpg_validation: var("OPENTOFU_ENFORCE_GPG_VALIDATION") == Some("true"),
            trust_roots: var("TSTORE_TEST_TRUST_ROOTS")
                .and_then(|dir| signing::TrustRoots::from_dir(Path::new(dir)))
                .unwrap_or_default(),
        }
    }

    /// These settings with downloads capped at `max` bytes (`TSTORE_MAX_ARCHIVE_BYTES`).
    pub fn with_max_download_bytes(mut self, max: u64) -> NetworkSettings {
        self.transfer.max_download_bytes = max;
        self
    }

    /// The logins for OCI registries: the CLI configuration's blocks and the docker-style
    /// files they allow, in [`NetworkSettings::login_dirs`].
    pub fn oci_logins(&self) -> Result<oci::auth::OciCredentials, oci::auth::CredentialsError> {
        oci::auth::OciCredentials::from_environment(
            &self.login_dirs,
            &self.oci_credentials,
            &self.oci_default_credentials,
        )
    }
}

/// `TF_REGISTRY_CLIENT_TIMEOUT` as tofu reads it: whole seconds; unset, empty, zero or not a
/// number is the default (10 s).
fn registry_client_timeout(value: Option<&str>) -> std::time::Duration {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&s| s > 0)
        .map_or(
            TransferLimits::default().document_deadline,
            std::time::Duration::from_secs,
        )
}
