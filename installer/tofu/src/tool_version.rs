//! Which release of the tool tstore stands in for: the flavor says which tool, the tool
//! version which of its releases, and every rule that changed between releases keys on it.
//!
//! Written as users name releases: `tofu 1.12.2`, `terraform 1.15.4` (a leading `v` and the
//! `OpenTofu`/`Terraform` spellings of `version` output accepted). A version alone takes the
//! flavor in force. Without one given, the binary decides which tool version applies (the
//! `tofu` or `terraform` on `PATH`), and without a binary, the newest release this tstore
//! knows ([`ToolVersion::newest`]).

use std::fmt;

use crate::flavor::Flavor;
use crate::version::{ModuleVersionConstraints, Version};

/// A tool and one of its releases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolVersion {
    /// The tool.
    pub flavor: Flavor,
    /// Its release.
    pub version: Version,
}

/// A tool version that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool version {given:?}: {reason} (write it as \"tofu 1.12.2\" or \"terraform 1.15.4\")")]
pub struct ToolVersionError {
    /// The text as given.
    pub given: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The newest OpenTofu release whose behaviour tstore follows.
const NEWEST_TOFU: (u64, u64, u64) = (1, 13, 0);
/// The newest Terraform release whose behaviour tstore follows.
const NEWEST_TERRAFORM: (u64, u64, u64) = (1, 16, 0);

impl ToolVersion {
    /// `tofu 1.12.2`, `terraform v1.15.4`, `OpenTofu v1.10.0`, or a version alone (then
    /// `flavor` is the tool).
    pub fn parse(text: &str, flavor: Flavor) -> Result<ToolVersion, ToolVersionError> {
        let err = |reason: &str| ToolVersionError {
            given: text.to_owned(),
            reason: reason.to_owned(),
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let (flavor, version) = match words.as_slice() {
            [version] => (flavor, *version),
            [tool, version] => {
                let tool = match tool.to_ascii_lowercase().as_str() {
                    "tofu" | "opentofu" => Flavor::Tofu,
                    "terraform" => Flavor::Terraform,
                    _ => return Err(err("the tool is tofu or terraform")),
                };
                (tool, *version)
            }
            [] => return Err(err("it is empty")),
            _ => return Err(err("expected a tool and a version")),
        };
        let version = version.strip_prefix('v').unwrap_or(version);
        let version: Version = version
            .parse()
            .map_err(|_| err("the version is not MAJOR.MINOR.PATCH"))?;
        Ok(ToolVersion { flavor, version })
    }

    /// The newest release of `flavor` this tstore knows the behaviour of: what applies when
    /// neither a tool version nor the tool's binary says otherwise.
    pub fn newest(flavor: Flavor) -> ToolVersion {
        let (major, minor, patch) = match flavor {
            Flavor::Tofu => NEWEST_TOFU,
            Flavor::Terraform => NEWEST_TERRAFORM,
        };
        ToolVersion {
            flavor,
            version: Version::new(major, minor, patch),
        }
    }

    /// Whether this release is newer than any of its tool's that tstore knows: it is then
    /// followed as the newest known one (every rule that one follows), which the caller says.
    pub fn newer_than_known(&self) -> bool {
        self.version > ToolVersion::newest(self.flavor).version
    }

    /// Whether this is `flavor` at `major.minor.patch` or later (a pre-release of that
    /// version counts as earlier).
    pub fn at_least(&self, flavor: Flavor, major: u64, minor: u64, patch: u64) -> bool {
        self.flavor == flavor && self.version >= Version::new(major, minor, patch)
    }

    /// Whether `required_version` constraints (hashicorp/go-version syntax, as both tools
    /// read them) allow this release; `Err` when a constraint does not parse.
    pub fn meets(&self, required: &str) -> Result<bool, crate::version::VersionError> {
        let constraints = ModuleVersionConstraints::parse(required)?;
        // The tools compare their own version without its pre-release part.
        let release = Version::new(self.version.major, self.version.minor, self.version.patch);
        Ok(constraints.matches(&release))
    }

    /// The product name the tools print in their own messages.
    pub fn product(&self) -> &'static str {
        self.flavor.product_name()
    }
}

/// A behaviour that changed between releases, and the first release of each tool that has
/// it (`Some((0, 0, 0))`: every release; `None`: none).
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// What the releases that follow the rule do, for people (the reference's table, docs/reference/flavor-and-tool-version.md).
    pub what: &'static str,
    /// The first Terraform release that follows it.
    pub terraform: Option<(u64, u64, u64)>,
    /// The first OpenTofu release that follows it.
    pub tofu: Option<(u64, u64, u64)>,
}

