//! A module's files, primary and override, and how they merge (terraform's and tofu's
//! `configs.NewModule`): declarations checked across files, override files replacing whole
//! `required_providers` entries, core version constraints, the state storage and provider
//! configurations, the last override that writes one winning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file_content::{FileContent, FileModuleCall, ProviderConfig, RequiredEntry};
use super::{
    imports, invalid, module_files, parsed, validate, variables, ConfigError,
    ModuleOverrideDependsOn, ModuleRequirements, SourcePos,
};
use crate::flavor::Flavor;

/// What each file of a module contributes, primary files first, in the order read.
pub(super) struct ModuleFiles {
    pub(super) primary: Vec<Arc<FileContent>>,
    pub(super) overrides: Vec<Arc<FileContent>>,
}

impl ModuleFiles {
    /// Parse the module's files in `dir`, every position naming `shown_as`.
    pub(super) fn parse(dir: &Path, shown_as: &Path, flavor: Flavor) -> Result<Self, ConfigError> {
        let (primary, overrides) = module_files(dir, flavor)?;
        let parse_all = |paths: &[PathBuf]| -> Result<Vec<Arc<FileContent>>, ConfigError> {
            paths
                .iter()
                .map(|p| {
                    let shown = match p.file_name() {
                        Some(name) => shown_as.join(name),
                        None => p.clone(),
                    };
                    parsed::parse_file(p, &shown, flavor)
                })
                .collect()
        };
        Ok(ModuleFiles {
            primary: parse_all(&primary)?,
            overrides: parse_all(&overrides)?,
        })
    }

    /// Every file, primary first.
    fn all(&self) -> impl Iterator<Item = &Arc<FileContent>> {
        self.primary.iter().chain(&self.overrides)
    }

    /// Declarations unique across primary files; an override file redeclares only what a
    /// primary file declares, and its variables merge into theirs.
    pub(super) fn check_declarations(&self) -> Result<(), ConfigError> {
        let (primary, overrides) = (self.primary.as_slice(), self.overrides.as_slice());
        validate::check_unique(primary.iter().flat_map(|f| &f.declarations))?;
        for file in overrides {
            validate::check_override(
                primary.iter().flat_map(|f| &f.declarations),
                &validate::OverrideFacts {
                    declarations: &file.declarations,
                    depends_on: &file.depends_on,
                    moved: &file.moved,
                    imports: &file.import_at,
                },
            )?;
        }
        // Override files merge into the primary declaration of each variable, in order.
        let mut declared: BTreeMap<&str, variables::VariableFacts> = BTreeMap::new();
        for v in primary.iter().flat_map(|f| &f.variables) {
            declared.entry(v.name.as_str()).or_insert_with(|| v.clone());
        }
        for over in overrides.iter().flat_map(|f| &f.variables) {
            if let Some(base) = declared.get_mut(over.name.as_str()) {
                *base = variables::merge(base, over)?;
            }
        }

        Ok(())
    }

    /// The `required_providers` entries by local name: one block per module, then override
    /// files replace whole entries.
    pub(super) fn required_entries(&self) -> Result<BTreeMap<String, RequiredEntry>, ConfigError> {
        let (primary, overrides) = (self.primary.as_slice(), self.overrides.as_slice());
        // One required_providers block per module, then override files replace
        // whole entries by local name (tofu's configs.NewModule).
        let mut required: BTreeMap<String, RequiredEntry> = BTreeMap::new();
        let mut first_block: Option<&SourcePos> = None;
        for file in primary {
            for block in &file.required_blocks {
                if let Some(first) = first_block {
                    return Err(invalid(
                    &block.at,
                    "Duplicate required providers configuration",
                    format!("A module may have only one required providers configuration. The required providers were previously configured at {first}."),
                ));
                }
                first_block = Some(&block.at);
                for e in &block.entries {
                    required.insert(e.name.clone(), e.clone());
                }
            }
        }
        for file in overrides {
            for block in &file.required_blocks {
                for e in &block.entries {
                    required.insert(e.name.clone(), e.clone());
                }
            }
        }

        Ok(required)
    }

