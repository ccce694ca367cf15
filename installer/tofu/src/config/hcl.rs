//! The native-syntax reader: what one `.tf`/`.tofu` file contributes.

use std::path::Path;

use hcl::edit::expr::{Expression, ObjectKey, TraversalOperator};
use hcl::edit::structure::{Attribute, Block, Body, Structure};
use hcl::edit::Span;

use super::{
    check_local_name, implied_local_name, invalid, local_name_from_ref, ConfigError, FileContent,
    ModuleCall, ProviderConfig, RequiredBlock, RequiredEntry, SourcePos,
};
use crate::span::line_at;

struct HclFile<'a> {
    src: &'a str,
    path: &'a Path,
}

impl HclFile<'_> {
    fn at(&self, node: &impl Span) -> SourcePos {
        SourcePos {
            file: self.path.to_owned(),
            line: node.span().map(|r| line_at(self.src, r.start)),
        }
    }

    fn string_attr(&self, body: &Body, name: &str) -> Result<Option<String>, ConfigError> {
        match body.get_attribute(name) {
            None => Ok(None),
            Some(a) => self.string_value(a).map(Some),
        }
    }

    fn string_value(&self, a: &Attribute) -> Result<String, ConfigError> {
        match &a.value {
            Expression::String(s) => Ok(s.as_str().to_owned()),
            _ => Err(invalid(
                &self.at(a),
                "Invalid value",
                format!(
                    "The {:?} argument must be a literal string.",
                    a.key.as_str()
                ),
            )),
        }
    }

    fn required_providers(&self, block: &Block) -> Result<RequiredBlock, ConfigError> {
        let mut entries = Vec::new();
        for s in block.body.iter() {
            let Structure::Attribute(a) = s else {
                return Err(invalid(
                    &self.at(s),
                    "Unexpected block",
                    "required_providers may contain only attributes.".into(),
                ));
            };
            let name = a.key.as_str().to_owned();
            let at = self.at(a);
            let entry = match &a.value {
                // Legacy 0.12 form: `name = "constraint"`.
                Expression::String(v) => RequiredEntry {
                    name,
                    source: None,
                    version: Some(v.as_str().to_owned()),
                    at,
                    version_at: None,
                },
                Expression::Object(obj) => {
                    check_local_name(&name, &at)?;
                    let mut entry = RequiredEntry {
                        name,
                        source: None,
                        version: None,
                        at: at.clone(),
                        version_at: None,
                    };
                    for (k, v) in obj.iter() {
                        let key = match k {
                            ObjectKey::Ident(i) => i.as_str().to_owned(),
                            ObjectKey::Expression(Expression::String(s)) => s.as_str().to_owned(),
                            ObjectKey::Expression(e) => e.to_string(),
                        };
                        let value_at = v.expr().span().map_or(at.clone(), |r| SourcePos {
                            file: self.path.to_owned(),
                            line: Some(line_at(self.src, r.start)),
                        });
                        let as_string = |what: &'static str| {
                            match v.expr() {
                            Expression::String(s) => Ok(s.as_str().to_owned()),
                            _ => Err(invalid(&value_at, what, format!("The {key:?} of a provider requirement must be a literal string."))),
                        }
                        };
                        match key.as_str() {
                            "version" => {
                                entry.version = Some(as_string("Invalid version constraint")?);
                                entry.version_at = Some(value_at.clone());
                            }
                            "source" => entry.source = Some(as_string("Invalid source")?),
                            "configuration_aliases" => {}
                            other => {
                                return Err(invalid(
                                    &value_at,
                                    "Invalid required_providers object",
                                    format!("required_providers objects can only contain \"version\", \"source\" and \"configuration_aliases\" attributes, not {other:?}. To configure a provider, use a \"provider\" block."),
                                ))
                            }
                        }
                    }
                    entry
                }
                _ => {
                    return Err(invalid(
                        &at,
                        "Invalid required_providers object",
                        "required_providers entries must be strings or objects.".into(),
                    ))
                }
            };
            entries.push(entry);
        }
        Ok(RequiredBlock {
            at: self.at(block),
            entries,
        })
    }

    fn resource_provider(&self, block: &Block) -> Option<String> {
        let explicit = block
            .body
            .get_attribute("provider")
            .and_then(|a| match &a.value {
                Expression::Variable(v) => Some(v.as_str().to_owned()),
                Expression::Traversal(t) => match (&t.expr, t.operators.first().map(|o| o.value()))
                {
                    (Expression::Variable(v), None | Some(TraversalOperator::GetAttr(_))) => {
                        Some(v.as_str().to_owned())
                    }
                    _ => None,
                },
                // Not valid in native syntax, but harmless to accept.
                Expression::String(s) => Some(local_name_from_ref(s.as_str()).to_owned()),
                _ => None,
            });
        explicit.or_else(|| {
            block
                .labels
                .first()
                .map(|l| implied_local_name(l.as_str()).to_owned())
        })
    }
}

/// The line a syntax error is on, as terraform counts it. The parser clamps an
/// error at the end of input to the last byte, so an unexpected end after a
/// final newline would be reported on the line before; terraform reports the
/// (empty) last line.
fn syntax_error_line(src: &str, e: &hcl::edit::parser::Error) -> usize {
    let loc = e.location();
    let at_eof = loc.offset() + 1 == src.len() && loc.column() > e.line().chars().count() + 1;
    if at_eof && src.ends_with('\n') {
        src.matches('\n').count() + 1
    } else {
        loc.line()
    }
}

pub(super) fn parse_hcl(src: &str, path: &Path) -> Result<FileContent, ConfigError> {
    let body = hcl::edit::parser::parse_body(src).map_err(|e| ConfigError::Syntax {
        at: SourcePos {
            file: path.to_owned(),
            line: Some(syntax_error_line(src, &e)),
        },
        message: e.message().to_owned(),
    })?;
    let f = HclFile { src, path };
    let mut out = FileContent::default();
    for block in body.blocks() {
        match block.ident.as_str() {
            "terraform" => {
                for inner in block.body.blocks() {
                    if inner.ident.as_str() == "required_providers" {
                        out.required_blocks.push(f.required_providers(inner)?);
                    }
                }
            }
            "provider" => {
                let Some(name) = block.labels.first() else {
                    continue;
                };
                out.provider_configs.push(ProviderConfig {
                    name: name.as_str().to_owned(),
                    alias: f.string_attr(&block.body, "alias")?.unwrap_or_default(),
                    version: f.string_attr(&block.body, "version")?,
                    at: f.at(block),
                });
            }
            "resource" | "data" | "ephemeral" => {
                if let Some(local) = f.resource_provider(block) {
                    out.resource_providers.push(local);
                }
            }
            "module" => {
                let Some(name) = block.labels.first() else {
                    continue;
                };
                let source = match block.body.get_attribute("source") {
                    Some(a) => a.value.as_str().unwrap_or_default().to_owned(),
                    None => String::new(),
                };
                let version = block
                    .body
                    .get_attribute("version")
                    .and_then(|a| a.value.as_str().map(str::to_owned));
                out.module_calls.push((
                    name.as_str().to_owned(),
                    ModuleCall {
                        source,
                        version,
                        at: f.at(block),
                    },
                ));
            }
            _ => {}
        }
    }
    Ok(out)
}
