//! Provider source addresses (`[HOST/]NAMESPACE/TYPE`) and target platforms.
//!
//! Parsing follows OpenTofu's registry-address rules (`ParseProviderSourceString`,
//! `ParseProviderPart` in
//! <https://github.com/opentofu/opentofu/blob/main/internal/addrs/provider.go>): parts are
//! case-folded to lower case, namespace and type may hold only letters, digits
//! and single dashes, the host may carry a port, and `:443` is dropped because
//! it is the default. Internationalized host names are lower-cased but not
//! converted to punycode.

use std::fmt;
use std::str::FromStr;

/// Host of the built-in provider pseudo-registry (`terraform.io/builtin/terraform`).
pub const BUILTIN_HOST: &str = "terraform.io";
/// Namespace of built-in providers.
pub const BUILTIN_NAMESPACE: &str = "builtin";

/// Errors from parsing a provider address or a platform.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    /// Wrong number of parts, or an empty part.
    #[error("invalid provider source string {source_str:?}: the \"source\" attribute must be in the format \"[hostname/][namespace/]name\"")]
    Format {
        /// The string as given.
        source_str: String,
    },
    /// The hostname part is not a valid host name with optional port.
    #[error("invalid provider source hostname {host:?} in source {source_str:?}: {reason}")]
    Host {
        /// The hostname part as given.
        host: String,
        /// The string as given.
        source_str: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The namespace part has characters that are not allowed.
    #[error("invalid provider namespace {namespace:?} in source {source_str:?}: {reason}")]
    Namespace {
        /// The namespace part as given.
        namespace: String,
        /// The string as given.
        source_str: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The type part has characters that are not allowed or a redundant prefix.
    #[error("invalid provider type {kind:?} in source {source_str:?}: {reason}")]
    Type {
        /// The type part as given.
        kind: String,
        /// The string as given.
        source_str: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A lock-file style address that is not fully qualified.
    #[error("invalid provider source address {given:?}: must be a valid, fully-qualified address of the form \"hostname/namespace/type\"")]
    NotFullyQualified {
        /// The string as given.
        given: String,
    },
    /// A lock-file style address that parses but is not in normalized form.
    #[error("non-normalized provider source address {given:?}: must be written as {normalized:?}, the fully-qualified and normalized form")]
    NotNormalized {
        /// The string as given.
        given: String,
        /// The form it must be written in.
        normalized: String,
    },
    /// A platform string that is not `OS_ARCH`.
    #[error("invalid platform {given:?}: {reason}")]
    Platform {
        /// The string as given.
        given: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl AddrError {
    /// The summary terraform's diagnostic gives the error (terraform-registry-address's
    /// `ParserError`).
    pub fn summary(&self) -> &'static str {
        match self {
            AddrError::Format { .. } => "Invalid provider source string",
            AddrError::Host { .. } => "Invalid provider source hostname",
            AddrError::Namespace { .. } => "Invalid provider namespace",
            AddrError::Type { .. } => "Invalid provider type",
            AddrError::NotFullyQualified { .. } => "Invalid provider source address",
            AddrError::NotNormalized { .. } => "Non-normalized provider source address",
            AddrError::Platform { .. } => "Invalid platform",
        }
    }
}

/// A fully-qualified provider address, always normalized (lower case).
///
/// Ordering compares host, then namespace, then type, which is how OpenTofu
/// sorts provider blocks in the lock file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderAddr {
    /// Registry host, possibly with `:port`.
    pub host: String,
    /// Namespace (organisation) in the registry.
    pub namespace: String,
    /// Provider type, e.g. `null`.
    pub kind: String,
}

impl ProviderAddr {
    /// Parse a `source` string as written in `required_providers`.
    ///
    /// One part (`TYPE`) means `DEFAULT_HOST/hashicorp/TYPE`, two parts
    /// (`NAMESPACE/TYPE`) use `default_host`, three parts are fully qualified.
    pub fn parse_source(s: &str, default_host: &str) -> Result<Self, AddrError> {
        let parts: Vec<&str> = s.split('/').collect();
        if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(AddrError::Format {
                source_str: s.to_owned(),
            });
        }
        let given_type = parts[parts.len() - 1];
        let kind = normalize_part(given_type).map_err(|reason| AddrError::Type {
            kind: given_type.to_owned(),
            source_str: s.to_owned(),
            reason,
        })?;
        let namespace = if parts.len() >= 2 {
            let given = parts[parts.len() - 2];
            normalize_part(given).map_err(|reason| AddrError::Namespace {
                namespace: given.to_owned(),
                source_str: s.to_owned(),
                reason,
            })?
        } else {
            "hashicorp".to_owned()
        };
        let host = if parts.len() == 3 {
            normalize_host(parts[0]).map_err(|reason| AddrError::Host {
                host: parts[0].to_owned(),
                source_str: s.to_owned(),
                reason,
            })?
        } else {
            default_host.to_owned()
        };
        // OpenTofu rejects both prefixes regardless of flavor; repository names
        // carry them, source addresses must not.
        for (redundant, user_error) in [
            ("terraform-", "terraform-provider-"),
            ("opentofu-", "opentofu-provider-"),
        ] {
            if let Some(rest) = kind.strip_prefix(user_error) {
                if normalize_part(rest).is_ok() {
                    return Err(AddrError::Type {
                        kind: kind.clone(),
                        source_str: s.to_owned(),
                        reason: format!(
                            "the prefix {user_error:?} is used in repository names but not in provider source strings; did you mean \"{namespace}/{rest}\"?"
                        ),
                    });
                }
            }
            if kind.starts_with(redundant) {
                return Err(AddrError::Type {
                    kind: kind.clone(),
                    source_str: s.to_owned(),
                    reason: format!(
                        "the prefix {redundant:?} is redundant in a provider type and not allowed"
                    ),
                });
            }
        }
        Ok(ProviderAddr {
            host,
            namespace,
            kind,
        })
    }

    /// Parse the fully-qualified, normalized form used as a lock file block label.
    pub fn parse_normalized(s: &str) -> Result<Self, AddrError> {
        if s.split('/').count() != 3 {
            return Err(AddrError::NotFullyQualified {
                given: s.to_owned(),
            });
        }
        // The default host never applies to three parts, so any value works.
        let addr = Self::parse_source(s, "").map_err(|_| AddrError::NotFullyQualified {
            given: s.to_owned(),
        })?;
        let normalized = addr.to_string();
        if normalized != s {
            return Err(AddrError::NotNormalized {
                given: s.to_owned(),
                normalized,
            });
        }
        Ok(addr)
    }

    /// The implied address for a local name with no `source`: `hashicorp/<name>`.
    ///
    /// The local name `terraform` implies the built-in provider instead.
    pub fn implied(local_name: &str, default_host: &str) -> Self {
        let kind = local_name.to_lowercase();
        if kind == "terraform" {
            return Self::builtin_terraform();
        }
        ProviderAddr {
            host: default_host.to_owned(),
            namespace: "hashicorp".to_owned(),
            kind,
        }
    }

    /// `terraform.io/builtin/terraform`, the provider bundled into the CLI.
    pub fn builtin_terraform() -> Self {
        ProviderAddr {
            host: BUILTIN_HOST.to_owned(),
            namespace: BUILTIN_NAMESPACE.to_owned(),
            kind: "terraform".to_owned(),
        }
    }

    /// Whether this provider is built into the CLI and so never installed or locked.
    pub fn is_builtin(&self) -> bool {
        (self.host == BUILTIN_HOST || self.host == "opentofu.org")
            && self.namespace == BUILTIN_NAMESPACE
    }
}

impl fmt::Display for ProviderAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.namespace, self.kind)
    }
}

