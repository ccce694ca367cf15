//! Whether a variable's default value fits its type constraint, as far as the tools decide
//! it at init: when a file declares both (`configs.decodeVariableBlock`), and when an
//! override file changes either (`module_merge.go`, `Variable.merge`), terraform and
//! OpenTofu alike. Only what is certain without an evaluator is judged: a literal default
//! against a primitive type or a collection of one, and a null default where
//! `nullable = false`; anything else is left to the tool's `plan`. The syntaxes' readers
//! (`hcl.rs`, `json.rs`) make these values from what a file writes.

use super::{invalid, ConfigError, SourcePos};

/// A type constraint, as far as it is judged here.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum TypeConstraint {
    String,
    Number,
    Bool,
    /// `list(T)`, `set(T)` or `map(T)` of a primitive `T`.
    Collection(super::name::Name, Box<TypeConstraint>),
    /// Anything else (`any`, objects, tuples, `optional`, …): not judged.
    Other,
}

impl TypeConstraint {
    /// cty's friendly name.
    fn name(&self) -> String {
        match self {
            TypeConstraint::String => "string".into(),
            TypeConstraint::Number => "number".into(),
            TypeConstraint::Bool => "bool".into(),
            TypeConstraint::Collection(kind, e) => format!("{} of {}", kind.0, e.name()),
            TypeConstraint::Other => "value".into(),
        }
    }
}

/// A default value, as far as it is judged here.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) enum DefaultValue {
    String(String),
    Number,
    Bool,
    Null,
    /// `[…]`
    Tuple,
    /// `{…}`
    Object,
    /// An expression: not judged.
    Other,
}

/// Why `value` does not convert to `ty`, in cty's words; `None` when it does, or when it
/// cannot be told here.
fn conversion_error(value: &DefaultValue, ty: &TypeConstraint) -> Option<String> {
    use DefaultValue as V;
    use TypeConstraint as T;
    let required = |t: &T| Some(format!("{} required", t.name()));
    match (ty, value) {
        (T::Other, _) | (_, V::Other | V::Null) => None,
        (T::String, V::String(_) | V::Number | V::Bool) => None,
        (T::Number, V::Number) | (T::Bool, V::Bool) => None,
        (T::Number, V::String(s)) => {
            let t = s.as_str();
            let numeric = !t.is_empty()
                && t.trim() == t
                && t.parse::<f64>().is_ok_and(f64::is_finite)
                && !t.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E');
            (!numeric).then(|| "a number is required".to_owned())
        }
        (T::Bool, V::String(s)) => match s.as_str() {
            "true" | "false" => None,
            // cty's rule for other spellings is not judged here.
            "1" | "0" => None,
            _ => Some("a bool is required".to_owned()),
        },
        (T::Collection(..), V::Tuple | V::Object) => None,
        (t, _) => required(t),
    }
}

/// One `variable` block as a file writes it (what is judged here).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct VariableFacts {
    pub(super) name: String,
    pub(super) ty: Option<TypeConstraint>,
    pub(super) default: Option<DefaultValue>,
    pub(super) nullable: Option<bool>,
    /// The block.
    pub(super) at: SourcePos,
    /// Its `default` argument.
    pub(super) default_at: Option<SourcePos>,
}

/// A block that writes both `type` and `default`: they must agree (decode time).
pub(super) fn check_block(v: &VariableFacts) -> Result<(), ConfigError> {
    let (Some(ty), Some(value)) = (&v.ty, &v.default) else {
        return Ok(());
    };
    match conversion_error(value, ty) {
        Some(err) => Err(invalid(
            v.default_at.as_ref().unwrap_or(&v.at),
            "Invalid default value for variable",
            format!(
                "This default value is not compatible with the variable's type constraint: {err}."
            ),
        )),
        None => Ok(()),
    }
}

/// `base` (a primary file's declaration) with `over` (an override file's) merged in, checked
/// as the tools check the result; the merged declaration for the next override.
pub(super) fn merge(
    base: &VariableFacts,
    over: &VariableFacts,
) -> Result<VariableFacts, ConfigError> {
    let mut merged = base.clone();
    if over.ty.is_some() {
        merged.ty.clone_from(&over.ty);
    }
    if over.default.is_some() {
        merged.default.clone_from(&over.default);
    }
    if over.nullable.is_some() {
        merged.nullable = over.nullable;
    }
    if let (Some(ty), Some(value)) = (&merged.ty, &merged.default) {
        if let Some(err) = conversion_error(value, ty) {
            let detail = match (over.ty.is_some(), over.default.is_some()) {
                (true, false) => format!(
                    "Overriding this variable's type constraint has made its default value invalid: {err}."
                ),
                (false, true) => format!(
                    "The overridden default value for this variable is not compatible with the variable's type constraint: {err}."
                ),
                _ => format!(
                    "This variable's default value is not compatible with its type constraint: {err}."
                ),
            };
            return Err(invalid(
                &over.at,
                "Invalid default value for variable",
                detail,
            ));
        }
    }
    if merged.nullable == Some(false) && merged.default == Some(DefaultValue::Null) {
        return Err(invalid(
            &over.at,
            "Invalid default value for variable",
            "A null default value is not valid when nullable=false.".into(),
        ));
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_defaults_convert_as_cty_converts_them() {
        use DefaultValue as V;
        use TypeConstraint as T;
        let s = |x: &str| V::String(x.into());
        let list = T::Collection(crate::config::name::Name("list"), Box::new(T::String));
        for (value, ty, want) in [
            (s("abc"), T::Number, Some("a number is required")),
            (s("12"), T::Number, None),
            (s("1.5e3"), T::Number, None),
            (V::Bool, T::Number, Some("number required")),
            (V::Tuple, T::Bool, Some("bool required")),
            (s("maybe"), T::Bool, Some("a bool is required")),
            (s("true"), T::Bool, None),
            (V::Object, T::String, Some("string required")),
            (V::Bool, T::String, None),
            (s("x"), list.clone(), Some("list of string required")),
            (V::Tuple, list, None),
            (V::Null, T::Number, None),
            (V::Other, T::Number, None),
            (s("x"), T::Other, None),
        ] {
            assert_eq!(
                conversion_error(&value, &ty).as_deref(),
                want,
                "{value:?} to {ty:?}"
            );
        }
    }
}
