//! Provider requirements of one module directory.
//!
//! Reads the module's `*.tf`, `*.tf.json`, `*.tofu` and `*.tofu.json` files
//! (a `.tofu` file hides the `.tf` file of the same name; override files are
//! applied last) and collects, per provider address, the AND of every
//! version constraint found: `required_providers` entries, legacy
//! `provider { version = ... }` arguments, and providers implied by
//! `resource`/`data`/`ephemeral` blocks (a `check` block's data source included),
//! `provider` blocks and `import` blocks (`imports.rs`). Only what
//! provider installation needs is interpreted; everything else is ignored.
//!
//! Over 600 lines on purpose: `load_module_requirements_shown_as` is the one merge of a
//! module's primary and override files, in the tools' order (required providers, core
//! versions, provider blocks, resources, imports, variables, module calls), and reads best
//! top to bottom in one place; the syntaxes (`hcl.rs`, `json.rs`), the rules (`validate.rs`,
//! `imports.rs`, `variables.rs`) and the tree walk (`tree.rs`) are apart.

mod decls;
pub(crate) mod facts;
mod file_content;
pub(crate) mod files;
mod hcl;
mod hcl_exprs;
mod imports;
mod json;
mod module_files;
mod name;
pub(crate) mod parsed;
mod schema;
pub mod test_files;
mod tool_rules;
pub mod tree;
mod validate;
mod variables;

use self::file_content::{
    CallArg, FileContent, FileModuleCall, ProviderConfig, RequiredBlock, RequiredEntry,
};

pub use self::facts::{
    derive as derive_facts, set_facts_cache, ContentId, FactsCache, FACTS_FORMAT,
};
pub use self::tool_rules::check_tool_version;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::addr::{normalize_part, ProviderAddr};
use crate::flavor::Flavor;
use crate::read::{read_capped, MAX_CONFIG_FILE};
pub use crate::span::SourcePos;
use crate::state::StateStorage;
use crate::static_eval::{CallArguments, Inputs, Scope};
use crate::version::VersionConstraints;

pub(crate) use self::files::module_files;
use self::hcl::parse_hcl;
pub(crate) use self::json::json_root_bodies;
use self::json::parse_json;
use self::module_files::ModuleFiles;

/// Errors from loading a module's configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The module directory cannot be listed.
    #[error("module directory {} does not exist or cannot be read", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        #[source]
        err: io::Error,
    },
    /// A configuration file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        err: io::Error,
    },
    /// HCL or JSON syntax error.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: SourcePos,
        /// The parser's message.
        message: String,
    },
    /// Valid syntax with an invalid provider requirement.
    #[error("{at}: {summary}: {detail}")]
    Invalid {
        /// Where.
        at: SourcePos,
        /// Short summary, in tofu's words.
        summary: Cow<'static, str>,
        /// Explanation.
        detail: String,
    },
}

/// A configuration error is its own summary (the position and tofu's words), with no
/// detail or hint of its own: an install error that wraps it heads the report.
impl tstore_diagnostic::Diagnostic for ConfigError {}

/// A `module "NAME" { source = ..., version = ... }` call.
#[derive(Clone, Debug)]
pub struct ModuleCall {
    /// The `source` argument: as written, or as OpenTofu's early evaluation computes it.
    pub source: String,
    /// The `version` argument, if any (likewise).
    pub version: Option<String>,
    /// Where the call is declared.
    pub at: SourcePos,
    /// Where the called module's variables get their values: this call's arguments.
    pub inputs: Inputs,
    /// `count` or `for_each`, when the call makes several instances (each of them reads
    /// the one installed directory).
    pub repeated_by: Option<&'static str>,
}

impl PartialEq for ModuleCall {
    /// Calls are equal when they install the same thing from the same place.
    fn eq(&self, other: &Self) -> bool {
        (&self.source, &self.version, &self.at) == (&other.source, &other.version, &other.at)
    }
}