    /// The module's facts that do not depend on evaluation: core version constraints, state
    /// storage, overridden `depends_on`, check rules and newer block types.
    pub(super) fn module_facts(&self) -> ModuleRequirements {
        let (primary, overrides) = (self.primary.as_slice(), self.overrides.as_slice());
        // Override files replace the module's core version constraints (terraform's
        // configs.Module mergeFile), the last one that has any winning.
        let required_versions = overrides
            .iter()
            .rev()
            .find(|f| !f.required_versions.is_empty())
            .map(|f| f.required_versions.clone())
            .unwrap_or_else(|| {
                primary
                    .iter()
                    .flat_map(|f| f.required_versions.iter().cloned())
                    .collect()
            });
        // An override file's backend replaces the primary files' (configs.Module mergeFile).
        let state_storage = overrides
            .iter()
            .rev()
            .chain(primary.iter().rev())
            .find_map(|f| f.state_storage.clone());
        // `depends_on` of overridden module calls: the release decides which side is refused.
        let base_calls: BTreeMap<&str, &FileModuleCall> = primary
            .iter()
            .flat_map(|f| &f.module_calls)
            .map(|c| (c.name.as_str(), c))
            .collect();
        let override_calls: Vec<&FileModuleCall> =
            overrides.iter().flat_map(|f| &f.module_calls).collect();
        let module_override_depends_on = ModuleOverrideDependsOn {
            in_overrides: override_calls
                .iter()
                .filter_map(|c| c.depends_on.clone())
                .collect(),
            in_overridden_bases: override_calls
                .iter()
                .filter_map(|c| base_calls.get(c.name.as_str())?.depends_on.clone())
                .collect(),
        };
        ModuleRequirements {
            required_versions,
            state_storage,
            module_override_depends_on,
            override_check_rules: overrides
                .iter()
                .flat_map(|f| f.check_rules.iter().cloned())
                .collect(),
            condition_blocks: primary
                .iter()
                .chain(overrides)
                .flat_map(|f| &f.check_rules)
                .filter(|(kind, _)| matches!(kind.as_str(), "precondition" | "postcondition"))
                .cloned()
                .collect(),
            newer_blocks: primary
                .iter()
                .chain(overrides)
                .flat_map(|f| f.newer_blocks.iter().cloned())
                .collect(),
            ..ModuleRequirements::default()
        }
    }

    /// Provider configurations keyed by (name, alias), overrides merged.
    pub(super) fn provider_configs(
        &self,
    ) -> Result<BTreeMap<(String, String), ProviderConfig>, ConfigError> {
        let primary = self.primary.as_slice();
        // Provider configurations keyed by (name, alias): an override's version
        // replaces the primary one, as tofu merges provider blocks.
        let mut provider_cfgs: BTreeMap<(String, String), ProviderConfig> = BTreeMap::new();
        for (i, file) in self.all().enumerate() {
            let is_override = i >= primary.len();
            for pc in &file.provider_configs {
                let key = (pc.name.clone(), pc.alias.clone());
                match provider_cfgs.get_mut(&key) {
                    Some(existing) if is_override => {
                        if pc.version.is_some() {
                            existing.version.clone_from(&pc.version);
                            existing.at = pc.at.clone();
                        }
                    }
                    // An absent default configuration is an empty one, so an override may
                    // create it; an aliased one must exist, which catches alias typos.
                    None if is_override && !pc.alias.is_empty() => {
                        return Err(invalid(
                        &pc.at,
                        "Missing base provider configuration for override",
                        format!(
                            "There is no {} provider configuration with the alias {:?}. An override file can only override an aliased provider configuration that was already defined in a primary configuration file.",
                            pc.name, pc.alias
                        ),
                    ));
                    }
                    _ => {
                        provider_cfgs.insert(key, pc.clone());
                    }
                }
            }
        }
        Ok(provider_cfgs)
    }

    /// The local provider names resources and `import` blocks use.
    pub(super) fn used_provider_names(&self, flavor: Flavor) -> Result<Vec<String>, ConfigError> {
        let primary = self.primary.as_slice();
        let mut names: Vec<String> = self
            .all()
            .flat_map(|f| f.resource_providers.iter().cloned())
            .collect();
        // An override's resource block replaces only the arguments it writes.
        let mut managed: BTreeMap<String, Option<imports::ProviderRef>> = BTreeMap::new();
        for (i, file) in self.all().enumerate() {
            for (resource, provider) in &file.managed {
                if i < primary.len() || provider.is_some() {
                    managed.insert(resource.clone(), provider.clone());
                }
            }
        }
        let import_blocks: Vec<imports::ImportBlock> =
            self.all().flat_map(|f| f.imports.iter().cloned()).collect();
        names.extend(imports::required_by_imports(
            &import_blocks,
            &managed,
            flavor,
        )?);
        Ok(names)
    }
}