/// Normalize a namespace or type: lower case; letters, digits and single
/// dashes only, not at either end (the DNS label rules OpenTofu applies).
pub fn normalize_part(given: &str) -> Result<String, String> {
    if given.is_empty() {
        return Err("must have at least one character".to_owned());
    }
    if given.contains('.') {
        return Err("dots are not allowed".to_owned());
    }
    if given.contains("--") {
        return Err("cannot use multiple consecutive dashes".to_owned());
    }
    let ok_chars = given.chars().all(|c| c == '-' || c.is_alphanumeric());
    if !ok_chars || given.starts_with('-') || given.ends_with('-') {
        return Err(
            "must contain only letters, digits, and dashes, and may not use leading or trailing dashes"
                .to_owned(),
        );
    }
    Ok(given.to_lowercase())
}

/// Normalize a host name with optional port, like svchost.ForComparison.
pub fn normalize_host(given: &str) -> Result<String, String> {
    let (name, port) = match given.find(':') {
        Some(i) => (&given[..i], Some(&given[i + 1..])),
        None => (given, None),
    };
    let port = match port {
        None => String::new(),
        Some(p) => {
            let lower = name.to_lowercase();
            if lower == "http" || lower == "https" {
                return Err(
                    "need just a hostname and optional port number, not a full URL".to_owned(),
                );
            }
            let num: u32 = p
                .parse()
                .ok()
                .filter(|_| p.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| "port portion contains non-digit characters".to_owned())?;
            match num {
                443 => String::new(),
                n if n > 65535 => return Err("port number is greater than 65535".to_owned()),
                n => format!(":{n}"),
            }
        }
    };
    if name.is_empty() {
        return Err("empty string is not a valid hostname".to_owned());
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err("hostname contains empty label (two consecutive periods)".to_owned());
        }
        // Bytes, not a str slice: the fourth byte may be inside a character.
        if label
            .as_bytes()
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"xn--"))
        {
            return Err(format!(
                "hostname label {label:?} specified in punycode format; service hostnames must be given in unicode"
            ));
        }
        let ok = label.chars().all(|c| c == '-' || c.is_alphanumeric());
        if !ok || label.starts_with('-') || label.ends_with('-') {
            return Err(format!(
                "hostname label {label:?} must contain only letters, digits, and dashes, and may not use leading or trailing dashes"
            ));
        }
    }
    Ok(format!("{}{port}", name.to_lowercase()))
}

