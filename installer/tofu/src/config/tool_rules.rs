//! What depends on the release of the tool that runs a configuration
//! ([`ToolVersion`](crate::tool_version::ToolVersion)): the checks a module must pass for
//! that release to load it, terraform ≥ 1.15's evaluation of `const` variables in a
//! module call's `source` and `version`, and terraform ≥ 1.17's in a provider requirement's.

use super::{invalid, CallArg, ConfigError, ModuleRequirements, SourcePos};
use crate::flavor::Flavor;
use crate::static_eval::{Scope, StaticError};

/// Refuse a module that the release `tool` would not load: a block of a type that release
/// does not know ("Unsupported block type"), or `required_version` constraints it does not
/// meet, in the tool's words ("Unsupported Terraform Core version"), naming the constraint
/// and the version it was checked against.
pub fn check_tool_version(
    module: &ModuleRequirements,
    tool: &crate::tool_version::ToolVersion,
) -> Result<(), ConfigError> {
    for (kind, at) in &module.newer_blocks {
        let known = crate::tool_version::block_type_rule(kind).is_none_or(|r| tool.follows(r));
        if !known {
            // A JSON file's unknown top-level name is a property its syntax rejects.
            let json = at.file.extension().is_some_and(|e| e == "json");
            return Err(if json {
                invalid(
                    at,
                    "Extraneous JSON object property",
                    format!(
                        "No argument or block type is named {kind:?}. ({tool} does not know it.)"
                    ),
                )
            } else {
                invalid(
                    at,
                    "Unsupported block type",
                    format!(
                        "Blocks of type {kind:?} are not expected here. ({tool} does not know them.)"
                    ),
                )
            });
        }
        if kind == "symbols" {
            // OpenTofu 1.13's symbol libraries are an experiment whose install (packages
            // under `.terraform/modules/symbols:NAME`, `modules.json` keys of their own) may
            // change in any release: refused, never half-installed.
            return Err(invalid(
                at,
                "Symbol libraries are not supported by tstore",
                "OpenTofu 1.13's symbol libraries (the experimental \"symbols\" block) are installed by tofu only: run `tofu init` for this configuration.".into(),
            ));
        }
    }
    // `depends_on` may not be overridden: from terraform 1.5.0 (and in OpenTofu) the
    // override's own is refused; before, the check read the base call's by mistake, so an
    // override of a call whose primary block has one was refused instead.
    let overridden = &module.module_override_depends_on;
    let refused = if tool.follows(&crate::tool_version::OVERRIDE_MODULE_DEPENDS_ON) {
        overridden.in_overrides.first()
    } else {
        overridden.in_overridden_bases.first()
    };
    if let Some(at) = refused {
        return Err(invalid(
            at,
            "Unsupported override",
            "The depends_on argument may not be overridden.".into(),
        ));
    }
    // `precondition` and `postcondition` came in 1.2.0: before, an unknown block type.
    if !tool.follows(&crate::tool_version::CHECK_RULE_OVERRIDE_WORDS) {
        if let Some((kind, at)) = module.condition_blocks.first() {
            return Err(invalid(
                at,
                "Unsupported block type",
                format!(
                    "Blocks of type {kind:?} are not expected here. ({tool} does not know them.)"
                ),
            ));
        }
    }
    // No check rule may be overridden: the words changed when preconditions came (1.2.0).
    for (kind, at) in &module.override_check_rules {
        let known = match kind.as_str() {
            "check" => tool.follows(
                crate::tool_version::block_type_rule("check").expect("a newer block type"),
            ),
            "precondition" | "postcondition" => {
                tool.follows(&crate::tool_version::CHECK_RULE_OVERRIDE_WORDS)
            }
            _ => true,
        };
        if !known {
            // A release that does not know the block refuses it elsewhere, or ignores it.
            continue;
        }
        let (summary, detail) = match kind.as_str() {
            "validation" if !tool.follows(&crate::tool_version::CHECK_RULE_OVERRIDE_WORDS) => (
                "Can't override variable validation rules".to_owned(),
                "Variable \"validation\" blocks cannot be used in override files.".to_owned(),
            ),
            "check" => (
                "Can't override check blocks".to_owned(),
                "Override files cannot override check blocks.".to_owned(),
            ),
            _ => (
                format!("Can't override {kind} blocks"),
                format!("Override files cannot override {kind:?} blocks."),
            ),
        };
        return Err(invalid(at, summary, detail));
    }
    let product = tool.product();
    for required in &module.required_versions {
        let meets = tool.meets(&required.constraint).map_err(|e| {
            invalid(
                &required.at,
                "Invalid required_version constraint",
                format!("{e}."),
            )
        })?;
        if !meets {
            return Err(invalid(
                &required.at,
                format!("Unsupported {product} Core version"),
                format!(
                    "This configuration does not support {product} version {} (required_version \
                     = {:?}). To proceed, either choose another supported {product} version or \
                     update this version constraint. tstore checks against {tool}: give \
                     --tool-version or TSTORE_TOOL_VERSION when another release runs this \
                     directory.",
                    tool.version, required.constraint
                ),
            ));
        }
    }
    Ok(())
}

