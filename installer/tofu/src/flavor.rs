//! Which tool tstore stands in for: OpenTofu or Terraform.
//!
//! The two differ in a few observable defaults (default registry host, the
//! command named in the lock file header, CLI config file names), so every
//! place that depends on one of them takes a [`Flavor`].
//!
//! Which flavor applies to a working directory is decided by the first rule that
//! answers, in this order: `--flavor` / `TSTORE_FLAVOR`; `flavor = "…"` in the
//! repository's `.tstore.hcl`; the existing lock file
//! ([`crate::lockfile::flavor_evidence`]: its header, then its provider hosts);
//! `.tofu`/`.tofu.json` files in the directory ([`from_tofu_files`]); the one of
//! `tofu`/`terraform` found on `PATH`; the default,
//! tofu. The rules that read only the working directory live here; the environment,
//! `PATH` and tstore's own file are read by the installer and the binary.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

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
    /// The product name the tool prints in its own messages (`OpenTofu`, `Terraform`).
    pub fn product_name(self) -> &'static str {
        match self {
            Flavor::Tofu => "OpenTofu",
            Flavor::Terraform => "Terraform",
        }
    }

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
