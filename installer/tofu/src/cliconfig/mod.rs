//! The CLI configuration file (`~/.tofurc`, `~/.terraformrc`,
//! `TF_CLI_CONFIG_FILE`): provider installation methods, the plugin cache
//! directory, service host overrides and credentials, as tofu reads them
//! (<https://github.com/opentofu/opentofu/blob/main/internal/command/cliconfig/provider_installation.go>,
//! `cliconfig.go` beside it).
//!
//! The real tools read this file with HCL 1, which allows quoted attribute
//! names such as `"hashicorp/null" = "/dir"` inside `dev_overrides`. HCL 2
//! does not, so such names are swapped for placeholder identifiers before
//! parsing and swapped back when read; line numbers are unaffected.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use hcl::edit::expr::Expression;
use hcl::edit::structure::Structure;

use crate::addr::{normalize_host, ProviderAddr};
use crate::flavor::Flavor;

mod json;
mod methods;
mod parse;
pub mod render;
use self::methods::parse_pattern;
pub use self::methods::{
    check_repository_template, implied_plugin_dirs, InstallMethod, InstallMethodKind,
    RepositoryTemplateError,
};
use self::parse::{unquote_keys, Parser};

/// Errors from reading the CLI configuration.
#[derive(Debug, thiserror::Error)]
pub enum CliConfigError {
    /// A configuration file could not be read.
    #[error("cannot read CLI configuration file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        err: io::Error,
    },
    /// HCL syntax error.
    #[error("{file}:{line}: invalid CLI configuration syntax: {message}")]
    Syntax {
        /// File name.
        file: String,
        /// One-based line.
        line: usize,
        /// Parser message.
        message: String,
    },
    /// Valid HCL that is not a valid CLI configuration.
    #[error("{file}:{line}: {message}")]
    Invalid {
        /// File name.
        file: String,
        /// One-based line.
        line: usize,
        /// What is wrong, and what to do.
        message: String,
    },
}

/// Overrides of a host's service discovery (`host "example.com" { services = {...} }`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostServices {
    /// Service id (e.g. `providers.v1`) to URL; non-string values are skipped.
    pub services: BTreeMap<String, String>,
}

/// An `oci_credentials` block: a login for an OCI registry (or a repository prefix in it),
/// or the docker credential helper that has one.
#[derive(Clone, PartialEq, Eq)]
pub enum OciCredentialsBlock {
    /// `username` and `password`.
    Login {
        /// The user name.
        username: String,
        /// The password or token.
        password: String,
    },
    /// `docker_credentials_helper = "NAME"`: ask `docker-credential-NAME`.
    Helper(String),
}

impl std::fmt::Debug for OciCredentialsBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OciCredentialsBlock::Login { username, .. } => f
                .debug_struct("Login")
                .field("username", username)
                .field("password", &"…")
                .finish(),
            OciCredentialsBlock::Helper(h) => f.debug_tuple("Helper").field(h).finish(),
        }
    }
}

/// The `oci_default_credentials` block: how logins for OCI registries are found beyond the
/// `oci_credentials` blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciDefaultCredentials {
    /// `discover_ambient_credentials` (default `true`): read docker-style credential files.
    pub discover_ambient_credentials: bool,
    /// `docker_style_config_files`: read these files (absolute; a relative name was taken
    /// from the directory of the file that set it) instead of the default search; an empty
    /// list reads none. Unlike the default files, each must exist and be valid.
    pub docker_style_config_files: Option<Vec<PathBuf>>,
    /// `docker_credentials_helper`: the credential helper for every repository no more
    /// specific configuration names (before a docker file's `credsStore`).
    pub docker_credentials_helper: Option<String>,
}

impl Default for OciDefaultCredentials {
    fn default() -> Self {
        OciDefaultCredentials {
            discover_ambient_credentials: true,
            docker_style_config_files: None,
            docker_credentials_helper: None,
        }
    }
}