/// A module call's `source` or `version` as terraform ≥ 1.15 evaluates it at init
/// (upstream: internal/terraform/node_module_install.go@v1.15.9): only `const` variables,
/// locals built from them, `path.*` and pure functions are known; anything else is refused
/// in terraform's words.
pub(super) fn constant_call_arg(
    expr: &::hcl::Expression,
    at: &SourcePos,
    name: &str,
    scope: &Scope,
) -> Result<String, ConfigError> {
    let what = if name == "source" {
        "source"
    } else {
        "version"
    };
    match string_at_init(expr, at, name, &format!("module {what}"), scope) {
        Ok(evaluated) => evaluated,
        Err(StaticError::NotConstant(_)) => Err(invalid(
            at,
            format!("Unknown module {what}"),
            "Only literal values and const variables can be evaluated during init.".into(),
        )),
        Err(StaticError::RequiredVariable(var)) => Err(invalid(
            at,
            "No value for required variable",
            format!("The root module input variable {var:?} is not set, and has no default value. Use a -var or -var-file command line argument to provide a value for this variable."),
        )),
        Err(StaticError::Unavailable(_)) => Err(invalid(
            at,
            format!("Invalid module {what}"),
            format!("The module {what} can only reference constant input variables and local values."),
        )),
        Err(e) => Err(invalid(at, e.summary(), e.to_string())),
    }
}

/// A provider requirement's `source` or `version` (`name`) as the tool reads it: a literal
/// string; an expression that refers to something (HCL's `Variables()`), evaluated from
/// terraform 1.17 (upstream: internal/terraform/node_resolve_provider_requirement.go,
/// #39153) where it refers only to variables and locals and they are `const`, refused in
/// the tool's words otherwise; any other expression refused by every release ("Source
/// must be specified as a string."), but a JSON string taken as written.
pub(super) fn provider_requirement_arg(
    arg: &CallArg,
    name: &str,
    flavor: Flavor,
    scope: &Scope,
) -> Result<String, ConfigError> {
    let (expr, at, (summary, detail), refers_to, as_written) = match arg {
        CallArg::Literal(s) => return Ok(s.clone()),
        CallArg::Expr {
            expr,
            at,
            refusal,
            refers_to,
            as_written,
        } => (expr, at, refusal, refers_to, as_written),
    };
    let evaluated = scope.evaluates_provider_requirements();
    if refers_to.is_empty() || !evaluated {
        if let Some(text) = as_written {
            return Ok(text.clone());
        }
        let hint = match flavor {
            Flavor::Terraform if !refers_to.is_empty() => " (terraform ≥ 1.17 evaluates const variables and locals here: give --tool-version when a newer release runs this directory.)",
            _ => "",
        };
        return Err(invalid(at, *summary, format!("{detail}{hint}")));
    }
    let what = if name == "source" {
        "source"
    } else {
        "version"
    };
    let unknown = |why: Option<String>| {
        let mut detail =
            "Only literal values and const variables can be evaluated during init.".to_owned();
        if let Some(why) = why {
            detail.push_str(&format!(" ({why}.)"));
        }
        invalid(at, format!("Unknown provider {what}"), detail)
    };
    // Only input variables and local values may be referred to (not `path.*`, unlike a
    // module call's `source`).
    if refers_to.iter().any(|r| r != "var" && r != "local") {
        return Err(unknown(None));
    }
    // terraform 1.17 stops on a null here without a diagnostic of its own; refused as a
    // module call's null `source` is.
    match string_at_init(expr, at, name, &format!("provider {what}"), scope) {
        Ok(evaluated) => evaluated,
        Err(StaticError::NotConstant(_)) => Err(unknown(None)),
        Err(StaticError::Unavailable(why)) => Err(unknown(Some(why))),
        Err(StaticError::RequiredVariable(var)) => Err(invalid(
            at,
            "No value for required variable",
            format!("The root module input variable {var:?} is not set, and has no default value. Use a -var or -var-file command line argument to provide a value for this variable."),
        )),
        Err(e) => Err(invalid(at, e.summary(), e.to_string())),
    }
}

/// `expr` (the argument `name` of `subject`, e.g. "module source") evaluated at init: a null
/// is refused as "Unsuitable SUBJECT", a value that is no string as terraform refuses it;
/// why it could not be evaluated is left to the caller to say in its rule's words.
fn string_at_init(
    expr: &::hcl::Expression,
    at: &SourcePos,
    name: &str,
    subject: &str,
    scope: &Scope,
) -> Result<Result<String, ConfigError>, StaticError> {
    if scope.eval(expr)? == ::hcl::Value::Null {
        return Ok(Err(invalid(
            at,
            format!("Unsuitable {subject}"),
            "Unsuitable value: null value is not allowed.".into(),
        )));
    }
    Ok(scope.eval_string(expr, name).map_err(|e| {
        invalid(
            at,
            "Incorrect value type",
            format!("Invalid expression value: {e}."),
        )
    }))
}