const ALWAYS: Option<(u64, u64, u64)> = Some((0, 0, 0));

/// `init` drops the lock entries of providers the configuration no longer requires
/// (terraform's `providercache` since 1.1.2, hashicorp/terraform#30192; tofu from its
/// first release). The module lock keeps or drops its unused entries by the same rule.
pub const DROPS_UNUSED_LOCK_ENTRIES: Rule = Rule {
    what: "lock entries of providers (and module calls) no longer required are dropped",
    terraform: Some((1, 1, 2)),
    tofu: ALWAYS,
};

/// Module source addresses are parsed as terraform 1.1's `addrs.ParseModuleSource` does: a
/// `version` on a source that is not a registry address is an invalid registry address, an
/// absolute path is recorded in `modules.json` as a `file://` URL, and a registry's download
/// location ending `//*` is a sub-directory named `*` (go-getter's glob is not expanded).
pub const MODULE_SOURCE_ADDRESSES: Rule = Rule {
    what: "module sources parsed as addresses: `version` only on registry sources, absolute paths recorded as `file://` URLs, registry sources recorded as their package's address (the default host named), no `//*` glob in a registry's location",
    terraform: Some((1, 1, 0)),
    tofu: ALWAYS,
};

/// `init` installs the modules that the root module's test files call
/// (`run { module { source = … } }`), so that `test` finds them: terraform from 1.6, where
/// `.tftest.hcl` files and their `run` blocks arrived (upstream:
/// internal/configs/config_build.go `buildTestModules`, v1.6.0); OpenTofu in every release.
pub const TEST_FILE_MODULES: Rule = Rule {
    what: "the modules that test files' `run` blocks call installed by init",
    terraform: Some((1, 6, 0)),
    tofu: ALWAYS,
};

/// `providers lock` closes with "validated the lock file and found no need for changes"
/// when no provider was new to the lock file and no platform brought a new checksum (a
/// changed constraint does not count), else "updated the lock file"; earlier terraform
/// always says the latter (upstream: internal/command/providers_lock.go, `madeAnyChange`,
/// v1.2.6).
pub const PROVIDERS_LOCK_SAYS_NO_CHANGE: Rule = Rule {
    what: "`providers lock` says per platform whether its checksums were new to the lock file, and that it found no need for changes when none was",
    terraform: Some((1, 2, 6)),
    tofu: ALWAYS,
};

/// `init` warns "Incomplete lock file information for providers" when it wrote a lock
/// entry holding only the checksum it computed here, for this platform (a provider from a
/// mirror or a local directory, no signed checksums), and names `providers lock -platform`
/// (upstream: internal/command/init.go `incompleteLockFileInformationBody`, v1.2.6).
pub const INCOMPLETE_LOCK_WARNING: Rule = Rule {
    what: "`init` warns of lock entries holding only this platform's locally computed checksum",
    terraform: Some((1, 2, 6)),
    tofu: ALWAYS,
};

/// A provider the CLI configuration's `dev_overrides` names is not installed by init (its
/// requirement removed, so its lock entry is dropped); before, init installed it like any
/// other, with a warning to skip init (upstream: internal/command/init.go
/// `removeDevOverrides`, v1.15.0).
pub const DEV_OVERRIDES_NOT_INSTALLED: Rule = Rule {
    what: "providers named in `dev_overrides` are not installed by init",
    terraform: Some((1, 15, 0)),
    tofu: None,
};

