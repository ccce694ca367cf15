//! Provider requirements of a whole configuration: the root module and every module it
//! calls, recursively.
//!
//! Local calls (`./x`, `../x`) are read from the source directory, relative to the
//! calling module. Remote calls are read where `.terraform/modules/modules.json` says
//! they are installed; a remote call that is not installed yet contributes nothing (the
//! modules installer runs first and records it). Constraints on the same provider from
//! different modules are combined with AND, as tofu does.
//!
//! The caller may say where an installed directory's files can be read more cheaply (the
//! installer: a link into the read-only mount is read from the store's own copy, not
//! through FUSE); every position and error still names the installed path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::addr::ProviderAddr;
use crate::config::{self, ConfigError, SourcePos};
use crate::flavor::Flavor;
use crate::static_eval::Inputs;
use crate::version::VersionConstraints;

/// How deep module calls may nest before we assume a cycle (`./a` calling `../a`).
const MAX_DEPTH: usize = 64;

/// Errors from walking the module tree.
#[derive(Debug, thiserror::Error)]
pub enum ModuleTreeError {
    /// One module's configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A local module call names a directory that does not exist.
    #[error(
        "{at}: Unreadable module directory: the directory {} for module call \"{key}\" \
         does not exist or cannot be read",
        dir.display()
    )]
    MissingLocalModule {
        /// The call's position.
        at: SourcePos,
        /// Module key (`a.b`).
        key: String,
        /// The directory the source resolves to.
        dir: PathBuf,
    },
    /// Module calls nest deeper than [`MAX_DEPTH`]; almost surely a cycle.
    #[error(
        "{at}: Module calls nest more than {MAX_DEPTH} levels deep at \"{key}\"; \
         a local module probably calls itself"
    )]
    TooDeep {
        /// The call's position.
        at: SourcePos,
        /// Module key.
        key: String,
    },
    /// `modules.json` exists but cannot be understood.
    #[error("cannot read the module manifest {}: {message}", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

/// The combined provider requirements of a configuration.
#[derive(Clone, Debug, Default)]
pub struct ConfigurationRequirements {
    /// Every provider any module uses, with the AND of all constraints.
    pub providers: BTreeMap<ProviderAddr, VersionConstraints>,
    /// Keys of the modules that were read (`""` is the root), in walk order.
    pub modules: Vec<String>,
    /// Where the root module keeps its state.
    pub state_storage: crate::state::StateStorage,
}

/// The root module of a configuration, as init is told about it.
#[derive(Clone, Debug)]
pub struct RootModule {
    /// Its variable values, for sources evaluated early (tofu).
    pub inputs: Inputs,
    /// Its test directory (`tests` unless `-test-directory` says otherwise), relative to it,
    /// when the tool version installs the modules that test files call
    /// (`tool_version::TEST_FILE_MODULES`); `None`: test files are not read.
    pub test_directory: Option<String>,
}

impl Default for RootModule {
    fn default() -> Self {
        RootModule {
            inputs: Inputs::default(),
            test_directory: Some(config::test_files::DEFAULT_TEST_DIRECTORY.to_owned()),
        }
    }
}

/// Load the requirements of the configuration rooted at `root`.
pub fn load_configuration_requirements(
    root: &Path,
    modules_dir: &Path,
    flavor: Flavor,
    root_module: RootModule,
) -> Result<ConfigurationRequirements, ModuleTreeError> {
    load_configuration_requirements_reading(root, modules_dir, flavor, root_module, &|_| None)
}

/// [`load_configuration_requirements`], reading an installed module directory (a path
/// `modules.json` names, or a directory under one) from `read_dir(path)` when that says
/// where the same files are; positions and errors name `path`.
pub fn load_configuration_requirements_reading(
    root: &Path,
    modules_dir: &Path,
    flavor: Flavor,
    root_module: RootModule,
    read_dir: &dyn Fn(&Path) -> Option<PathBuf>,
) -> Result<ConfigurationRequirements, ModuleTreeError> {
    let installed = installed_modules(root, modules_dir)?;
    let mut out = ConfigurationRequirements::default();
    let at = Node {
        dir: root,
        shown: root,
        key: "",
        depth: 0,
        inputs: root_module.inputs,
    };
    let walk_ctx = Walk {
        flavor,
        test_directory: root_module.test_directory.as_deref(),
        installed: &installed,
        read_dir,
    };
    walk_ctx.walk(at, &mut out)?;
    Ok(out)
}

/// One module of the tree being walked: read from `dir`, named `shown`.
struct Node<'a> {
    dir: &'a Path,
    shown: &'a Path,
    key: &'a str,
    depth: usize,
    inputs: Inputs,
}

/// What stays the same over one walk.
struct Walk<'a> {
    flavor: Flavor,
    test_directory: Option<&'a str>,
    installed: &'a BTreeMap<String, PathBuf>,
    read_dir: &'a dyn Fn(&Path) -> Option<PathBuf>,
}

