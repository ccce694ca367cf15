//! Rules terraform's configuration loader enforces at `init` that installation itself
//! would not notice: names declared twice, reserved variable names, and meta-arguments
//! that exclude each other. The messages are terraform's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{invalid, ConfigError, SourcePos};

/// Something a module declares by name; each kind's names are unique per module.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Declaration {
    pub(super) kind: DeclKind,
    pub(super) name: String,
    pub(super) at: SourcePos,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub(super) enum DeclKind {
    Variable,
    Local,
    Output,
    /// A managed resource of the given type.
    Resource(String),
    /// A data source of the given type.
    Data(String),
}

/// The names a `module` block reserves: a variable named so could not be set by a caller.
const RESERVED_VARIABLE_NAMES: &[&str] = &[
    "source",
    "version",
    "count",
    "for_each",
    "depends_on",
    "providers",
    "lifecycle",
    "locals",
    "provider",
];

/// Every name declared in the primary files must be unique per kind (override files
/// merge into what they name instead).
pub(super) fn check_unique<'a>(
    declarations: impl IntoIterator<Item = &'a Declaration>,
) -> Result<(), ConfigError> {
    let mut seen: BTreeMap<(&DeclKind, &str), &SourcePos> = BTreeMap::new();
    for d in declarations {
        let Some(first) = seen.insert((&d.kind, &d.name), &d.at) else {
            continue;
        };
        let name = &d.name;
        let (summary, detail) = match &d.kind {
            DeclKind::Variable => (
                "Duplicate variable declaration".into(),
                format!("A variable named {name:?} was already declared at {first}. Variable names must be unique within a module."),
            ),
            DeclKind::Local => (
                "Duplicate local value definition".into(),
                format!("A local value named {name:?} was already defined at {first}. Local value names must be unique within a module."),
            ),
            DeclKind::Output => (
                "Duplicate output definition".into(),
                format!("An output named {name:?} was already defined at {first}. Output names must be unique within a module."),
            ),
            DeclKind::Resource(t) => (
                format!("Duplicate resource {t:?} configuration").into(),
                format!("A {t} resource named {name:?} was already declared at {first}. Resource names must be unique per type in each module."),
            ),
            DeclKind::Data(t) => (
                format!("Duplicate data {t:?} configuration").into(),
                format!("A {t} data resource named {name:?} was already declared at {first}. Resource names must be unique per type in each module."),
            ),
        };
        let summary: Cow<'static, str> = summary;
        return Err(invalid(&d.at, summary, detail));
    }
    Ok(())
}

/// A variable's name must be an identifier that a `module` block does not reserve.
pub(super) fn check_variable_name(name: &str, at: &SourcePos) -> Result<(), ConfigError> {
    if !is_identifier(name) {
        return Err(invalid(
            at,
            "Invalid variable name",
            "A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.".into(),
        ));
    }
    if RESERVED_VARIABLE_NAMES.contains(&name) {
        return Err(invalid(
            at,
            "Invalid variable name",
            format!("The variable name {name:?} is reserved due to its special meaning inside module blocks."),
        ));
    }
    Ok(())
}

/// `count` and `for_each` exclude each other on a resource, data source or module call.
pub(super) fn check_repetition(
    what: &str,
    has_count: bool,
    has_for_each: bool,
    at: &SourcePos,
) -> Result<(), ConfigError> {
    if has_count && has_for_each {
        return Err(invalid(
            at,
            "Invalid combination of \"count\" and \"for_each\"",
            format!("The \"count\" and \"for_each\" meta-arguments are mutually-exclusive, only one should be used to be explicit about the number of {what} to be created."),
        ));
    }
    Ok(())
}

/// HCL's identifier rule for names: a letter or underscore, then letters, digits,
/// underscores and dashes.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// What an override file may not do, in the tools' words (`configs.Module.mergeFile` and
/// `module_merge.go`, terraform and OpenTofu alike): override a declaration no primary file
/// makes, hold `moved` or `import` blocks, or set `depends_on`.
pub(super) fn check_override<'a>(
    primary: impl IntoIterator<Item = &'a Declaration>,
    file: &OverrideFacts<'_>,
) -> Result<(), ConfigError> {
    let base: std::collections::BTreeSet<(&DeclKind, &str)> = primary
        .into_iter()
        .map(|d| (&d.kind, d.name.as_str()))
        .collect();
    // The tools merge variables, locals and outputs before resources and data.
    let rank = |k: &DeclKind| match k {
        DeclKind::Variable => 0,
        DeclKind::Local => 1,
        DeclKind::Output => 2,
        DeclKind::Resource(_) => 3,
        DeclKind::Data(_) => 4,
    };
    let mut declared: Vec<&Declaration> = file.declarations.iter().collect();
    declared.sort_by_key(|d| rank(&d.kind));
    for d in declared {
        if base.contains(&(&d.kind, d.name.as_str())) {
            continue;
        }
        let name = &d.name;
        let (summary, detail) = match &d.kind {
            DeclKind::Variable => (
                "Missing base variable declaration to override",
                format!("There is no variable named {name:?}. An override file can only override a variable that was already declared in a primary configuration file."),
            ),
            DeclKind::Local => (
                "Missing base local value definition to override",
                format!("There is no local value named {name:?}. An override file can only override a local value that was already defined in a primary configuration file."),
            ),
            DeclKind::Output => (
                "Missing base output definition to override",
                format!("There is no output named {name:?}. An override file can only override an output that was already defined in a primary configuration file."),
            ),
            DeclKind::Resource(t) => (
                "Missing resource to override",
                format!("There is no {t} resource named {name:?}. An override file can only override a resource block defined in a primary configuration file."),
            ),
            DeclKind::Data(t) => (
                "Missing data resource to override",
                format!("There is no {t} data resource named {name:?}. An override file can only override a data block defined in a primary configuration file."),
            ),
        };
        return Err(invalid(&d.at, summary, detail));
    }
    if let Some(at) = file.depends_on.first() {
        return Err(invalid(
            at,
            "Unsupported override",
            "The depends_on argument may not be overridden.".into(),
        ));
    }
    if let Some(at) = file.moved.first() {
        return Err(invalid(
            at,
            "Cannot override 'moved' blocks",
            "Records of moved objects can appear only in normal files, not in override files."
                .into(),
        ));
    }
    if let Some(at) = file.imports.first() {
        return Err(invalid(
            at,
            "Cannot override 'import' blocks",
            "Import blocks can appear only in normal files, not in override files.".into(),
        ));
    }
    Ok(())
}

/// What [`check_override`] reads of one override file.
pub(super) struct OverrideFacts<'a> {
    pub(super) declarations: &'a [Declaration],
    /// Where a non-empty `depends_on` of a resource, data, module or output block is.
    pub(super) depends_on: &'a [SourcePos],
    /// Where its `moved` blocks are.
    pub(super) moved: &'a [SourcePos],
    /// Where its `import` blocks are.
    pub(super) imports: &'a [SourcePos],
}
