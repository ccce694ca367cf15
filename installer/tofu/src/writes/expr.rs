//! Where a path expression points, without evaluating it: into the module's own directory,
//! elsewhere, or unknown here.

use std::collections::{BTreeMap, BTreeSet};

use hcl::edit::expr::{Expression, TraversalOperator};
use hcl::edit::template::{Directive, Element, Template};

/// Functions whose result is not a path into the directory their arguments name: file
/// contents, hashes, names relative to a directory. A `path.module` inside their arguments
/// is read, never written.
const NOT_A_PATH: &[&str] = &[
    "file",
    "filebase64",
    "filemd5",
    "filesha1",
    "filesha256",
    "filesha512",
    "filebase64sha256",
    "filebase64sha512",
    "fileexists",
    "fileset",
    "templatefile",
    "basename",
    "md5",
    "sha1",
    "sha256",
    "sha512",
    "base64sha256",
    "base64sha512",
    "uuidv5",
    "length",
];

/// Functions whose first argument leads the path they return (`abspath(path.module)` is the
/// module's directory, `format("%s/x", path.module)` is inside it when the format starts
/// with `%s`).
const PATH_FROM_FIRST: &[&str] = &[
    "abspath",
    "pathexpand",
    "dirname",
    "trimsuffix",
    "replace",
    "lower",
    "upper",
    "trimspace",
    "chomp",
    "tostring",
    "sensitive",
    "nonsensitive",
];

/// Where the leading component of a path expression is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Place {
    /// A literal (relative to the working directory, or absolute), `path.root` or `path.cwd`.
    Elsewhere,
    /// Cannot be known here: a variable, another resource's attribute, `each`, `count`.
    Unknown,
    /// The module's own directory.
    Module,
}

/// The module's named values an expression may lead to.
#[derive(Default)]
pub(super) struct Values {
    /// `locals` by name.
    pub locals: BTreeMap<String, Expression>,
    /// `variable` defaults by name (`None`: declared without a default).
    pub variables: BTreeMap<String, Option<Expression>>,
}

/// What a path expression was found to be, with the variable or value that made it unknown.
pub(super) struct Verdict {
    pub place: Place,
    /// Why, in words: `path.module`, `var.dir`, `local.out`, …
    pub via: String,
}

impl Values {
    /// Where the path `expr` points. Any `path.module` outside a [`NOT_A_PATH`] function
    /// makes it the module's directory (`"${var.prefix}${path.module}"` included); else the
    /// leading component decides.
    pub(super) fn place(&self, expr: &Expression) -> Verdict {
        let mut seen = BTreeSet::new();
        if let Some(via) = self.names_module(expr, &mut seen) {
            return Verdict {
                place: Place::Module,
                via,
            };
        }
        let mut seen = BTreeSet::new();
        let (place, via) = self.lead(expr, &mut seen);
        Verdict { place, via }
    }

    /// Whether `expr` mentions the module's directory where it is used as a path or a word
    /// of a command (outside [`NOT_A_PATH`] functions), following locals. Returns how.
    pub(super) fn names_module(
        &self,
        expr: &Expression,
        seen: &mut BTreeSet<String>,
    ) -> Option<String> {
        let mut found = None;
        self.visit(expr, seen, &mut found);
        found
    }

