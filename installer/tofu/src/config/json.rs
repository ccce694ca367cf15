//! The JSON-syntax reader: what one `.tf.json`/`.tofu.json` file contributes.

use std::path::Path;

use serde_json::Value;

use crate::flavor::Flavor;
use crate::state::StateStorage;

use super::imports::{ImportBlock, ImportTo, ProviderRef};
use super::schema;
use super::validate::{self, DeclKind, Declaration};
use super::{
    check_local_name, implied_local_name, invalid, local_name_from_ref, CallArg, ConfigError,
    FileContent, FileModuleCall, ProviderConfig, RequiredBlock, RequiredEntry, RequiredVersion,
    SourcePos,
};

/// JSON syntax: a block type maps to an object, or an array of objects, of
/// bodies (or of labels, then bodies). Both shapes are flattened here.
fn json_items(v: &Value) -> Vec<&serde_json::Map<String, Value>> {
    match v {
        Value::Object(o) => vec![o],
        Value::Array(a) => a.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

/// The bodies of a JSON configuration file's root: HCL's JSON syntax takes an object, or an
/// array of objects whose bodies are merged in order (`[]` is an empty body). `None` for any
/// other root.
pub(crate) fn json_root_bodies(root: &Value) -> Option<Vec<&serde_json::Map<String, Value>>> {
    match root {
        Value::Object(o) => Some(vec![o]),
        Value::Array(items) => items.iter().map(Value::as_object).collect(),
        _ => None,
    }
}

/// Where a JSON `terraform` block says the state is kept, if it says.
fn state_storage_json(tf: &serde_json::Map<String, Value>) -> Option<StateStorage> {
    if let Some((kind, body)) = tf
        .get("backend")
        .and_then(|b| json_items(b).into_iter().flat_map(|m| m.iter()).next())
    {
        if kind != "local" {
            return Some(StateStorage::Remote(kind.clone()));
        }
        let arg = |name: &str| {
            json_items(body)
                .into_iter()
                .find_map(|b| b.get(name).and_then(Value::as_str).map(str::to_owned))
        };
        return Some(match (arg("path"), arg("workspace_dir")) {
            (None, None) => StateStorage::Local,
            (path, workspace_dir) => StateStorage::LocalAt {
                path,
                workspace_dir,
            },
        });
    }
    ["cloud", "state_store"]
        .into_iter()
        .find(|k| tf.contains_key(*k))
        .map(|k| StateStorage::Remote(k.to_owned()))
}

/// What a JSON configuration file contributes to its module: its top-level properties read
/// one block kind at a time, after what an override file may not hold.
pub(super) fn parse_json(
    src: &str,
    path: &Path,
    flavor: Flavor,
) -> Result<FileContent, ConfigError> {
    let at = SourcePos {
        file: path.to_owned(),
        line: None,
    };
    let root: Value = serde_json::from_str(src).map_err(|e| ConfigError::Syntax {
        at: SourcePos {
            file: path.to_owned(),
            line: Some(e.line()),
        },
        message: e.to_string(),
    })?;
    let Some(roots) = json_root_bodies(&root) else {
        return Err(ConfigError::Syntax {
            at,
            message:
                "the root of a JSON configuration file must be an object, or an array of objects"
                    .into(),
        });
    };
    let mut out = FileContent::default();
    for (key, value) in roots.iter().flat_map(|r| r.iter()) {
        note_override_facts(key, value, &at, &mut out);
    }
    for (key, value) in roots.into_iter().flatten() {
        // "//" is JSON syntax's comment property.
        if key != "//" && schema::top_level(key, flavor).is_none() {
            return Err(invalid(
                &at,
                "Extraneous JSON object property",
                schema::extraneous_json_property_detail(key, flavor),
            ));
        }
        out.note_block_type(key, at.clone());
        if key == "terraform" {
            for tf in json_items(value) {
                for inner in tf.keys() {
                    out.note_block_type(inner, at.clone());
                }
            }
        }
        match key.as_str() {
            "terraform" => terraform_blocks(value, &at, &mut out)?,
            "provider" => provider_blocks(value, &at, &mut out)?,
            "resource" | "data" | "ephemeral" | "action" => {
                resource_blocks(key, value, &at, &mut out)?
            }
            "import" => import_blocks(value, &at, &mut out)?,
            "check" => check_blocks(value, &at, &mut out)?,
            "module" => module_blocks(value, &at, &mut out)?,
            "variable" | "output" | "locals" => declaration_blocks(key, value, &at, &mut out)?,
            _ => {}
        }
    }
    Ok(out)
}

/// One JSON `variable` block's type and default, as far as `variables.rs` judges them: the
/// `type` string is a type expression (as the JSON syntax reads it); a default is the JSON
/// value, a string holding a template sequence being an expression (not judged).
fn variable_facts(
    name: &str,
    body: &serde_json::Map<String, Value>,
    at: &SourcePos,
) -> super::variables::VariableFacts {
    use super::variables::{DefaultValue, TypeConstraint};
    let ty = body.get("type").map(|t| match t.as_str() {
        Some(text) => hcl::edit::parser::parse_expr(text)
            .map(|e| super::hcl_exprs::type_constraint(&e))
            .unwrap_or(TypeConstraint::Other),
        None => TypeConstraint::Other,
    });
    let default = body.get("default").map(|v| match v {
        Value::String(s) if s.contains("${") || s.contains("%{") => DefaultValue::Other,
        Value::String(s) => DefaultValue::String(s.clone()),
        Value::Number(_) => DefaultValue::Number,
        Value::Bool(_) => DefaultValue::Bool,
        Value::Null => DefaultValue::Null,
        Value::Array(_) => DefaultValue::Tuple,
        Value::Object(_) => DefaultValue::Object,
    });
    super::variables::VariableFacts {
        name: name.to_owned(),
        ty,
        default,
        nullable: body.get("nullable").and_then(Value::as_bool),
        at: at.clone(),
        default_at: body.get("default").map(|_| at.clone()),
    }
}

/// Remember the check rules a JSON file's blocks hold (a variable's `validation`, an
/// output's `precondition`/`postcondition`, a resource's or data source's `lifecycle`
/// ones) and its `check` blocks: an override file may hold none (`tool_rules.rs`).
fn note_check_rules(
    key: &str,
    value: &Value,
    bodies: &[&serde_json::Map<String, Value>],
    at: &SourcePos,
    out: &mut FileContent,
) {
    let mut note = |kind: &str, found: Option<&Value>| {
        if found.is_some_and(|v| !json_items(v).is_empty()) {
            out.check_rules.push((kind.to_owned(), at.clone()));
        }
    };
    match key {
        "variable" => {
            for body in json_items(value)
                .into_iter()
                .flat_map(|by_name| by_name.values())
                .flat_map(json_items)
            {
                note("validation", body.get("validation"));
            }
        }
        "output" => {
            for body in bodies {
                note("precondition", body.get("precondition"));
                note("postcondition", body.get("postcondition"));
            }
        }
        "resource" | "data" => {
            for lifecycle in bodies
                .iter()
                .filter_map(|b| b.get("lifecycle"))
                .flat_map(json_items)
            {
                note("precondition", lifecycle.get("precondition"));
                note("postcondition", lifecycle.get("postcondition"));
            }
        }
        "check" => {
            for _ in json_items(value)
                .into_iter()
                .flat_map(|by_name| by_name.values())
            {
                out.check_rules.push(("check".to_owned(), at.clone()));
            }
        }
        _ => {}
    }
}

/// A JSON string init reads before anything else is evaluated: a template, so one with
/// `${` is an expression (evaluated by the tool's rule, as a native one is, or else taken
/// as written); any other JSON value is refused with `refusal`.
fn json_arg(
    v: &Value,
    at: &SourcePos,
    refusal: (&'static str, &'static str),
) -> Result<CallArg, ConfigError> {
    match v {
        Value::String(s) if !s.contains("${") => Ok(CallArg::Literal(s.clone())),
        Value::String(s) => Ok(CallArg::Expr {
            expr: ::hcl::Expression::from(::hcl::expr::TemplateExpr::from(s.as_str())),
            at: at.clone(),
            refusal,
            refers_to: super::hcl_exprs::template_references(s).unwrap_or_default(),
            as_written: Some(s.clone()),
        }),
        _ => Err(invalid(at, refusal.0, refusal.1.to_owned())),
    }
}

/// The `terraform` blocks: provider requirements, `required_version`, the state storage, `provider_meta` names.
fn terraform_blocks(
    value: &Value,
    at: &SourcePos,
    out: &mut FileContent,
) -> Result<(), ConfigError> {
    for tf in json_items(value) {
        for meta in tf.get("provider_meta").map(json_items).unwrap_or_default() {
            for name in meta.keys() {
                check_local_name(name, at)?;
            }
        }
        out.note_state_storage(state_storage_json(tf));
        if let Some(v) = tf.get("required_version") {
            let Some(constraint) = v.as_str() else {
                return Err(invalid(
                    at,
                    "Invalid required_version",
                    "required_version must be a string.".into(),
                ));
            };
            out.required_versions.push(RequiredVersion {
                constraint: constraint.to_owned(),
                at: at.clone(),
            });
        }
        let Some(rp) = tf.get("required_providers") else {
            continue;
        };
        for block in json_items(rp) {
            let mut entries = Vec::new();
            for (name, v) in block {
                let mut entry = RequiredEntry {
                    name: name.clone(),
                    source: None,
                    version: None,
                    at: at.clone(),
                    version_at: None,
                };
                match v {
                    Value::String(s) => entry.version = Some(CallArg::Literal(s.clone())),
                    Value::Object(o) => {
                        check_local_name(name, at)?;
                        for (k, v) in o {
                            match k.as_str() {
                                "version" => {
                                    entry.version = Some(json_arg(v, at, (
                                        "Invalid version constraint",
                                        "Version must be specified as a string.",
                                    ))?)
                                }
                                "source" => {
                                    entry.source = Some(json_arg(v, at, (
                                        "Invalid source",
                                        "Source must be specified as a string.",
                                    ))?)
                                }
                                "configuration_aliases" => {}
                                other => {
                                    return Err(invalid(
                                        at,
                                        "Invalid required_providers object",
                                        format!("required_providers objects can only contain \"version\", \"source\" and \"configuration_aliases\" attributes, not {other:?}."),
                                    ))
                                }
                            }
                        }
                    }
                    _ => {
                        return Err(invalid(
                            at,
                            "Invalid required_providers object",
                            "required_providers entries must be strings or objects.".into(),
                        ))
                    }
                }
                entries.push(entry);
            }
            out.required_blocks.push(RequiredBlock {
                at: at.clone(),
                entries,
            });
        }
    }
    Ok(())
}

/// The `provider` blocks: each configuration's name, alias and (legacy) version.
fn provider_blocks(
    value: &Value,
    at: &SourcePos,
    out: &mut FileContent,
) -> Result<(), ConfigError> {
    for by_name in json_items(value) {
        for (name, bodies) in by_name {
            check_local_name(name, at)?;
            for body in json_items(bodies) {
                out.provider_configs.push(ProviderConfig {
                    name: name.clone(),
                    alias: body
                        .get("alias")
                        .map(|v| json_string(at, v, "alias"))
                        .transpose()?
                        .unwrap_or_default(),
                    version: body
                        .get("version")
                        .map(|v| json_string(at, v, "version"))
                        .transpose()?,
                    at: at.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Resource-like blocks of kind `key`: their declarations and the providers they use.
fn resource_blocks(
    key: &str,
    value: &Value,
    at: &SourcePos,
    out: &mut FileContent,
) -> Result<(), ConfigError> {
    for by_type in json_items(value) {
        for (rtype, by_name) in by_type {
            for names in json_items(by_name) {
                for (name, bodies) in names {
                    let decl = match key {
                        "resource" => Some(DeclKind::Resource(rtype.clone())),
                        "data" => Some(DeclKind::Data(rtype.clone())),
                        _ => None,
                    };
                    if key == "resource" {
                        for body in json_items(bodies) {
                            let provider = body
                                .get("provider")
                                .and_then(Value::as_str)
                                .map(ProviderRef::parse);
                            out.managed.push((format!("{rtype}.{name}"), provider));
                        }
                    }
                    if let Some(kind) = decl {
                        out.declarations.push(Declaration {
                            kind,
                            name: name.clone(),
                            at: at.clone(),
                        });
                    }
                    for body in json_items(bodies) {
                        let local = match body.get("provider").and_then(Value::as_str) {
                            Some(r) => {
                                let local = local_name_from_ref(r);
                                check_local_name(local, at)?;
                                local
                            }
                            None => implied_local_name(rtype),
                        };
                        out.resource_providers.push(local.to_owned());
                    }
                }
            }
        }
    }
    Ok(())
}

/// The `import` blocks: their targets and providers.
fn import_blocks(value: &Value, at: &SourcePos, out: &mut FileContent) -> Result<(), ConfigError> {
    for body in json_items(value) {
        let to = body
            .get("to")
            .and_then(Value::as_str)
            .and_then(ImportTo::from_json);
        let provider = body
            .get("provider")
            .and_then(Value::as_str)
            .map(|p| (ProviderRef::parse(p), at.clone()));
        out.imports.push(ImportBlock { to, provider });
    }
    Ok(())
}

/// The `check` blocks: a nested data source uses a provider like any other.
fn check_blocks(value: &Value, at: &SourcePos, out: &mut FileContent) -> Result<(), ConfigError> {
    // A check block's nested data source uses a provider like any other.
    for by_name in json_items(value) {
        for body in by_name.values().flat_map(json_items) {
            for by_type in body.get("data").map(json_items).unwrap_or_default() {
                for (rtype, by_name) in by_type {
                    for names in json_items(by_name) {
                        for bodies in names.values() {
                            for body in json_items(bodies) {
                                let local = match body.get("provider").and_then(Value::as_str) {
                                    Some(r) => local_name_from_ref(r),
                                    None => implied_local_name(rtype),
                                };
                                check_local_name(local, at)?;
                                out.resource_providers.push(local.to_owned());
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The `module` blocks: each call's name, `source`, `version`, repetition, `depends_on` and `providers` map.
fn module_blocks(value: &Value, at: &SourcePos, out: &mut FileContent) -> Result<(), ConfigError> {
    for by_name in json_items(value) {
        for (name, body) in by_name {
            let Some(body) = json_items(body).into_iter().next() else {
                continue;
            };
            // A JSON string is a template: one with `${` is evaluated early
            // by tofu and refused by terraform, like a native expression.
            let literal = |key: &str| -> Result<Option<CallArg>, ConfigError> {
                match body.get(key) {
                    None => Ok(None),
                    Some(Value::String(s)) if !s.contains("${") => {
                        Ok(Some(CallArg::Literal(s.clone())))
                    }
                    Some(v @ Value::String(_)) => Ok(Some(json_arg(v, at, (
                        "Variables not allowed",
                        "Variables may not be used here.",
                    ))?)),
                    Some(_) => Err(invalid(
                        at,
                        "Invalid value",
                        format!("The {key:?} argument of module {name:?} must be a string: it is read before anything is evaluated."),
                    )),
                }
            };
            if !super::validate::is_identifier(name) {
                return Err(invalid(
                    at,
                    "Invalid module instance name",
                    "A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.".into(),
                ));
            }
            // The `providers` map names provider configurations on both sides.
            if let Some(Value::Object(map)) = body.get("providers") {
                for (k, v) in map {
                    check_local_name(local_name_from_ref(k), at)?;
                    if let Some(v) = v.as_str() {
                        check_local_name(local_name_from_ref(v), at)?;
                    }
                }
            }
            out.module_calls.push(FileModuleCall {
                name: name.clone(),
                source: literal("source")?,
                version: literal("version")?,
                at: at.clone(),
                repeated_by: ["count", "for_each"]
                    .into_iter()
                    .find(|k| body.contains_key(*k))
                    .map(super::name::Name),
                depends_on: body
                    .get("depends_on")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
                    .then(|| at.clone()),
            });
        }
    }
    Ok(())
}

/// `variable`, `output` and `locals`: declarations for the uniqueness rule, and variables' defaults and types.
fn declaration_blocks(
    key: &str,
    value: &Value,
    at: &SourcePos,
    out: &mut FileContent,
) -> Result<(), ConfigError> {
    for items in json_items(value) {
        for name in items.keys() {
            let kind = match key {
                "variable" => {
                    validate::check_variable_name(name, at)?;
                    for body in json_items(&items[name]) {
                        let facts = variable_facts(name, body, at);
                        super::variables::check_block(&facts)?;
                        out.variables.push(facts);
                    }
                    DeclKind::Variable
                }
                "output" => DeclKind::Output,
                _ => DeclKind::Local,
            };
            out.declarations.push(Declaration {
                kind,
                name: name.clone(),
                at: at.clone(),
            });
        }
    }
    Ok(())
}

/// The string an argument must be (`what` names it).
fn json_string(at: &SourcePos, v: &Value, what: &str) -> Result<String, ConfigError> {
    v.as_str().map(str::to_owned).ok_or_else(|| {
        invalid(
            at,
            "Invalid value",
            format!("The {what:?} argument must be a string."),
        )
    })
}

/// What an override file may not hold, as one top-level property `key` writes it
/// (`validate::check_override`): `depends_on`, `moved` and `import` blocks, check rules.
fn note_override_facts(key: &str, value: &Value, at: &SourcePos, out: &mut FileContent) {
    // What an override file may not hold (`validate::check_override`).
    let bodies: Vec<&serde_json::Map<String, Value>> = match key {
        "resource" | "data" => json_items(value)
            .into_iter()
            .flat_map(|by_type| by_type.values())
            .flat_map(json_items)
            .flat_map(|names| names.values())
            .flat_map(json_items)
            .collect(),
        "output" => json_items(value)
            .into_iter()
            .flat_map(|by_name| by_name.values())
            .flat_map(json_items)
            .collect(),
        "variable" => Vec::new(),
        "moved" => {
            out.moved
                .extend(json_items(value).iter().map(|_| at.clone()));
            Vec::new()
        }
        "import" => {
            out.import_at
                .extend(json_items(value).iter().map(|_| at.clone()));
            Vec::new()
        }
        _ => Vec::new(),
    };
    for body in &bodies {
        if body
            .get("depends_on")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            out.depends_on.push(at.clone());
        }
    }
    note_check_rules(key, value, &bodies, at, out);
}