/// A `dev_overrides` provider's lock entry is kept as it is, never added or removed
/// (upstream: internal/providercache/installer.go, hashicorp/terraform#38634, 1.16.0).
pub const DEV_OVERRIDE_LOCK_ENTRIES_KEPT: Rule = Rule {
    what: "the lock entries of providers named in `dev_overrides` are kept as they are",
    terraform: Some((1, 16, 0)),
    tofu: None,
};

/// With `-backend=false`, init reads no state, so providers only the state needs are not
/// installed (upstream: OpenTofu #4077, 1.13.0).
pub const NO_STATE_WITHOUT_BACKEND: Rule = Rule {
    what: "`-backend=false` reads no state, so providers only the state needs are not installed",
    terraform: None,
    tofu: Some((1, 13, 0)),
};

/// init's messages are trimmed (views `PrepareMessage`): no blank line before the lock
/// file's message and the signing footer (upstream: internal/command/views/init.go, v1.9.0).
pub const INIT_MESSAGES_TRIMMED: Rule = Rule {
    what: "no blank line before init's lock file message and signing footer",
    terraform: Some((1, 9, 0)),
    tofu: None,
};

/// The checksum-mismatch error ends "; for more information: URL" (upstream:
/// internal/providercache/package_install.go, v1.2.9).
pub const CHECKSUM_MISMATCH_LINK: Rule = Rule {
    what: "the checksum-mismatch error links to the documentation of checksum verification",
    terraform: Some((1, 2, 9)),
    tofu: ALWAYS,
};

/// terraform's messages link to developer.hashicorp.com, not www.terraform.io: the signing
/// footer and the checksum-mismatch error (hashicorp/terraform 0d54dc6c77, backported to
/// 1.11.4).
pub const DEVELOPER_DOCS_LINKS: Rule = Rule {
    what: "the signing footer and the checksum-mismatch error link to developer.hashicorp.com",
    terraform: Some((1, 11, 4)),
    tofu: None,
};

/// The link the checksum-mismatch error ends with under `tool`, if any.
pub fn checksum_mismatch_link(flavor: Flavor, tool: &ToolVersion) -> Option<&'static str> {
    if !tool.follows(&CHECKSUM_MISMATCH_LINK) {
        return None;
    }
    Some(match flavor {
        Flavor::Tofu => {
            "https://opentofu.org/docs/language/files/dependency-lock/#checksum-verification"
        }
        Flavor::Terraform if tool.follows(&DEVELOPER_DOCS_LINKS) => {
            "https://developer.hashicorp.com/terraform/language/files/dependency-lock#checksum-verification"
        }
        Flavor::Terraform => "https://www.terraform.io/language/provider-checksum-verification",
    })
}

/// The footer `init` prints after installing a provider its developer signed (terraform:
/// a partner or community provider; OpenTofu: any signed provider), in the tool version's
/// words (upstream: internal/command/views/init.go; terraform 1.0.3's init.go).
pub fn signing_footer(flavor: Flavor, tool: &ToolVersion) -> &'static str {
    match flavor {
        Flavor::Tofu => {
            "Providers are signed by their developers.\n\
             If you'd like to know more about provider signing, you can read about it here:\n\
             https://opentofu.org/docs/cli/plugins/signing/"
        }
        Flavor::Terraform if tool.follows(&DEVELOPER_DOCS_LINKS) => {
            "Partner and community providers are signed by their developers.\n\
             If you'd like to know more about provider signing, you can read about it here:\n\
             https://developer.hashicorp.com/terraform/cli/plugins/signing"
        }
        Flavor::Terraform => {
            "Partner and community providers are signed by their developers.\n\
             If you'd like to know more about provider signing, you can read about it here:\n\
             https://www.terraform.io/docs/cli/plugins/signing.html"
        }
    }
}

/// A registry's download metadata may carry `packages`, every platform's `h1:` and `zh:`
/// (OpenTofu's RFC 20251027): checked for the platform installed, and recorded in the lock
/// file for providers of OpenTofu's own registry, so one init locks every platform.
pub const REGISTRY_PACKAGE_HASHES: Rule = Rule {
    what: "a registry's `packages` hashes (every platform) and the downloaded archive's size checked and, for `registry.opentofu.org` providers, the hashes locked",
    terraform: None,
    tofu: Some((1, 12, 0)),
};

