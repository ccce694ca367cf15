//! What the HCL reader takes from an expression without evaluating it: a literal string,
//! why an expression is not one, a provider reference, an import target, a variable's type
//! constraint and literal default.

use std::collections::BTreeSet;

use hcl::edit::expr::{Expression, ForExpr, ObjectKey, TraversalOperator};
use hcl::edit::template::Template;
use hcl::edit::visit::{self, Visit};

use super::imports::{ImportTo, ProviderRef};
use super::local_name_from_ref;
use super::variables::{DefaultValue, TypeConstraint};

/// The local name a provider configuration reference starts with (`NAME` or
/// `NAME.ALIAS`; a quoted one too, which terraform reads as the same reference).
pub(super) fn provider_ref_root(expr: &Expression) -> Option<String> {
    match expr {
        Expression::Traversal(t) => match t.operators.first().map(|o| o.value()) {
            None | Some(TraversalOperator::GetAttr(_)) => root_name(&t.expr),
            _ => None,
        },
        Expression::String(s) => Some(local_name_from_ref(s.as_str()).to_owned()),
        _ => root_name(expr),
    }
}

/// The name at the root of a reference. A reference is a traversal, so the keywords the
/// expression parser reads as literals (`null`, `true`, `false`) are names here: the
/// null provider's `null.alias` is a provider reference.
pub(super) fn root_name(expr: &Expression) -> Option<String> {
    match expr {
        Expression::Variable(v) => Some(v.as_str().to_owned()),
        Expression::Null(_) => Some("null".to_owned()),
        Expression::Bool(b) => Some(b.value().to_string()),
        _ => None,
    }
}

/// The type constraint a variable's `type` argument writes, as far as `variables.rs` judges
/// it.
pub(super) fn type_constraint(expr: &Expression) -> TypeConstraint {
    match expr {
        Expression::Variable(v) => match v.as_str() {
            "string" => TypeConstraint::String,
            "number" => TypeConstraint::Number,
            "bool" => TypeConstraint::Bool,
            _ => TypeConstraint::Other,
        },
        Expression::FuncCall(call) => collection_constraint(call),
        Expression::Parenthesis(p) => type_constraint(p.inner()),
        _ => TypeConstraint::Other,
    }
}

/// `list(T)`, `set(T)` or `map(T)` of a primitive `T`; anything else is not judged.
pub(super) fn collection_constraint(call: &hcl::edit::expr::FuncCall) -> TypeConstraint {
    let kind = match call.name.name.as_str() {
        "list" => "list",
        "set" => "set",
        "map" => "map",
        _ => return TypeConstraint::Other,
    };
    let args: Vec<&Expression> = call.args.iter().collect();
    match args[..] {
        [element] => match type_constraint(element) {
            e @ (TypeConstraint::String | TypeConstraint::Number | TypeConstraint::Bool) => {
                TypeConstraint::Collection(super::name::Name(kind), Box::new(e))
            }
            _ => TypeConstraint::Other,
        },
        _ => TypeConstraint::Other,
    }
}

/// The value a variable's `default` argument writes, as far as `variables.rs` judges it.
pub(super) fn default_value(expr: &Expression) -> DefaultValue {
    match expr {
        Expression::String(s) => DefaultValue::String(s.as_str().to_owned()),
        Expression::Number(_) => DefaultValue::Number,
        Expression::Bool(_) => DefaultValue::Bool,
        Expression::Null(_) => DefaultValue::Null,
        Expression::Array(_) => DefaultValue::Tuple,
        Expression::Object(_) => DefaultValue::Object,
        Expression::Parenthesis(p) => default_value(p.inner()),
        other => match literal_string(other) {
            Some(s) => DefaultValue::String(s),
            None => DefaultValue::Other,
        },
    }
}

/// The `NAME[.ALIAS]` a `provider` argument names.
pub(super) fn provider_ref(expr: &Expression) -> Option<ProviderRef> {
    match expr {
        Expression::Traversal(t) => {
            let name = root_name(&t.expr)?;
            match t.operators.iter().map(|o| o.value()).collect::<Vec<_>>()[..] {
                [] => Some(ProviderRef::parse(&name)),
                [TraversalOperator::GetAttr(alias)] => Some(ProviderRef {
                    name,
                    alias: alias.as_str().to_owned(),
                }),
                _ => None,
            }
        }
        Expression::String(s) => Some(ProviderRef::parse(s.as_str())),
        _ => root_name(expr).map(|name| ProviderRef::parse(&name)),
    }
}

/// The resource an `import` block's `to` address names, its instance keys left out.
pub(super) fn import_target(expr: &Expression) -> Option<ImportTo> {
    let Expression::Traversal(t) = expr else {
        return None;
    };
    let mut names = vec![root_name(&t.expr)?];
    for op in t.operators.iter() {
        match op.value() {
            TraversalOperator::GetAttr(name) => names.push(name.as_str().to_owned()),
            TraversalOperator::Index(_) | TraversalOperator::LegacyIndex(_) => {}
            _ => return None,
        }
    }
    ImportTo::from_names(&names)
}

