//! Modules that test files use: `init` installs the module of every
//! `run "NAME" { module { source = …, version = … } }` block of the root module's test
//! files, so that `test` finds them: OpenTofu in every release, terraform from 1.6
//! (`tool_version::TEST_FILE_MODULES`; terraform 1.0 has no test files).
//!
//! Rules, as the tools' configuration builders apply them (upstream:
//! internal/configs/config_build.go `buildTestModules`, terraform v1.6.0 and v1.11.4):
//! - test files are `*.tftest.hcl` in the root module's directory and in its test
//!   directory (`tests/`, or `-test-directory`); OpenTofu also reads `*.tofutest.hcl`, and a
//!   `.tofutest.hcl` file hides the `.tftest.hcl` file of the same stem;
//! - the module of run `R` in file `[DIR/]STEM.tftest.hcl` is installed under the key
//!   `test.[DIR parts.]STEM.R` (the stem keeps any other suffix, as tofu trims only
//!   `.tftest.hcl`);
//! - `source` and `version` are literal strings; a local source is relative to the root
//!   module;
//! - terraform takes only local and registry sources there: any other address is refused
//!   at init, in its words (upstream: internal/configs/test_file.go, v1.6.0 to v1.11.4);
//!   OpenTofu installs it.

use std::collections::BTreeMap;
use std::path::Path;

use hcl::edit::structure::Structure;

use super::{invalid, ConfigError, ModuleCall, SourcePos};
use crate::flavor::Flavor;
use crate::module_source::ModuleSource;
use crate::read::{read_capped, MAX_CONFIG_FILE};
use crate::span::line_at;
use crate::static_eval::Inputs;

/// The directory of test files beside the root module's own.
pub const DEFAULT_TEST_DIRECTORY: &str = "tests";

/// The module calls of the root module's test files as `flavor`'s tool reads them, by key;
/// `test_directory` is relative to `root`.
pub fn test_module_calls(
    root: &Path,
    test_directory: &str,
    flavor: Flavor,
) -> Result<BTreeMap<String, ModuleCall>, ConfigError> {
    let mut calls = BTreeMap::new();
    let test_directory = test_directory.trim_end_matches('/');
    for rel_dir in [None, Some(test_directory)] {
        let dir = match rel_dir {
            Some(d) => root.join(d),
            None => root.to_owned(),
        };
        for name in test_file_names(&dir, flavor) {
            let path = dir.join(&name);
            let stem = name.strip_suffix(".tftest.hcl").unwrap_or(&name);
            let mut prefix = vec!["test".to_owned()];
            prefix.extend(
                rel_dir
                    .into_iter()
                    .flat_map(|d| d.split('/'))
                    .map(str::to_owned),
            );
            prefix.push(stem.to_owned());
            read_test_file(&path, &prefix.join("."), flavor, &mut calls)?;
        }
    }
    Ok(calls)
}

/// Test file names in `dir` that `flavor`'s tool reads, sorted; absent directories have
/// none.
fn test_file_names(dir: &Path, flavor: Flavor) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| !n.starts_with('.'))
        .filter(|n| {
            n.ends_with(".tftest.hcl") || (flavor == Flavor::Tofu && n.ends_with(".tofutest.hcl"))
        })
        .collect();
    names.sort();
    let hidden: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_suffix(".tofutest.hcl"))
        .map(|stem| format!("{stem}.tftest.hcl"))
        .collect();
    names.retain(|n| !hidden.contains(n));
    names
}

fn read_test_file(
    path: &Path,
    prefix: &str,
    flavor: Flavor,
    calls: &mut BTreeMap<String, ModuleCall>,
) -> Result<(), ConfigError> {
    let src = read_capped(path, MAX_CONFIG_FILE).map_err(|err| ConfigError::Read {
        path: path.to_owned(),
        err,
    })?;
    let at_offset = |offset: Option<usize>| SourcePos {
        file: path.to_owned(),
        line: offset.map(|o| line_at(&src, o)),
    };
    let body = hcl::edit::parser::parse_body(&src).map_err(|e| ConfigError::Syntax {
        at: SourcePos {
            file: path.to_owned(),
            line: Some(e.location().line()),
        },
        message: e.message().to_owned(),
    })?;
    for structure in body.iter() {
        let Structure::Block(run) = structure else {
            continue;
        };
        if run.ident.as_str() != "run" {
            continue;
        }
        let Some(name) = run.labels.first() else {
            continue;
        };
        use hcl::edit::Span as _;
        let Some(module) = run
            .body
            .iter()
            .filter_map(|s| match s {
                Structure::Block(b) if b.ident.as_str() == "module" => Some(b),
                _ => None,
            })
            .next()
        else {
            continue;
        };
        let at = at_offset(module.span().map(|r| r.start));
        let literal = |arg: &str| -> Result<Option<String>, ConfigError> {
            let Some(a) = module.body.get_attribute(arg) else {
                return Ok(None);
            };
            match super::hcl_exprs::literal_string(&a.value) {
                Some(s) => Ok(Some(s)),
                None => Err(invalid(
                    &at_offset(a.span().map(|r| r.start)),
                    "Variables not allowed",
                    format!("The {arg:?} of a test run's module must be a literal string."),
                )),
            }
        };
        let Some(source) = literal("source")? else {
            return Err(invalid(
                &at,
                "Missing required argument",
                "The argument \"source\" is required, but no definition was found.".into(),
            ));
        };
        if flavor == Flavor::Terraform {
            let remote = matches!(
                ModuleSource::parse(&source, flavor.default_registry_host()),
                Ok(ModuleSource::Remote { .. } | ModuleSource::Unsupported { .. })
            );
            if remote {
                let source_at = module.body.get_attribute("source").and_then(|a| a.span());
                return Err(invalid(
                    &at_offset(source_at.map(|r| r.start)),
                    "Invalid module source address",
                    "Only local or registry module sources are currently supported from within \
                     test run blocks."
                        .into(),
                ));
            }
        }
        let key = format!("{prefix}.{}", name.as_str());
        calls.insert(
            key,
            ModuleCall {
                source,
                version: literal("version")?,
                at,
                inputs: Inputs::default(),
                repeated_by: None,
            },
        );
    }
    Ok(())
}