/// What one module directory requires.
#[derive(Clone, Debug, Default)]
pub struct ModuleRequirements {
    /// Every provider the module uses (built-in ones excluded), with the AND of
    /// its constraints; an empty constraint set means any version.
    pub providers: BTreeMap<ProviderAddr, VersionConstraints>,
    /// Child module calls by name, for walking the module tree.
    pub module_calls: BTreeMap<String, ModuleCall>,
    /// The module's `required_version` constraints, every one of which the tool's
    /// version must meet (an override file's replace the primary files').
    pub required_versions: Vec<RequiredVersion>,
    /// Its blocks of types only some releases know (`moved`, `import`, `cloud`, …), by type.
    pub newer_blocks: Vec<(String, SourcePos)>,
    /// `depends_on` of module calls that override files override (`tool_rules.rs`).
    pub module_override_depends_on: ModuleOverrideDependsOn,
    /// The check rules and `check` blocks of override files, by kind (`tool_rules.rs`).
    pub override_check_rules: Vec<(String, SourcePos)>,
    /// Every `precondition` and `postcondition` block (releases before 1.2.0 know none).
    pub condition_blocks: Vec<(String, SourcePos)>,
    /// Where its `terraform` block says the state is kept (`backend`, `cloud`,
    /// `state_store`); `None` when it does not say, which is the local backend for a root.
    pub state_storage: Option<StateStorage>,
}

/// One `required_version` argument: a constraint on the tool's own version
/// (hashicorp/go-version syntax).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequiredVersion {
    /// The constraint as written.
    pub constraint: String,
    /// Where it is written.
    pub at: SourcePos,
}

/// Load the provider requirements and module calls of the module in `dir` (not
/// recursive). `flavor` decides which files belong to it (terraform ignores `.tofu`
/// files) and the registry host of addresses without one.
pub fn load_module_requirements(
    dir: &Path,
    flavor: Flavor,
) -> Result<ModuleRequirements, ConfigError> {
    load_module_requirements_shown_as(dir, dir, flavor, Inputs::default())
}

/// [`load_module_requirements`] for a module the user knows under another
/// path: every position in the result and in errors names `shown_as` (e.g.
/// `.terraform/modules/KEY/main.tf:427`), never `dir`, which may be the
/// store's internal copy of a module package. `inputs` gives the module's variables
/// their values when a `source` or `version` needs early evaluation (tofu flavor).
pub fn load_module_requirements_shown_as(
    dir: &Path,
    shown_as: &Path,
    flavor: Flavor,
    inputs: Inputs,
) -> Result<ModuleRequirements, ConfigError> {
    let default_host = flavor.default_registry_host();
    let files = ModuleFiles::parse(dir, shown_as, flavor)?;
    files.check_declarations()?;
    let required = files.required_entries()?;
    let mut reqs = files.module_facts();
    // What `source`/`version` expressions (and module calls) may use, read when first needed.
    let decls_dir = dir.to_owned();
    let scope = Arc::new(Scope::lazy(
        Box::new(move || decls::collect(&decls_dir, flavor)),
        inputs,
        path_module(shown_as),
    ));
    let mut local_names: BTreeMap<String, ProviderAddr> = BTreeMap::new();
    for e in required.values() {
        let addr = add_required_entry(&mut reqs, e, flavor, &scope)?;
        local_names.insert(e.name.clone(), addr);
    }
    let resolve = |local: &str| -> ProviderAddr {
        local_names
            .get(local)
            .cloned()
            .unwrap_or_else(|| ProviderAddr::implied(local, default_host))
    };
    for pc in files.provider_configs()?.values() {
        let constraints = parse_constraints(
            pc.version.as_deref(),
            &pc.at,
            &format!("provider {:?}", pc.name),
        )?;
        add(&mut reqs, resolve(&pc.name), &constraints, &pc.at, flavor)?;
    }
    // What resources and `import` blocks use; a built-in provider needs nothing installed.
    for local in files.used_provider_names(flavor)? {
        let addr = resolve(&local);
        if !addr.is_builtin() {
            reqs.providers.entry(addr).or_default();
        }
    }
    reqs.module_calls = merge_module_calls(&files.primary, &files.overrides, flavor, &scope)?;
    Ok(reqs)
}

/// Add one `required_providers` entry to `reqs`, its `source` and `version` as the tool
/// reads them (`tool_rules`); returns the provider its local name stands for.
fn add_required_entry(
    reqs: &mut ModuleRequirements,
    e: &RequiredEntry,
    flavor: Flavor,
    scope: &Scope,
) -> Result<ProviderAddr, ConfigError> {
    let default_host = flavor.default_registry_host();
    let arg = |arg: &Option<CallArg>, name| {
        arg.as_ref()
            .map(|a| tool_rules::provider_requirement_arg(a, name, flavor, scope))
            .transpose()
    };
    let source = arg(&e.source, "source")?;
    let version = arg(&e.version, "version")?;
    let addr = match &source {
        Some(src) => ProviderAddr::parse_source(src, default_host)
            .map_err(|err| invalid(&e.at, err.summary(), err.to_string()))?,
        None => {
            let kind = normalize_part(&e.name)
                .map_err(|err| invalid(&e.at, "Invalid provider name", err))?;
            ProviderAddr::implied(&kind, default_host)
        }
    };
    let constraints = parse_constraints(
        version.as_deref(),
        e.version_at.as_ref().unwrap_or(&e.at),
        &format!("provider {:?} ({addr})", e.name),
    )?;
    add(reqs, addr.clone(), &constraints, &e.at, flavor)?;
    Ok(addr)
}

