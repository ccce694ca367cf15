//! Filesystem mirrors
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getproviders/filesystem_mirror_source.go>):
//! directories of provider packages in the packed layout
//! (`HOST/NS/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip`), the unpacked layout
//! (`HOST/NS/TYPE/VERSION/OS_ARCH/`), or both at once.
//!
//! The scan follows OpenTofu's `SearchLocalDirectory`
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getproviders/filesystem_search.go>):
//! the root may be a symlink, symlinks above the TYPE level are ignored, an `OS_ARCH` entry
//! may be a symlink to a directory, and entries that do not parse are skipped with a warning
//! rather than failing the whole scan (`*.json` index files written by `providers mirror`
//! are among them).

use std::io;
use std::path::{Path, PathBuf};

use tstore_tofu::addr::{normalize_host, normalize_part, Platform, ProviderAddr};
use tstore_tofu::version::Version;

/// Errors from scanning a mirror.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The mirror root (or a directory inside it) cannot be read.
    #[error("cannot search {}: {err}", path.display())]
    Search {
        /// The path that could not be read.
        path: PathBuf,
        /// The I/O error.
        #[source]
        err: io::Error,
    },
}

/// Where a package sits in the mirror.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MirrorLocation {
    /// A `.zip` archive (packed layout).
    Packed(PathBuf),
    /// A `VERSION/OS_ARCH` directory (unpacked layout), as found (possibly a symlink).
    Unpacked(PathBuf),
}

/// One package found in a mirror.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorPackage {
    /// Provider version.
    pub version: Version,
    /// Target platform.
    pub platform: Platform,
    /// Archive or directory.
    pub location: MirrorLocation,
}

/// A filesystem mirror directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilesystemMirror {
    /// The mirror's root directory.
    pub root: PathBuf,
}

/// The providers an implied local plugin directory holds, for
/// [`CliConfig::effective_methods`](tstore_tofu::cliconfig::CliConfig::effective_methods);
/// an unreadable directory holds none, as tofu ignores it.
pub fn providers_in(dir: &Path) -> Vec<ProviderAddr> {
    FilesystemMirror::new(dir)
        .all_packages()
        .map(|pkgs| pkgs.into_iter().map(|(addr, _)| addr).collect())
        .unwrap_or_default()
}

impl FilesystemMirror {
    /// A mirror rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FilesystemMirror { root: root.into() }
    }

    /// All packages of `addr` in the mirror, for any platform, sorted by
    /// platform then version. A provider that is not there gives an empty list;
    /// a missing mirror root is an error, as in tofu.
    pub fn packages(&self, addr: &ProviderAddr) -> Result<Vec<MirrorPackage>, MirrorError> {
        Ok(self
            .all_packages()?
            .into_iter()
            .filter(|(a, _)| a == addr)
            .map(|(_, p)| p)
            .collect())
    }

    /// Every package in the mirror, sorted by provider, platform and version.
    /// When a version exists both packed and unpacked, the unpacked one comes first.
    pub fn all_packages(&self) -> Result<Vec<(ProviderAddr, MirrorPackage)>, MirrorError> {
        // Resolve a symlinked root once; symlinks further down are not followed
        // for walking (only for the final OS_ARCH / zip entry).
        let base = fs_err::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        let meta = std::fs::symlink_metadata(&base).map_err(|err| MirrorError::Search {
            path: self.root.clone(),
            err: io::Error::new(err.kind(), format!("lstat {}: {err}", self.root.display())),
        })?;
        if !meta.is_dir() {
            // Walking a file yields only the root itself: nothing to find.
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        let walker = walkdir::WalkDir::new(&base)
            .min_depth(1)
            .max_depth(5)
            .follow_links(false)
            .sort_by_file_name();
        for entry in walker {
            let entry = entry.map_err(|e| {
                let path = e.path().unwrap_or(&base).to_owned();
                let err = e
                    .into_io_error()
                    .unwrap_or_else(|| io::Error::other("filesystem loop"));
                MirrorError::Search { path, err }
            })?;
            if let Some(item) = classify(&base, entry.path(), entry.depth()) {
                found.push(item);
            }
        }
        found.sort_by(|(a, p), (b, q)| {
            a.cmp(b)
                .then_with(|| p.platform.cmp(&q.platform))
                .then_with(|| p.version.cmp(&q.version))
        });
        Ok(found)
    }
}