/// The merged CLI configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CliConfig {
    /// The explicit `provider_installation` methods, in file order; `None` if no block.
    pub provider_installation: Option<Vec<InstallMethod>>,
    /// `plugin_cache_dir`, or `TF_PLUGIN_CACHE_DIR` which takes precedence.
    pub plugin_cache_dir: Option<PathBuf>,
    /// `host` blocks by host name.
    pub hosts: BTreeMap<String, HostServices>,
    /// `credentials` blocks: host name to token.
    pub credentials: BTreeMap<String, String>,
    /// `oci_credentials "REGISTRY[/PATH]" { … }` blocks, by label (lowercased).
    pub oci_credentials: BTreeMap<String, OciCredentialsBlock>,
    /// The `oci_default_credentials` block, if any (at most one across all files).
    pub oci_default_credentials: Option<OciDefaultCredentials>,
    /// The files that were read, in order.
    pub source_files: Vec<PathBuf>,
    /// Where [`CliConfig::load`] looked, for diagnostics.
    pub search: ConfigSearch,
    /// tstore's own `tstore_modules { … }` block (which module sources to link or copy):
    /// the file it is in and its body's text. tofu and terraform ignore the block; its
    /// grammar is tstore-installer's.
    pub tstore_modules: Option<(String, String)>,
}

/// Where [`CliConfig::load`] looked for the CLI configuration, so that what was read (or
/// that nothing was) can be said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigSearch {
    /// The variable (`TF_CLI_CONFIG_FILE` or `TERRAFORM_CONFIG`) that named the only file
    /// to read, and that file.
    pub named_by: Option<(&'static str, PathBuf)>,
    /// Every file looked at, read or not, in order; a directory of `*.tfrc` files is
    /// given as `DIR/*.tfrc`.
    pub candidates: Vec<PathBuf>,
    /// Files of the other tool that exist but that this flavor does not read (a
    /// `~/.tofurc` under terraform; a `~/.terraformrc` hidden by `~/.tofurc` under tofu).
    pub other_tool_files: Vec<PathBuf>,
}

impl CliConfig {
    /// What was read, or why nothing was, in one phrase for messages:
    /// `the CLI configuration /home/u/.terraformrc`, `no CLI configuration file (looked at
    /// /home/u/.terraformrc, /home/u/.terraform.d/*.tfrc)`, `no CLI configuration file
    /// (TF_CLI_CONFIG_FILE names /x, which does not exist)`.
    pub fn describe_files(&self) -> String {
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.source_files.is_empty() {
            let noun = if self.source_files.len() == 1 {
                "file"
            } else {
                "files"
            };
            return format!("the CLI configuration {noun} {}", list(&self.source_files));
        }
        match &self.search.named_by {
            Some((var, path)) => format!(
                "no CLI configuration file ({var} names {}, which does not exist)",
                path.display()
            ),
            None if self.search.candidates.is_empty() => {
                "no CLI configuration file (HOME is not set)".to_owned()
            }
            None => format!(
                "no CLI configuration file (looked at {})",
                list(&self.search.candidates)
            ),
        }
    }

