//! Which tool tstore stands in for: OpenTofu or Terraform.
//!
//! The two differ in a few observable defaults (default registry host, the
//! command named in the lock file header, CLI config file names), so every
//! place that depends on one of them takes a [`Flavor`].
//!
//! Which flavor applies to a working directory is decided by the first rule that
//! answers, in this order: `--flavor` / `TSTORE_FLAVOR`; `flavor = "…"` in the
//! repository's `.tstore.hcl`; the existing lock file ([`from_lock_file`]: its header,
//! then its provider hosts); `.tofu`/`.tofu.json` files in the directory
//! ([`from_tofu_files`]); the one of `tofu`/`terraform` found on `PATH`; the default,
//! tofu. The rules that read only the working directory live here; the environment,
//! `PATH` and tstore's own file are read by the installer and the binary.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::lockfile::LockFile;

/// The tool whose behaviour tstore reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Flavor {
    /// OpenTofu (`tofu`), the default.
    #[default]
    Tofu,
    /// HashiCorp Terraform (`terraform`).
    Terraform,
}

impl Flavor {
    /// Host used for provider source addresses written as `NAMESPACE/TYPE`.
    pub fn default_registry_host(self) -> &'static str {
        match self {
            Flavor::Tofu => "registry.opentofu.org",
            Flavor::Terraform => "registry.terraform.io",
        }
    }

    /// The command named in the lock file header comment.
    pub fn init_command(self) -> &'static str {
        match self {
            Flavor::Tofu => "tofu init",
            Flavor::Terraform => "terraform init",
        }
    }

    /// The name used on the command line and in `Display`.
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Tofu => "tofu",
            Flavor::Terraform => "terraform",
        }
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule that decided a working directory's flavor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecidedBy {
    /// `--flavor` on the command line.
    Flag,
    /// The `TSTORE_FLAVOR` environment variable.
    Environment,
    /// The tool `--tool-version` or `TSTORE_TOOL_VERSION` names (`terraform 1.15.4`).
    ToolVersion,
    /// `flavor = "…"` in the repository's `.tstore.hcl` (this file).
    RepositoryFile(PathBuf),
    /// The header of the existing lock file (this file), which names the tool that wrote it.
    LockFileHeader(PathBuf),
    /// The registry hosts of the existing lock file's providers (this file).
    LockFileHosts(PathBuf),
    /// The registry hosts of the existing module lock file's entries (this file).
    ModuleLockHosts(PathBuf),
    /// A `.tofu` or `.tofu.json` file in the working directory (this one).
    TofuFiles(PathBuf),
    /// The only one of `tofu` and `terraform` found on `PATH` (this binary).
    Path(PathBuf),
    /// No rule answered.
    Default,
}

impl DecidedBy {
    /// A short, stable name of the rule, for `--json`.
    pub fn rule(&self) -> &'static str {
        match self {
            DecidedBy::Flag => "--flavor",
            DecidedBy::Environment => "TSTORE_FLAVOR",
            DecidedBy::ToolVersion => "tool version",
            DecidedBy::RepositoryFile(_) => ".tstore.hcl",
            DecidedBy::LockFileHeader(_) => "lock file header",
            DecidedBy::LockFileHosts(_) => "lock file hosts",
            DecidedBy::ModuleLockHosts(_) => "module lock file hosts",
            DecidedBy::TofuFiles(_) => ".tofu files",
            DecidedBy::Path(_) => "PATH",
            DecidedBy::Default => "default",
        }
    }

    /// The file that decided, when one did.
    pub fn path(&self) -> Option<&Path> {
        match self {
            DecidedBy::RepositoryFile(p)
            | DecidedBy::LockFileHeader(p)
            | DecidedBy::LockFileHosts(p)
            | DecidedBy::ModuleLockHosts(p)
            | DecidedBy::TofuFiles(p)
            | DecidedBy::Path(p) => Some(p),
            DecidedBy::Flag
            | DecidedBy::Environment
            | DecidedBy::ToolVersion
            | DecidedBy::Default => None,
        }
    }
}

impl fmt::Display for DecidedBy {
    /// The rule in words, for people: `the lock file header of /w/.terraform.lock.hcl`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecidedBy::Flag => f.write_str("--flavor"),
            DecidedBy::Environment => f.write_str("TSTORE_FLAVOR"),
            DecidedBy::ToolVersion => {
                f.write_str("the tool --tool-version or TSTORE_TOOL_VERSION names")
            }
            DecidedBy::RepositoryFile(p) => write!(f, "flavor in {}", p.display()),
            DecidedBy::LockFileHeader(p) => write!(f, "the header of {}", p.display()),
            DecidedBy::LockFileHosts(p) => {
                write!(f, "the provider hosts of {}", p.display())
            }
            DecidedBy::ModuleLockHosts(p) => {
                write!(f, "the registry hosts of the modules in {}", p.display())
            }
            DecidedBy::TofuFiles(p) => write!(f, "the OpenTofu file {}", p.display()),
            DecidedBy::Path(p) => write!(f, "the only tool found on PATH, {}", p.display()),
            DecidedBy::Default => f.write_str("the default (no rule applied)"),
        }
    }
}

