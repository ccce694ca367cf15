//! The providers `import` blocks require.
//!
//! An `import` block names the resource it imports to and, optionally, the provider
//! configuration to import with. When the target resource is not in the configuration
//! (the tool will generate it), the block is the only place its provider is named, so it
//! adds a requirement. The two tools differ on which blocks count:
//!
//! - terraform (`internal/configs/config.go`, `addProviderRequirements`, from 1.5.0):
//!   only a block whose target is in this module and not declared here; a target that is
//!   declared takes its provider from its own block, and a `provider` argument that
//!   disagrees with it is refused.
//! - OpenTofu (the same function at `v1.12.x`): every block adds its provider, the target
//!   in a child module included; the same disagreement is refused in its own words.
//!
//! The provider is the one the `provider` argument names, else the one the target's type
//! implies (the part before the first `_`), resolved through `required_providers`.

use std::collections::BTreeMap;

use super::{implied_local_name, invalid, ConfigError, SourcePos};
use crate::flavor::Flavor;

/// A `provider = NAME[.ALIAS]` reference.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct ProviderRef {
    pub(super) name: String,
    pub(super) alias: String,
}

impl ProviderRef {
    /// The reference a dotted `NAME[.ALIAS]` string spells.
    pub(super) fn parse(s: &str) -> ProviderRef {
        let mut parts = s.splitn(2, '.');
        ProviderRef {
            name: parts.next().unwrap_or_default().to_owned(),
            alias: parts.next().unwrap_or_default().to_owned(),
        }
    }
}

/// One `import` block as a file writes it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ImportBlock {
    /// The target, when `to` is a static resource address (instance keys aside).
    pub(super) to: Option<ImportTo>,
    /// The `provider` argument and where it is written.
    pub(super) provider: Option<(ProviderRef, SourcePos)>,
}

/// The resource an `import` block imports to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct ImportTo {
    /// Whether the resource is in a child module (`module.NAME…` first).
    pub(super) in_module: bool,
    /// `TYPE.NAME` of the resource.
    pub(super) resource: String,
    /// Its type.
    pub(super) rtype: String,
}

impl ImportTo {
    /// The target an address's attribute names spell (`module`, `a`, `aws_instance`, `x`:
    /// instance keys already left out); `None` when they spell no managed resource.
    pub(super) fn from_names<S: AsRef<str>>(names: &[S]) -> Option<ImportTo> {
        let mut rest = names;
        let mut in_module = false;
        while let [first, _, tail @ ..] = rest {
            if first.as_ref() != "module" {
                break;
            }
            in_module = true;
            rest = tail;
        }
        match rest {
            [rtype, name] if rtype.as_ref() != "data" && rtype.as_ref() != "module" => {
                Some(ImportTo {
                    in_module,
                    resource: format!("{}.{}", rtype.as_ref(), name.as_ref()),
                    rtype: rtype.as_ref().to_owned(),
                })
            }
            _ => None,
        }
    }

    /// The target a JSON `to` string spells: the address with its `[…]` keys dropped.
    pub(super) fn from_json(s: &str) -> Option<ImportTo> {
        let mut names = Vec::new();
        let mut current = String::new();
        let mut depth = 0usize;
        let mut quoted = false;
        let mut escaped = false;
        for c in s.trim().chars() {
            if depth > 0 {
                match c {
                    _ if escaped => escaped = false,
                    '\\' if quoted => escaped = true,
                    '"' => quoted = !quoted,
                    '[' if !quoted => depth += 1,
                    ']' if !quoted => depth -= 1,
                    _ => {}
                }
                continue;
            }
            match c {
                '[' => depth = 1,
                '.' => names.push(std::mem::take(&mut current)),
                _ => current.push(c),
            }
        }
        names.push(current);
        if names.iter().any(String::is_empty) {
            return None;
        }
        ImportTo::from_names(&names)
    }
}