    fn visit(&self, expr: &Expression, seen: &mut BTreeSet<String>, found: &mut Option<String>) {
        if found.is_some() {
            return;
        }
        match expr {
            Expression::Traversal(t) => {
                match reference(expr) {
                    Some(Ref::PathModule) => *found = Some("path.module".into()),
                    Some(Ref::Local(name)) => {
                        if let Some(via) = self.through_local(&name, seen) {
                            *found = Some(format!("local.{name} ({via})"));
                        }
                    }
                    Some(Ref::Var(name)) => {
                        // Terraform refuses references in a default; one that names the
                        // module's directory anyway counts.
                        if let Some(Some(default)) = self.variables.get(&name) {
                            let mut inner = BTreeSet::new();
                            if self.names_module(default, &mut inner).is_some() {
                                *found = Some(format!("var.{name}'s default"));
                            }
                        }
                    }
                    _ => {}
                }
                self.visit(&t.expr, seen, found);
                for op in &t.operators {
                    if let TraversalOperator::Index(i) = op.value() {
                        self.visit(i, seen, found);
                    }
                }
            }
            Expression::FuncCall(f) => {
                if f.name.namespace.is_empty() && NOT_A_PATH.contains(&f.name.name.as_str()) {
                    return;
                }
                for a in f.args.iter() {
                    self.visit(a, seen, found);
                }
            }
            Expression::StringTemplate(t) => self.visit_template(t, seen, found),
            Expression::HeredocTemplate(h) => self.visit_template(&h.template, seen, found),
            Expression::Parenthesis(p) => self.visit(p.inner(), seen, found),
            Expression::Array(a) => a.iter().for_each(|e| self.visit(e, seen, found)),
            Expression::Object(o) => o
                .iter()
                .for_each(|(_, v)| self.visit(v.expr(), seen, found)),
            Expression::Conditional(c) => {
                self.visit(&c.true_expr, seen, found);
                self.visit(&c.false_expr, seen, found);
            }
            Expression::UnaryOp(u) => self.visit(&u.expr, seen, found),
            Expression::BinaryOp(b) => {
                self.visit(&b.lhs_expr, seen, found);
                self.visit(&b.rhs_expr, seen, found);
            }
            Expression::ForExpr(f) => {
                self.visit(&f.intro.collection_expr, seen, found);
                if let Some(k) = &f.key_expr {
                    self.visit(k, seen, found);
                }
                self.visit(&f.value_expr, seen, found);
            }
            Expression::Null(_)
            | Expression::Bool(_)
            | Expression::Number(_)
            | Expression::String(_)
            | Expression::Variable(_) => {}
        }
    }

    fn visit_template(
        &self,
        t: &Template,
        seen: &mut BTreeSet<String>,
        found: &mut Option<String>,
    ) {
        for element in t.iter() {
            match element {
                Element::Literal(_) => {}
                Element::Interpolation(i) => self.visit(&i.expr, seen, found),
                Element::Directive(d) => match d.as_ref() {
                    Directive::If(i) => {
                        self.visit_template(&i.if_expr.template, seen, found);
                        if let Some(e) = &i.else_expr {
                            self.visit_template(&e.template, seen, found);
                        }
                    }
                    Directive::For(f) => {
                        self.visit(&f.for_expr.collection_expr, seen, found);
                        self.visit_template(&f.for_expr.template, seen, found);
                    }
                },
            }
        }
    }

    fn through_local(&self, name: &str, seen: &mut BTreeSet<String>) -> Option<String> {
        if !seen.insert(name.to_owned()) {
            return None;
        }
        let expr = self.locals.get(name)?;
        self.names_module(expr, seen)
    }

