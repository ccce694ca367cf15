//! The CLI configuration file (`~/.tofurc`, `~/.terraformrc`,
//! `TF_CLI_CONFIG_FILE`): provider installation methods, the plugin cache
//! directory, service host overrides and credentials (spec §7.3).
//!
//! The real tools read this file with HCL 1, which allows quoted attribute
//! names such as `"hashicorp/null" = "/dir"` inside `dev_overrides`. HCL 2
//! does not, so such names are swapped for placeholder identifiers before
//! parsing and swapped back when read; line numbers are unaffected.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use hcl::edit::expr::{Expression, ObjectKey};
use hcl::edit::structure::{Attribute, Block, Structure};
use hcl::edit::Span;

use crate::addr::{normalize_host, normalize_part, ProviderAddr};
use crate::flavor::Flavor;
use crate::span::line_at;

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
    /// The files that were read, in order.
    pub source_files: Vec<PathBuf>,
}

impl CliConfig {
    /// Load the configuration the way the chosen tool does.
    ///
    /// `TF_CLI_CONFIG_FILE` (or the legacy `TERRAFORM_CONFIG`) names the only
    /// file to read, and it must be readable (tofu only warns, but silently
    /// ignoring a file the user pointed at hides mistakes). Otherwise the
    /// main file (`~/.tofurc` or `~/.terraformrc`) and the `*.tfrc` files of
    /// the config directory are read if present. `TF_PLUGIN_CACHE_DIR`
    /// overrides `plugin_cache_dir`.
    pub fn load(
        flavor: Flavor,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<CliConfig, CliConfigError> {
        let var = |k: &str| env(k).filter(|v| !v.is_empty());
        let home = var("HOME").map(PathBuf::from);
        let mut config = CliConfig::default();
        let read_file = |config: &mut CliConfig, path: &Path| -> Result<(), CliConfigError> {
            let src = fs_err::read_to_string(path).map_err(|err| CliConfigError::Read {
                path: path.to_owned(),
                err,
            })?;
            let mut one = CliConfig::parse_with_env(&src, &path.display().to_string(), env)?;
            one.source_files.push(path.to_owned());
            config.merge(one, &path.display().to_string())
        };

        if let Some(path) = var("TF_CLI_CONFIG_FILE").or_else(|| var("TERRAFORM_CONFIG")) {
            read_file(&mut config, &expand_tilde(&path, home.as_deref()))?;
        } else if let Some(home) = &home {
            if let Some(main) = main_config_file(flavor, home, &var) {
                if main.is_file() {
                    read_file(&mut config, &main)?;
                }
            }
            let mut dir = home.join(".terraform.d");
            if flavor == Flavor::Tofu && !dir.exists() {
                if let Some(xdg) = var("XDG_CONFIG_HOME") {
                    dir = PathBuf::from(xdg).join("opentofu");
                }
            }
            if let Ok(entries) = fs_err::read_dir(&dir) {
                let mut files: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "tfrc") && p.is_file())
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

/// Replace quoted attribute names at the start of a line (`"a/b" = ...`)
/// with placeholder identifiers, returning the rewritten text and the names.
fn unquote_keys(src: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(src.len());
    let mut names = Vec::new();
    for line in src.split_inclusive('\n') {
        let indent_len = line.len() - line.trim_start().len();
        let t = &line[indent_len..];
        let parsed = t.strip_prefix('"').and_then(|r| {
            let mut name = String::new();
            let mut chars = r.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => name.push(chars.next()?.1),
                    '"' => return Some((name, &r[i + 1..])),
                    c => name.push(c),
                }
            }
            None
        });
        match parsed {
            Some((name, after))
                if after.trim_start().starts_with('=') && !after.trim_start().starts_with("==") =>
            {
                out.push_str(&line[..indent_len]);
                out.push_str(&format!("tstore_quoted_{}", names.len()));
                out.push_str(after);
                names.push(name);
            }
            _ => out.push_str(line),
        }
    }
    (out, names)
}

struct Parser<'a> {
    src: &'a str,
    filename: &'a str,
    names: &'a [String],
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Parser<'_> {
    fn invalid(&self, node: &impl Span, message: String) -> CliConfigError {
        CliConfigError::Invalid {
            file: self.filename.to_owned(),
            line: node.span().map_or(0, |r| line_at(self.src, r.start)),
            message,
        }
    }

