//! The parts of one configuration file write detection looks at, from either syntax:
//! resources and data sources with their arguments and provisioners, locals, variables.

use std::path::Path;

use hcl::edit::expr::{Array, Expression};
use hcl::edit::structure::{Block, Body};
use hcl::edit::template::StringTemplate;
use hcl::edit::Span;
use serde_json::Value;

use super::expr::Values;
use crate::config::json_root_bodies;
use crate::config::ConfigError;
use crate::span::{LineIndex, SourcePos};

/// An argument with where it is written.
pub(super) struct Arg {
    pub expr: Expression,
    pub at: SourcePos,
}

/// A `provisioner "TYPE"` block.
pub(super) struct Provisioner {
    pub kind: String,
    pub args: Vec<(String, Arg)>,
}

/// A `resource`, `data` or `ephemeral` block. Arguments of nested blocks are named
/// `BLOCK.ARG` (`lifecycle_commands.create`).
pub(super) struct Resource {
    pub mode: String,
    pub rtype: String,
    pub name: String,
    pub args: Vec<(String, Arg)>,
    pub provisioners: Vec<Provisioner>,
}

impl Resource {
    pub(super) fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|(k, _)| k == name).map(|(_, a)| a)
    }
}

impl Provisioner {
    pub(super) fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|(k, _)| k == name).map(|(_, a)| a)
    }
}

/// Nested blocks whose arguments are not the resource's own.
const META_BLOCKS: &[&str] = &["provisioner", "connection", "lifecycle", "dynamic"];

