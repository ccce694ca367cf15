//! Module source addresses as tofu reads them: classification and normalization. Pure:
//! no file is read and no network asked; fetching is the installer's.
//!
//! Order as tofu's `ParseModuleSource`
//! (<https://github.com/opentofu/opentofu/blob/main/internal/addrs/module_source.go>): local (`./`, `../`), then registry (`[HOST/]NS/NAME/SYSTEM[//SUBDIR]`), then
//! remote (go-getter: forced `X::`, GitHub and scp-like git shorthands, absolute paths and
//! `file://`, `http(s)://`; and OpenTofu's `oci://`). A remote address is `PACKAGE[//SUBDIR][?QUERY]`: the subdir is cut
//! out and the query stays with the package.

use std::fmt;

/// The getter a remote package is fetched with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Getter {
    /// The real `git` command.
    Git,
    /// An HTTP(S) archive, or a page answering `X-Terraform-Get`.
    Http,
    /// A local directory (absolute path or `file://`).
    File,
    /// An OCI registry (`oci://REGISTRY/REPOSITORY?tag=…`), as OpenTofu ≥ 1.10 reads it.
    Oci,
}

/// A remote package address after normalization, without its subdirectory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemotePackage {
    /// How to fetch it.
    pub getter: Getter,
    /// The URL, query included (`file:///B/repo.git?ref=v1.0.0`).
    pub url: String,
}

impl fmt::Display for RemotePackage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.getter {
            Getter::Git => write!(f, "git::{}", self.url),
            Getter::Http | Getter::File | Getter::Oci => f.write_str(&self.url),
        }
    }
}

/// A classified module source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleSource {
    /// `./x`, `../x`: read in place.
    Local(String),
    /// A module registry address.
    Registry {
        /// Registry host (maybe with a port).
        host: String,
        /// Namespace.
        namespace: String,
        /// Module name.
        name: String,
        /// Target system.
        system: String,
        /// `//SUBDIR`, if any.
        subdir: Option<String>,
    },
    /// A go-getter address.
    Remote {
        /// The package.
        package: RemotePackage,
        /// `//SUBDIR`, if any.
        subdir: Option<String>,
    },
    /// A getter tstore does not implement (`s3::`, `gcs::`, `hg::`, …).
    Unsupported {
        /// The getter's name.
        getter: String,
    },
}

/// Why a source cannot be understood.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid module source {input:?}: {reason}")]
pub struct SourceError {
    /// The source as written.
    pub input: String,
    /// What is wrong.
    pub reason: String,
}

/// True for tofu's local paths.
pub fn is_local(source: &str) -> bool {
    ["./", "../", ".\\", "..\\"]
        .iter()
        .any(|p| source.starts_with(p))
}

/// Split `PACKAGE//SUBDIR?QUERY` into `PACKAGE?QUERY` and `SUBDIR` (go-getter `SourceDirSubdir`).
pub fn split_subdir(src: &str) -> (String, Option<String>) {
    let (body, query) = match src.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (src, None),
    };
    // Skip a `scheme://` so its slashes are not taken for the subdir separator.
    let offset = body.find("://").map_or(0, |i| i + 3);
    let (pkg, sub) = match body[offset..].find("//") {
        Some(i) => (&body[..offset + i], Some(body[offset + i + 2..].to_owned())),
        None => (body, None),
    };
    let pkg = match query {
        Some(q) => format!("{pkg}?{q}"),
        None => pkg.to_owned(),
    };
    (pkg, sub.filter(|s| !s.is_empty()))
}

