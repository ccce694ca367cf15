//! The native-syntax reader: what one `.tf`/`.tofu` file contributes.

use std::path::Path;

use hcl::edit::expr::{Expression, ObjectKey};
use hcl::edit::structure::{Attribute, Block, Body, Structure};
use hcl::edit::Span;

use super::hcl_exprs::{literal_string, non_literal, provider_ref_root, references, NonLiteral};
use super::schema;
use super::{
    check_local_name, implied_local_name, invalid, CallArg, ConfigError, FileContent,
    RequiredBlock, RequiredEntry, SourcePos,
};
use crate::flavor::Flavor;
use crate::span::LineIndex;

mod blocks;

struct HclFile<'a> {
    path: &'a Path,
    lines: LineIndex<'a>,
}

impl HclFile<'_> {
    fn at(&self, node: &impl Span) -> SourcePos {
        SourcePos {
            file: self.path.to_owned(),
            line: node.span().map(|r| self.lines.line(r.start)),
        }
    }

    fn string_attr(&self, body: &Body, name: &str) -> Result<Option<String>, ConfigError> {
        match body.get_attribute(name) {
            None => Ok(None),
            Some(a) => self.string_value(a).map(Some),
        }
    }

    /// An argument that init reads before anything is evaluated (a module's `source`
    /// and `version`): a literal string, or an expression that only OpenTofu's early
    /// evaluation may compute; terraform refuses it with the diagnostic kept here.
    fn static_string_attr(&self, body: &Body, name: &str) -> Option<CallArg> {
        let a = body.get_attribute(name)?;
        if let Some(s) = literal_string(&a.value) {
            return Some(CallArg::Literal(s));
        }
        let refusal = match non_literal(&a.value) {
            NonLiteral::FunctionCall => (
                "Function calls not allowed",
                "Functions may not be called here.",
            ),
            NonLiteral::Reference => ("Variables not allowed", "Variables may not be used here."),
            NonLiteral::Other => ("Invalid value", "A literal string is required here."),
        };
        Some(CallArg::Expr {
            expr: ::hcl::Expression::from(a.value.clone()),
            at: self.at(a),
            refusal,
            refers_to: references(&a.value),
            as_written: None,
        })
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
                    version: Some(CallArg::Literal(v.as_str().to_owned())),
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
                            line: Some(self.lines.line(r.start)),
                        });
                        // A literal string; anything else is kept for the tool's rule:
                        // refused in its words, or evaluated (`tool_rules`).
                        let arg = |refusal: (&'static str, &'static str)| match literal_string(
                            v.expr(),
                        ) {
                            Some(s) => CallArg::Literal(s),
                            None => CallArg::Expr {
                                expr: ::hcl::Expression::from(v.expr().clone()),
                                at: value_at.clone(),
                                refusal,
                                refers_to: references(v.expr()),
                                as_written: None,
                            },
                        };
                        match key.as_str() {
                            "version" => {
                                entry.version = Some(arg((
                                    "Invalid version constraint",
                                    "Version must be specified as a string.",
                                )));
                                entry.version_at = Some(value_at.clone());
                            }
                            "source" => {
                                entry.source = Some(arg((
                                    "Invalid source",
                                    "Source must be specified as a string.",
                                )))
                            }
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

    /// The local provider name a resource-like block uses: its `provider` argument's (which
    /// must be normalized), else the one its type implies.
    fn resource_provider(&self, block: &Block) -> Result<Option<String>, ConfigError> {
        if let Some(a) = block.body.get_attribute("provider") {
            if let Some(local) = provider_ref_root(&a.value) {
                check_local_name(&local, &self.value_at(&a.value, a))?;
                return Ok(Some(local));
            }
            return Ok(None);
        }
        Ok(block
            .labels
            .first()
            .map(|l| implied_local_name(l.as_str()).to_owned()))
    }

    /// The keys and values of a module call's `providers` map name provider configurations;
    /// their local names must be normalized.
    fn check_module_providers(&self, block: &Block) -> Result<(), ConfigError> {
        let Some(a) = block.body.get_attribute("providers") else {
            return Ok(());
        };
        let Expression::Object(map) = &a.value else {
            return Ok(());
        };
        for (key, value) in map.iter() {
            let key_root = match key {
                ObjectKey::Ident(i) => Some(i.as_str().to_owned()),
                ObjectKey::Expression(e) => provider_ref_root(e),
            };
            if let Some(local) = key_root {
                check_local_name(&local, &self.value_at(key, a))?;
            }
            if let Some(local) = provider_ref_root(value.expr()) {
                check_local_name(&local, &self.value_at(value.expr(), a))?;
            }
        }
        Ok(())
    }

    /// Where `node` is, or its attribute `a` when the node has no position.
    fn value_at(&self, node: &impl Span, a: &Attribute) -> SourcePos {
        match node.span() {
            Some(r) => SourcePos {
                file: self.path.to_owned(),
                line: Some(self.lines.line(r.start)),
            },
            None => self.at(a),
        }
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

pub(super) fn parse_hcl(
    src: &str,
    path: &Path,
    flavor: Flavor,
) -> Result<FileContent, ConfigError> {
    let body = hcl::edit::parser::parse_body(src).map_err(|e| ConfigError::Syntax {
        at: SourcePos {
            file: path.to_owned(),
            line: Some(syntax_error_line(src, &e)),
        },
        message: e.message().to_owned(),
    })?;
    let f = HclFile {
        path,
        lines: LineIndex::new(src),
    };
    let mut out = FileContent::default();
    for structure in body.iter() {
        let block = match structure {
            Structure::Block(block) => block,
            Structure::Attribute(a) => {
                return Err(invalid(
                    &f.at(a),
                    "Unsupported argument",
                    format!(
                        "An argument named {:?} is not expected here.",
                        a.key.as_str()
                    ),
                ))
            }
        };
        check_block_header(&f, block, flavor)?;
        match block.ident.as_str() {
            "resource" | "data" | "output" => {
                if let Some(a) = block.body.get_attribute("depends_on") {
                    if let Expression::Array(items) = &a.value {
                        if let Some(first) = items.iter().next() {
                            out.depends_on.push(f.value_at(first, a));
                        }
                    }
                }
            }
            "moved" => out.moved.push(f.at(block)),
            "import" => out.import_at.push(f.at(block)),
            _ => {}
        }
        note_check_rules(&f, block, &mut out);
        out.note_block_type(block.ident.as_str(), f.at(block));
        if block.ident.as_str() == "terraform" {
            for inner in block.body.blocks() {
                out.note_block_type(inner.ident.as_str(), f.at(inner));
            }
        }
        match block.ident.as_str() {
            "terraform" => f.terraform_block(block, &mut out)?,
            "provider" => f.provider_block(block, flavor, &mut out)?,
            "action" => f.action_block(block, &mut out)?,
            "resource" | "data" | "ephemeral" => f.resource_block(block, &mut out)?,
            "import" => f.import_block(block, &mut out)?,
            "check" => f.check_block(block, &mut out)?,
            "variable" | "output" => f.declaration_block(block, &mut out)?,
            "locals" => f.locals_block(block, &mut out)?,
            "module" => f.module_block(block, &mut out)?,
            _ => {}
        }
    }
    Ok(out)
}

/// Remember the check rules `block` holds (a variable's `validation`, an output's
/// `precondition`, a resource's or data source's `lifecycle` `precondition` and
/// `postcondition`) and a `check` block itself: an override file may hold none of them.
fn note_check_rules(f: &HclFile<'_>, block: &Block, out: &mut FileContent) {
    let inner: &[&str] = match block.ident.as_str() {
        "variable" => &["validation"],
        "output" => &["precondition", "postcondition"],
        "check" => {
            out.check_rules.push(("check".to_owned(), f.at(block)));
            return;
        }
        _ => &[],
    };
    for b in block.body.blocks() {
        if inner.contains(&b.ident.as_str()) {
            out.check_rules.push((b.ident.as_str().to_owned(), f.at(b)));
        }
        if b.ident.as_str() == "lifecycle" && matches!(block.ident.as_str(), "resource" | "data") {
            for rule in b.body.blocks() {
                if matches!(rule.ident.as_str(), "precondition" | "postcondition") {
                    out.check_rules
                        .push((rule.ident.as_str().to_owned(), f.at(rule)));
                }
            }
        }
    }
}

/// A top-level block must be of a type the flavor's tool knows, with the labels that type
/// takes, and so must the blocks its decoder reads inside it; a module's name must be an
/// identifier. The messages are terraform's.
fn check_block_header(f: &HclFile<'_>, block: &Block, flavor: Flavor) -> Result<(), ConfigError> {
    let kind = block.ident.as_str();
    let at = f.at(block);
    if kind == "required_providers" {
        return Err(invalid(
            &at,
            "Invalid required_providers block",
            "A \"required_providers\" block must be nested inside a \"terraform\" block.".into(),
        ));
    }
    let Some(block_type) = schema::top_level(kind, flavor) else {
        return Err(invalid(
            &at,
            "Unsupported block type",
            schema::unsupported_top_level_detail(kind, flavor),
        ));
    };
    check_labels(f, block, block_type)?;
    if kind == "module" {
        let name = block.labels[0].as_str();
        if !super::validate::is_identifier(name) {
            return Err(invalid(
                &at,
                "Invalid module instance name",
                "A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.".into(),
            ));
        }
    }
    for inner in block.body.blocks() {
        match schema::nested_in(kind, inner.ident.as_str(), flavor) {
            Ok(Some(inner_type)) => check_labels(f, inner, inner_type)?,
            Ok(None) => {}
            Err(detail) => return Err(invalid(&f.at(inner), "Unsupported block type", detail)),
        }
    }
    Ok(())
}

/// `block` has the labels `block_type` takes; the error points at the first label too
/// many, or at the block when one is missing.
fn check_labels(
    f: &HclFile<'_>,
    block: &Block,
    block_type: &schema::BlockType,
) -> Result<(), ConfigError> {
    block_type
        .check_labels(block.labels.len())
        .map_err(|problem| {
            let at = match problem.extraneous {
                Some(i) => f.at(&block.labels[i]),
                None => f.at(block),
            };
            invalid(&at, problem.summary, problem.detail)
        })
}

/// `count`, `depends_on` and `source` (and, for terraform, `for_each`, which tofu takes),
/// and the `lifecycle` and `locals` blocks, are reserved in provider blocks.
fn check_provider_arguments(
    f: &HclFile<'_>,
    block: &Block,
    flavor: Flavor,
) -> Result<(), ConfigError> {
    let reserved = |name: &str| {
        ["count", "depends_on", "source"].contains(&name)
            || (name == "for_each" && flavor == Flavor::Terraform)
    };
    for s in block.body.iter() {
        match s {
            Structure::Attribute(a) if reserved(a.key.as_str()) => {
                return Err(invalid(
                    &f.at(a),
                    "Reserved argument name in provider block",
                    format!(
                        "The provider argument name {:?} is reserved for use by Terraform in a future version.",
                        a.key.as_str()
                    ),
                ));
            }
            Structure::Block(b) if ["lifecycle", "locals"].contains(&b.ident.as_str()) => {
                return Err(invalid(
                    &f.at(b),
                    "Reserved block type name in provider block",
                    format!(
                        "The block type name {:?} is reserved for use by Terraform in a future version.",
                        b.ident.as_str()
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
