//! The block headers init checks: which block types a file may have at the top level and
//! inside `terraform`, and how many labels each block type the configuration decoder reads
//! takes. A type the flavor's tool does not know there is refused; so is a header with a
//! label too many or too few. The words are HCL's, as terraform and tofu print them.
//!
//! Block types newer than terraform 1.0 are known where the flavor's current release knows
//! them: terraform-flavor users run current terraform, so its `action` and `state_store`
//! load under the terraform flavor, tofu's `language` and `encryption` under tofu.

use crate::flavor::Flavor;

/// The tools that know a block type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KnownBy {
    Both,
    Terraform,
    Tofu,
}

/// A block type and the names of the labels it takes.
pub(super) struct BlockType {
    pub(super) name: &'static str,
    labels: &'static [&'static str],
    known_by: KnownBy,
}

const fn both(name: &'static str, labels: &'static [&'static str]) -> BlockType {
    BlockType {
        name,
        labels,
        known_by: KnownBy::Both,
    }
}

const fn only(known_by: KnownBy, name: &'static str, labels: &'static [&'static str]) -> BlockType {
    BlockType {
        name,
        labels,
        known_by,
    }
}

const NAME: &[&str] = &["name"];
const TYPE: &[&str] = &["type"];
const TYPE_NAME: &[&str] = &["type", "name"];

/// The top-level block types, in the order the tools' schemas list them (which is the order
/// a suggestion is looked for in).
const TOP_LEVEL: &[BlockType] = &[
    both("terraform", &[]),
    both("required_providers", &[]),
    both("provider", NAME),
    both("variable", NAME),
    both("locals", &[]),
    both("output", NAME),
    both("module", NAME),
    both("resource", TYPE_NAME),
    both("data", TYPE_NAME),
    both("ephemeral", TYPE_NAME),
    only(KnownBy::Terraform, "action", TYPE_NAME),
    both("moved", &[]),
    both("removed", &[]),
    both("import", &[]),
    both("check", NAME),
    only(KnownBy::Tofu, "language", &[]),
    only(KnownBy::Tofu, "symbols", NAME),
];

/// The block types inside `terraform`; it is decoded whole, so any other type is refused.
const IN_TERRAFORM: &[BlockType] = &[
    both("backend", TYPE),
    both("cloud", &[]),
    both("required_providers", &[]),
    only(KnownBy::Terraform, "state_store", TYPE),
    both("provider_meta", &["provider"]),
    only(KnownBy::Tofu, "encryption", &[]),
];

/// The nested block types the decoder of each top-level type reads (escaping blocks and the
/// reserved types included: their headers are checked before their use is refused). A
/// nested block of any other type is left to the provider's schema, after init.
fn nested(parent: &str) -> &'static [BlockType] {
    const RESOURCE: &[BlockType] = &[
        both("locals", &[]),
        both("lifecycle", &[]),
        both("connection", &[]),
        both("provisioner", TYPE),
        both("_", &[]),
    ];
    const DATA: &[BlockType] = &[both("lifecycle", &[]), both("locals", &[]), both("_", &[])];
    const MODULE: &[BlockType] = &[
        both("_", &[]),
        both("lifecycle", &[]),
        both("locals", &[]),
        both("provider", TYPE),
    ];
    const PROVIDER: &[BlockType] = &[both("_", &[]), both("lifecycle", &[]), both("locals", &[])];
    const VARIABLE: &[BlockType] = &[both("validation", &[])];
    const OUTPUT: &[BlockType] = &[both("precondition", &[]), both("postcondition", &[])];
    const CHECK: &[BlockType] = &[both("data", TYPE_NAME), both("assert", &[])];
    const REMOVED: &[BlockType] = &[
        both("lifecycle", &[]),
        both("connection", &[]),
        both("provisioner", TYPE),
    ];
    const ACTION: &[BlockType] = &[both("config", &[])];
    match parent {
        "terraform" => IN_TERRAFORM,
        "resource" => RESOURCE,
        "data" | "ephemeral" => DATA,
        "module" => MODULE,
        "provider" => PROVIDER,
        "variable" => VARIABLE,
        "output" => OUTPUT,
        "check" => CHECK,
        "removed" => REMOVED,
        "action" => ACTION,
        _ => &[],
    }
}

impl BlockType {
    fn known_by(&self, flavor: Flavor) -> bool {
        match self.known_by {
            KnownBy::Both => true,
            KnownBy::Terraform => flavor == Flavor::Terraform,
            KnownBy::Tofu => flavor == Flavor::Tofu,
        }
    }

    /// Whether `count` labels fit this type; otherwise what is wrong, in HCL's words.
    pub(super) fn check_labels(&self, count: usize) -> Result<(), LabelProblem> {
        let name = self.name;
        let want = self.labels.len();
        let names = self.labels.join(", ");
        if count > want {
            let detail = if want == 0 {
                format!("No labels are expected for {name} blocks.")
            } else {
                format!("Only {want} labels ({names}) are expected for {name} blocks.")
            };
            return Err(LabelProblem {
                summary: format!("Extraneous label for {name}"),
                detail,
                extraneous: Some(want),
            });
        }
        if count < want {
            return Err(LabelProblem {
                summary: format!("Missing {} for {name}", self.labels[count]),
                detail: format!("All {name} blocks must have {want} labels ({names})."),
                extraneous: None,
            });
        }
        Ok(())
    }
}

/// A block header with the wrong number of labels.
pub(super) struct LabelProblem {
    pub(super) summary: String,
    pub(super) detail: String,
    /// The index of the first label too many (where the error points); `None` when one is
    /// missing (it points at the block).
    pub(super) extraneous: Option<usize>,
}

/// The top-level block type `kind`, when `flavor`'s tool knows it.
pub(super) fn top_level(kind: &str, flavor: Flavor) -> Option<&'static BlockType> {
    find(TOP_LEVEL, kind, flavor)
}

