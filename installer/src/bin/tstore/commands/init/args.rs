//! The arguments of `tstore init`, as clap parses them: tofu's flags (one dash or two), the
//! working directories, and the backend flags accepted so that scripts run unchanged.

use std::path::PathBuf;

use clap::Args;
use tstore_tofu::static_eval::VarOption;

use crate::cli::values::{go_bool, LockfileMode};
use crate::cli::variables::{in_order, InOrder};

// Arguments of `tstore init`.
#[derive(Clone, Debug, Args)]
pub(crate) struct InitArgs {
    /// The working directories (default: the current directory); several are initialised
    /// one after the other in this process, each as a lone `tstore init` there.
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Initialise every root under each DIR (default: the current directory): a directory
    /// with configuration files that no other directory of the tree calls as a local
    /// module; `.terraform` and hidden directories are skipped.
    #[arg(long)]
    pub recursive: bool,
    /// With --recursive: leave out the roots whose path relative to DIR matches this glob
    /// (`*` within a path component, `**` across them); repeatable.
    #[arg(long, value_name = "GLOB", requires = "recursive")]
    pub exclude: Vec<String>,
    /// Ignore the versions recorded in the lock file and select the newest allowed ones.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", hide_default_value = true, value_parser = go_bool)]
    pub upgrade: bool,
    /// Lock file mode; `readonly` fails instead of changing the lock file.
    #[arg(long, value_enum, value_name = "MODE")]
    pub lockfile: Option<LockfileMode>,
    /// Print a JSON report on stdout instead of human-readable progress; an error is
    /// printed there too, as JSON diagnostics (one object per line, as `tofu init -json`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", hide_default_value = true, value_parser = go_bool)]
    pub json: bool,
    /// Say for each module call whether it was linked or copied, and why.
    #[arg(long)]
    pub explain: bool,
    /// Link every module package that makes no read-only statement, even one that write
    /// detection finds writing into its own directory (default: such a package is copied).
    #[arg(long)]
    pub assume_read_only: bool,
    /// Set a root module variable (`NAME=VALUE`, repeatable), for module sources and
    /// versions that OpenTofu evaluates early; later values win, in command-line order
    /// with `-var-file`.
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = in_order::<String>)]
    pub var: Vec<InOrder<String>>,
    /// Read root module variables from a `.tfvars` or `.tfvars.json` file (repeatable).
    #[arg(long = "var-file", value_name = "FILE", value_parser = in_order::<PathBuf>)]
    pub var_file: Vec<InOrder<PathBuf>>,
    /// Install providers only from this directory, a filesystem mirror (packed or unpacked
    /// layout), instead of the CLI configuration's installation methods, as `tofu init
    /// -plugin-dir` does; repeatable. Recorded in `.terraform/plugin_path` as tofu records it
    /// (for the plugins later tofu commands look for); `-plugin-dir=` clears that record.
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dir: Vec<String>,
    /// The directory of test files whose run modules are installed too (tofu flavor),
    /// relative to the working directory.
    #[arg(long, value_name = "DIR", default_value = "tests")]
    pub test_directory: String,
    /// `-get=false`: do not install modules; use the ones `.terraform/modules` has.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "true", default_missing_value = "true", value_parser = go_bool)]
    pub get: bool,
    /// Backend flags of `tofu init`, accepted so that scripts written for it run
    /// unchanged; tstore installs packages and never touches a backend or state.
    #[command(flatten)]
    pub tofu_compat: TofuInitFlags,
}

impl InitArgs {
    /// `-var` and `-var-file` in the order they were given (a later one wins), with
    /// file paths made absolute against `cwd`.
    pub(crate) fn var_options(&self, cwd: &std::path::Path) -> Vec<VarOption> {
        crate::cli::variables::var_options(&self.var, &self.var_file, cwd)
    }
}

// `tofu init` flags about backends, state and prompts: accepted and ignored.
#[derive(Clone, Debug, Args)]
pub(crate) struct TofuInitFlags {
    /// Ignored (tstore never prompts).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub input: Option<bool>,
    /// tstore configures no backend; `false` also means no state is read for the providers
    /// it needs, under OpenTofu from 1.13.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub backend: Option<bool>,
    /// Ignored (tstore does not configure backends).
    #[arg(long, value_name = "KEY=VALUE|FILE", hide = true)]
    pub backend_config: Vec<String>,
    /// Ignored (tstore does not configure backends; tofu's alias of `-backend`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub cloud: Option<bool>,
    /// Ignored (tstore does not configure backends).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub reconfigure: Option<bool>,
    /// Ignored (tstore does not migrate state).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub migrate_state: Option<bool>,
    /// Ignored (tstore does not migrate state).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub force_copy: Option<bool>,
    /// Ignored (tstore does not talk to a remote backend).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub ignore_remote_version: Option<bool>,
    /// Ignored (tstore takes no state lock).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub lock: Option<bool>,
    /// Ignored (tstore takes no state lock).
    #[arg(long, value_name = "DURATION", hide = true)]
    pub lock_timeout: Option<String>,
}
