//! The module tree as the walk found it: one [`Node`] per module call (every instance, along
//! every path), which the decide and apply steps read.

use std::path::PathBuf;

use tstore_tofu::config::SourcePos;
use tstore_tofu::module_lock::ModuleLockEntry;

/// One module call of the tree.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) key: String,
    pub(super) source: String,
    pub(super) kind: &'static str,
    pub(super) version: Option<String>,
    pub(super) dir: String,
    /// The install (remote call key) whose package holds this module; `None`: root package.
    pub(super) install: Option<String>,
    /// Cleaned path inside its package.
    pub(super) pkg_path: String,
    pub(super) parent: Option<usize>,
    pub(super) package: Option<String>,
    /// What vouches for `package`'s name (its origin, or the lock entry's hash).
    pub(super) vouched_by: Option<tstore_store::Provenance>,
    pub(super) at: SourcePos,
    /// For the install of a local directory named by absolute path: the directory
    /// `.terraform/modules/KEY` links to.
    pub(super) link_to: Option<PathBuf>,
    /// For a remote call, the module lock entry it gets (what was installed).
    pub(super) lock_entry: Option<ModuleLockEntry>,
    /// Where a remote call's version or commit came from: `lock`, `constraint`, `upgrade`.
    pub(super) selected_by: Option<&'static str>,
    /// Under the cooldown, when the version chosen was published, and who says so.
    pub(super) published: Option<crate::Published>,
    /// Under the cooldown, the newer versions the call allows that were held back.
    pub(super) held_back: Vec<crate::HeldBack>,
    /// `count` or `for_each` when the call makes several instances of the module.
    pub(super) repeated_by: Option<&'static str>,
    /// With a module mirror: why a remote call's package was not taken from it (no lock
    /// entry, not in the mirror, the mirror unreachable); said when the origin served it.
    pub(super) origin_why: Option<String>,
}
