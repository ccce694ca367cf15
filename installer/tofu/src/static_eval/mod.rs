//! OpenTofu's early (static) evaluation: the values init can know before anything is
//! planned, for the arguments init itself needs (a module call's `source` and `version`).
//!
//! Rules (OpenTofu 1.8 and later; terraform evaluates nothing here):
//! - a static expression may use `var.NAME`, `local.NAME`, `path.module`, `path.root`,
//!   `path.cwd`, `terraform.workspace` and pure functions ([`functions`]); anything else
//!   (resources, data sources, module outputs, `count`, `each`) is not available;
//! - a root module's variables come from, later winning: the declaration's `default`,
//!   `TF_VAR_NAME`, `terraform.tfvars(.json)`, `*.auto.tfvars(.json)` in lexical order, then
//!   `-var`/`-var-file` in command-line order ([`RootInputs`]);
//! - a child module's variables are the arguments of its `module` block, evaluated
//!   statically in the calling module's scope, else the declaration's `default`;
//! - a `local` is available when its expression is; a local that refers to itself,
//!   directly or not, is not.
//!
//! Scopes are resolved only for a module whose `source` or `version` is not a literal, so
//! configurations without early evaluation pay nothing for it.

pub mod functions;
mod inputs;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use hcl::eval::{Context, Evaluate as _};
use hcl::{Expression, Value};

pub use self::inputs::{RawValue, RootInputs, VarFileError, VarOption};

/// A variable as a module declares it.
#[derive(Clone, Debug)]
pub struct VariableDecl {
    /// The default value's expression, if any.
    pub default: Option<Expression>,
    /// Whether a value given on the command line or in `TF_VAR_` is parsed as an HCL
    /// expression (a declared type that is not `string`, `number` or `bool`) rather
    /// than taken as a literal string.
    pub parse_as_hcl: bool,
    /// `const = true` (terraform ≥ 1.15): the variable may be used in a module's `source`
    /// and `version`.
    pub is_const: bool,
}

/// What a module declares that its static scope is built from.
#[derive(Clone, Debug, Default)]
pub struct ModuleDecls {
    /// Variables by name.
    pub variables: BTreeMap<String, VariableDecl>,
    /// Locals by name.
    pub locals: BTreeMap<String, Expression>,
    /// The arguments of each `module` block (meta-arguments excluded), by call name:
    /// the values of the called modules' variables.
    pub calls: BTreeMap<String, BTreeMap<String, Expression>>,
}

/// Reads a module's declarations when its scope is first needed (most configurations
/// never need one), or says why they could not be read.
pub type DeclsLoader = Box<dyn Fn() -> Result<ModuleDecls, String> + Send + Sync>;

/// Where a module's variables get their values.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// The root module: the command line, the environment and tfvars files.
    Root(Arc<RootInputs>),
    /// A child module: the arguments of the `module` block calling it, in the caller's scope.
    Call(CallArguments),
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs::Root(Arc::default())
    }
}

/// The arguments of a `module` block, evaluated in the calling module's scope.
#[derive(Clone, Debug)]
pub struct CallArguments {
    /// The name of the `module` block in the caller.
    pub call: String,
    /// The calling module's scope.
    pub caller: Arc<Scope>,
}

/// Why a value is not available statically.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaticError {
    /// A root variable without a default was given no value.
    #[error("The root module variable {0:?} is not set, and has no default value. Use a -var or -var-file command line argument, a TF_VAR_{0} environment variable or a .tfvars file to provide a value")]
    RequiredVariable(String),
    /// A value given for a variable is not valid.
    #[error("The value of variable {name:?} is not valid: {why}")]
    InvalidInput {
        /// The variable.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// The expression uses something not known before planning.
    #[error("{0}")]
    Unavailable(String),
    /// The value has the wrong type.
    #[error("{0}")]
    WrongType(String),
    /// Only `const` variables are known early (terraform ≥ 1.15), and this one is not.
    #[error("var.{0} is not declared with const = true")]
    NotConstant(String),
}

impl StaticError {
    /// The diagnostic's summary, in tofu's words.
    pub fn summary(&self) -> &'static str {
        match self {
            StaticError::RequiredVariable(_) => "No value for required variable",
            StaticError::InvalidInput { .. } => "Invalid value for input variable",
            StaticError::Unavailable(_) => "Unable to compute static value",
            StaticError::WrongType(_) => "Invalid value",
            StaticError::NotConstant(_) => "Unknown module source",
        }
    }
}

