//! One reader per block kind of the native syntax, as `HclFile` methods: what each block
//! contributes to its file's [`FileContent`].

use hcl::edit::expr::Expression;
use hcl::edit::structure::Block;

use super::super::hcl_exprs::{
    default_value, import_target, literal_string, provider_ref, type_constraint,
};
use super::super::imports::ImportBlock;
use super::super::validate::{self, DeclKind, Declaration};
use super::super::variables::{self, VariableFacts};
use super::super::{
    check_local_name, ConfigError, FileContent, FileModuleCall, ProviderConfig, RequiredVersion,
};
use super::{check_provider_arguments, HclFile};
use crate::flavor::Flavor;
use crate::state::StateStorage;

impl HclFile<'_> {
    /// A `terraform` block: `required_version`, the state storage, provider requirements, `provider_meta` names.
    pub(super) fn terraform_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        if let Some(a) = block.body.get_attribute("required_version") {
            out.required_versions.push(RequiredVersion {
                constraint: self.string_value(a)?,
                at: self.at(a),
            });
        }
        for inner in block.body.blocks() {
            match inner.ident.as_str() {
                "backend" => {
                    let kind = inner.labels.first().map(|l| l.as_str()).unwrap_or("");
                    out.note_state_storage(Some(if kind == "local" {
                        let arg = |name| {
                            inner
                                .body
                                .get_attribute(name)
                                .and_then(|a| literal_string(&a.value))
                        };
                        match (arg("path"), arg("workspace_dir")) {
                            (None, None) => StateStorage::Local,
                            (path, workspace_dir) => StateStorage::LocalAt {
                                path,
                                workspace_dir,
                            },
                        }
                    } else {
                        StateStorage::Remote(kind.to_owned())
                    }));
                }
                "cloud" | "state_store" => out.note_state_storage(Some(StateStorage::Remote(
                    inner.ident.as_str().to_owned(),
                ))),
                "required_providers" => {
                    out.required_blocks.push(self.required_providers(inner)?);
                }
                "provider_meta" => {
                    check_local_name(inner.labels[0].as_str(), &self.at(inner))?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A `provider` block: its name (normalized), arguments, alias and (legacy) version.
    pub(super) fn provider_block(
        &self,
        block: &Block,
        flavor: Flavor,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        let Some(name) = block.labels.first() else {
            return Ok(());
        };
        check_local_name(name.as_str(), &self.at(block))?;
        check_provider_arguments(self, block, flavor)?;
        out.provider_configs.push(ProviderConfig {
            name: name.as_str().to_owned(),
            alias: self.string_attr(&block.body, "alias")?.unwrap_or_default(),
            version: self.string_attr(&block.body, "version")?,
            at: self.at(block),
        });
        Ok(())
    }

    /// An `action` block: the provider it uses.
    pub(super) fn action_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        if let Some(local) = self.resource_provider(block)? {
            out.resource_providers.push(local);
        }
        Ok(())
    }

    /// A resource-like block: the provider it uses, its repetition, its declaration.
    pub(super) fn resource_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        if let Some(local) = self.resource_provider(block)? {
            out.resource_providers.push(local);
        }
        let has = |arg: &str| block.body.get_attribute(arg).is_some();
        let at = self.at(block);
        let kind = block.ident.as_str();
        let what = if kind == "data" {
            "data resources"
        } else {
            "resources"
        };
        validate::check_repetition(what, has("count"), has("for_each"), &at)?;
        if let [rtype, name] = &block.labels[..] {
            let (rtype, name) = (rtype.as_str().to_owned(), name.as_str().to_owned());
            if kind == "resource" {
                let provider = block
                    .body
                    .get_attribute("provider")
                    .and_then(|a| provider_ref(&a.value));
                out.managed.push((format!("{rtype}.{name}"), provider));
            }
            let kind = match kind {
                "data" => DeclKind::Data(rtype),
                "resource" => DeclKind::Resource(rtype),
                _ => return Ok(()),
            };
            out.declarations.push(Declaration { kind, name, at });
        }
        Ok(())
    }

    /// An `import` block: its target and provider.
    pub(super) fn import_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        let to = block
            .body
            .get_attribute("to")
            .and_then(|a| import_target(&a.value));
        let provider = block
            .body
            .get_attribute("provider")
            .and_then(|a| Some((provider_ref(&a.value)?, self.at(a))));
        out.imports.push(ImportBlock { to, provider });
        Ok(())
    }

    /// A `check` block: its nested data source uses a provider like any other.
    pub(super) fn check_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        // A check block's nested data source uses a provider like any other.
        for inner in block.body.blocks() {
            if inner.ident.as_str() == "data" {
                if let Some(local) = self.resource_provider(inner)? {
                    out.resource_providers.push(local);
                }
            }
        }
        Ok(())
    }

    /// A `variable` or `output` block: its declaration, and a variable's type and default.
    pub(super) fn declaration_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        let Some(name) = block.labels.first() else {
            return Ok(());
        };
        let at = self.at(block);
        let kind = if block.ident.as_str() == "variable" {
            validate::check_variable_name(name.as_str(), &at)?;
            let attr = |n| block.body.get_attribute(n);
            let facts = VariableFacts {
                name: name.as_str().to_owned(),
                ty: attr("type").map(|a| type_constraint(&a.value)),
                default: attr("default").map(|a| default_value(&a.value)),
                nullable: attr("nullable").and_then(|a| match &a.value {
                    Expression::Bool(b) => Some(*b.value()),
                    _ => None,
                }),
                at: at.clone(),
                default_at: attr("default").map(|a| self.at(a)),
            };
            variables::check_block(&facts)?;
            out.variables.push(facts);
            DeclKind::Variable
        } else {
            DeclKind::Output
        };
        let name = name.as_str().to_owned();
        out.declarations.push(Declaration { kind, name, at });
        Ok(())
    }

    /// A `locals` block: a declaration per local.
    pub(super) fn locals_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        for a in block.body.attributes() {
            out.declarations.push(Declaration {
                kind: DeclKind::Local,
                name: a.key.as_str().to_owned(),
                at: self.at(a),
            });
        }
        Ok(())
    }

    /// A `module` block: the call's name, `source`, `version`, repetition, `depends_on`, and its `providers` map checked.
    pub(super) fn module_block(
        &self,
        block: &Block,
        out: &mut FileContent,
    ) -> Result<(), ConfigError> {
        let Some(name) = block.labels.first() else {
            return Ok(());
        };
        let has = |arg: &str| block.body.get_attribute(arg).is_some();
        validate::check_repetition(
            "module instances",
            has("count"),
            has("for_each"),
            &self.at(block),
        )?;
        self.check_module_providers(block)?;
        out.module_calls.push(FileModuleCall {
            name: name.as_str().to_owned(),
            source: self.static_string_attr(&block.body, "source"),
            version: self.static_string_attr(&block.body, "version"),
            at: self.at(block),
            repeated_by: ["count", "for_each"]
                .into_iter()
                .find(|k| has(k))
                .map(super::super::name::Name),
            depends_on: block
                .body
                .get_attribute("depends_on")
                .and_then(|a| match &a.value {
                    Expression::Array(items) => {
                        items.iter().next().map(|first| self.value_at(first, a))
                    }
                    _ => None,
                }),
        });
        Ok(())
    }
}