/// A module call's `source` and `version` may use input variables declared `const = true`
/// and locals built from them (terraform's PR #38217; OpenTofu evaluates every variable
/// there since 1.8, by its own rules).
pub const CONST_MODULE_SOURCES: Rule = Rule {
    what: "`const = true` variables (and locals built from them) in a module call's `source` and `version`",
    terraform: Some((1, 15, 0)),
    tofu: None,
};

/// A `required_providers` entry's `source` and `version` may use `const = true` variables
/// and locals built from them, evaluated at init; any other reference is refused
/// (upstream: internal/terraform/node_resolve_provider_requirement.go, hashicorp/terraform
/// #39153, 1.17.0). OpenTofu takes only literal strings there.
pub const CONST_PROVIDER_REQUIREMENTS: Rule = Rule {
    what: "`const = true` variables (and locals built from them) in a `required_providers` entry's `source` and `version`",
    terraform: Some((1, 17, 0)),
    tofu: None,
};

/// init names the version it reuses from the lock file: "- Reusing version V of P from
/// the dependency lock file" (upstream: internal/command/views/init.go, hashicorp/terraform
/// #38918, 1.17.0); before, and in OpenTofu, "- Reusing previous version of P …".
pub const REUSED_VERSION_NAMED: Rule = Rule {
    what: "init's line for a provider version reused from the lock file names the version",
    terraform: Some((1, 17, 0)),
    tofu: None,
};

/// `network_mirror { trust_all_hashes = true }`: every platform's hashes the mirror lists
/// are trusted (one must match the archive) and, for `registry.opentofu.org` providers,
/// locked.
pub const TRUSTED_MIRROR_HASHES: Rule = Rule {
    what: "`network_mirror { trust_all_hashes = true }`: every platform's hashes from the mirror checked and, for `registry.opentofu.org` providers, locked",
    terraform: None,
    tofu: Some((1, 12, 0)),
};

/// An override file may hold no check rule: from 1.2.0 (where `precondition` and
/// `postcondition` came) every kind is refused as "Can't override KIND blocks"; before,
/// only a variable's `validation`, as "Can't override variable validation rules"
/// (upstream: internal/configs/checks.go `decodeCheckRuleBlock`, v1.2.0).
pub const CHECK_RULE_OVERRIDE_WORDS: Rule = Rule {
    what: "an override file's `precondition` and `postcondition` blocks refused, and its `validation` blocks as \"Can't override validation blocks\"",
    terraform: Some((1, 2, 0)),
    tofu: ALWAYS,
};

/// An override file's `module` block may not set `depends_on` ("Unsupported override");
/// before 1.5.0 terraform checked the overridden (primary) block's `depends_on` instead, so it
/// took the override's and refused any override of a call whose primary block had one
/// (upstream: internal/configs/module_merge.go, hashicorp/terraform#32796, v1.5.0).
pub const OVERRIDE_MODULE_DEPENDS_ON: Rule = Rule {
    what: "an override file's `module` block may not set `depends_on` (before: a module call with `depends_on` may not be overridden)",
    terraform: Some((1, 5, 0)),
    tofu: ALWAYS,
};

/// A registry module's pre-release is selected by a constraint that names it with `=`
/// (`=1.2.0-rc.1`, no space), not only by its bare version: the module installer asks
/// apparentlymart/go-versions whether the pre-release was requested exactly (upstream:
/// internal/initwd/module_install.go, hashicorp/terraform#32377, v1.4.0). Judged: 1.0.3
/// refuses `=1.2.0-rc.1`, 1.11.4 installs it; both refuse `= 1.2.0-rc.1`, `v1.2.0-rc.1`
/// and `=v1.2.0-rc.1` (conformance cases `registry-module-version-17…20`).
pub const EXACT_PRERELEASE_WITH_EQUALS: Rule = Rule {
    what: "a registry module's pre-release is selected by `=X` (no space) as by the bare `X`",
    terraform: Some((1, 4, 0)),
    tofu: ALWAYS,
};

