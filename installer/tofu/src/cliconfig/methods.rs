//! Installation methods: what a `provider_installation` block says (and what tofu implies
//! without one), which providers a method's patterns take, and which OCI repository
//! templates keep providers apart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::CliConfig;
use crate::addr::{normalize_host, normalize_part, ProviderAddr};
use crate::flavor::Flavor;

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
        /// `trust_all_hashes = true` (OpenTofu ≥ 1.12): every platform's hashes the mirror
        /// lists are trusted (one must match the archive) and locked.
        trust_all_hashes: bool,
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
    pub(super) fn new(kind: InstallMethodKind) -> Self {
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
pub(super) fn parse_pattern(
    p: &str,
    default_host: &str,
) -> Result<(String, String, String), String> {
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

impl CliConfig {
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