/// A module's static scope: its variables' values and locals, resolved on first use.
pub struct Scope {
    loader: DeclsLoader,
    decls: OnceLock<Result<ModuleDecls, String>>,
    inputs: Inputs,
    /// `path.module` as tofu shows it (relative to the working directory).
    path_module: String,
    resolved: OnceLock<Resolved>,
}

/// The values of a scope; an entry that is not available keeps why.
struct Resolved {
    vars: BTreeMap<String, Result<Value, StaticError>>,
    locals: BTreeMap<String, Result<Value, StaticError>>,
    cwd: String,
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("path_module", &self.path_module)
            .finish_non_exhaustive()
    }
}

impl Scope {
    /// The scope of a module declaring `decls`, at `path_module`, whose variables come
    /// from `inputs`.
    pub fn new(decls: ModuleDecls, inputs: Inputs, path_module: String) -> Scope {
        Scope::lazy(Box::new(move || Ok(decls.clone())), inputs, path_module)
    }

    /// Whether only `const` variables are known early (terraform ≥ 1.15), as the root's
    /// inputs say.
    pub fn constant_only(&self) -> bool {
        match &self.inputs {
            Inputs::Root(root) => root.constant_only(),
            Inputs::Call(call) => call.caller.constant_only(),
        }
    }

    /// Whether a `required_providers` entry's `source` and `version` may be evaluated
    /// (terraform ≥ 1.17), as the root's inputs say.
    pub fn evaluates_provider_requirements(&self) -> bool {
        match &self.inputs {
            Inputs::Root(root) => root.provider_requirements(),
            Inputs::Call(call) => call.caller.evaluates_provider_requirements(),
        }
    }

    /// `terraform.workspace`, as the root's inputs say.
    fn workspace(&self) -> String {
        match &self.inputs {
            Inputs::Root(root) => root.workspace().to_owned(),
            Inputs::Call(call) => call.caller.workspace(),
        }
    }

    /// A scope whose declarations are read by `loader` when first needed.
    pub fn lazy(loader: DeclsLoader, inputs: Inputs, path_module: String) -> Scope {
        Scope {
            loader,
            decls: OnceLock::new(),
            inputs,
            path_module,
            resolved: OnceLock::new(),
        }
    }

    fn decls(&self) -> Result<&ModuleDecls, StaticError> {
        self.decls
            .get_or_init(|| (self.loader)())
            .as_ref()
            .map_err(|e| StaticError::Unavailable(e.clone()))
    }

    /// Evaluate `expr` (the argument `what`, e.g. `source`) to a string.
    pub fn eval_string(&self, expr: &Expression, what: &str) -> Result<String, StaticError> {
        match self.eval(expr)? {
            Value::String(s) => Ok(s),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Null => Err(StaticError::WrongType(format!(
                "the {what:?} argument must not be null"
            ))),
            other => Err(StaticError::WrongType(format!(
                "the {what:?} argument must be a string, not {}",
                type_name(&other)
            ))),
        }
    }

    /// Evaluate `expr` in this scope.
    pub fn eval(&self, expr: &Expression) -> Result<Value, StaticError> {
        let resolved = self.resolved()?;
        let ctx = self.context(resolved);
        expr.evaluate(&ctx)
            .map_err(|e| explain(&e.to_string(), expr, resolved))
    }

