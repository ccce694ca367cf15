//! What a package says about itself: `module-package.meta.hcl` at a package root says which of its modules
//! may be shared read-only. The file and its grammar are those proposed by OpenTofu's module
//! installation RFCs (<https://github.com/opentofu/opentofu/pull/3252>); the order in which
//! statements win is tstore's own, see [`decide`]. A package without the file says nothing;
//! with it (even empty), every module of the package it does not list is read-only.
//!
//! ```hcl
//! package { description = "…" }
//! module "LABEL" {
//!   path      = "./modules/mymod"                       # "." or "./…", inside the package
//!   read-only = { self = false, dependencies = true }   # each defaults to true
//! }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use hcl::{Body, Expression, Structure};

use tstore_tofu::module_source::clean_join;

/// The file name at a package root.
pub const META_FILE: &str = "module-package.meta.hcl";

/// One `module` entry's read-only statement; `None` = not written (defaults to true).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReadOnly {
    /// `self`.
    pub this: Option<bool>,
    /// `dependencies`.
    pub dependencies: Option<bool>,
}

/// A parsed meta file: cleaned module path (`.`, `modules/x`) → statement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Entries by cleaned path.
    pub modules: BTreeMap<String, ReadOnly>,
}

impl Meta {
    /// The statement for the module at `path` (cleaned); unlisted modules get the defaults.
    pub(crate) fn entry(&self, path: &str) -> ReadOnly {
        self.modules.get(path).cloned().unwrap_or_default()
    }
}

/// Why a meta file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// It cannot be read: a symlink, not a regular file, or larger than tstore reads.
    #[error(transparent)]
    Read(#[from] crate::own_files::OwnFileError),
    /// It is not valid HCL (said without quoting the file).
    #[error("{0}")]
    Syntax(String),
    /// It breaks a rule of the format.
    #[error("{0}")]
    Invalid(String),
}

/// The largest meta file read: real ones are a few hundred bytes.
const MAX_META_FILE: u64 = 64 << 10;

/// Read the meta file of the package rooted at `root`: `Ok(None)` when absent.
pub(crate) fn load(root: &Path) -> Result<Option<Meta>, MetaError> {
    let path = root.join(META_FILE);
    match crate::own_files::read_own_file(&path, MAX_META_FILE)? {
        Some(text) => parse(&text).map(Some),
        None => Ok(None),
    }
}

/// Parse a meta file's text.
pub(crate) fn parse(text: &str) -> Result<Meta, MetaError> {
    let body: Body =
        hcl::parse(text).map_err(|e| MetaError::Syntax(crate::own_files::syntax_error(&e)))?;
    let mut meta = Meta::default();
    let mut labels = std::collections::BTreeSet::new();
    for s in body.into_inner() {
        let Structure::Block(block) = s else { continue };
        if block.identifier.as_str() != "module" {
            continue;
        }
        let label = match block.labels.first() {
            Some(l) if block.labels.len() == 1 => l.as_str().to_owned(),
            _ => {
                return Err(MetaError::Invalid(
                    "a module block needs exactly one label".into(),
                ))
            }
        };
        if !labels.insert(label.clone()) {
            return Err(MetaError::Invalid(format!(
                "duplicate module block {label:?}"
            )));
        }
        let mut path = None;
        let mut ro = ReadOnly::default();
        for s in block.body.into_inner() {
            match s {
                Structure::Attribute(a) if a.key.as_str() == "path" => match a.expr {
                    Expression::String(p) => path = Some(p),
                    _ => {
                        return Err(MetaError::Invalid(format!(
                            "module {label:?}: path must be a string"
                        )))
                    }
                },
                Structure::Attribute(a) if a.key.as_str() == "read-only" => match a.expr {
                    Expression::Object(obj) => {
                        for (k, v) in obj {
                            let key = match &k {
                                hcl::ObjectKey::Identifier(i) => i.as_str().to_owned(),
                                hcl::ObjectKey::Expression(Expression::String(s)) => s.clone(),
                                hcl::ObjectKey::Expression(Expression::Variable(v)) => {
                                    v.as_str().to_owned()
                                }
                                _ => continue,
                            };
                            read_only_field(&label, &mut ro, &key, &v)?;
                        }
                    }
                    _ => {
                        return Err(MetaError::Invalid(format!(
                            "module {label:?}: read-only must be an object"
                        )))
                    }
                },
                Structure::Block(b) if b.identifier.as_str() == "read-only" => {
                    for s in b.body.into_inner() {
                        if let Structure::Attribute(a) = s {
                            read_only_field(&label, &mut ro, a.key.as_str(), &a.expr)?;
                        }
                    }
                }
                _ => {}
            }
        }
        let Some(path) = path else {
            return Err(MetaError::Invalid(format!(
                "module {label:?}: path is required"
            )));
        };
        if !(path == "." || path.starts_with("./")) {
            return Err(MetaError::Invalid(format!(
                "module {label:?}: path {path:?} must be \".\" or start with \"./\""
            )));
        }
        let cleaned = clean_join(".", &path);
        if cleaned.starts_with("..") {
            return Err(MetaError::Invalid(format!(
                "module {label:?}: path {path:?} leaves the package"
            )));
        }
        if meta.modules.insert(cleaned, ro).is_some() {
            return Err(MetaError::Invalid(format!(
                "module {label:?}: path {path:?} is listed twice"
            )));
        }
    }
    Ok(meta)
}