/// OpenTofu also takes a `v`-prefixed exact pre-release (`v0.0.3-alpha.1`, `=v0.0.3-alpha.1`;
/// its fixtures internal/initwd/testdata/prerelease-constraint-v-match, -v-eq-match);
/// terraform refuses both (judged, 1.0.3 and 1.11.4).
pub const EXACT_PRERELEASE_WITH_V: Rule = Rule {
    what: "a registry module's pre-release is selected by `vX` and `=vX` as by the bare `X`",
    terraform: None,
    tofu: ALWAYS,
};

/// The block types that arrived after terraform 1.0 (top level, and `cloud` inside
/// `terraform`), each known from the release that introduced it.
const BLOCK_TYPES: &[(&str, Rule)] = &[
    (
        "cloud",
        Rule {
            what: "`cloud` blocks inside `terraform`",
            terraform: Some((1, 1, 0)),
            tofu: ALWAYS,
        },
    ),
    (
        "moved",
        Rule {
            what: "`moved` blocks",
            terraform: Some((1, 1, 0)),
            tofu: ALWAYS,
        },
    ),
    (
        "check",
        Rule {
            what: "`check` blocks",
            terraform: Some((1, 5, 0)),
            tofu: ALWAYS,
        },
    ),
    (
        "import",
        Rule {
            what: "`import` blocks",
            terraform: Some((1, 5, 0)),
            tofu: ALWAYS,
        },
    ),
    (
        "removed",
        Rule {
            what: "`removed` blocks",
            terraform: Some((1, 7, 0)),
            tofu: Some((1, 7, 0)),
        },
    ),
    (
        "ephemeral",
        Rule {
            what: "`ephemeral` blocks",
            terraform: Some((1, 10, 0)),
            tofu: Some((1, 11, 0)),
        },
    ),
    (
        "symbols",
        Rule {
            what: "`symbols` blocks (symbol libraries, an experiment; tstore refuses them)",
            terraform: None,
            tofu: Some((1, 13, 0)),
        },
    ),
    (
        "action",
        Rule {
            what: "`action` blocks",
            terraform: Some((1, 14, 0)),
            tofu: None,
        },
    ),
];

/// The rule that says which releases know block type `kind`, for the types that came after
/// terraform 1.0; `None` for the others (known by every release of the tools that have them).
pub fn block_type_rule(kind: &str) -> Option<&'static Rule> {
    BLOCK_TYPES.iter().find(|(k, _)| *k == kind).map(|(_, r)| r)
}

/// Every version-dependent rule, in README's order.
pub fn rules() -> Vec<&'static Rule> {
    [
        &DROPS_UNUSED_LOCK_ENTRIES,
        &MODULE_SOURCE_ADDRESSES,
        &TEST_FILE_MODULES,
        &PROVIDERS_LOCK_SAYS_NO_CHANGE,
        &INCOMPLETE_LOCK_WARNING,
        &INIT_MESSAGES_TRIMMED,
        &CHECKSUM_MISMATCH_LINK,
        &DEVELOPER_DOCS_LINKS,
        &DEV_OVERRIDES_NOT_INSTALLED,
        &DEV_OVERRIDE_LOCK_ENTRIES_KEPT,
        &NO_STATE_WITHOUT_BACKEND,
        &REGISTRY_PACKAGE_HASHES,
        &TRUSTED_MIRROR_HASHES,
        &CONST_MODULE_SOURCES,
        &CONST_PROVIDER_REQUIREMENTS,
        &REUSED_VERSION_NAMED,
        &EXACT_PRERELEASE_WITH_EQUALS,
        &EXACT_PRERELEASE_WITH_V,
        &OVERRIDE_MODULE_DEPENDS_ON,
        &CHECK_RULE_OVERRIDE_WORDS,
    ]
    .into_iter()
    .chain(BLOCK_TYPES.iter().map(|(_, r)| r))
    .collect()
}

/// The reference's table of the version-dependent rules (docs/reference/flavor-and-tool-version.md) (Markdown), made from [`rules`].
pub fn rules_table() -> String {
    let since = |v: Option<(u64, u64, u64)>| match v {
        Some((0, 0, 0)) => "every release".to_owned(),
        Some((a, b, c)) => format!("{a}.{b}.{c}"),
        None => "no release".to_owned(),
    };
    let mut out = String::from("| Behaviour | Terraform since | OpenTofu since |\n|---|---|---|\n");
    for r in rules() {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            r.what,
            since(r.terraform),
            since(r.tofu)
        ));
    }
    out
}

