//! What a module declares for OpenTofu's early evaluation: variables, locals and the
//! arguments of its module calls. Read only when a module's `source` or `version` needs
//! evaluating, so the common path (literal sources) never builds these expressions.

use std::path::Path;

use hcl::edit::expr::Expression as EditExpr;
use hcl::edit::structure::{Body, Structure};
use hcl::Expression;

use super::files::module_files;
use crate::flavor::Flavor;
use crate::read::{read_capped, MAX_CONFIG_FILE};
use crate::static_eval::{ModuleDecls, VariableDecl};

/// Arguments of a `module` block that are not the called module's variables.
const META_ARGUMENTS: &[&str] = &[
    "source",
    "version",
    "count",
    "for_each",
    "providers",
    "depends_on",
];

/// The declarations of the module in `dir`, override files merged over primary ones
/// (a later declaration of the same name wins, as override files replace arguments).
pub(super) fn collect(dir: &Path, flavor: Flavor) -> Result<ModuleDecls, String> {
    let (primary, overrides) = module_files(dir, flavor).map_err(|e| e.to_string())?;
    let mut out = ModuleDecls::default();
    for path in primary.iter().chain(&overrides) {
        let src = read_capped(path, MAX_CONFIG_FILE)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if path.to_string_lossy().ends_with(".json") {
            collect_json(&src, &mut out).map_err(|e| format!("{}: {e}", path.display()))?;
        } else {
            let body = hcl::edit::parser::parse_body(&src)
                .map_err(|e| format!("{}: {}", path.display(), e.message()))?;
            collect_hcl(&body, &mut out);
        }
    }
    Ok(out)
}

fn collect_hcl(body: &Body, out: &mut ModuleDecls) {
    for structure in body.iter() {
        let Structure::Block(block) = structure else {
            continue;
        };
        let label = block.labels.first().map(|l| l.as_str().to_owned());
        match (block.ident.as_str(), label) {
            ("variable", Some(name)) => {
                let attr = |n: &str| block.body.get_attribute(n).map(|a| &a.value);
                let decl = out.variables.entry(name).or_insert(VariableDecl {
                    default: None,
                    parse_as_hcl: false,
                    is_const: false,
                });
                if let Some(EditExpr::Bool(b)) = attr("const") {
                    decl.is_const = *b.value();
                }
                if let Some(d) = attr("default") {
                    decl.default = Some(Expression::from(d.clone()));
                }
                if let Some(t) = attr("type") {
                    decl.parse_as_hcl = !is_primitive_type(t);
                }
            }
            ("locals", _) => {
                for a in block.body.attributes() {
                    out.locals
                        .insert(a.key.as_str().to_owned(), Expression::from(a.value.clone()));
                }
            }
            ("module", Some(name)) => {
                let args = out.calls.entry(name).or_default();
                for a in block.body.attributes() {
                    if !META_ARGUMENTS.contains(&a.key.as_str()) {
                        args.insert(a.key.as_str().to_owned(), Expression::from(a.value.clone()));
                    }
                }
            }
            _ => {}
        }
    }
}

/// `string`, `number` and `bool`: values given as text are taken literally.
fn is_primitive_type(t: &EditExpr) -> bool {
    matches!(t, EditExpr::Variable(v) if matches!(v.as_str(), "string" | "number" | "bool"))
}

fn collect_json(src: &str, out: &mut ModuleDecls) -> Result<(), String> {
    use serde_json::Value;
    let root: Value = serde_json::from_str(src).map_err(|e| e.to_string())?;
    let items = |v: &Value| -> Vec<serde_json::Map<String, Value>> {
        match v {
            Value::Object(o) => vec![o.clone()],
            Value::Array(a) => a.iter().filter_map(|v| v.as_object().cloned()).collect(),
            _ => Vec::new(),
        }
    };
    let Some(roots) = super::json_root_bodies(&root) else {
        return Ok(());
    };
    for (kind, value) in roots.into_iter().flatten() {
        for by_name in items(value) {
            match kind.as_str() {
                "variable" => {
                    for (name, body) in by_name {
                        let body = body.as_object().cloned().unwrap_or_default();
                        out.variables.insert(
                            name,
                            VariableDecl {
                                default: body.get("default").map(json_expr),
                                parse_as_hcl: body.get("type").is_some_and(|t| {
                                    !matches!(t.as_str(), Some("string" | "number" | "bool"))
                                }),
                                is_const: body.get("const") == Some(&Value::Bool(true)),
                            },
                        );
                    }
                }
                "locals" => {
                    for (name, v) in by_name {
                        out.locals.insert(name, json_expr(&v));
                    }
                }
                "module" => {
                    for (name, body) in by_name {
                        let args = out.calls.entry(name).or_default();
                        for (k, v) in body.as_object().into_iter().flatten() {
                            if !META_ARGUMENTS.contains(&k.as_str()) {
                                args.insert(k.clone(), json_expr(v));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// A JSON value as an expression: strings are templates, everything else a constant.
fn json_expr(v: &serde_json::Value) -> Expression {
    match v {
        serde_json::Value::String(s) if s.contains("${") => {
            Expression::from(hcl::expr::TemplateExpr::from(s.as_str()))
        }
        other => Expression::from(hcl::to_value(other).unwrap_or(hcl::Value::Null)),
    }
}
