//! What the HCL reader takes from an expression without evaluating it: a literal string,
//! why an expression is not one, a provider reference, an import target, a variable's type
//! constraint and literal default.

use hcl::edit::expr::{Expression, TraversalOperator};

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