/// A target platform such as `linux_amd64`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    /// Operating system in Go's naming (`linux`, `darwin`, `windows`).
    pub os: String,
    /// Architecture in Go's naming (`amd64`, `arm64`, `386`).
    pub arch: String,
}

impl Platform {
    /// The platform this process runs on, in Go's naming.
    pub fn current() -> Self {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "arm" => "arm",
            "powerpc64" => "ppc64",
            "s390x" => "s390x",
            "riscv64" => "riscv64",
            other => other,
        };
        let os = match std::env::consts::OS {
            "macos" => "darwin",
            other => other,
        };
        Platform {
            os: os.to_owned(),
            arch: arch.to_owned(),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.os, self.arch)
    }
}

impl FromStr for Platform {
    type Err = AddrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| AddrError::Platform {
            given: s.to_owned(),
            reason: reason.to_owned(),
        };
        let parts: Vec<&str> = s.split('_').collect();
        if parts.len() != 2 || parts[0].is_empty() || parts[1].is_empty() {
            return Err(err("must be two words separated by an underscore"));
        }
        if parts.iter().any(|p| p.contains(char::is_whitespace)) {
            return Err(err("must not contain whitespace"));
        }
        Ok(Platform {
            os: parts[0].to_owned(),
            arch: parts[1].to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOFU: &str = "registry.opentofu.org";

    fn p(s: &str) -> Result<String, AddrError> {
        ProviderAddr::parse_source(s, TOFU).map(|a| a.to_string())
    }

    #[test]
    fn source_forms() {
        assert_eq!(p("null").unwrap(), "registry.opentofu.org/hashicorp/null");
        assert_eq!(
            p("hashicorp/null").unwrap(),
            "registry.opentofu.org/hashicorp/null"
        );
        assert_eq!(
            ProviderAddr::parse_source("hashicorp/null", "registry.terraform.io")
                .unwrap()
                .to_string(),
            "registry.terraform.io/hashicorp/null"
        );
        assert_eq!(p("EXAMPLE.com/Test/Fake").unwrap(), "example.com/test/fake");
        assert_eq!(
            p("localhost:8743/test/fake").unwrap(),
            "localhost:8743/test/fake"
        );
        assert_eq!(
            p("example.com:443/test/fake").unwrap(),
            "example.com/test/fake"
        );
        assert_eq!(p("example.com:0080/a/b").unwrap(), "example.com:80/a/b");
        assert_eq!(
            p("google-beta").unwrap(),
            "registry.opentofu.org/hashicorp/google-beta"
        );
    }

    #[test]
    fn source_errors() {
        for bad in [
            "",
            "a/b/c/d",
            "a//b",
            "hashicorp/nu_ll",
            "hashi.corp/null",
            "-x/null",
            "x/null-",
            "x/a--b",
            "hashicorp/terraform-provider-null",
            "hashicorp/terraform-null",
            "hashicorp/opentofu-provider-null",
            "example.com:99999/a/b",
            "example.com:x/a/b",
            "https://example.com/a",
            "xn--abc.com/a/b",
            "a..b/c/d",
        ] {
            assert!(p(bad).is_err(), "{bad:?} should fail");
        }
        let e = p("hashicorp/terraform-provider-null")
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean \"hashicorp/null\""), "{e}");
    }