    /// Load the configuration the way the chosen tool does.
    ///
    /// `TF_CLI_CONFIG_FILE` (or the legacy `TERRAFORM_CONFIG`) names the only
    /// file to read, if it exists (both tools skip a missing one). Otherwise the
    /// main file (`~/.tofurc` or `~/.terraformrc`) and the `*.tfrc` and
    /// `*.tfrc.json` files of the config directory are read if present. A file
    /// whose content starts with `{` is JSON. `TF_PLUGIN_CACHE_DIR` overrides
    /// `plugin_cache_dir`.
    pub fn load(
        flavor: Flavor,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<CliConfig, CliConfigError> {
        let var = |k: &str| env(k).filter(|v| !v.is_empty());
        let home = var("HOME").map(PathBuf::from);
        let mut config = CliConfig::default();
        let read_file = |config: &mut CliConfig, path: &Path| -> Result<(), CliConfigError> {
            let src = crate::read::read_capped(path, crate::read::MAX_CLI_CONFIG_FILE).map_err(
                |err| CliConfigError::Read {
                    path: path.to_owned(),
                    err,
                },
            )?;
            let mut one = CliConfig::parse_with_env(&src, &path.display().to_string(), env)?;
            one.source_files.push(path.to_owned());
            config.merge(one, &path.display().to_string())
        };

        let mut search = ConfigSearch::default();
        let named = ["TF_CLI_CONFIG_FILE", "TERRAFORM_CONFIG"]
            .into_iter()
            .find_map(|k| var(k).map(|v| (k, v)));
        if let Some((name, path)) = named {
            // A named file that does not exist is skipped, as both tools do.
            let path = expand_tilde(&path, home.as_deref());
            search.named_by = Some((name, path.clone()));
            search.candidates.push(path.clone());
            if path.exists() {
                read_file(&mut config, &path)?;
            }
        } else if let Some(home) = &home {
            let main = main_config_file(flavor, home, &var);
            if let Some(main) = &main {
                search.candidates.push(main.clone());
                if main.is_file() {
                    read_file(&mut config, main)?;
                }
            }
            search.other_tool_files = other_tool_files(flavor, home, &var, main.as_deref());
            let mut dir = home.join(".terraform.d");
            if flavor == Flavor::Tofu && !dir.exists() {
                if let Some(xdg) = var("XDG_CONFIG_HOME") {
                    dir = PathBuf::from(xdg).join("opentofu");
                }
            }
            search.candidates.push(dir.join("*.tfrc"));
            if let Ok(entries) = fs_err::read_dir(&dir) {
                let mut files: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        let name = p.file_name().unwrap_or_default().to_string_lossy();
                        (name.ends_with(".tfrc") || name.ends_with(".tfrc.json")) && p.is_file()
                    })
                    .collect();
                files.sort();
                for f in files {
                    read_file(&mut config, &f)?;
                }
            }
        }
        if let Some(dir) = var("TF_PLUGIN_CACHE_DIR") {
            config.plugin_cache_dir = Some(expand_tilde(&dir, home.as_deref()));
        }
        config.search = search;
        Ok(config)
    }

    /// Parse one configuration file's text; `filename` is used in errors. `~` and `$VAR`
    /// in paths are expanded from `env` (the caller's environment, given as values).
    pub fn parse_with_env(
        src: &str,
        filename: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<CliConfig, CliConfigError> {
        let native;
        let src = if json::looks_like_json(src) {
            native = json::to_native(src, filename)?;
            native.as_str()
        } else {
            src
        };
        let (rewritten, names) = unquote_keys(src);
        let body =
            hcl::edit::parser::parse_body(&rewritten).map_err(|e| CliConfigError::Syntax {
                file: filename.to_owned(),
                line: e.location().line(),
                message: e.message().to_owned(),
            })?;
        let p = Parser {
            src: &rewritten,
            filename,
            names: &names,
            env,
        };
        let mut config = CliConfig::default();
        for s in body.iter() {
            match s {
                Structure::Attribute(a) => {
                    if p.key(a) == "plugin_cache_dir" {
                        let dir = p.string(a)?;
                        if !dir.is_empty() {
                            config.plugin_cache_dir = Some(p.expand_path(dir));
                        }
                    }
                    // Other settings (disable_checkpoint, ...) do not concern tstore.
                }
                Structure::Block(b) => match b.ident.as_str() {
                    "provider_installation" => {
                        if !b.labels.is_empty() {
                            return Err(p.invalid(
                                b,
                                "the provider_installation block must not have any labels".into(),
                            ));
                        }
                        if config.provider_installation.is_some() {
                            return Err(p.invalid(
                                b,
                                "No more than one provider_installation block may be specified"
                                    .into(),
                            ));
                        }
                        config.provider_installation = Some(p.methods(b)?);
                    }
                    "host" => {
                        let host = p.host_label(b, "host")?;
                        let mut services = BTreeMap::new();
                        if let Some(attr) = b.body.get_attribute("services") {
                            let Expression::Object(obj) = &attr.value else {
                                return Err(
                                    p.invalid(attr, "\"services\" must be an object".into())
                                );
                            };
                            for (k, v) in obj.iter() {
                                if let Expression::String(s) = v.expr() {
                                    services.insert(p.object_key(k), s.as_str().to_owned());
                                }
                            }
                        }
                        config.hosts.insert(host, HostServices { services });
                    }
                    "tstore_modules" => {
                        if config.tstore_modules.is_some() {
                            return Err(p.invalid(
                                b,
                                "No more than one tstore_modules block may be specified".into(),
                            ));
                        }
                        config.tstore_modules = Some((filename.to_owned(), b.body.to_string()));
                    }
                    "oci_credentials" => {
                        let [label] = b.labels.as_slice() else {
                            return Err(p.invalid(
                                b,
                                "an oci_credentials block needs one label: the registry domain, optionally followed by a repository path prefix".into(),
                            ));
                        };
                        let label = label.as_str().trim_end_matches('/').to_ascii_lowercase();
                        if label.is_empty() || label.contains("://") {
                            return Err(p.invalid(
                                b,
                                format!("invalid oci_credentials label {label:?}: write the registry domain and an optional repository path, without a scheme"),
                            ));
                        }
                        let parsed = p.oci_credentials(b)?;
                        if config
                            .oci_credentials
                            .insert(label.clone(), parsed)
                            .is_some()
                        {
                            return Err(p.invalid(
                                b,
                                format!("Duplicate oci_credentials block for {label:?}"),
                            ));
                        }
                    }
                    "oci_default_credentials" => {
                        let parsed = p.oci_default_credentials(b)?;
                        if config.oci_default_credentials.replace(parsed).is_some() {
                            return Err(p.invalid(
                                b,
                                "No more than one oci_default_credentials block may be specified"
                                    .into(),
                            ));
                        }
                    }
                    "credentials" => {
                        let host = p.host_label(b, "credentials")?;
                        if let Some(attr) = b.body.get_attribute("token") {
                            config.credentials.insert(host, p.string(attr)?.to_owned());
                        }
                    }
                    _ => {}
                },
            }
        }
        Ok(config)
    }

    /// Fold a later file into this one, as tofu merges its CLI config files.
    fn merge(&mut self, other: CliConfig, filename: &str) -> Result<(), CliConfigError> {
        if let Some(methods) = other.provider_installation {
            if self.provider_installation.is_some() {
                return Err(CliConfigError::Invalid {
                    file: filename.to_owned(),
                    line: 0,
                    message: "No more than one provider_installation block may be specified (another file already has one)".into(),
                });
            }
            self.provider_installation = Some(methods);
        }
        if self.plugin_cache_dir.is_none() {
            self.plugin_cache_dir = other.plugin_cache_dir;
        }
        self.hosts.extend(other.hosts);
        self.credentials.extend(other.credentials);
        for (label, block) in other.oci_credentials {
            if self.oci_credentials.insert(label.clone(), block).is_some() {
                return Err(CliConfigError::Invalid {
                    file: filename.to_owned(),
                    line: 0,
                    message: format!("Duplicate oci_credentials block for {label:?}"),
                });
            }
        }
        if let Some(defaults) = other.oci_default_credentials {
            if self.oci_default_credentials.replace(defaults).is_some() {
                return Err(CliConfigError::Invalid {
                    file: filename.to_owned(),
                    line: 0,
                    message: "No more than one oci_default_credentials block may be specified (another file already has one)".into(),
                });
            }
        }
        if other.tstore_modules.is_some() {
            if self.tstore_modules.is_some() {
                return Err(CliConfigError::Invalid {
                    file: filename.to_owned(),
                    line: 0,
                    message: "No more than one tstore_modules block may be specified (another file already has one)".into(),
                });
            }
            self.tstore_modules = other.tstore_modules;
        }
        self.source_files.extend(other.source_files);
        Ok(())
    }
}