/// Read a native-syntax file into `resources` and `values`.
pub(super) fn hcl_file(
    src: &str,
    path: &Path,
    resources: &mut Vec<Resource>,
    values: &mut Values,
) -> Result<(), ConfigError> {
    let body = hcl::edit::parser::parse_body(src).map_err(|e| ConfigError::Syntax {
        at: SourcePos {
            file: path.to_owned(),
            line: Some(e.location().line()),
        },
        message: e.message().to_owned(),
    })?;
    let lines = LineIndex::new(src);
    let at = |node: &dyn Span| SourcePos {
        file: path.to_owned(),
        line: node.span().map(|r| lines.line(r.start)),
    };
    let args_of = |body: &Body| -> Vec<(String, Arg)> {
        let mut out = Vec::new();
        collect_args(body, "", &mut out, &at);
        out
    };
    let mut add_resource = |block: &Block| {
        let [rtype, name] = &block.labels[..] else {
            return;
        };
        let provisioners = block
            .body
            .blocks()
            .filter(|b| b.ident.as_str() == "provisioner")
            .filter_map(|b| {
                Some(Provisioner {
                    kind: b.labels.first()?.as_str().to_owned(),
                    args: args_of(&b.body),
                })
            })
            .collect();
        resources.push(Resource {
            mode: block.ident.as_str().to_owned(),
            rtype: rtype.as_str().to_owned(),
            name: name.as_str().to_owned(),
            args: args_of(&block.body),
            provisioners,
        });
    };
    for block in body.blocks() {
        match block.ident.as_str() {
            "resource" | "data" | "ephemeral" => add_resource(block),
            // A check block may hold one scoped data source.
            "check" => block
                .body
                .blocks()
                .filter(|b| b.ident.as_str() == "data")
                .for_each(&mut add_resource),
            "locals" => {
                for a in block.body.attributes() {
                    values
                        .locals
                        .insert(a.key.as_str().to_owned(), a.value.clone());
                }
            }
            "variable" => {
                if let Some(name) = block.labels.first() {
                    let default = block.body.get_attribute("default").map(|a| a.value.clone());
                    values.variables.insert(name.as_str().to_owned(), default);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn collect_args(
    body: &Body,
    prefix: &str,
    out: &mut Vec<(String, Arg)>,
    at: &dyn Fn(&dyn Span) -> SourcePos,
) {
    for a in body.attributes() {
        out.push((
            format!("{prefix}{}", a.key.as_str()),
            Arg {
                expr: a.value.clone(),
                at: at(a),
            },
        ));
    }
    for b in body.blocks() {
        if !META_BLOCKS.contains(&b.ident.as_str()) {
            collect_args(&b.body, &format!("{prefix}{}.", b.ident.as_str()), out, at);
        }
    }
}

/// A block type's JSON value: an object, or an array of objects.
fn items(v: &Value) -> Vec<&serde_json::Map<String, Value>> {
    match v {
        Value::Object(o) => vec![o],
        Value::Array(a) => a.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

/// Read a JSON-syntax file into `resources` and `values`. Strings are templates, as
/// terraform reads them; positions name the file only.
pub(super) fn json_file(
    src: &str,
    path: &Path,
    resources: &mut Vec<Resource>,
    values: &mut Values,
) -> Result<(), ConfigError> {
    let root: Value = serde_json::from_str(src).map_err(|e| ConfigError::Syntax {
        at: SourcePos {
            file: path.to_owned(),
            line: Some(e.line()),
        },
        message: e.to_string(),
    })?;
    let at = SourcePos {
        file: path.to_owned(),
        line: None,
    };
    let Some(roots) = json_root_bodies(&root) else {
        return Err(ConfigError::Syntax {
            at,
            message:
                "the root of a JSON configuration file must be an object, or an array of objects"
                    .into(),
        });
    };
    let args_of = |body: &serde_json::Map<String, Value>| -> Vec<(String, Arg)> {
        let mut out = Vec::new();
        for (k, v) in body {
            if META_BLOCKS.contains(&k.as_str()) || k == "//" {
                continue;
            }
            out.push((
                k.clone(),
                Arg {
                    expr: json_expr(v),
                    at: at.clone(),
                },
            ));
            // A nested block's arguments, as `BLOCK.ARG`.
            for nested in items(v) {
                for (nk, nv) in nested {
                    out.push((
                        format!("{k}.{nk}"),
                        Arg {
                            expr: json_expr(nv),
                            at: at.clone(),
                        },
                    ));
                }
            }
        }
        out
    };
    for (key, value) in roots.into_iter().flatten() {
        match key.as_str() {
            "resource" | "data" | "ephemeral" => {
                for by_type in items(value) {
                    for (rtype, by_name) in by_type {
                        for names in items(by_name) {
                            for (name, bodies) in names {
                                for body in items(bodies) {
                                    let mut provisioners = Vec::new();
                                    for p in body.get("provisioner").map(items).unwrap_or_default()
                                    {
                                        for (kind, pbodies) in p {
                                            for pbody in items(pbodies) {
                                                provisioners.push(Provisioner {
                                                    kind: kind.clone(),
                                                    args: args_of(pbody),
                                                });
                                            }
                                        }
                                    }
                                    resources.push(Resource {
                                        mode: key.clone(),
                                        rtype: rtype.clone(),
                                        name: name.clone(),
                                        args: args_of(body),
                                        provisioners,
                                    });
                                }
                            }
                        }
                    }
                }
            }
            "locals" => {
                for locals in items(value) {
                    for (name, v) in locals {
                        values.locals.insert(name.clone(), json_expr(v));
                    }
                }
            }
            "variable" => {
                for vars in items(value) {
                    for (name, body) in vars {
                        let default = body.get("default").map(json_expr);
                        values.variables.insert(name.clone(), default);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A JSON value as the expression it stands for: strings are templates, arrays stay
/// arrays, and an object becomes the array of its values (only what it refers to matters).
fn json_expr(v: &Value) -> Expression {
    match v {
        Value::String(s) => match hcl::edit::parser::parse_template(s) {
            Ok(t) => Expression::StringTemplate(t.into_iter().collect::<StringTemplate>()),
            Err(_) => Expression::from(s.as_str()),
        },
        Value::Array(a) => Expression::Array(a.iter().map(json_expr).collect::<Array>()),
        Value::Object(o) => Expression::Array(o.values().map(json_expr).collect::<Array>()),
        Value::Null => Expression::null(),
        Value::Bool(b) => Expression::from(*b),
        Value::Number(_) => Expression::from(0),
    }
}
