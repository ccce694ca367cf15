//! The JSON form of a CLI configuration file (`*.tfrc.json`, or any file whose content
//! starts with `{`). The real tools read it with HCL 1, whose JSON decoding turns an
//! object into a block where the schema has one and keeps it a value where it has an
//! attribute; this module does the same for the blocks tstore reads, producing native
//! syntax for [`CliConfig::parse_with_env`](super::CliConfig::parse_with_env).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::CliConfigError;

/// Whether `src` is JSON, as HCL 1 decides: its first non-blank character is `{`.
pub(super) fn looks_like_json(src: &str) -> bool {
    src.trim_start().starts_with('{')
}

/// Native syntax equivalent to the JSON CLI configuration `src`.
pub(super) fn to_native(src: &str, filename: &str) -> Result<String, CliConfigError> {
    let root: Value = serde_json::from_str(src).map_err(|e| CliConfigError::Syntax {
        file: filename.to_owned(),
        line: e.line(),
        message: e.to_string(),
    })?;
    let Value::Object(root) = root else {
        return Err(invalid(filename, "the top level must be an object".into()));
    };
    let mut out = String::new();
    for (key, value) in &root {
        match key.as_str() {
            // provider_installation { METHOD { … } … }: blocks of blocks.
            "provider_installation" => {
                for body in objects(value, filename, key)? {
                    out.push_str("provider_installation {\n");
                    for (method, method_value) in body {
                        for method_body in objects(method_value, filename, method)? {
                            out.push_str(&format!("  {method} {{\n"));
                            attributes(&mut out, method_body, "    ");
                            out.push_str("  }\n");
                        }
                    }
                    out.push_str("}\n");
                }
            }
            // host "NAME" { … }, credentials "HOST" { … }, credentials_helper "NAME" { … }:
            // an object keyed by the label, whose values are the block bodies.
            "host" | "credentials" | "credentials_helper" => {
                for by_label in objects(value, filename, key)? {
                    for (label, body_value) in by_label {
                        for body in objects(body_value, filename, key)? {
                            out.push_str(&format!("{key} {} {{\n", quote(label)));
                            attributes(&mut out, body, "  ");
                            out.push_str("}\n");
                        }
                    }
                }
            }
            _ => {
                let _ = writeln!(out, "{} = {}", quote_key(key), value);
            }
        }
    }
    Ok(out)
}

/// An object, or an array of objects (HCL 1 accepts both for a repeated block).
fn objects<'a>(
    value: &'a Value,
    filename: &str,
    what: &str,
) -> Result<Vec<&'a Map<String, Value>>, CliConfigError> {
    match value {
        Value::Object(o) => Ok(vec![o]),
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_object()
                    .ok_or_else(|| invalid(filename, format!("{what:?} must hold objects")))
            })
            .collect(),
        _ => Err(invalid(filename, format!("{what:?} must be an object"))),
    }
}

/// Each entry as `KEY = VALUE`; JSON values are valid native-syntax expressions.
fn attributes(out: &mut String, body: &Map<String, Value>, indent: &str) {
    for (key, value) in body {
        let _ = writeln!(out, "{indent}{} = {value}", quote_key(key));
    }
}

/// A key as an identifier when it is one, else quoted (the native reader accepts quoted
/// keys at the start of a line, as `dev_overrides` needs).
fn quote_key(key: &str) -> String {
    let ident = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ident {
        key.to_owned()
    } else {
        quote(key)
    }
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn invalid(filename: &str, message: String) -> CliConfigError {
    CliConfigError::Invalid {
        file: filename.to_owned(),
        line: 1,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_blocks_and_values_stay_values() {
        let native = to_native(
            r#"{
              "plugin_cache_dir": "/cache",
              "provider_installation": {
                "filesystem_mirror": [{"path": "/m", "include": ["a/b"]}],
                "direct": {"exclude": ["a/b"]},
                "dev_overrides": {"hashicorp/null": "/dev"}
              },
              "host": {"example.com": {"services": {"providers.v1": "https://x/"}}},
              "credentials": {"example.com": {"token": "t"}}
            }"#,
            "x.tfrc.json",
        )
        .unwrap();
        assert_eq!(
            native,
            "plugin_cache_dir = \"/cache\"\n\
             provider_installation {\n  filesystem_mirror {\n    path = \"/m\"\n    include = [\"a/b\"]\n  }\n  direct {\n    exclude = [\"a/b\"]\n  }\n  dev_overrides {\n    \"hashicorp/null\" = \"/dev\"\n  }\n}\n\
             host \"example.com\" {\n  services = {\"providers.v1\":\"https://x/\"}\n}\n\
             credentials \"example.com\" {\n  token = \"t\"\n}\n"
        );
        assert!(looks_like_json("\n  {}"));
        assert!(!looks_like_json("# comment\n{}"));
        assert!(to_native("[1]", "x").is_err());
        assert!(to_native("{\"host\": 1}", "x").is_err());
        assert!(to_native("{", "x").is_err());
    }
}