fn read_only_field(
    label: &str,
    ro: &mut ReadOnly,
    key: &str,
    v: &Expression,
) -> Result<(), MetaError> {
    let Expression::Bool(b) = v else {
        return Err(MetaError::Invalid(format!(
            "module {label:?}: read-only.{key} must be true or false"
        )));
    };
    match key {
        "self" => ro.this = Some(*b),
        "dependencies" => ro.dependencies = Some(*b),
        _ => {}
    }
    Ok(())
}

/// Whether a module may be shared read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadOnlyStatus {
    /// Yes.
    ReadOnly,
    /// No: it (or a caller's statement about its dependencies) says it writes to itself.
    SelfModifying,
    /// Nobody said.
    Unknown,
}

/// Inputs of the decision for one module.
#[derive(Clone, Debug)]
pub(crate) struct Facts<'a> {
    /// Its package's meta file and the module's cleaned path in it.
    pub own: Option<(&'a Meta, &'a str)>,
    /// `dependencies` of the nearest ancestor whose package has a meta file.
    pub inherited: Option<bool>,
    /// The root file's `path = "."` entry's `dependencies`, if written.
    pub root_dependencies: Option<bool>,
}

/// Whether a module may be shared read-only, with the reason. The first matching rule wins:
///
/// 1. its own package's entry says `self = false` → self-modifying (an author's explicit
///    statement wins: linking a self-modifying module breaks apply, copying only costs disk);
/// 2. the root package's `path = "."` entry writes `dependencies` → that value;
/// 3. the nearest calling package with a meta file says `dependencies = false` →
///    self-modifying;
/// 4. its own package has a meta file → read-only;
/// 5. the nearest calling package with a meta file has `dependencies` true (written or by
///    default) → read-only;
/// 6. otherwise unknown.
pub(crate) fn decide(f: &Facts<'_>) -> (ReadOnlyStatus, String) {
    use ReadOnlyStatus::*;
    let own = f.own.map(|(m, p)| (m.entry(p), p));
    if let Some((ro, p)) = &own {
        if ro.this == Some(false) {
            return (
                SelfModifying,
                format!("{META_FILE} says self = false for path {p:?}"),
            );
        }
    }
    if let Some(r) = f.root_dependencies {
        let status = if r { ReadOnly } else { SelfModifying };
        return (
            status,
            format!("the root {META_FILE} says dependencies = {r} for path \".\""),
        );
    }
    if f.inherited == Some(false) {
        return (
            SelfModifying,
            "a calling package's meta file says dependencies = false".into(),
        );
    }
    if let Some((_, p)) = own {
        return (
            ReadOnly,
            format!("its package's {META_FILE} covers path {p:?} (read-only by default)"),
        );
    }
    if f.inherited == Some(true) {
        return (
            ReadOnly,
            "a calling package's meta file says its dependencies are read-only".into(),
        );
    }
    (Unknown, format!("no {META_FILE} makes a statement"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc_examples() {
        let m = parse(
            r#"
module "mymod" {
    path = "./modules/mymod"
    read-only = {
        self = false
        dependencies = true
    }
}
module "othermod" {
    path = "./modules/othermod"
}
"#,
        )
        .unwrap();
        assert_eq!(m.entry("modules/mymod").this, Some(false));
        assert_eq!(m.entry("modules/othermod"), ReadOnly::default());
        assert_eq!(parse("# nothing\n").unwrap(), Meta::default());
        assert!(parse("module \"x\" { path = \"../up\" }").is_err());
        assert!(
            parse("module \"x\" { path = \"./a\" }\nmodule \"y\" { path = \"./a/\" }").is_err()
        );
        assert!(parse("module \"x\" {").is_err());
    }

    #[test]
    fn rules_in_order() {
        let meta =
            parse("module \"m\" {\n path = \".\"\n read-only = { self = false }\n}").unwrap();
        let f = Facts {
            own: Some((&meta, ".")),
            inherited: None,
            root_dependencies: Some(true),
        };
        assert_eq!(decide(&f).0, ReadOnlyStatus::SelfModifying);
        let empty = Meta::default();
        let f = Facts {
            own: Some((&empty, ".")),
            inherited: Some(false),
            root_dependencies: None,
        };
        assert_eq!(decide(&f).0, ReadOnlyStatus::SelfModifying);
        let f = Facts {
            own: None,
            inherited: None,
            root_dependencies: None,
        };
        assert_eq!(decide(&f).0, ReadOnlyStatus::Unknown);
    }
}