impl ToolVersion {
    /// The spellings of an exact pre-release module constraint this release accepts.
    pub fn exact_prerelease(&self) -> crate::version::ExactPrerelease {
        crate::version::ExactPrerelease {
            equals: self.follows(&EXACT_PRERELEASE_WITH_EQUALS),
            v_prefix: self.follows(&EXACT_PRERELEASE_WITH_V),
        }
    }

    /// Whether this release follows `rule`.
    pub fn follows(&self, rule: &Rule) -> bool {
        let since = match self.flavor {
            Flavor::Terraform => rule.terraform,
            Flavor::Tofu => rule.tofu,
        };
        since.is_some_and(|(a, b, c)| self.at_least(self.flavor, a, b, c))
    }
}

impl fmt::Display for ToolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.flavor.as_str(), self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions_parse_as_users_write_them() {
        let t = ToolVersion::parse("terraform 1.15.4", Flavor::Tofu).unwrap();
        assert_eq!(t.to_string(), "terraform 1.15.4");
        let t = ToolVersion::parse("OpenTofu v1.10.0", Flavor::Terraform).unwrap();
        assert_eq!(t.to_string(), "tofu 1.10.0");
        let t = ToolVersion::parse(" 1.0.3 ", Flavor::Terraform).unwrap();
        assert_eq!(t.to_string(), "terraform 1.0.3");
        for bad in ["", "vim 9.0", "terraform", "terraform one", "tofu 1.2.3 x"] {
            let e = ToolVersion::parse(bad, Flavor::Tofu)
                .unwrap_err()
                .to_string();
            assert!(e.contains("tofu 1.12.2"), "{bad}: {e}");
        }
    }

    #[test]
    fn comparisons_follow_the_tool_and_required_version_ignores_pre_releases() {
        let t = ToolVersion::parse("terraform 1.15.0-rc1", Flavor::Tofu).unwrap();
        assert!(!t.at_least(Flavor::Terraform, 1, 15, 0));
        assert!(t.at_least(Flavor::Terraform, 1, 14, 9));
        assert!(!t.at_least(Flavor::Tofu, 1, 0, 0));
        assert!(t.meets(">= 1.15.0").unwrap());
        assert!(!t.meets("< 1.15").unwrap());
        assert!(t.meets("~> 1.0").unwrap());
        assert!(t.meets("nonsense").is_err());
        assert_eq!(ToolVersion::newest(Flavor::Tofu).to_string(), "tofu 1.13.0");
    }

    #[test]
    fn rules_follow_the_release_of_each_tool() {
        let tf = |v: &str| ToolVersion::parse(&format!("terraform {v}"), Flavor::Tofu).unwrap();
        let tofu = |v: &str| ToolVersion::parse(&format!("tofu {v}"), Flavor::Tofu).unwrap();
        assert!(!tf("1.1.1").follows(&DROPS_UNUSED_LOCK_ENTRIES));
        assert!(tf("1.1.2").follows(&DROPS_UNUSED_LOCK_ENTRIES));
        assert!(tofu("1.6.0").follows(&DROPS_UNUSED_LOCK_ENTRIES));
        assert!(!tf("1.0.3").follows(&MODULE_SOURCE_ADDRESSES));
        assert!(tf("1.1.0").follows(&MODULE_SOURCE_ADDRESSES));
        let action = block_type_rule("action").unwrap();
        assert!(tf("1.14.0").follows(action) && !tf("1.13.9").follows(action));
        assert!(!tofu("1.12.2").follows(action));
        assert!(block_type_rule("resource").is_none());
        let table = rules_table();
        assert!(
            table.contains("| `moved` blocks | 1.1.0 | every release |"),
            "{table}"
        );
        assert!(
            table.contains("| `action` blocks | 1.14.0 | no release |"),
            "{table}"
        );
    }
}
