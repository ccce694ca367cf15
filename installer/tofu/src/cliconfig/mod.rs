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

use crate::addr::{normalize_host, normalize_part, ProviderAddr};
use crate::flavor::Flavor;

mod json;
mod parse;
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

/// How a method installs providers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallMethodKind {
    /// `filesystem_mirror { path = "..." }`.
    FilesystemMirror {
        /// The mirror directory (`~` expanded).
        path: PathBuf,
    },
    /// `network_mirror { url = "https://.../" }`.
    NetworkMirror {
        /// Base URL of the mirror.
        url: String,
    },
    /// `oci_mirror { repository_template = "HOST/PATH/${namespace}/${type}" }`: an OCI
    /// registry holding one repository per provider, one tag per version.
    OciMirror {
        /// The template of a provider's repository address (`${hostname}`, `${namespace}`
        /// and `${type}` are replaced).
        repository_template: String,
    },
    /// `direct {}`: the provider's origin registry.
    Direct,
    /// `dev_overrides { "ns/type" = "/dir" }`: bypasses installation and locking.
    DevOverrides(BTreeMap<String, PathBuf>),
}

/// One installation method with its include/exclude patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallMethod {
    /// What kind of source this is.
    pub kind: InstallMethodKind,
    /// `[HOST/]NAMESPACE/TYPE` patterns with `*` per part; empty means all.
    pub include: Vec<String>,
    /// Patterns excluded even if included.
    pub exclude: Vec<String>,
}

impl InstallMethod {
    fn new(kind: InstallMethodKind) -> Self {
        InstallMethod {
            kind,
            include: Vec::new(),
            exclude: Vec::new(),
        }
    }

    /// Whether this method is consulted for `addr`: not excluded, and
    /// included (an empty include list includes everything).
    ///
    /// Two-part patterns mean OpenTofu's default registry host; call this on
    /// [`CliConfig::effective_methods`] output, where they are already
    /// expanded with the flavor's host.
    pub fn matches(&self, addr: &ProviderAddr) -> bool {
        let hit = |p: &String| pattern_matches(p, addr, Flavor::Tofu.default_registry_host());
        if self.exclude.iter().any(hit) {
            return false;
        }
        self.include.is_empty() || self.include.iter().any(hit)
    }
}

fn pattern_matches(pattern: &str, addr: &ProviderAddr, default_host: &str) -> bool {
    let Ok((host, ns, kind)) = parse_pattern(pattern, default_host) else {
        return false;
    };
    (host == "*" || host == addr.host)
        && (ns == "*" || ns == addr.namespace)
        && (kind == "*" || kind == addr.kind)
}

/// Why a repository template cannot give every provider it serves a repository of its own.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryTemplateError {
    /// A `${` without its `}`.
    #[error("unterminated placeholder in repository_template {template:?}.")]
    Unterminated {
        /// The template.
        template: String,
    },
    /// A placeholder other than `${hostname}`, `${namespace}` and `${type}`.
    #[error("repository_template {template:?} uses an unknown placeholder ${{{name}}}; only ${{hostname}}, ${{namespace}} and ${{type}} are available.")]
    UnknownPlaceholder {
        /// The template.
        template: String,
        /// The placeholder's name.
        name: String,
    },
    /// The template leaves out a part of the provider address that is not one and the same
    /// for every provider it serves, so two providers would share a repository (and each
    /// version's tag).
    #[error("repository_template {template:?} must use ${{{part}}}, unless every provider it serves has one and the same {part}.")]
    PartLeftOut {
        /// The template.
        template: String,
        /// `hostname`, `namespace` or `type`.
        part: &'static str,
    },
}