/// The block type `kind` inside a top-level block of type `parent`, when its decoder reads
/// it: `Ok(None)` when it is left to the provider's schema, `Err` (the detail) when
/// `parent` is decoded whole and `kind` is not among its types.
pub(super) fn nested_in(
    parent: &str,
    kind: &str,
    flavor: Flavor,
) -> Result<Option<&'static BlockType>, String> {
    let types = nested(parent);
    match find(types, kind, flavor) {
        Some(t) => Ok(Some(t)),
        None if parent == "terraform" => Err(unsupported_block_detail(kind, types, flavor)),
        None => Ok(None),
    }
}

fn find(types: &'static [BlockType], kind: &str, flavor: Flavor) -> Option<&'static BlockType> {
    types.iter().find(|t| t.name == kind && t.known_by(flavor))
}

/// HCL's "Unsupported block type" detail for a top-level block of type `kind`.
pub(super) fn unsupported_top_level_detail(kind: &str, flavor: Flavor) -> String {
    unsupported_block_detail(kind, TOP_LEVEL, flavor)
}

fn unsupported_block_detail(kind: &str, types: &[BlockType], flavor: Flavor) -> String {
    format!(
        "Blocks of type {kind:?} are not expected here.{}",
        did_you_mean(kind, types, flavor)
    )
}

/// HCL's "Extraneous JSON object property" detail for a top-level property `name` of a JSON
/// file that names no block type `flavor`'s tool knows.
pub(super) fn extraneous_json_property_detail(name: &str, flavor: Flavor) -> String {
    format!(
        "No argument or block type is named {name:?}.{}",
        did_you_mean(name, TOP_LEVEL, flavor)
    )
}

/// ` Did you mean "X"?` for the first known type less than three edits from `given`, as
/// HCL suggests names; empty when none is that close.
fn did_you_mean(given: &str, types: &[BlockType], flavor: Flavor) -> String {
    types
        .iter()
        .filter(|t| t.known_by(flavor))
        .find(|t| edit_distance(given, t.name) < 3)
        .map(|t| format!(" Did you mean {:?}?", t.name))
        .unwrap_or_default()
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        for (a, b, d) in [
            ("", "", 0),
            ("variable", "variable", 0),
            ("varyable", "variable", 1),
            ("variabel", "variable", 2),
            ("resorce", "resource", 1),
            ("foo", "data", 4),
            ("", "abc", 3),
        ] {
            assert_eq!(edit_distance(a, b), d, "{a} {b}");
        }
    }
}