    /// An identifier, with placeholders for quoted names mapped back.
    fn name(&self, ident: &str) -> String {
        ident
            .strip_prefix("tstore_quoted_")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| self.names.get(i))
            .cloned()
            .unwrap_or_else(|| ident.to_owned())
    }

    fn key(&self, a: &Attribute) -> String {
        self.name(a.key.as_str())
    }

    fn object_key(&self, k: &ObjectKey) -> String {
        match k {
            ObjectKey::Ident(i) => self.name(i.as_str()),
            ObjectKey::Expression(Expression::String(s)) => s.as_str().to_owned(),
            ObjectKey::Expression(e) => e.to_string(),
        }
    }

    fn string<'b>(&self, a: &'b Attribute) -> Result<&'b str, CliConfigError> {
        match &a.value {
            Expression::String(s) => Ok(s.as_str()),
            _ => Err(self.invalid(a, format!("{:?} must be a string", self.key(a)))),
        }
    }

    fn strings(&self, a: &Attribute) -> Result<Vec<String>, CliConfigError> {
        let Expression::Array(items) = &a.value else {
            return Err(self.invalid(a, format!("{:?} must be a list of strings", self.key(a))));
        };
        items
            .iter()
            .map(|e| match e {
                Expression::String(s) => Ok(s.as_str().to_owned()),
                _ => Err(self.invalid(a, format!("{:?} must be a list of strings", self.key(a)))),
            })
            .collect()
    }

    fn expand_path(&self, s: &str) -> PathBuf {
        let home = (self.env)("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        expand_tilde(&expand_vars(s, self.env), home.as_deref())
    }

    fn host_label(&self, b: &Block, what: &str) -> Result<String, CliConfigError> {
        let [label] = b.labels.as_slice() else {
            return Err(self.invalid(
                b,
                format!("a {what} block must have exactly one label, the host name"),
            ));
        };
        normalize_host(label.as_str()).map_err(|e| {
            self.invalid(
                b,
                format!(
                    "The {what} {:?} block has an invalid hostname: {e}",
                    label.as_str()
                ),
            )
        })
    }

    fn methods(&self, block: &Block) -> Result<Vec<InstallMethod>, CliConfigError> {
        let mut methods: Vec<InstallMethod> = Vec::new();
        for s in block.body.iter() {
            let Structure::Block(m) = s else {
                return Err(self.invalid(
                    s,
                    "The items inside the provider_installation block must all be blocks.".into(),
                ));
            };
            if !m.labels.is_empty() {
                return Err(self.invalid(
                    m,
                    "The blocks inside the provider_installation block may not have any labels."
                        .into(),
                ));
            }
            let kind = m.ident.as_str();
            if kind == "dev_overrides" {
                if !methods.is_empty() {
                    return Err(self.invalid(m, "The dev_overrides block must appear before all other installation methods, because development overrides always have the highest priority.".into()));
                }
                let mut overrides = BTreeMap::new();
                for item in m.body.iter() {
                    let Structure::Attribute(a) = item else {
                        return Err(self.invalid(
                            item,
                            "dev_overrides may contain only \"NAMESPACE/TYPE\" = \"DIR\" entries"
                                .into(),
                        ));
                    };
                    let addr = self.key(a);
                    if let Err(e) =
                        ProviderAddr::parse_source(&addr, Flavor::Tofu.default_registry_host())
                    {
                        return Err(self.invalid(a, format!("The entry {addr:?} in dev_overrides is not a valid provider source string: {e}")));
                    }
                    overrides.insert(addr, self.expand_path(self.string(a)?));
                }
                methods.push(InstallMethod::new(InstallMethodKind::DevOverrides(
                    overrides,
                )));
                continue;
            }
            let mut include = Vec::new();
            let mut exclude = Vec::new();
            let mut path = None;
            let mut url = None;
            for item in m.body.iter() {
                let Structure::Attribute(a) = item else {
                    return Err(self.invalid(
                        item,
                        format!("Invalid {kind} block: nested blocks are not expected here."),
                    ));
                };
                match (kind, self.key(a).as_str()) {
                    (_, "include") => include = self.strings(a)?,
                    (_, "exclude") => exclude = self.strings(a)?,
                    ("filesystem_mirror", "path") => path = Some(self.string(a)?),
                    ("network_mirror", "url") => url = Some(self.string(a)?),
                    // Retry counts and trust settings do not change what is installed.
                    ("direct" | "network_mirror", "download_retry_count") => {}
                    ("network_mirror", "trust_all_hashes") => {}
                    ("direct" | "filesystem_mirror" | "network_mirror", other) => {
                        return Err(self.invalid(
                            a,
                            format!("Invalid {kind} block: unsupported argument {other:?}."),
                        ))
                    }
                    _ => {}
                }
            }
            for p in include.iter().chain(&exclude) {
                parse_pattern(p, Flavor::Tofu.default_registry_host()).map_err(|e| {
                    self.invalid(
                        m,
                        format!("CLI config specifies invalid provider matching patterns: {e}."),
                    )
                })?;
            }
            let kind = match kind {
                "direct" => InstallMethodKind::Direct,
                "filesystem_mirror" => match path.filter(|p| !p.is_empty()) {
                    Some(p) => InstallMethodKind::FilesystemMirror { path: self.expand_path(p) },
                    None => return Err(self.invalid(m, "Invalid filesystem_mirror block: \"path\" argument is required.".into())),
                },
                "network_mirror" => match url.filter(|u| !u.is_empty()) {
                    Some(u) => InstallMethodKind::NetworkMirror { url: u.to_owned() },
                    None => return Err(self.invalid(m, "Invalid network_mirror block: \"url\" argument is required.".into())),
                },
                "oci_mirror" => {
                    return Err(self.invalid(m, "The oci_mirror installation method is not supported by tstore; use a filesystem_mirror or network_mirror.".into()))
                }
                other => return Err(self.invalid(m, format!("Unknown provider installation method {other:?}."))),
            };
            methods.push(InstallMethod {
                kind,
                include,
                exclude,
            });
        }
        Ok(methods)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_from(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    const FULL: &str = r#"
# comment
plugin_cache_dir = "~/cache"
disable_checkpoint = true

provider_installation {
  dev_overrides {
    "hashicorp/null" = "/dev/null-provider"
  }
  filesystem_mirror {
    path    = "/abs/dir"
    include = ["registry.terraform.io/hashicorp/*"]
  }
  network_mirror {
    url = "https://host/prefix/"
  }
  direct {
    exclude = ["example.com/*/*", "hashicorp/aws"]
  }
}

host "Example.com" {
  services = {
    "providers.v1" = "https://example.com/v1/providers/"
  }
}

credentials "app.terraform.io" {
  token = "secret"
}
"#;

    fn parse(src: &str) -> Result<CliConfig, CliConfigError> {
        let env = env_from(&[("HOME", "/home/u".into())]);
        CliConfig::parse_with_env(src, "test.tfrc", &env)
    }

    #[test]
    fn parses_everything() {
        let c = parse(FULL).unwrap();
        assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/home/u/cache")));
        let m = c.provider_installation.as_ref().unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[0].kind,
            InstallMethodKind::DevOverrides(
                [(
                    "hashicorp/null".to_owned(),
                    PathBuf::from("/dev/null-provider")
                )]
                .into()
            )
        );
        assert_eq!(
            m[1].kind,
            InstallMethodKind::FilesystemMirror {
                path: "/abs/dir".into()
            }
        );
        assert_eq!(m[1].include, ["registry.terraform.io/hashicorp/*"]);
        assert_eq!(
            m[2].kind,
            InstallMethodKind::NetworkMirror {
                url: "https://host/prefix/".into()
            }
        );
        assert_eq!(m[3].kind, InstallMethodKind::Direct);
        assert_eq!(
            c.hosts["example.com"].services["providers.v1"],
            "https://example.com/v1/providers/"
        );
        assert_eq!(c.credentials["app.terraform.io"], "secret");
    }

    #[test]
    fn matching_patterns() {
        let c = parse(FULL).unwrap();
        let methods = c.effective_methods(
            Flavor::Terraform,
            Path::new("/nonexistent"),
            &|_| None,
            &|_| Vec::new(),
        );
        let a = |s: &str| ProviderAddr::parse_normalized(s).unwrap();
        let fs = &methods[1];
        assert!(fs.matches(&a("registry.terraform.io/hashicorp/null")));
        assert!(!fs.matches(&a("registry.opentofu.org/hashicorp/null")));
        let direct = &methods[3];
        assert_eq!(
            direct.exclude,
            ["example.com/*/*", "registry.terraform.io/hashicorp/aws"]
        );
        assert!(!direct.matches(&a("example.com/test/fake")));
        assert!(!direct.matches(&a("registry.terraform.io/hashicorp/aws")));
        assert!(direct.matches(&a("registry.opentofu.org/hashicorp/aws")));
        assert!(direct.matches(&a("registry.terraform.io/hashicorp/null")));
        // Two-part patterns in a raw method use OpenTofu's host.
        let raw = &c.provider_installation.as_ref().unwrap()[3];
        assert!(!raw.matches(&a("registry.opentofu.org/hashicorp/aws")));
    }

    #[test]
    fn errors_carry_file_and_line() {
        let cases = [
            (
                "provider_installation {\n  filesystem_mirror {\n  }\n}\n",
                "test.tfrc:2:",
                "\"path\" argument is required",
            ),
            (
                "provider_installation {\n  direct {}\n  dev_overrides {\n  }\n}\n",
                "test.tfrc:3:",
                "must appear before",
            ),
            (
                "provider_installation {\n  bogus {}\n}\n",
                "test.tfrc:2:",
                "Unknown provider installation method \"bogus\"",
            ),
            (
                "provider_installation {\n  direct {\n    include = [\"*/null\"]\n  }\n}\n",
                "test.tfrc:2:",
                "namespace can be a wildcard only",
            ),
            (
                "provider_installation {}\nprovider_installation {}\n",
                "test.tfrc:2:",
                "No more than one",
            ),
            (
                "provider_installation {\n  network_mirror {\n    url = 1\n  }\n}\n",
                "test.tfrc:3:",
                "must be a string",
            ),
            ("x = {\n", "test.tfrc:", "invalid CLI configuration syntax"),
        ];
        for (src, prefix, needle) in cases {
            let msg = parse(src).unwrap_err().to_string();
            assert!(
                msg.starts_with(prefix) && msg.contains(needle),
                "{src}: {msg}"
            );
        }
    }

    #[test]
    fn load_order_and_env() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs_err::create_dir_all(home.join(".terraform.d")).unwrap();
        fs_err::write(
            home.join(".tofurc"),
            "plugin_cache_dir = \"/from/tofurc\"\n",
        )
        .unwrap();
        fs_err::write(
            home.join(".terraformrc"),
            "plugin_cache_dir = \"/from/terraformrc\"\n",
        )
        .unwrap();
        fs_err::write(
            home.join(".terraform.d/extra.tfrc"),
            "credentials \"x.io\" {\n  token = \"t\"\n}\n",
        )
        .unwrap();
        let h = home.display().to_string();

        let c = CliConfig::load(Flavor::Tofu, &env_from(&[("HOME", h.clone())])).unwrap();
        assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/from/tofurc")));
        assert_eq!(c.credentials["x.io"], "t");
        assert_eq!(c.source_files.len(), 2);

        let c = CliConfig::load(Flavor::Terraform, &env_from(&[("HOME", h.clone())])).unwrap();
        assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/from/terraformrc")));

        let c = CliConfig::load(
            Flavor::Tofu,
            &env_from(&[
                ("HOME", h.clone()),
                ("TF_PLUGIN_CACHE_DIR", "/env/cache".into()),
            ]),
        )
        .unwrap();
        assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/env/cache")));

        // An explicit file replaces everything else; a missing one is an error.
        let explicit = dir.path().join("explicit.tfrc");
        fs_err::write(&explicit, "provider_installation {\n  direct {}\n}\n").unwrap();
        let c = CliConfig::load(
            Flavor::Tofu,
            &env_from(&[
                ("HOME", h.clone()),
                ("TF_CLI_CONFIG_FILE", explicit.display().to_string()),
            ]),
        )
        .unwrap();
        assert_eq!(c.plugin_cache_dir, None);
        assert!(c.credentials.is_empty());
        assert_eq!(
            c.provider_installation.unwrap()[0].kind,
            InstallMethodKind::Direct
        );
        let e = CliConfig::load(
            Flavor::Tofu,
            &env_from(&[(
                "TF_CLI_CONFIG_FILE",
                dir.path().join("missing").display().to_string(),
            )]),
        )
        .unwrap_err();
        assert!(matches!(e, CliConfigError::Read { .. }));

        // No HOME and no override: empty config.
        assert_eq!(
            CliConfig::load(Flavor::Tofu, &|_| None).unwrap(),
            CliConfig::default()
        );
    }

    #[test]
    fn implied_methods() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        let home = dir.path().join("home");
        let local = cwd.join("terraform.d/plugins/example.com/test/fake/1.0.0/linux_amd64");
        fs_err::create_dir_all(&local).unwrap();
        fs_err::create_dir_all(home.join(".terraform.d/plugins")).unwrap();
        let env = env_from(&[
            ("HOME", home.display().to_string()),
            (
                "XDG_DATA_DIRS",
                dir.path().join("nope").display().to_string(),
            ),
        ]);
        // The local directory holds one provider; the home one none.
        let providers_in = |dir: &Path| {
            if dir.starts_with(&cwd) {
                vec![ProviderAddr::parse_source("example.com/test/fake", "x").unwrap()]
            } else {
                Vec::new()
            }
        };
        let methods =
            CliConfig::default().effective_methods(Flavor::Tofu, &cwd, &env, &providers_in);
        assert_eq!(methods.len(), 3);
        assert_eq!(
            methods[0].kind,
            InstallMethodKind::FilesystemMirror {
                path: cwd.join("terraform.d/plugins")
            }
        );
        assert_eq!(
            methods[1].kind,
            InstallMethodKind::FilesystemMirror {
                path: home.join(".terraform.d/plugins")
            }
        );
        assert_eq!(methods[2].kind, InstallMethodKind::Direct);
        assert_eq!(methods[2].exclude, ["example.com/test/fake"]);

        let dirs = implied_plugin_dirs(
            Flavor::Tofu,
            &cwd,
            &env_from(&[("HOME", "/h".into()), ("XDG_DATA_HOME", "/x".into())]),
        );
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(
            dirs[1..],
            [
                "/h/.terraform.d/plugins",
                "/x/opentofu/plugins",
                "/x/terraform/plugins",
                "/usr/local/share/terraform/plugins",
                "/usr/share/terraform/plugins",
            ]
        );
    }

    #[test]
    fn env_expansion() {
        let env = env_from(&[("A", "x".into())]);
        assert_eq!(expand_vars("/p/$A/${A}/$B/$", &env), "/p/x/x//$");
    }
}
