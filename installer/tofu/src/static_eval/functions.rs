//! The functions a static expression may call: the pure string and collection functions
//! module sources and versions are built with. A function tofu has but tstore does not
//! implement is an error naming it ("Call to unknown function"), never a wrong value.

use hcl::eval::{Context, FuncArgs, FuncDef, ParamType};
use hcl::Value;

/// The names tstore implements, for messages.
pub const NAMES: &[&str] = &[
    "lower",
    "upper",
    "trimspace",
    "chomp",
    "trimprefix",
    "trimsuffix",
    "replace",
    "join",
    "split",
    "format",
    "coalesce",
    "concat",
    "lookup",
    "element",
    "length",
    "tostring",
    "startswith",
    "endswith",
    "substr",
    "nonsensitive",
    "sensitive",
];

/// Declare every function in [`NAMES`] in `ctx`.
#[allow(
    clippy::too_many_lines,
    reason = "a table: one declaration per function, read in NAMES' order"
)]
pub fn declare(ctx: &mut Context<'_>) {
    let s = || ParamType::String;
    let one_string = |f| FuncDef::builder().param(s()).build(f);
    let two_strings = |f| FuncDef::builder().params([s(), s()]).build(f);
    ctx.declare_func(
        "lower",
        one_string(|a| Ok(text(&a, 0).to_lowercase().into())),
    );
    ctx.declare_func(
        "upper",
        one_string(|a| Ok(text(&a, 0).to_uppercase().into())),
    );
    ctx.declare_func("trimspace", one_string(|a| Ok(text(&a, 0).trim().into())));
    ctx.declare_func(
        "chomp",
        one_string(|a| Ok(text(&a, 0).trim_end_matches(['\n', '\r']).into())),
    );
    ctx.declare_func(
        "trimprefix",
        two_strings(|a| {
            let (t, p) = (text(&a, 0), text(&a, 1));
            Ok(t.strip_prefix(p).unwrap_or(t).into())
        }),
    );
    ctx.declare_func(
        "trimsuffix",
        two_strings(|a| {
            let (t, p) = (text(&a, 0), text(&a, 1));
            Ok(t.strip_suffix(p).unwrap_or(t).into())
        }),
    );
    ctx.declare_func(
        "startswith",
        two_strings(|a| Ok(text(&a, 0).starts_with(text(&a, 1)).into())),
    );
    ctx.declare_func(
        "endswith",
        two_strings(|a| Ok(text(&a, 0).ends_with(text(&a, 1)).into())),
    );
    ctx.declare_func(
        "replace",
        FuncDef::builder().params([s(), s(), s()]).build(|a| {
            let (t, from, to) = (text(&a, 0), text(&a, 1), text(&a, 2));
            if from.len() > 1 && from.starts_with('/') && from.ends_with('/') {
                return Err("regular expressions in replace are not supported in static expressions by tstore".into());
            }
            Ok(t.replace(from, to).into())
        }),
    );
    ctx.declare_func(
        "join",
        FuncDef::builder()
            .param(s())
            .variadic_param(ParamType::Array(Box::new(ParamType::Any)))
            .build(|a| {
                let sep = text(&a, 0).to_owned();
                let mut parts = Vec::new();
                for list in a.variadic_args() {
                    for v in list.as_array().into_iter().flatten() {
                        parts.push(to_text(v)?);
                    }
                }
                Ok(parts.join(&sep).into())
            }),
    );
    ctx.declare_func(
        "split",
        two_strings(|a| {
            Ok(Value::Array(
                text(&a, 1).split(text(&a, 0)).map(Value::from).collect(),
            ))
        }),
    );
    ctx.declare_func(
        "format",
        FuncDef::builder()
            .param(s())
            .variadic_param(ParamType::Any)
            .build(|a| format(text(&a, 0), &a.variadic_args().cloned().collect::<Vec<_>>())),
    );
    ctx.declare_func(
        "coalesce",
        FuncDef::builder()
            .variadic_param(ParamType::Any)
            .build(|a| {
                a.variadic_args()
                    .find(|v| !v.is_null() && v.as_str() != Some(""))
                    .cloned()
                    .ok_or_else(|| "no non-null, non-empty-string arguments".to_owned())
            }),
    );
    ctx.declare_func(
        "concat",
        FuncDef::builder()
            .variadic_param(ParamType::Array(Box::new(ParamType::Any)))
            .build(|a| {
                Ok(Value::Array(
                    a.variadic_args()
                        .flat_map(|l| l.as_array().cloned().unwrap_or_default())
                        .collect(),
                ))
            }),
    );
    ctx.declare_func(
        "lookup",
        FuncDef::builder()
            .params([ParamType::Object(Box::new(ParamType::Any)), s()])
            .variadic_param(ParamType::Any)
            .build(|a| {
                let key = text(&a, 1);
                match a[0].as_object().and_then(|o| o.get(key)) {
                    Some(v) => Ok(v.clone()),
                    None => a
                        .variadic_args()
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("the given key {key:?} does not exist")),
                }
            }),
    );
    ctx.declare_func(
        "element",
        FuncDef::builder()
            .params([
                ParamType::Array(Box::new(ParamType::Any)),
                ParamType::Number,
            ])
            .build(|a| {
                let list = a[0].as_array().cloned().unwrap_or_default();
                let i = a[1].as_u64().ok_or("the index must be a whole number")? as usize;
                if list.is_empty() {
                    return Err("cannot use element function with an empty list".into());
                }
                Ok(list[i % list.len()].clone())
            }),
    );
    ctx.declare_func(
        "length",
        FuncDef::builder().param(ParamType::Any).build(|a| {
            let n = match &a[0] {
                Value::String(s) => s.chars().count(),
                Value::Array(l) => l.len(),
                Value::Object(o) => o.len(),
                _ => return Err("length needs a string, list or map".into()),
            };
            Ok(Value::from(n as u64))
        }),
    );
    ctx.declare_func(
        "tostring",
        FuncDef::builder()
            .param(ParamType::Any)
            .build(|a| to_text(&a[0]).map(Value::from)),
    );
    ctx.declare_func(
        "substr",
        FuncDef::builder()
            .params([s(), ParamType::Number, ParamType::Number])
            .build(|a| {
                let chars: Vec<char> = text(&a, 0).chars().collect();
                let offset = a[1].as_i64().ok_or("offset must be a whole number")?;
                let length = a[2].as_i64().ok_or("length must be a whole number")?;
                let start = if offset < 0 {
                    chars.len().saturating_sub(offset.unsigned_abs() as usize)
                } else {
                    (offset as usize).min(chars.len())
                };
                let end = if length < 0 {
                    chars.len()
                } else {
                    (start + length as usize).min(chars.len())
                };
                Ok(chars[start..end].iter().collect::<String>().into())
            }),
    );
    // Sensitivity does not matter to init: the value is the value.
    for name in ["nonsensitive", "sensitive"] {
        ctx.declare_func(
            name,
            FuncDef::builder()
                .param(ParamType::Any)
                .build(|a| Ok(a[0].clone())),
        );
    }
}

fn text(a: &FuncArgs, i: usize) -> &str {
    a[i].as_str().unwrap_or_default()
}

fn to_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!("cannot convert {other} to a string")),
    }
}

/// `format` with the verbs module addresses use: `%s`, `%d`, `%v`, `%q`, `%%`.
fn format(spec: &str, args: &[Value]) -> Result<Value, String> {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(verb @ ('s' | 'd' | 'v' | 'q')) => {
                let arg = args
                    .next()
                    .ok_or("too few arguments for the format string")?;
                let t = to_text(arg)?;
                if verb == 'd' && !matches!(arg, Value::Number(_)) {
                    return Err(format!("%d needs a number, not {t:?}"));
                }
                if verb == 'q' {
                    out.push_str(&format!("{t:?}"));
                } else {
                    out.push_str(&t);
                }
            }
            Some(other) => {
                return Err(format!(
                    "the format verb %{other} is not supported in static expressions by tstore"
                ))
            }
            None => return Err("the format string ends with %".into()),
        }
    }
    Ok(out.into())
}