/// The value of a string expression with nothing to evaluate: a quoted string, or a
/// template made only of literal parts.
pub(super) fn literal_string(expr: &Expression) -> Option<String> {
    match expr {
        Expression::String(s) => Some(s.as_str().to_owned()),
        Expression::StringTemplate(t) => {
            let mut out = String::new();
            for element in t.iter() {
                match element {
                    hcl::edit::template::Element::Literal(l) => out.push_str(l.as_str()),
                    _ => return None,
                }
            }
            Some(out)
        }
        Expression::Parenthesis(p) => literal_string(p.inner()),
        _ => None,
    }
}

/// Why an expression is not a literal, in the order terraform's evaluator meets it: a
/// function call is refused before its arguments are looked at.
pub(super) enum NonLiteral {
    FunctionCall,
    Reference,
    Other,
}

pub(super) fn non_literal(expr: &Expression) -> NonLiteral {
    match expr {
        Expression::FuncCall(_) => NonLiteral::FunctionCall,
        Expression::Variable(_) | Expression::Traversal(_) => NonLiteral::Reference,
        Expression::Parenthesis(p) => non_literal(p.inner()),
        Expression::StringTemplate(t) => t
            .iter()
            .find_map(|element| match element {
                hcl::edit::template::Element::Interpolation(i) => Some(non_literal(&i.expr)),
                _ => None,
            })
            .unwrap_or(NonLiteral::Other),
        Expression::BinaryOp(op) => match non_literal(&op.lhs_expr) {
            NonLiteral::Other => non_literal(&op.rhs_expr),
            found => found,
        },
        Expression::Conditional(c) => match non_literal(&c.cond_expr) {
            NonLiteral::Other => non_literal(&c.true_expr),
            found => found,
        },
        _ => NonLiteral::Other,
    }
}

/// The names at the roots of the references in `expr` (`var`, `local`, `path`, a resource
/// type…), as HCL's `Variables()` gives them: a `for` expression's own names and an
/// object's identifier keys are not references.
pub(super) fn references(expr: &Expression) -> Vec<String> {
    let mut roots = Roots::default();
    roots.visit_expr(expr);
    roots.names.into_iter().collect()
}

/// [`references`] of a JSON string, which terraform reads as a template (`None`: it is not
/// a valid one).
pub(super) fn template_references(text: &str) -> Option<Vec<String>> {
    let template: Template = hcl::edit::parser::parse_template(text).ok()?;
    let mut roots = Roots::default();
    roots.visit_template(&template);
    Some(roots.names.into_iter().collect())
}

#[derive(Default)]
struct Roots {
    names: BTreeSet<String>,
    /// The names `for` expressions around the current node bind.
    bound: Vec<String>,
}

impl Visit for Roots {
    fn visit_expr(&mut self, expr: &Expression) {
        if let Expression::Variable(v) = expr {
            if !self.bound.iter().any(|b| b == v.as_str()) {
                self.names.insert(v.as_str().to_owned());
            }
            return;
        }
        visit::visit_expr(self, expr);
    }

    fn visit_object_key(&mut self, key: &ObjectKey) {
        if let ObjectKey::Expression(e) = key {
            self.visit_expr(e);
        }
    }

    fn visit_for_expr(&mut self, node: &ForExpr) {
        self.visit_expr(&node.intro.collection_expr);
        let outer = self.bound.len();
        self.bound
            .extend(node.intro.key_var.iter().map(|k| k.as_str().to_owned()));
        self.bound.push(node.intro.value_var.as_str().to_owned());
        if let Some(key) = &node.key_expr {
            self.visit_expr(key);
        }
        self.visit_expr(&node.value_expr);
        if let Some(cond) = &node.cond {
            self.visit_expr(&cond.expr);
        }
        self.bound.truncate(outer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(text: &str) -> Vec<String> {
        references(&hcl::edit::parser::parse_expr(text).unwrap())
    }

    #[test]
    fn references_are_the_roots_of_traversals() {
        assert_eq!(refs(r#""hashicorp/aws""#), Vec::<String>::new());
        assert_eq!(refs("var.a"), ["var"]);
        assert_eq!(refs(r#""${var.ns}/${local.t}""#), ["local", "var"]);
        assert_eq!(refs("lower(path.module)"), ["path"]);
        assert_eq!(refs("test_instance.x.id"), ["test_instance"]);
        assert_eq!(refs("{ a = var.x }"), ["var"]);
        assert_eq!(
            refs("[for k, v in local.m : v if k != each.key]"),
            ["each", "local"]
        );
        assert_eq!(template_references("${var.x}/y").unwrap(), ["var"]);
        assert_eq!(template_references("plain").unwrap(), Vec::<String>::new());
    }
}