    /// Where the leading component of the path `expr` is, and what decided it.
    fn lead(&self, expr: &Expression, seen: &mut BTreeSet<String>) -> (Place, String) {
        let unknown = |e: &Expression| (Place::Unknown, short(e));
        match expr {
            Expression::Null(_)
            | Expression::Bool(_)
            | Expression::Number(_)
            | Expression::String(_) => (Place::Elsewhere, "a literal".into()),
            Expression::StringTemplate(t) => self.lead_template(t, seen),
            Expression::HeredocTemplate(h) => self.lead_template(&h.template, seen),
            Expression::Parenthesis(p) => self.lead(p.inner(), seen),
            Expression::Traversal(_) => match reference(expr) {
                Some(Ref::PathModule) => (Place::Module, "path.module".into()),
                Some(Ref::PathRoot) => (Place::Elsewhere, "path.root".into()),
                Some(Ref::PathCwd) => (Place::Elsewhere, "path.cwd".into()),
                Some(Ref::Local(name)) => {
                    if !seen.insert(name.clone()) {
                        return (Place::Unknown, format!("local.{name}"));
                    }
                    match self.locals.get(&name) {
                        Some(e) => {
                            let (place, via) = self.lead(e, seen);
                            (place, format!("local.{name} ({via})"))
                        }
                        None => (Place::Unknown, format!("local.{name}")),
                    }
                }
                Some(Ref::Var(name)) => (Place::Unknown, format!("var.{name}")),
                _ => unknown(expr),
            },
            Expression::Conditional(c) => {
                let a = self.lead(&c.true_expr, seen);
                let b = self.lead(&c.false_expr, seen);
                worst(a, b)
            }
            Expression::FuncCall(f) => {
                let name = f.name.name.as_str();
                let mut args = f.args.iter();
                if !f.name.namespace.is_empty() {
                    return unknown(expr);
                }
                if NOT_A_PATH.contains(&name) {
                    return (Place::Elsewhere, format!("{name}(…)"));
                }
                match name {
                    "format" => match args.next() {
                        Some(Expression::String(s)) if !s.as_str().starts_with('%') => {
                            (Place::Elsewhere, "a literal".into())
                        }
                        Some(Expression::String(_)) => match args.next() {
                            Some(first) => self.lead(first, seen),
                            None => unknown(expr),
                        },
                        _ => unknown(expr),
                    },
                    "join" => {
                        let _separator = args.next();
                        match args.next() {
                            Some(Expression::Array(a)) => match a.iter().next() {
                                Some(first) => self.lead(first, seen),
                                None => (Place::Elsewhere, "a literal".into()),
                            },
                            _ => unknown(expr),
                        }
                    }
                    "coalesce" | "try" => args
                        .map(|a| self.lead(a, seen))
                        .reduce(worst)
                        .unwrap_or_else(|| unknown(expr)),
                    _ if PATH_FROM_FIRST.contains(&name) => match args.next() {
                        Some(first) => self.lead(first, seen),
                        None => unknown(expr),
                    },
                    _ => unknown(expr),
                }
            }
            _ => unknown(expr),
        }
    }

    fn lead_template(&self, t: &Template, seen: &mut BTreeSet<String>) -> (Place, String) {
        match t.iter().next() {
            None => (Place::Elsewhere, "a literal".into()),
            Some(Element::Literal(_)) => (Place::Elsewhere, "a literal".into()),
            Some(Element::Interpolation(i)) => self.lead(&i.expr, seen),
            Some(Element::Directive(_)) => (Place::Unknown, "a template directive".into()),
        }
    }
}

/// The verdict to keep of two alternatives: the one nearer the module.
fn worst(a: (Place, String), b: (Place, String)) -> (Place, String) {
    if b.0 > a.0 {
        b
    } else {
        a
    }
}

/// A named value an expression refers to.
enum Ref {
    PathModule,
    PathRoot,
    PathCwd,
    Var(String),
    Local(String),
    Other,
}

/// The named value a traversal starts with (`path.module`, `var.x`, `local.y`, …).
fn reference(expr: &Expression) -> Option<Ref> {
    let Expression::Traversal(t) = expr else {
        return None;
    };
    let Expression::Variable(root) = &t.expr else {
        return Some(Ref::Other);
    };
    let attr = match t.operators.first().map(|o| o.value()) {
        Some(TraversalOperator::GetAttr(a)) => a.as_str().to_owned(),
        Some(TraversalOperator::Index(Expression::String(s))) => s.as_str().to_owned(),
        _ => return Some(Ref::Other),
    };
    Some(match (root.as_str(), attr.as_str()) {
        ("path", "module") => Ref::PathModule,
        ("path", "root") => Ref::PathRoot,
        ("path", "cwd") => Ref::PathCwd,
        ("var", _) => Ref::Var(attr),
        ("local", _) => Ref::Local(attr),
        _ => Ref::Other,
    })
}

/// An expression as a short text for a message.
fn short(expr: &Expression) -> String {
    let text = expr.to_string();
    let text = text.trim();
    let mut out: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        out.push('…');
    }
    out
}
