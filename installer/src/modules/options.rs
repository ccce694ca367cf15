//! What every step of the module phase shares: its options, and the limits a tree must stay
//! within.

use std::path::PathBuf;

use super::{policy, ModuleMirror};
use crate::options::WorkdirOptions;

/// How deep module calls may nest before we assume a cycle.
pub(super) const MAX_DEPTH: usize = 64;

/// How many module instances (calls, counted along every path of the tree) one working
/// directory may have. Each is a `modules.json` record and a configuration walk; a tree
/// that fans out (31 levels of two calls each is two billion instances) would otherwise
/// walk until memory runs out. Real configurations have hundreds.
pub(super) const MAX_MODULE_INSTANCES: usize = 10_000;

/// tstore's own record of what it installed under `.terraform/modules`.
pub(super) const STATE_FILE: &str = ".tstore-installs.json";

/// What the module phase of `init` needs.
#[derive(Clone, Debug)]
pub struct ModuleOptions {
    /// The working directory and what both phases share.
    pub workdir: WorkdirOptions,
    /// What to do with packages whose read-only status their authors do not state: the
    /// repository's and machine's source rules, and `--assume-read-only`.
    pub policy: policy::ModulePolicy,
    /// Under `workdir.upgrade`, the calls resolved again (call paths as the module lock
    /// file keys them: `vpc`, `vpc.label`), each with the calls inside it; empty: every
    /// call. The other calls keep their entries.
    pub upgrade_only: Vec<String>,
    /// This machine's record of checks that a git ref reaches a locked commit
    /// (`$XDG_STATE_HOME/tstore/git-reach.json`; never in the store); `None`: no state
    /// directory, every check asks the remote.
    pub reach_records: Option<PathBuf>,
    /// `TSTORE_TRUST_LOCK=1` / `--trust-lock`: where the remote cannot be asked whether a
    /// ref reaches its locked commit (an outage) and no record exists, the lock's checksums
    /// alone decide, and the refs left unchecked are said.
    pub trust_lock: bool,
    /// The module mirror (`module_mirror` in `.tstore.hcl`, `TSTORE_MODULE_MIRROR`): a
    /// pinned call whose package the store lacks is asked of it, by the entry's `h1:`,
    /// before its origin.
    pub module_mirror: Option<ModuleMirror>,
    /// The run this install is part of: what it asks remotes is asked once in it (every
    /// root of `init DIR...` shares one), and never believed by another run.
    pub run: std::sync::Arc<crate::Run>,
}