/// A working directory's flavor and the rule that chose it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlavorChoice {
    /// The flavor.
    pub flavor: Flavor,
    /// Why.
    pub decided_by: DecidedBy,
}

impl FlavorChoice {
    /// The default, when no rule answered.
    pub fn default_choice() -> FlavorChoice {
        FlavorChoice {
            flavor: Flavor::default(),
            decided_by: DecidedBy::Default,
        }
    }
}

/// What the existing lock file at `path` says about the tool that wrote it: its header
/// (`# This file is maintained automatically by "terraform init".` or `"tofu init"`),
/// else its providers' hosts when all of them that are a default registry host are the
/// same one. `None` when there is no such file, it cannot be read, or it says neither
/// (a file that cannot be parsed is reported by the install that reads it, not here).
pub fn from_lock_file(path: &Path) -> Option<FlavorChoice> {
    let text = crate::read::read_capped(path, crate::read::MAX_LOCK_FILE).ok()?;
    let header_line = text.lines().take_while(|l| {
        let t = l.trim_start();
        t.starts_with('#') || t.starts_with("//")
    });
    for line in header_line {
        for flavor in [Flavor::Tofu, Flavor::Terraform] {
            if line.contains(&format!(
                "maintained automatically by \"{}\"",
                flavor.init_command()
            )) {
                return Some(FlavorChoice {
                    flavor,
                    decided_by: DecidedBy::LockFileHeader(path.to_owned()),
                });
            }
        }
    }
    let lock = LockFile::parse(&text, &path.display().to_string()).ok()?;
    let mut hosts = [Flavor::Tofu, Flavor::Terraform].into_iter().filter(|f| {
        lock.providers
            .keys()
            .any(|a| a.host == f.default_registry_host())
    });
    match (hosts.next(), hosts.next()) {
        (Some(flavor), None) => Some(FlavorChoice {
            flavor,
            decided_by: DecidedBy::LockFileHosts(path.to_owned()),
        }),
        _ => None,
    }
}

/// What the existing module lock file at `path` says about the tool that wrote it: the
/// flavor whose default registry host every entry naming a default host names (a module
/// from the default registry is locked as `HOST/NS/NAME/SYSTEM`). `None` when there is no
/// such file, it cannot be read or parsed, or its entries name both hosts or neither.
pub fn from_module_lock(path: &Path) -> Option<FlavorChoice> {
    let text = crate::read::read_capped(path, crate::read::MAX_LOCK_FILE).ok()?;
    let lock = crate::module_lock::parse(&text, path).ok()?;
    let mut hosts = [Flavor::Tofu, Flavor::Terraform].into_iter().filter(|f| {
        let prefix = format!("{}/", f.default_registry_host());
        lock.entries.values().any(|e| e.source.starts_with(&prefix))
    });
    match (hosts.next(), hosts.next()) {
        (Some(flavor), None) => Some(FlavorChoice {
            flavor,
            decided_by: DecidedBy::ModuleLockHosts(path.to_owned()),
        }),
        _ => None,
    }
}

/// The tofu flavor when `dir` holds a `.tofu` or `.tofu.json` file (only OpenTofu reads
/// them), naming the first such file in name order.
pub fn from_tofu_files(dir: &Path) -> Option<FlavorChoice> {
    let mut found: Vec<PathBuf> = fs_err::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            (name.ends_with(".tofu") || name.ends_with(".tofu.json"))
                && e.file_type().is_ok_and(|t| !t.is_dir())
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.into_iter().next().map(|p| FlavorChoice {
        flavor: Flavor::Tofu,
        decided_by: DecidedBy::TofuFiles(p),
    })
}

/// Error for a flavor name that is neither `tofu` nor `terraform`.
#[derive(Debug, thiserror::Error)]
#[error("unknown flavor {0:?}: expected \"tofu\" or \"terraform\"")]
pub struct UnknownFlavor(pub String);

