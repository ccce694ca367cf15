//! What one file contributes to its module, as the syntaxes' readers (`hcl.rs`, `json.rs`)
//! record it and the facts cache keeps it (`facts.rs`): provider requirements and
//! configurations, module calls, declarations, and what an override file may not hold.

use super::{imports, name, validate, variables, RequiredVersion, SourcePos};
use crate::state::StateStorage;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct RequiredEntry {
    pub(super) name: String,
    pub(super) source: Option<CallArg>,
    pub(super) version: Option<CallArg>,
    pub(super) at: SourcePos,
    /// Where the `version` value is, when known (else `at`).
    pub(super) version_at: Option<SourcePos>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct RequiredBlock {
    pub(super) at: SourcePos,
    pub(super) entries: Vec<RequiredEntry>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ProviderConfig {
    pub(super) name: String,
    pub(super) alias: String,
    pub(super) version: Option<String>,
    pub(super) at: SourcePos,
}

/// What one file contributes.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct FileContent {
    pub(super) required_blocks: Vec<RequiredBlock>,
    /// `terraform { required_version = … }`, one per `terraform` block that has it.
    pub(super) required_versions: Vec<RequiredVersion>,
    /// Blocks of the types only some releases know (`tool_version::block_type_rule`).
    pub(super) newer_blocks: Vec<(String, SourcePos)>,
    pub(super) provider_configs: Vec<ProviderConfig>,
    /// Local provider names used by resources (from `provider =` or the type prefix).
    pub(super) resource_providers: Vec<String>,
    /// Each managed resource (`TYPE.NAME`) and its `provider` argument.
    pub(super) managed: Vec<(String, Option<imports::ProviderRef>)>,
    /// `import` blocks.
    pub(super) imports: Vec<imports::ImportBlock>,
    /// The state storage its `terraform` blocks declare (the last one).
    pub(super) state_storage: Option<StateStorage>,
    /// Where a non-empty `depends_on` of a resource, data or output block is (a module
    /// block's is its call's).
    pub(super) depends_on: Vec<SourcePos>,
    /// Where its `moved` blocks are.
    pub(super) moved: Vec<SourcePos>,
    /// Where its `import` blocks are.
    pub(super) import_at: Vec<SourcePos>,
    /// Its check rules (`validation`, `precondition`, `postcondition`) and `check` blocks,
    /// by kind: an override file may hold none.
    #[serde(default)]
    pub(super) check_rules: Vec<(String, SourcePos)>,
    /// Its `variable` blocks, for their defaults and types.
    pub(super) variables: Vec<variables::VariableFacts>,
    pub(super) module_calls: Vec<FileModuleCall>,
    /// Variables, locals, outputs, resources and data sources, for the uniqueness rule.
    pub(super) declarations: Vec<validate::Declaration>,
}

impl FileContent {
    pub(super) fn note_state_storage(&mut self, storage: Option<StateStorage>) {
        if storage.is_some() {
            self.state_storage = storage;
        }
    }

    /// Remember a block of type `kind` at `at` when only some releases know the type.
    pub(super) fn note_block_type(&mut self, kind: &str, at: SourcePos) {
        if crate::tool_version::block_type_rule(kind).is_some() {
            self.newer_blocks.push((kind.to_owned(), at));
        }
    }
}

/// A `module` block as one file writes it. An override file may leave any argument out;
/// a primary file must give `source`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct FileModuleCall {
    pub(super) name: String,
    pub(super) source: Option<CallArg>,
    pub(super) version: Option<CallArg>,
    pub(super) at: SourcePos,
    /// `count` or `for_each`, if the block has it.
    pub(super) repeated_by: Option<name::Name>,
    /// Where a non-empty `depends_on` is (its first item).
    #[serde(default)]
    pub(super) depends_on: Option<SourcePos>,
}

/// An argument init reads before anything else is evaluated (a module call's or a provider
/// requirement's `source` and `version`) as a file writes it.
#[derive(Clone, Debug)]
pub(super) enum CallArg {
    /// A literal string.
    Literal(String),
    /// Anything else: evaluated early where the tool does (`tool_rules`), else refused with
    /// `refusal` (summary, detail) as its diagnostic.
    Expr {
        expr: ::hcl::Expression,
        at: SourcePos,
        refusal: (&'static str, &'static str),
        /// The names at the roots of its references (`var`, `local`, `path`, a resource
        /// type), as HCL's `Variables()` gives them.
        refers_to: Vec<String>,
        /// A JSON string's text: what terraform takes where it does not evaluate the
        /// argument, as HCL's JSON syntax reads a template without an evaluation context
        /// (literally, `${` and all).
        as_written: Option<String>,
    },
}