    fn resolved(&self) -> Result<&Resolved, StaticError> {
        let decls = self.decls()?;
        Ok(self.resolved.get_or_init(|| {
            let vars = decls
                .variables
                .iter()
                .map(|(name, decl)| (name.clone(), self.variable(name, decl)))
                .collect();
            let mut r = Resolved {
                vars,
                locals: BTreeMap::new(),
                cwd: std::env::current_dir()
                    .map(|d| d.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            };
            resolve_locals(self, decls, &mut r);
            r
        }))
    }

    /// The value of variable `name`, from the inputs or the default.
    fn variable(&self, name: &str, decl: &VariableDecl) -> Result<Value, StaticError> {
        if self.constant_only() && !decl.is_const {
            return Err(StaticError::NotConstant(name.to_owned()));
        }
        let default = || match &decl.default {
            Some(e) => e
                .evaluate(&Context::new())
                .map_err(|e| StaticError::InvalidInput {
                    name: name.to_owned(),
                    why: format!("its default is not a constant value: {e}"),
                }),
            None => Err(StaticError::RequiredVariable(name.to_owned())),
        };
        match &self.inputs {
            Inputs::Root(root) => match root.get(name) {
                Some(raw) => raw.parse(name, decl.parse_as_hcl),
                None => default(),
            },
            Inputs::Call(call) => match call
                .caller
                .decls()?
                .calls
                .get(&call.call)
                .and_then(|args| args.get(name))
            {
                Some(expr) => call.caller.eval(expr).map_err(|e| {
                    StaticError::Unavailable(format!(
                        "var.{name} is set by an argument that is not available statically: {e}"
                    ))
                }),
                None => default().map_err(|_| {
                    StaticError::Unavailable(format!(
                        "var.{name} has no default value and the module call gives none"
                    ))
                }),
            },
        }
    }

    fn context<'a>(&self, r: &'a Resolved) -> Context<'a> {
        let mut ctx = Context::new();
        let available = |m: &BTreeMap<String, Result<Value, StaticError>>| -> Value {
            Value::Object(
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_ref().ok()?.clone())))
                    .collect(),
            )
        };
        ctx.declare_var("var", available(&r.vars));
        ctx.declare_var("local", available(&r.locals));
        let mut path = hcl::Map::new();
        path.insert("module".to_owned(), Value::from(self.path_module.clone()));
        path.insert("root".to_owned(), Value::from("."));
        path.insert("cwd".to_owned(), Value::from(r.cwd.clone()));
        ctx.declare_var("path", Value::Object(path));
        if self.constant_only() {
            // terraform ≥ 1.15 knows variables, locals and `path.*` here, nothing else.
            functions::declare(&mut ctx);
            return ctx;
        }
        let workspace = self.workspace();
        let mut terraform = hcl::Map::new();
        terraform.insert("workspace".to_owned(), Value::from(workspace));
        ctx.declare_var("terraform", Value::Object(terraform.clone()));
        ctx.declare_var("tofu", Value::Object(terraform));
        functions::declare(&mut ctx);
        ctx
    }
}

/// Resolve the locals of `scope` into `r`: passes over the pending locals until no pass
/// makes progress; a local still pending then (it uses something unavailable, or itself)
/// keeps its last error.
fn resolve_locals(scope: &Scope, decls: &ModuleDecls, r: &mut Resolved) {
    let mut pending: BTreeMap<&String, &Expression> = decls.locals.iter().collect();
    let mut errors: BTreeMap<String, StaticError> = BTreeMap::new();
    loop {
        let mut progressed = false;
        let names: Vec<&String> = pending.keys().copied().collect();
        for name in names {
            let expr = pending[name];
            let result = {
                let ctx = scope.context(r);
                expr.evaluate(&ctx)
            };
            match result {
                Ok(v) => {
                    r.locals.insert(name.clone(), Ok(v));
                    pending.remove(name);
                    errors.remove(name);
                    progressed = true;
                }
                Err(e) => {
                    errors.insert(name.clone(), explain(&e.to_string(), expr, r));
                }
            }
        }
        if !progressed || pending.is_empty() {
            break;
        }
    }
    for name in pending.into_keys() {
        let e = errors
            .remove(name)
            .unwrap_or_else(|| StaticError::Unavailable(format!("local.{name}")));
        r.locals.insert(name.clone(), Err(e));
    }
}

/// Turn an evaluation error into what the user needs: which reference is not available
/// and why, when the expression uses one.
fn explain(message: &str, expr: &Expression, r: &Resolved) -> StaticError {
    let text = hcl::format::to_string(expr).unwrap_or_default();
    for (kind, map) in [("var", &r.vars), ("local", &r.locals)] {
        for (name, value) in map {
            if let Err(e) = value {
                if mentions(&text, kind, name) {
                    return match e {
                        StaticError::Unavailable(why) if kind == "local" => {
                            StaticError::Unavailable(format!(
                                "local.{name} is not available: {why}"
                            ))
                        }
                        StaticError::Unavailable(_) => e.clone(),
                        other => other.clone(),
                    };
                }
            }
        }
    }
    let reference = ["var.", "local."]
        .iter()
        .find_map(|p| text.find(p).map(|i| &text[i..]))
        .map(|t| {
            t.chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
                .collect::<String>()
        });
    match reference {
        Some(r) if message.contains("undefined") || message.contains("no such key") => {
            StaticError::Unavailable(format!("{r} is not declared in this module"))
        }
        _ => StaticError::Unavailable(format!(
            "{message}. Only variables, locals, path.*, terraform.workspace and pure functions \
             can be used here"
        )),
    }
}

/// Whether `text` refers to `kind.name` (not just a longer name starting with it).
fn mentions(text: &str, kind: &str, name: &str) -> bool {
    let needle = format!("{kind}.{name}");
    text.match_indices(&needle).any(|(i, _)| {
        let after = text[i + needle.len()..].chars().next();
        let before = text[..i].chars().next_back();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
            && !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