/// Decide whether a walked entry is a package; `None` (with a warning where
/// tofu warns) for anything else.
fn classify(base: &Path, path: &Path, depth: usize) -> Option<(ProviderAddr, MirrorPackage)> {
    if depth < 3 {
        if path.is_symlink() {
            tracing::warn!(
                "provider plugin search ignored symlink {}: only the base directory {} may be a symlink",
                path.display(),
                base.display()
            );
        }
        return None;
    }
    let rel = path.strip_prefix(base).ok()?;
    let parts: Vec<&str> = rel.iter().map(|s| s.to_str()).collect::<Option<_>>()?;
    let addr = provider_from_dirs(path, parts[0], parts[1], parts[2])?;
    // Follow a symlink for the type test, as tofu's os.Stat does.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("failed to read metadata about {}: {e}", path.display());
            return None;
        }
    };
    match parts.len() {
        5 if meta.is_dir() => {
            let version = parse_or_warn(path, parts[3], "version", |s| s.parse::<Version>().ok())?;
            let platform =
                parse_or_warn(path, parts[4], "platform", |s| s.parse::<Platform>().ok())?;
            Some((
                addr,
                MirrorPackage {
                    version,
                    platform,
                    location: MirrorLocation::Unpacked(path.to_owned()),
                },
            ))
        }
        4 if !meta.is_dir() => {
            let name = parts[3].to_lowercase();
            if name.ends_with(".json") {
                return None; // providers-mirror index files
            }
            let prefix = format!("terraform-provider-{}_", addr.kind);
            let Some(info) = name
                .strip_prefix(&prefix)
                .and_then(|n| n.strip_suffix(".zip"))
            else {
                tracing::warn!(
                    "ignoring file {} as possible package for {addr}: filename is not {prefix}VERSION_OS_ARCH.zip",
                    rel.display()
                );
                return None;
            };
            // Extra `_` fields after OS_ARCH are ignored, as in tofu.
            let fields: Vec<&str> = info.split('_').collect();
            if fields.len() < 3 {
                tracing::warn!(
                    "ignoring file {} as possible package for {addr}: filename does not include version number, target OS, and target architecture",
                    rel.display()
                );
                return None;
            }
            let version = parse_or_warn(path, fields[0], "version", |s| s.parse::<Version>().ok())?;
            let platform_str = format!("{}_{}", fields[1], fields[2]);
            let platform = parse_or_warn(path, &platform_str, "platform", |s| {
                s.parse::<Platform>().ok()
            })?;
            Some((
                addr,
                MirrorPackage {
                    version,
                    platform,
                    location: MirrorLocation::Packed(path.to_owned()),
                },
            ))
        }
        _ => None,
    }
}

fn provider_from_dirs(
    path: &Path,
    host: &str,
    namespace: &str,
    kind: &str,
) -> Option<ProviderAddr> {
    let warn = |what: &str, value: &str| {
        tracing::warn!(
            "local provider path {} contains invalid {what} {value:?}; ignoring",
            path.display()
        );
    };
    let Ok(namespace) = normalize_part(namespace) else {
        warn("namespace", namespace);
        return None;
    };
    let Ok(kind) = normalize_part(kind) else {
        warn("type", kind);
        return None;
    };
    let Ok(host) = normalize_host(host) else {
        warn("hostname", host);
        return None;
    };
    Some(ProviderAddr {
        host,
        namespace,
        kind,
    })
}