/// `path.module` as tofu gives it: the module's directory relative to the working
/// directory when it is inside it.
fn path_module(shown_as: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let rel = shown_as.strip_prefix(&cwd).unwrap_or(shown_as);
    match rel.to_string_lossy().as_ref() {
        "" => ".".to_owned(),
        s => s.to_owned(),
    }
}

/// The value of a module call's `source` or `version`: a literal as written; an
/// expression only where the flavor evaluates it early (tofu), else refused with
/// terraform's diagnostic.
fn call_arg(
    arg: &CallArg,
    name: &str,
    flavor: Flavor,
    scope: &Scope,
) -> Result<String, ConfigError> {
    let (expr, at, (summary, detail), as_written) = match arg {
        CallArg::Literal(s) => return Ok(s.clone()),
        CallArg::Expr {
            expr,
            at,
            refusal,
            as_written,
            ..
        } => (expr, at, refusal, as_written),
    };
    if flavor == Flavor::Terraform {
        if scope.constant_only() {
            return tool_rules::constant_call_arg(expr, at, name, scope);
        }
        if let Some(text) = as_written {
            return Ok(text.clone());
        }
        return Err(invalid(
            at,
            *summary,
            format!("{detail} The {name:?} argument of a module call is read before anything is evaluated; terraform takes only a literal string here (OpenTofu evaluates variables and locals here: --flavor tofu; terraform ≥ 1.15 evaluates const variables)."),
        ));
    }
    scope.eval_string(expr, name).map_err(|e| {
        invalid(
            at,
            e.summary(),
            format!("{e} (needed for the {name:?} argument of a module call, which is evaluated before anything else)."),
        )
    })
}

/// The module calls of a module: every primary file's `module` blocks (names unique,
/// `source` required), then each override file's blocks merged argument by argument
/// into the primary block of the same name, as tofu merges them
/// (<https://github.com/opentofu/opentofu/blob/main/internal/configs/module_merge.go>).
fn merge_module_calls(
    primary: &[Arc<FileContent>],
    overrides: &[Arc<FileContent>],
    flavor: Flavor,
    scope: &Arc<Scope>,
) -> Result<BTreeMap<String, ModuleCall>, ConfigError> {
    let mut calls: BTreeMap<String, FileModuleCall> = BTreeMap::new();
    for call in primary.iter().flat_map(|f| &f.module_calls) {
        if let Some(first) = calls.get(&call.name) {
            return Err(invalid(
                &call.at,
                "Duplicate module call",
                format!(
                    "A module call named {:?} was already defined at {}. Module calls must have unique names within a module.",
                    call.name, first.at
                ),
            ));
        }
        if call.source.is_none() {
            return Err(invalid(
                &call.at,
                "Missing required argument",
                "The argument \"source\" is required, but no definition was found.".into(),
            ));
        }
        calls.insert(call.name.clone(), call.clone());
    }
    for call in overrides.iter().flat_map(|f| &f.module_calls) {
        let Some(base) = calls.get_mut(&call.name) else {
            return Err(invalid(
                &call.at,
                "Missing module call to override",
                format!(
                    "There is no module call named {:?}. An override file can only override a module call that was defined in a primary configuration file.",
                    call.name
                ),
            ));
        };
        if call.source.is_some() {
            base.source.clone_from(&call.source);
        }
        if call.version.is_some() {
            base.version.clone_from(&call.version);
        }
        if call.repeated_by.is_some() {
            base.repeated_by = call.repeated_by;
        }
    }
    calls
        .into_values()
        .map(|call| {
            let source = call.source.as_ref().expect("checked above");
            let version = call.version.as_ref();
            let resolved = ModuleCall {
                source: call_arg(source, "source", flavor, scope)?,
                version: version
                    .map(|v| call_arg(v, "version", flavor, scope))
                    .transpose()?,
                at: call.at,
                inputs: Inputs::Call(CallArguments {
                    call: call.name.clone(),
                    caller: Arc::clone(scope),
                }),
                repeated_by: call.repeated_by.map(|n| n.0),
            };
            Ok((call.name, resolved))
        })
        .collect()
}