impl Walk<'_> {
    fn walk(
        &self,
        node: Node<'_>,
        out: &mut ConfigurationRequirements,
    ) -> Result<(), ModuleTreeError> {
        let Walk {
            flavor,
            test_directory,
            installed,
            read_dir,
        } = *self;
        let Node {
            dir,
            shown,
            key,
            depth,
            inputs,
        } = node;
        let mut module = config::load_module_requirements_shown_as(dir, shown, flavor, inputs)?;
        if let (true, Some(test_directory)) = (key.is_empty(), test_directory) {
            module
                .module_calls
                .extend(config::test_files::test_module_calls(
                    dir,
                    test_directory,
                    flavor,
                )?);
        }
        if key.is_empty() {
            out.state_storage = module.state_storage.take().unwrap_or_default();
        }
        out.modules.push(key.to_owned());
        for (addr, constraints) in module.providers {
            out.providers
                .entry(addr)
                .and_modify(|c| c.merge(&constraints))
                .or_insert(constraints);
        }
        for (name, call) in module.module_calls {
            let child_key = if key.is_empty() {
                name
            } else {
                format!("{key}.{name}")
            };
            if depth + 1 > MAX_DEPTH {
                return Err(ModuleTreeError::TooDeep {
                    at: call.at,
                    key: child_key,
                });
            }
            let (child_dir, child_shown) = if crate::module_source::is_local(&call.source) {
                let d = dir.join(&call.source);
                if !d.is_dir() {
                    return Err(ModuleTreeError::MissingLocalModule {
                        at: call.at,
                        key: child_key,
                        dir: shown.join(&call.source),
                    });
                }
                (d, shown.join(&call.source))
            } else {
                let Some(installed_dir) = installed.get(&child_key) else {
                    continue;
                };
                let d = read_dir(installed_dir)
                    .filter(|d| d.is_dir())
                    .unwrap_or_else(|| installed_dir.clone());
                if !d.is_dir() {
                    continue;
                }
                (d, installed_dir.clone())
            };
            let child = Node {
                dir: &child_dir,
                shown: &child_shown,
                key: &child_key,
                depth: depth + 1,
                inputs: call.inputs,
            };
            self.walk(child, out)?;
        }
        Ok(())
    }
}

/// Module key → installed directory, from `.terraform/modules/modules.json`.
fn installed_modules(
    root: &Path,
    modules_dir: &Path,
) -> Result<BTreeMap<String, PathBuf>, ModuleTreeError> {
    let path = modules_dir.join("modules.json");
    let text = match crate::read::read_capped(&path, crate::read::MAX_CONFIG_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => {
            return Err(ModuleTreeError::Manifest {
                path,
                message: e.to_string(),
            })
        }
    };
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ModuleTreeError::Manifest {
            path: path.clone(),
            message: e.to_string(),
        })?;
    let mut out = BTreeMap::new();
    for record in manifest["Modules"].as_array().into_iter().flatten() {
        if let (Some(key), Some(dir)) = (record["Key"].as_str(), record["Dir"].as_str()) {
            if !key.is_empty() {
                out.insert(key.to_owned(), root.join(dir));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, body) in files {
            let p = dir.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
    }

    const HOST: &str = "registry.terraform.io";

    #[test]
    fn local_and_installed_modules_are_walked_and_constraints_combined() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(
            root,
            &[
                (
                    "main.tf",
                    r#"
terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~>2.0,   >=2.0.0 , !=2.1.1" }
  }
}
module "a" { source = "./modules/a" }
module "remote" {
  source  = "example.com/ns/remote/aws"
  version = "1.0.0"
}
"#,
                ),
                (
                    "modules/a/main.tf",
                    r#"
terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "<= 2.9, >= 2.0.0" }
  }
}
module "b" { source = "../b" }
"#,
                ),
                ("modules/b/main.tf", r#"resource "random_id" "x" {}"#),
                (
                    ".terraform/modules/modules.json",
                    r#"{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"remote","Source":"example.com/ns/remote/aws","Version":"1.0.0","Dir":".terraform/modules/remote"}]}"#,
                ),
                (
                    ".terraform/modules/remote/main.tf",
                    r#"resource "tls_private_key" "k" {}"#,
                ),
            ],
        );
        let reqs = load_configuration_requirements(
            root,
            &root.join(".terraform/modules"),
            Flavor::Terraform,
            RootModule::default(),
        )
        .unwrap();
        assert_eq!(reqs.modules, ["", "a", "a.b", "remote"]);
        let names: Vec<String> = reqs.providers.keys().map(|a| a.to_string()).collect();
        assert_eq!(
            names,
            [
                "registry.terraform.io/hashicorp/null",
                "registry.terraform.io/hashicorp/random",
                "registry.terraform.io/hashicorp/tls",
            ]
        );
        let null = ProviderAddr::parse_source("hashicorp/null", HOST).unwrap();
        // Root and child constraints merged, deduplicated and canonicalized: the
        // `constraints` line terraform 1.0.3 wrote for this same configuration.
        assert_eq!(
            reqs.providers[&null].to_lock_string(),
            ">= 2.0.0, ~> 2.0, != 2.1.1, <= 2.9.0"
        );
    }

    #[test]
    fn uninstalled_remote_modules_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            &[(
                "main.tf",
                r#"module "x" { source = "git::https://example.com/x.git" }"#,
            )],
        );
        let reqs = load_configuration_requirements(
            tmp.path(),
            &tmp.path().join(".terraform/modules"),
            Flavor::Terraform,
            RootModule::default(),
        )
        .unwrap();
        assert_eq!(reqs.modules, [""]);
        assert!(reqs.providers.is_empty());
    }

    #[test]
    fn missing_local_module_names_the_call() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            &[("main.tf", "module \"gone\" {\n  source = \"./nope\"\n}\n")],
        );
        let err = load_configuration_requirements(
            tmp.path(),
            &tmp.path().join(".terraform/modules"),
            Flavor::Terraform,
            RootModule::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("main.tf:1"), "{err}");
        assert!(err.contains("\"gone\""), "{err}");
    }

    #[test]
    fn self_calling_local_module_is_reported_not_looped() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            &[
                ("main.tf", r#"module "a" { source = "./a" }"#),
                ("a/main.tf", r#"module "again" { source = "./" }"#),
            ],
        );
        let err = load_configuration_requirements(
            tmp.path(),
            &tmp.path().join(".terraform/modules"),
            Flavor::Terraform,
            RootModule::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("levels deep"), "{err}");
    }
}