impl ModuleSource {
    /// Classify `source` as tofu does; `default_host` is the registry for `NS/NAME/SYSTEM`.
    pub fn parse(source: &str, default_host: &str) -> Result<ModuleSource, SourceError> {
        let err = |reason: &str| SourceError {
            input: source.to_owned(),
            reason: reason.to_owned(),
        };
        if source.is_empty() {
            return Err(err("the source is empty"));
        }
        if is_local(source) {
            return Ok(ModuleSource::Local(source.to_owned()));
        }
        if let Some(reg) = parse_registry(source, default_host) {
            return Ok(reg);
        }
        let (forced, rest) = match source.split_once("::") {
            Some((f, rest)) if !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric()) => {
                (Some(f), rest)
            }
            _ => (None, source),
        };
        let (pkg, subdir) = split_subdir(rest);
        let package = match forced {
            Some("git") => RemotePackage {
                getter: Getter::Git,
                url: normalize_git_url(&pkg),
            },
            Some("http" | "https") => RemotePackage {
                getter: Getter::Http,
                url: pkg,
            },
            Some("file") => file_package(&pkg),
            Some(other) => {
                return Ok(ModuleSource::Unsupported {
                    getter: other.to_owned(),
                })
            }
            None => detect(&pkg).ok_or_else(|| {
                err(
                    "it is not a local path (\"./\" or \"../\"), a registry address or a \
                     supported remote address (git::, http(s)://, github.com/…, an absolute path)",
                )
            })?,
        };
        Ok(ModuleSource::Remote { package, subdir })
    }

    /// A short name of the kind, for reports: `local`, `registry`, `git`, `http`, `file`.
    pub fn kind(&self) -> &'static str {
        match self {
            ModuleSource::Local(_) => "local",
            ModuleSource::Registry { .. } => "registry",
            ModuleSource::Remote { package, .. } => match package.getter {
                Getter::Git => "git",
                Getter::Http => "http",
                Getter::File => "file",
                Getter::Oci => "oci",
            },
            ModuleSource::Unsupported { .. } => "unsupported",
        }
    }
}

fn file_package(pkg: &str) -> RemotePackage {
    let url = if pkg.starts_with("file://") {
        pkg.to_owned()
    } else {
        format!("file://{pkg}")
    };
    RemotePackage {
        getter: Getter::File,
        url,
    }
}

/// go-getter's detectors for an address without a forced getter.
fn detect(pkg: &str) -> Option<RemotePackage> {
    if pkg.starts_with('/') || pkg.starts_with("file://") {
        return Some(file_package(pkg));
    }
    if pkg.starts_with("oci://") {
        return Some(RemotePackage {
            getter: Getter::Oci,
            url: pkg.to_owned(),
        });
    }
    if pkg.starts_with("http://") || pkg.starts_with("https://") {
        return Some(RemotePackage {
            getter: Getter::Http,
            url: pkg.to_owned(),
        });
    }
    if let Some(rest) = pkg.strip_prefix("github.com/") {
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        let parts: Vec<&str> = path.splitn(3, '/').collect();
        if parts.len() < 2 {
            return None;
        }
        let repo = parts[1].trim_end_matches(".git");
        let mut url = format!("https://github.com/{}/{repo}.git", parts[0]);
        if let Some(q) = query {
            url = format!("{url}?{q}");
        }
        return Some(RemotePackage {
            getter: Getter::Git,
            url,
        });
    }
    if pkg.starts_with("git@") && !pkg.contains("://") {
        return Some(RemotePackage {
            getter: Getter::Git,
            url: normalize_git_url(pkg),
        });
    }
    None
}

/// scp-like `git@host:path` → `ssh://git@host/path`; everything else as written.
fn normalize_git_url(url: &str) -> String {
    if url.contains("://") || url.starts_with('/') {
        return url.to_owned();
    }
    if let Some((user_host, path)) = url.split_once(':') {
        if user_host.contains('@') {
            return format!("ssh://{user_host}/{path}");
        }
    }
    url.to_owned()
}

fn parse_registry(source: &str, default_host: &str) -> Option<ModuleSource> {
    if source.contains("::") || source.contains("://") || source.contains('?') {
        return None;
    }
    let (addr, subdir) = match source.split_once("//") {
        Some((a, s)) => (a, Some(s.to_owned()).filter(|s| !s.is_empty())),
        None => (source, None),
    };
    let parts: Vec<&str> = addr.split('/').collect();
    let (host, rest) = match parts.len() {
        3 => (default_host.to_owned(), &parts[..]),
        4 => (parts[0].to_owned(), &parts[1..]),
        _ => return None,
    };
    if parts.len() == 4 && !is_registry_host(&host) {
        return None;
    }
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !rest.iter().all(|s| ok(s)) {
        return None;
    }
    Some(ModuleSource::Registry {
        host: host.to_ascii_lowercase(),
        namespace: rest[0].to_owned(),
        name: rest[1].to_owned(),
        system: rest[2].to_owned(),
        subdir,
    })
}