/// Check that `template` gives every provider that `patterns` admit a repository of its own.
/// `patterns` are `[HOST/]NAMESPACE/TYPE` with `*` for any part (none: every provider). The
/// template may use only `${hostname}`, `${namespace}` and `${type}`, and a part it leaves out
/// must be written out, one and the same value, in every pattern: two providers that differ
/// in a part the template does not name would get one repository, and each version's tag
/// of one would replace the other's.
///
/// The `include` patterns of an `oci_mirror` block are checked this way when the CLI
/// configuration is read; `tstore push` checks its target against the providers it pushes.
pub fn check_repository_template(
    template: &str,
    patterns: &[String],
) -> Result<(), RepositoryTemplateError> {
    let mut rest = template;
    let mut used = Vec::new();
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            return Err(RepositoryTemplateError::Unterminated {
                template: template.to_owned(),
            });
        };
        let name = &rest[start + 2..start + end];
        if !matches!(name, "hostname" | "namespace" | "type") {
            return Err(RepositoryTemplateError::UnknownPlaceholder {
                template: template.to_owned(),
                name: name.to_owned(),
            });
        }
        used.push(name.to_owned());
        rest = &rest[start + end + 1..];
    }
    // Two-part patterns name no host: they mean the default host of whichever tool reads
    // them, so they agree with each other and with no pattern that names a host.
    let parsed: Vec<Option<[String; 3]>> = patterns
        .iter()
        .map(|p| parse_pattern(p, "").ok().map(|(h, n, t)| [h, n, t]))
        .collect();
    for (i, part) in ["hostname", "namespace", "type"].into_iter().enumerate() {
        if used.iter().any(|u| u == part) {
            continue;
        }
        let mut values = parsed.iter().map(|p| p.as_ref().map(|p| p[i].as_str()));
        let first = values.next().flatten();
        let one_value = first.is_some_and(|v| v != "*") && values.all(|v| v == first);
        if !one_value {
            return Err(RepositoryTemplateError::PartLeftOut {
                template: template.to_owned(),
                part,
            });
        }
    }
    Ok(())
}