impl FromStr for Flavor {
    type Err = UnknownFlavor;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tofu" | "opentofu" => Ok(Flavor::Tofu),
            "terraform" => Ok(Flavor::Terraform),
            other => Err(UnknownFlavor(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_defaults() {
        for f in [Flavor::Tofu, Flavor::Terraform] {
            assert_eq!(f.to_string().parse::<Flavor>().unwrap(), f);
        }
        assert_eq!(Flavor::default(), Flavor::Tofu);
        assert_eq!(
            Flavor::Tofu.default_registry_host(),
            "registry.opentofu.org"
        );
        assert_eq!(
            Flavor::Terraform.default_registry_host(),
            "registry.terraform.io"
        );
        assert_eq!(Flavor::Terraform.init_command(), "terraform init");
        assert!("packer".parse::<Flavor>().is_err());
    }

    const TERRAFORM_HEADER: &str = "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n";

    fn entry(addr: &str) -> String {
        format!("\nprovider \"{addr}\" {{\n  version = \"2.1.2\"\n}}\n")
    }

    #[test]
    fn the_lock_file_header_then_its_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(".terraform.lock.hcl");
        assert_eq!(from_lock_file(&lock), None, "no lock file");

        // The header wins over the hosts.
        let text = format!(
            "{}{}",
            TERRAFORM_HEADER.replace("terraform init", "tofu init"),
            entry("registry.terraform.io/hashicorp/null")
        );
        fs_err::write(&lock, text).unwrap();
        let choice = from_lock_file(&lock).unwrap();
        assert_eq!(choice.flavor, Flavor::Tofu);
        assert_eq!(choice.decided_by, DecidedBy::LockFileHeader(lock.clone()));
        assert_eq!(choice.decided_by.rule(), "lock file header");

        fs_err::write(
            &lock,
            format!("{TERRAFORM_HEADER}{}", entry("example.com/a/b")),
        )
        .unwrap();
        assert_eq!(from_lock_file(&lock).unwrap().flavor, Flavor::Terraform);

        // No header: the hosts, when they agree.
        for (hosts, want) in [
            (
                &["registry.terraform.io/hashicorp/null", "example.com/a/b"][..],
                Some(Flavor::Terraform),
            ),
            (
                &["registry.opentofu.org/hashicorp/null"][..],
                Some(Flavor::Tofu),
            ),
            (
                &[
                    "registry.opentofu.org/hashicorp/null",
                    "registry.terraform.io/hashicorp/random",
                ][..],
                None,
            ),
            (&["example.com/a/b"][..], None),
        ] {
            let text: String = hosts.iter().map(|h| entry(h)).collect();
            fs_err::write(&lock, text).unwrap();
            let got = from_lock_file(&lock);
            assert_eq!(got.as_ref().map(|c| c.flavor), want, "{hosts:?}");
            if let Some(c) = got {
                assert_eq!(c.decided_by, DecidedBy::LockFileHosts(lock.clone()));
            }
        }

        // A file that does not parse says nothing by its hosts.
        fs_err::write(&lock, "provider {").unwrap();
        assert_eq!(from_lock_file(&lock), None);
    }

    #[test]
    fn module_lock_hosts_decide_when_they_agree() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(crate::module_lock::FILE_NAME);
        assert_eq!(from_module_lock(&lock), None, "no file");
        let entry = |key: &str, source: &str| {
            format!(
                "module \"{key}\" {{\n  source  = \"{source}\"\n  version = \"1.0.0\"\n  hashes  = [\"h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=\"]\n}}\n"
            )
        };
        for (sources, want) in [
            (
                &[
                    "registry.terraform.io/acme/vpc/aws",
                    "git::https://example.com/x.git",
                ][..],
                Some(Flavor::Terraform),
            ),
            (
                &["registry.opentofu.org/acme/vpc/aws"][..],
                Some(Flavor::Tofu),
            ),
            (
                &[
                    "registry.opentofu.org/acme/a/aws",
                    "registry.terraform.io/acme/b/aws",
                ][..],
                None,
            ),
            (&["example.com/acme/vpc/aws"][..], None),
        ] {
            let text: String = sources
                .iter()
                .enumerate()
                .map(|(i, s)| entry(&format!("m{i}"), s))
                .collect();
            fs_err::write(&lock, text).unwrap();
            let got = from_module_lock(&lock);
            assert_eq!(got.as_ref().map(|c| c.flavor), want, "{sources:?}");
            if let Some(c) = got {
                assert_eq!(c.decided_by, DecidedBy::ModuleLockHosts(lock.clone()));
                assert_eq!(c.decided_by.rule(), "module lock file hosts");
            }
        }
        fs_err::write(&lock, "module {").unwrap();
        assert_eq!(from_module_lock(&lock), None);
    }

    #[test]
    fn tofu_files_decide_tofu() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("main.tf"), "").unwrap();
        assert_eq!(from_tofu_files(dir.path()), None);
        fs_err::create_dir(dir.path().join("dir.tofu")).unwrap();
        assert_eq!(from_tofu_files(dir.path()), None, "a directory is no file");
        fs_err::write(dir.path().join("z.tofu.json"), "{}").unwrap();
        fs_err::write(dir.path().join("b.tofu"), "").unwrap();
        let choice = from_tofu_files(dir.path()).unwrap();
        assert_eq!(choice.flavor, Flavor::Tofu);
        assert_eq!(
            choice.decided_by,
            DecidedBy::TofuFiles(dir.path().join("b.tofu"))
        );
    }
}