/// A registry host: a dotted name or IP (with an optional port). `github.com` and
/// `bitbucket.org` are getter shorthands, and terraform rejects dot-less `localhost`.
fn is_registry_host(host: &str) -> bool {
    let name = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    name.contains('.')
        && !matches!(name, "github.com" | "bitbucket.org")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

/// `path` joined onto `base` and cleaned as Go's `filepath.Join` cleans (`a/../b` → `b`;
/// a leading `..` kept, unless `base` is absolute: nothing is above `/`), `/`-separated;
/// `.` for nothing.
pub fn clean_join(base: &str, path: &str) -> String {
    let absolute = base.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in base.split('/').chain(path.split('/')) {
        match c {
            "" | "." => {}
            ".." => {
                if matches!(parts.last(), Some(p) if *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    if absolute {
        format!("/{}", parts.join("/"))
    } else if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "registry.opentofu.org";

    fn remote(s: &str) -> (String, Option<String>) {
        match ModuleSource::parse(s, H).unwrap() {
            ModuleSource::Remote { package, subdir } => (package.to_string(), subdir),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn classifies_like_tofu() {
        assert_eq!(
            ModuleSource::parse("./a", H).unwrap(),
            ModuleSource::Local("./a".into())
        );
        assert_eq!(
            remote("git::file:///B/repo.git//sub?ref=v1.0.0"),
            (
                "git::file:///B/repo.git?ref=v1.0.0".into(),
                Some("sub".into())
            )
        );
        assert_eq!(
            remote("github.com/acme/terraform-null-pkg//sub?ref=v1.0.0"),
            (
                "git::https://github.com/acme/terraform-null-pkg.git?ref=v1.0.0".into(),
                Some("sub".into())
            )
        );
        assert_eq!(
            remote("git@github.com:acme/terraform-null-pkg.git?ref=v1.0.0").0,
            "git::ssh://git@github.com/acme/terraform-null-pkg.git?ref=v1.0.0"
        );
        assert_eq!(remote("/abs/dir").0, "file:///abs/dir");
        assert_eq!(
            remote("https://h/x.tar.gz//sub"),
            ("https://h/x.tar.gz".into(), Some("sub".into()))
        );
        match ModuleSource::parse("127.0.0.1:8443/acme/gitpkg/null//sub", H).unwrap() {
            ModuleSource::Registry {
                host,
                namespace,
                subdir,
                ..
            } => {
                assert_eq!(host, "127.0.0.1:8443");
                assert_eq!(namespace, "acme");
                assert_eq!(subdir.as_deref(), Some("sub"));
            }
            other => panic!("{other:?}"),
        }
        match ModuleSource::parse("hashicorp/consul/aws", H).unwrap() {
            ModuleSource::Registry { host, .. } => assert_eq!(host, H),
            other => panic!("{other:?}"),
        }
        assert!(!matches!(
            ModuleSource::parse("localhost:8443/acme/gitpkg/null", H),
            Ok(ModuleSource::Registry { .. })
        ));
        assert_eq!(
            ModuleSource::parse("s3::https://s3.amazonaws.com/b/x.zip", H).unwrap(),
            ModuleSource::Unsupported {
                getter: "s3".into()
            }
        );
    }

    #[test]
    fn clean_join_matches_terraform_dirs() {
        assert_eq!(clean_join(".", "./local-mod"), "local-mod");
        assert_eq!(clean_join("local-mod", "../local-mod2"), "local-mod2");
        assert_eq!(
            clean_join(".terraform/modules/gita", "./modules/inner"),
            ".terraform/modules/gita/modules/inner"
        );
        assert_eq!(clean_join(".", "../x"), "../x");
        // A directory named by absolute path (a data directory, or a local module linked
        // to one) stays absolute, and `..` stops at the root.
        assert_eq!(clean_join("/srv/mods/a", "../b"), "/srv/mods/b");
        assert_eq!(clean_join("/srv", "../../x"), "/x");
        assert_eq!(clean_join("/", "."), "/");
    }
}
