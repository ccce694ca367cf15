//! The root module's variable values, gathered as tofu gathers them for init.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hcl::eval::{Context, Evaluate as _};
use hcl::Value;

use super::StaticError;
use crate::read::read_capped;

/// The largest variable-definitions file read.
const MAX_VAR_FILE: u64 = 16 << 20;

/// A value given for a root variable, before its declaration says how to read it.
#[derive(Clone, Debug, PartialEq)]
pub enum RawValue {
    /// Text from `-var` or `TF_VAR_NAME`: a literal string, or an HCL expression when the
    /// variable's type is not primitive.
    Text {
        /// The text.
        text: String,
        /// Where it came from, for messages (`-var`, `TF_VAR_x`).
        from: String,
    },
    /// A value from a variable-definitions file.
    Value(Value),
}

impl RawValue {
    /// The value of variable `name` whose declaration says whether text is HCL.
    pub(super) fn parse(&self, name: &str, parse_as_hcl: bool) -> Result<Value, StaticError> {
        match self {
            RawValue::Value(v) => Ok(v.clone()),
            RawValue::Text { text, .. } if !parse_as_hcl => Ok(Value::from(text.clone())),
            RawValue::Text { text, from } => {
                constant_expression(text).map_err(|why| StaticError::InvalidInput {
                    name: name.to_owned(),
                    why: format!("{from}: {why}"),
                })
            }
        }
    }
}

/// Why a variable-definitions file or option could not be read.
#[derive(Debug, thiserror::Error)]
pub enum VarFileError {
    /// The file could not be read.
    #[error("Failed to read variables file: {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid.
    #[error("{}: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A `-var` option without `=`.
    #[error("Invalid -var option: the given -var option {0:?} is not correctly specified. Must be a variable name and value separated by an equals sign, like -var=\"key=value\"")]
    BadVarOption(String),
}

/// One variable option of the command line, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarOption {
    /// `-var NAME=VALUE`.
    Var(String),
    /// `-var-file=PATH`.
    File(PathBuf),
}

/// The root module's variable values, by name, and the workspace (`TF_WORKSPACE`).
#[derive(Clone, Debug, Default)]
pub struct RootInputs {
    values: BTreeMap<String, RawValue>,
    /// `TF_WORKSPACE` of the environment given, if set and not empty.
    workspace: Option<String>,
    /// Only variables declared `const = true` (and what is built from them) are known
    /// early: terraform ≥ 1.15's rule (OpenTofu evaluates every variable).
    constant_only: bool,
    /// A `required_providers` entry's `source` and `version` are evaluated too, under the
    /// same rule: terraform ≥ 1.17's (OpenTofu takes only literal strings there).
    provider_requirements: bool,
}

impl RootInputs {
    /// These inputs, evaluated as terraform ≥ 1.15 evaluates a module's `source` and
    /// `version` when `constant_only`: only `const` variables and locals built from them.
    pub fn with_constant_only(mut self, constant_only: bool) -> RootInputs {
        self.constant_only = constant_only;
        self
    }

    /// Whether only `const` variables are known early ([`RootInputs::with_constant_only`]).
    pub fn constant_only(&self) -> bool {
        self.constant_only
    }

    /// These inputs, evaluated in a `required_providers` entry's `source` and `version`
    /// too when `evaluated` (terraform ≥ 1.17, which also sets
    /// [`RootInputs::with_constant_only`]).
    pub fn with_provider_requirements(mut self, evaluated: bool) -> RootInputs {
        self.provider_requirements = evaluated;
        self
    }

    /// Whether provider requirements are evaluated ([`RootInputs::with_provider_requirements`]).
    pub fn provider_requirements(&self) -> bool {
        self.provider_requirements
    }

    /// `terraform.workspace`: `TF_WORKSPACE`, else `default`.
    pub fn workspace(&self) -> &str {
        self.workspace.as_deref().unwrap_or("default")
    }

    /// `TF_WORKSPACE`, when the environment gives it.
    pub fn workspace_given(&self) -> Option<&str> {
        self.workspace.as_deref()
    }