/// Whether `dir` holds any configuration file of `flavor` (primary or override); init in a
/// directory without one has nothing to install, as tofu says.
pub fn is_config_dir(dir: &Path, flavor: Flavor) -> bool {
    module_files(dir, flavor)
        .is_ok_and(|(primary, overrides)| !(primary.is_empty() && overrides.is_empty()))
}

/// Parse one configuration file (`.tf`/`.tofu` as HCL, `.tf.json`/`.tofu.json`
/// as JSON) the way [`load_module_requirements`] does, and report the first
/// syntax or requirement error. Used by the corpus check, which compares this
/// verdict with terraform's on public modules (so the block types are terraform's).
pub fn check_file(path: &Path) -> Result<(), ConfigError> {
    let src = read_capped(path, MAX_CONFIG_FILE).map_err(|err| ConfigError::Read {
        path: path.to_owned(),
        err,
    })?;
    if path.to_string_lossy().ends_with(".json") {
        parse_json(&src, path, Flavor::Terraform).map(drop)
    } else {
        parse_hcl(&src, path, Flavor::Terraform).map(drop)
    }
}

/// Record a requirement. Built-in providers are never installed: only `terraform`
/// exists, and it takes no version constraint (the installer's errors for both, at
/// <https://github.com/opentofu/opentofu/blob/main/internal/providercache/installer.go>).
fn add(
    reqs: &mut ModuleRequirements,
    addr: ProviderAddr,
    c: &VersionConstraints,
    at: &SourcePos,
    flavor: Flavor,
) -> Result<(), ConfigError> {
    if !addr.is_builtin() {
        reqs.providers.entry(addr).or_default().merge(c);
        return Ok(());
    }
    let tool = flavor.product_name();
    let why = if addr.kind != "terraform" {
        format!(
            "this {tool} release has no built-in provider named {:?}",
            addr.kind
        )
    } else if !c.is_empty() {
        "built-in providers do not support explicit version constraints".to_owned()
    } else {
        return Ok(());
    };
    Err(invalid(
        at,
        "Invalid dependency on built-in provider",
        format!("Cannot use {addr}: {why}."),
    ))
}

/// Parse the constraint string of `who` (e.g. `provider "null" (registry.terraform.io/hashicorp/null)`).
fn parse_constraints(
    s: Option<&str>,
    at: &SourcePos,
    who: &str,
) -> Result<VersionConstraints, ConfigError> {
    let text = s.unwrap_or("");
    VersionConstraints::parse(text).map_err(|e| {
        invalid(
            at,
            "Invalid version constraint",
            format!(
                "Incorrect version constraint syntax for {who}: {text:?}: {}. Use constraints like \"~> 1.2\" or \">= 1.0, < 2.0\".",
                e.reason()
            ),
        )
    })
}

fn invalid(at: &SourcePos, summary: impl Into<Cow<'static, str>>, detail: String) -> ConfigError {
    ConfigError::Invalid {
        at: at.clone(),
        summary: summary.into(),
        detail,
    }
}

/// Where `depends_on` meets module calls an override file overrides: the releases refuse
/// one side or the other (`tool_version::OVERRIDE_MODULE_DEPENDS_ON`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModuleOverrideDependsOn {
    /// A non-empty `depends_on` in an override file's `module` block.
    pub in_overrides: Vec<SourcePos>,
    /// A non-empty `depends_on` of a primary `module` block that an override file overrides.
    pub in_overridden_bases: Vec<SourcePos>,
}

/// The local provider name a resource type implies: the part before the first `_`.
fn implied_local_name(resource_type: &str) -> &str {
    resource_type.split('_').next().unwrap_or(resource_type)
}

/// The local name from a `provider = NAME[.ALIAS]` meta-argument (or its JSON
/// string form).
fn local_name_from_ref(s: &str) -> &str {
    s.split('.').next().unwrap_or(s)
}

fn check_local_name(name: &str, at: &SourcePos) -> Result<(), ConfigError> {
    match normalize_part(name) {
        Ok(n) if n == name => Ok(()),
        Ok(n) => Err(invalid(
            at,
            "Invalid provider local name",
            format!("{name:?} is an invalid provider local name: must be lower case; try {n:?}."),
        )),
        Err(e) => Err(invalid(
            at,
            "Invalid provider local name",
            format!("{name:?} is an invalid provider local name: {e}."),
        )),
    }
}

#[cfg(test)]
mod tests;