fn main_config_file(
    flavor: Flavor,
    home: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let legacy = home.join(".terraformrc");
    match flavor {
        Flavor::Terraform => Some(legacy),
        Flavor::Tofu => {
            let new = home.join(".tofurc");
            if !legacy.exists() && !new.exists() {
                if let Some(xdg) = var("XDG_CONFIG_HOME") {
                    return Some(PathBuf::from(xdg).join("opentofu").join("tofurc"));
                }
            }
            Some(if legacy.exists() && !new.exists() {
                legacy
            } else {
                new
            })
        }
    }
}

/// The main files of the other tool that exist and that `flavor` does not read: under
/// terraform, `~/.tofurc` and `$XDG_CONFIG_HOME/opentofu/tofurc`; under tofu, a
/// `~/.terraformrc` when `~/.tofurc` is read in its place.
fn other_tool_files(
    flavor: Flavor,
    home: &Path,
    var: &dyn Fn(&str) -> Option<String>,
    main: Option<&Path>,
) -> Vec<PathBuf> {
    let mut files = match flavor {
        Flavor::Terraform => {
            let mut f = vec![home.join(".tofurc")];
            if let Some(xdg) = var("XDG_CONFIG_HOME") {
                f.push(PathBuf::from(xdg).join("opentofu").join("tofurc"));
            }
            f
        }
        Flavor::Tofu => vec![home.join(".terraformrc")],
    };
    files.retain(|f| Some(f.as_path()) != main && f.is_file());
    files
}

fn expand_tilde(s: &str, home: Option<&Path>) -> PathBuf {
    match (s.strip_prefix('~'), home) {
        (Some(""), Some(h)) => h.to_owned(),
        (Some(rest), Some(h)) if rest.starts_with('/') => h.join(&rest[1..]),
        _ => PathBuf::from(s),
    }
}

/// Expand `$VAR` and `${VAR}` like Go's os.ExpandEnv (unset means empty).
fn expand_vars(s: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if len == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str(&env(name).unwrap_or_default());
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
