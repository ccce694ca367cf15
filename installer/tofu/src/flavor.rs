//! Which tool tstore stands in for: OpenTofu or Terraform.
//!
//! The two differ in a few observable defaults (default registry host, the
//! command named in the lock file header, CLI config file names), so every
//! place that depends on one of them takes a [`Flavor`].

use std::fmt;
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
}