    /// A label whose fourth byte is inside a multi-byte character (found by the fuzz
    /// target `cli_config`): an error or a host, never a panic.
    #[test]
    fn labels_with_a_character_across_the_fourth_byte() {
        assert_eq!(
            normalize_host("abc\u{e9}.example").unwrap(),
            "abc\u{e9}.example"
        );
        assert!(normalize_host("re>\u{356}?.example").is_err());
        assert_eq!(p("ABC\u{c9}.example/a/b").unwrap(), "abc\u{e9}.example/a/b");
    }

    #[test]
    fn normalized_form() {
        let a = ProviderAddr::parse_normalized("example.com/test/fake").unwrap();
        assert_eq!(a.kind, "fake");
        let e = ProviderAddr::parse_normalized("EXAMPLE.com/test/fake").unwrap_err();
        assert_eq!(
            e,
            AddrError::NotNormalized {
                given: "EXAMPLE.com/test/fake".into(),
                normalized: "example.com/test/fake".into()
            }
        );
        assert!(e
            .to_string()
            .contains("must be written as \"example.com/test/fake\""));
        assert!(matches!(
            ProviderAddr::parse_normalized("hashicorp/null"),
            Err(AddrError::NotFullyQualified { .. })
        ));
    }

    #[test]
    fn builtin_and_implied() {
        assert!(
            ProviderAddr::parse_normalized("terraform.io/builtin/terraform")
                .unwrap()
                .is_builtin()
        );
        assert!(ProviderAddr::implied("terraform", TOFU).is_builtin());
        assert_eq!(
            ProviderAddr::implied("aws", TOFU).to_string(),
            "registry.opentofu.org/hashicorp/aws"
        );
    }

    #[test]
    fn ordering_is_field_wise() {
        let mut v = [
            p("registry.terraform.io/hashicorp/null").unwrap(),
            p("example.com/test/fake").unwrap(),
        ];
        v.sort();
        assert_eq!(v[0], "example.com/test/fake");
        let a = ProviderAddr::parse_source("a/x/y", TOFU).unwrap();
        let b = ProviderAddr::parse_source("a.b/x/y", TOFU).unwrap();
        assert!(a < b);
    }

    #[test]
    fn platform() {
        let p: Platform = "linux_amd64".parse().unwrap();
        assert_eq!(p.os, "linux");
        assert_eq!(p.to_string(), "linux_amd64");
        assert!("linux".parse::<Platform>().is_err());
        assert!("linux_amd64_v2".parse::<Platform>().is_err());
        let cur = Platform::current();
        assert!(!cur.os.is_empty() && !cur.arch.is_empty());
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(cur.to_string(), "linux_amd64");
    }
}