/// Normalize a matching pattern to `(host, namespace, type)`, with the
/// constraints tofu imposes on where wildcards may appear.
fn parse_pattern(p: &str, default_host: &str) -> Result<(String, String, String), String> {
    let parts: Vec<&str> = p.split('/').collect();
    let (host, ns, kind) = match parts.as_slice() {
        [ns, kind] => (default_host.to_owned(), *ns, *kind),
        [host, ns, kind] => {
            let host = if *host == "*" {
                "*".to_owned()
            } else {
                normalize_host(host).map_err(|e| {
                    format!("invalid hostname in provider matching pattern {p:?}: {e}")
                })?
            };
            (host, *ns, *kind)
        }
        _ => {
            return Err(format!(
                "invalid provider matching pattern {p:?}: must have either two or three slash-separated segments"
            ))
        }
    };
    let part = |s: &str, what: &str| -> Result<String, String> {
        if s == "*" {
            Ok("*".to_owned())
        } else {
            normalize_part(s).map_err(|_| {
                format!("invalid {what} {s:?} in provider matching pattern {p:?}: must either be the wildcard * or a literal name")
            })
        }
    };
    let ns = part(ns, "registry namespace")?;
    let kind = part(kind, "provider type")?;
    if host == "*" && (ns != "*" || kind != "*") {
        return Err(format!("invalid provider matching pattern {p:?}: hostname can be a wildcard only if both namespace and provider type are also wildcards"));
    }
    if ns == "*" && kind != "*" {
        return Err(format!("invalid provider matching pattern {p:?}: namespace can be a wildcard only if the provider type is also a wildcard"));
    }
    Ok((host, ns, kind))
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

    /// Parse one configuration file's text; `filename` is used in errors.
    /// `~` and `$VAR` in paths are expanded from the process environment.
    pub fn parse(src: &str, filename: &str) -> Result<CliConfig, CliConfigError> {
        Self::parse_with_env(src, filename, &|k| std::env::var(k).ok())
    }

    /// [`CliConfig::parse`] with an explicit environment for path expansion.
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

    /// The methods to use: the explicit `provider_installation` block, with
    /// two-part patterns expanded to `flavor`'s registry host; or, without a
    /// block, the implied ones: a filesystem mirror for each existing local
    /// plugin directory, then `direct` excluding every provider found in them.
    /// `providers_in` lists the providers a local plugin directory holds (reading
    /// a mirror is the provider sources' job, not the language's).
    pub fn effective_methods(
        &self,
        flavor: Flavor,
        cwd: &Path,
        env: &dyn Fn(&str) -> Option<String>,
        providers_in: &dyn Fn(&Path) -> Vec<ProviderAddr>,
    ) -> Vec<InstallMethod> {
        let default_host = flavor.default_registry_host();
        if let Some(methods) = &self.provider_installation {
            let expand = |pats: &[String]| -> Vec<String> {
                pats.iter()
                    .map(|p| match parse_pattern(p, default_host) {
                        Ok((h, n, t)) => format!("{h}/{n}/{t}"),
                        Err(_) => p.clone(),
                    })
                    .collect()
            };
            return methods
                .iter()
                .map(|m| InstallMethod {
                    kind: m.kind.clone(),
                    include: expand(&m.include),
                    exclude: expand(&m.exclude),
                })
                .collect();
        }

        let mut methods = Vec::new();
        let mut found: Vec<String> = Vec::new();
        for dir in implied_plugin_dirs(flavor, cwd, env) {
            if !dir.is_dir() {
                continue;
            }
            for addr in providers_in(&dir) {
                let a = addr.to_string();
                if !found.contains(&a) {
                    found.push(a);
                }
            }
            methods.push(InstallMethod::new(InstallMethodKind::FilesystemMirror {
                path: dir,
            }));
        }
        methods.push(InstallMethod {
            exclude: found,
            ..InstallMethod::new(InstallMethodKind::Direct)
        });
        methods
    }

    /// The methods of `init -plugin-dir=DIR` (repeatable): one filesystem mirror per
    /// directory, in the order given, and nothing else. They replace the methods of the CLI
    /// configuration (explicit or implied, `direct` included), so a provider that none of
    /// the directories holds is not installed at all; relative directories are taken from
    /// `cwd`.
    ///
    /// upstream: internal/command/init.go@v1.12.6 (`getProviders`: "If the user passes at
    /// least one -plugin-dir then that circumvents the usual sources and forces OpenTofu to
    /// consult only the given directories") and internal/command/meta_providers.go@v1.12.6
    /// (`providerCustomLocalDirectorySource`: a filesystem mirror source per directory).
    pub fn plugin_dir_methods<P: AsRef<Path>>(cwd: &Path, dirs: &[P]) -> Vec<InstallMethod> {
        dirs.iter()
            .map(|dir| {
                InstallMethod::new(InstallMethodKind::FilesystemMirror {
                    path: cwd.join(dir),
                })
            })
            .collect()
    }
}

/// The local directories searched when there is no `provider_installation`
/// block, in tofu's order (cmd/tofu/provider_source.go, implicitProviderSource).
pub fn implied_plugin_dirs(
    flavor: Flavor,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    let home = var("HOME").map(PathBuf::from);
    let mut dirs = vec![cwd.join("terraform.d").join("plugins")];
    if let Some(home) = &home {
        dirs.push(home.join(".terraform.d").join("plugins"));
    }
    if flavor == Flavor::Tofu {
        if let Some(xdg) = var("XDG_DATA_HOME") {
            dirs.push(PathBuf::from(xdg).join("opentofu").join("plugins"));
        }
    }
    // XDG base directories for the app name "terraform" (go-userdirs);
    // relative values are ignored, as the XDG spec requires.
    let data_home = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.as_ref().map(|h| h.join(".local").join("share")));
    let data_dirs: Vec<PathBuf> = match var("XDG_DATA_DIRS") {
        Some(v) => std::env::split_paths(&v)
            .filter(|p| p.is_absolute())
            .collect(),
        None => vec![
            PathBuf::from("/usr/local/share"),
            PathBuf::from("/usr/share"),
        ],
    };
    for d in data_home.into_iter().chain(data_dirs) {
        dirs.push(d.join("terraform").join("plugins"));
    }
    let mut unique = Vec::new();
    for d in dirs {
        if !unique.contains(&d) {
            unique.push(d);
        }
    }
    unique
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