    /// Gather the values for the root module in `root`: `TF_VAR_*` (and `TF_WORKSPACE`) from `env`, then
    /// `terraform.tfvars`, `terraform.tfvars.json`, `*.auto.tfvars` and
    /// `*.auto.tfvars.json` (lexical order), then `options` in order; a later value wins.
    pub fn gather(
        root: &Path,
        env: impl IntoIterator<Item = (String, String)>,
        options: &[VarOption],
    ) -> Result<RootInputs, VarFileError> {
        let mut values = BTreeMap::new();
        let mut workspace = None;
        for (k, v) in env {
            if k == "TF_WORKSPACE" && !v.is_empty() {
                workspace = Some(v.clone());
            }
            if let Some(name) = k.strip_prefix("TF_VAR_") {
                if !name.is_empty() {
                    let from = k.clone();
                    values.insert(name.to_owned(), RawValue::Text { text: v, from });
                }
            }
        }
        let mut files: Vec<PathBuf> = ["terraform.tfvars", "terraform.tfvars.json"]
            .iter()
            .map(|n| root.join(n))
            .filter(|p| p.is_file())
            .collect();
        let mut auto: Vec<PathBuf> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                (name.ends_with(".auto.tfvars") || name.ends_with(".auto.tfvars.json"))
                    && p.is_file()
            })
            .collect();
        auto.sort();
        files.extend(auto);
        for f in &files {
            values.extend(read_var_file(f)?);
        }
        for option in options {
            match option {
                VarOption::Var(s) => {
                    let Some((name, text)) = s.split_once('=') else {
                        return Err(VarFileError::BadVarOption(s.clone()));
                    };
                    let (name, text) = (name.trim().to_owned(), text.to_owned());
                    values.insert(
                        name,
                        RawValue::Text {
                            text,
                            from: "-var".into(),
                        },
                    );
                }
                VarOption::File(path) => values.extend(read_var_file(&root.join(path))?),
            }
        }
        Ok(RootInputs {
            values,
            workspace,
            constant_only: false,
            provider_requirements: false,
        })
    }

    /// The value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&RawValue> {
        self.values.get(name)
    }
}

/// The values of a variable-definitions file: `NAME = VALUE` lines (HCL), or one JSON
/// object (`.json`).
fn read_var_file(path: &Path) -> Result<BTreeMap<String, RawValue>, VarFileError> {
    let src = read_capped(path, MAX_VAR_FILE).map_err(|source| VarFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let invalid = |message: String| VarFileError::Invalid {
        path: path.to_owned(),
        message,
    };
    let mut out = BTreeMap::new();
    if path.to_string_lossy().ends_with(".json") {
        let json: serde_json::Value =
            serde_json::from_str(&src).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
        let serde_json::Value::Object(map) = json else {
            return Err(invalid(
                "the root of a variables file must be an object".into(),
            ));
        };
        for (k, v) in map {
            let value: Value = hcl::to_value(v).map_err(|e| invalid(e.to_string()))?;
            out.insert(k, RawValue::Value(value));
        }
        return Ok(out);
    }
    let body = hcl::edit::parser::parse_body(&src)
        .map_err(|e| invalid(format!("line {}: {}", e.location().line(), e.message())))?;
    for structure in body.iter() {
        let hcl::edit::structure::Structure::Attribute(a) = structure else {
            return Err(invalid(
                "Unexpected block: blocks are not allowed in a variables file".into(),
            ));
        };
        let expr = hcl::Expression::from(a.value.clone());
        // The evaluator's message quotes the expression; a variables file may be a link
        // to anything readable, so only the variable's name is said.
        let value = expr.evaluate(&Context::new()).map_err(|_| {
            invalid(format!(
                "Variables not allowed: the value of {:?} must be a constant",
                a.key.as_str()
            ))
        })?;
        out.insert(a.key.as_str().to_owned(), RawValue::Value(value));
    }
    Ok(out)
}

/// The value of `text` read as a constant HCL expression.
fn constant_expression(text: &str) -> Result<Value, String> {
    let body = hcl::edit::parser::parse_body(&format!("v = {text}\n"))
        .map_err(|e| format!("not a valid expression: {}", e.message()))?;
    let Some(attr) = body.get_attribute("v") else {
        return Err("not a valid expression".into());
    };
    hcl::Expression::from(attr.value.clone())
        .evaluate(&Context::new())
        .map_err(|e| format!("Variables not allowed: {e}"))
}