/// The local provider names the module's `import` blocks add as requirements, in the
/// flavor's rules. `managed` maps each managed resource declared in the module
/// (`TYPE.NAME`) to its `provider` argument.
pub(super) fn required_by_imports(
    imports: &[ImportBlock],
    managed: &BTreeMap<String, Option<ProviderRef>>,
    flavor: Flavor,
) -> Result<Vec<String>, ConfigError> {
    let mut locals = Vec::new();
    for block in imports {
        let Some(to) = &block.to else { continue };
        let local = match &block.provider {
            Some((p, _)) => p.name.clone(),
            None => implied_local_name(&to.rtype).to_owned(),
        };
        if flavor == Flavor::Tofu {
            locals.push(local.clone());
        }
        if to.in_module {
            continue;
        }
        let Some(target) = managed.get(&to.resource) else {
            if flavor == Flavor::Terraform {
                locals.push(local);
            }
            continue;
        };
        let Some((named, at)) = &block.provider else {
            continue;
        };
        if target.as_ref() == Some(named) {
            continue;
        }
        let detail = match (flavor, target) {
            (Flavor::Terraform, _) => {
                "The provider argument can only be specified in import blocks that will generate configuration. Use the provider argument in the target resource block to configure the provider for a resource with explicit provider configuration."
            }
            (Flavor::Tofu, None) => {
                "The provider argument in the target resource block must be specified and match the import block."
            }
            (Flavor::Tofu, Some(_)) => {
                "The provider argument in the target resource block must match the import block."
            }
        };
        return Err(invalid(
            at,
            "Invalid import provider argument",
            detail.to_owned(),
        ));
    }
    Ok(locals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_from_addresses_with_keys_and_modules() {
        let t = ImportTo::from_json(r#"module.a["x.y"].module.b.aws_instance.web["k]"]"#).unwrap();
        assert!(t.in_module);
        assert_eq!(t.resource, "aws_instance.web");
        assert_eq!(t.rtype, "aws_instance");
        let t = ImportTo::from_json("null_resource.x[0]").unwrap();
        assert!(!t.in_module);
        assert_eq!(t.resource, "null_resource.x");
        assert_eq!(ImportTo::from_json("data.http.x"), None);
        assert_eq!(ImportTo::from_json("module.a"), None);
        assert_eq!(ImportTo::from_json("aws_instance"), None);
        assert_eq!(ImportTo::from_json("a..b"), None);
    }

    fn import(to: &str, provider: Option<&str>) -> ImportBlock {
        let at = SourcePos {
            file: "main.tf".into(),
            line: Some(1),
        };
        ImportBlock {
            to: ImportTo::from_json(to),
            provider: provider.map(|p| (ProviderRef::parse(p), at)),
        }
    }

    #[test]
    fn each_tool_counts_its_own_blocks() {
        let managed: BTreeMap<String, Option<ProviderRef>> = [
            ("aws_instance.declared".to_owned(), None),
            (
                "aws_instance.aliased".to_owned(),
                Some(ProviderRef::parse("aws.west")),
            ),
        ]
        .into();
        let imports = [
            import("aws_instance.declared", None),
            import("module.m.google_thing.x", None),
            import("null_resource.generated", Some("other.alias")),
            import("aws_instance.aliased", Some("aws.west")),
        ];
        let tf = required_by_imports(&imports, &managed, Flavor::Terraform).unwrap();
        assert_eq!(tf, ["other"]);
        let tofu = required_by_imports(&imports, &managed, Flavor::Tofu).unwrap();
        assert_eq!(tofu, ["aws", "google", "other", "aws"]);
    }

    #[test]
    fn a_provider_argument_the_declared_target_does_not_share_is_refused() {
        let managed: BTreeMap<String, Option<ProviderRef>> = [
            ("aws_instance.plain".to_owned(), None),
            (
                "aws_instance.aliased".to_owned(),
                Some(ProviderRef::parse("aws.west")),
            ),
        ]
        .into();
        for (to, provider, tf_refuses, tofu_detail) in [
            (
                "aws_instance.plain",
                "aws.east",
                true,
                "must be specified and match",
            ),
            (
                "aws_instance.aliased",
                "aws.east",
                true,
                "must match the import block",
            ),
        ] {
            let imports = [import(to, Some(provider))];
            let tf = required_by_imports(&imports, &managed, Flavor::Terraform);
            assert_eq!(tf.is_err(), tf_refuses, "{to}");
            let tofu = required_by_imports(&imports, &managed, Flavor::Tofu)
                .unwrap_err()
                .to_string();
            assert!(tofu.contains(tofu_detail), "{tofu}");
            assert!(tofu.contains("Invalid import provider argument"), "{tofu}");
        }
    }
}