fn parse_or_warn<T>(path: &Path, s: &str, what: &str, f: impl Fn(&str) -> Option<T>) -> Option<T> {
    let v = f(s);
    if v.is_none() {
        tracing::warn!(
            "ignoring local provider path {} with invalid {what} {s:?}",
            path.display()
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, b"x").unwrap();
    }

    fn addr(s: &str) -> ProviderAddr {
        ProviderAddr::parse_normalized(s).unwrap()
    }

    #[test]
    fn both_layouts_mixed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let null = root.join("registry.terraform.io/hashicorp/null");
        touch(&null.join("terraform-provider-null_2.1.2_linux_amd64.zip"));
        touch(&null.join("terraform-provider-null_2.1.2_darwin_amd64.zip"));
        touch(&null.join("2.1.2/linux_amd64/terraform-provider-null_v2.1.2_x4"));
        touch(&null.join("3.0.0-beta1/linux_arm64/terraform-provider-null"));
        // Noise that must be ignored.
        touch(&null.join("index.json"));
        touch(&null.join("2.1.2.json"));
        touch(&null.join("README.md"));
        touch(&null.join("terraform-provider-null_bad_linux_amd64.zip"));
        touch(&null.join("terraform-provider-null_1.0.0.zip"));
        touch(&null.join("notaversion/linux_amd64/x"));
        touch(&null.join("1.0.0/linux/x"));
        touch(&root.join("example.com/Test/Fake/1.0.0/linux_amd64/terraform-provider-fake"));
        touch(&root.join("example.com/te_st/fake/1.0.0/linux_amd64/x"));
        touch(&root.join("stray.txt"));

        let m = FilesystemMirror::new(root);
        let pkgs = m
            .packages(&addr("registry.terraform.io/hashicorp/null"))
            .unwrap();
        let got: Vec<String> = pkgs
            .iter()
            .map(|p| {
                let kind = match &p.location {
                    MirrorLocation::Packed(_) => "packed",
                    MirrorLocation::Unpacked(_) => "unpacked",
                };
                format!("{} {} {kind}", p.version, p.platform)
            })
            .collect();
        assert_eq!(
            got,
            [
                "2.1.2 darwin_amd64 packed",
                "2.1.2 linux_amd64 unpacked",
                "2.1.2 linux_amd64 packed",
                "3.0.0-beta1 linux_arm64 unpacked",
            ]
        );
        assert_eq!(
            pkgs[1].location,
            MirrorLocation::Unpacked(
                fs_err::canonicalize(root)
                    .unwrap()
                    .join("registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
            )
        );

        let all = m.all_packages().unwrap();
        assert_eq!(all.len(), 5);
        // Directory names are normalized into the address.
        assert_eq!(all[0].0, addr("example.com/test/fake"));

        assert!(m.packages(&addr("example.com/x/y")).unwrap().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_os_arch_and_root() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store/pkg");
        touch(&store.join("terraform-provider-fake"));
        let root = dir.path().join("mirror");
        let ver = root.join("example.com/test/fake/1.0.0");
        fs_err::create_dir_all(&ver).unwrap();
        std::os::unix::fs::symlink(&store, ver.join("linux_amd64")).unwrap();
        let link_root = dir.path().join("mirror-link");
        std::os::unix::fs::symlink(&root, &link_root).unwrap();

        let pkgs = FilesystemMirror::new(&link_root)
            .packages(&addr("example.com/test/fake"))
            .unwrap();
        assert_eq!(pkgs.len(), 1);
        let MirrorLocation::Unpacked(p) = &pkgs[0].location else {
            panic!()
        };
        assert!(p.ends_with("example.com/test/fake/1.0.0/linux_amd64"));
        assert!(p.is_symlink(), "path kept as found, not resolved");
    }

    #[test]
    fn missing_root_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nonexistent");
        let e = FilesystemMirror::new(&missing)
            .packages(&addr("example.com/a/b"))
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("cannot search {}: lstat", missing.display())),
            "{msg}"
        );
    }
}
