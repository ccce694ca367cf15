//! Command-line arguments as clap parses them: the top-level `Cli`, the global flags, the
//! command list, and (for now) most commands' arguments; the value parsers are in
//! `values.rs`, the single-dash rewriting in `command_line.rs`, the tests in `tests.rs`.
//!
//! A command's arguments move beside its code, as cargo keeps a command's `cli()` with its
//! `exec()`: `gc`, `fetch`, `push`, `mount`/`umount`, `man`, `version` and `cli-config`
//! already have (`commands/NAME.rs`); `init`, `modules`, `providers`, `store`, `roots` and
//! `serve` follow. The command list stays here, in the order `tstore --help` lists it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tstore_tofu::addr::Platform;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::static_eval::VarOption;

/// Install OpenTofu/Terraform providers and modules from one shared, read-only store.
#[derive(Debug, Parser)]
#[command(
    name = "tstore",
    version = env!("TSTORE_LONG_VERSION"),
    long_about = "Install OpenTofu/Terraform providers and modules from one shared, read-only store.\n\n\
        `tstore init` does the install phase of `tofu init`: every package is verified against \
        the lock file, stored once by content, and linked into the working directory from a \
        read-only mount, so hundreds of checkouts share one copy.",
    after_help = "Examples:\n  tstore init                      # this directory, like `tofu init`\n  tstore --flavor terraform init   # terraform's registry host and lock file header\n  tstore store du                  # what the store holds and saves\n  tstore gc                        # from cron: drop what no checkout links\n\nEnvironment: TSTORE_HOME, TSTORE_MOUNT, TSTORE_FLAVOR, TSTORE_TOOL_VERSION, TSTORE_NO_FUSE, TSTORE_KEEP_ARCHIVES, TF_CLI_CONFIG_FILE.",
    propagate_version = true
)]
pub(crate) struct Cli {
    /// Which tool's defaults to follow: the default registry host and the lock file header
    /// (default: decided per working directory by .tstore.hcl, the lock file, .tofu files,
    /// the tool on PATH, else tofu).
    #[arg(long, global = true, env = "TSTORE_FLAVOR", value_parser = flavor_parser(), help_heading = "Global options")]
    pub flavor: Option<Flavor>,

    /// Whether `flavor` came from `TSTORE_FLAVOR` rather than `--flavor`.
    #[arg(skip)]
    pub flavor_from_env: bool,

    /// Which release of the tool runs the directory, e.g. `terraform 1.15.4` (default: the
    /// tool on PATH, else the newest release tstore knows)
    ///
    /// `required_version` is checked against it and the rules that changed between releases
    /// follow it (docs/reference/flavor-and-tool-version.md lists them); naming a tool also
    /// sets the flavor. The version of the
    /// tool on PATH is its `version -json`, asked once per binary.
    #[arg(
        long,
        global = true,
        env = "TSTORE_TOOL_VERSION",
        value_name = "TOOL VERSION",
        help_heading = "Global options"
    )]
    pub tool_version: Option<String>,

    /// Whether `tool_version` came from `TSTORE_TOOL_VERSION` rather than `--tool-version`.
    #[arg(skip)]
    pub tool_version_from_env: bool,

    /// The store's directory (default: $XDG_DATA_HOME/tstore or ~/.local/share/tstore).
    #[arg(
        long,
        global = true,
        env = "TSTORE_HOME",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub store: Option<PathBuf>,

    /// The read-only view every link points into (default: ~/.tofu-store).
    #[arg(
        long,
        global = true,
        env = "TSTORE_MOUNT",
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub mount: Option<PathBuf>,

    /// Do not use FUSE: make the mount path a symlink to the store's materialized views.
    #[arg(long, global = true, env = "TSTORE_NO_FUSE", value_parser = clap::builder::FalseyValueParser::new(), help_heading = "Global options")]
    pub no_fuse: bool,

    /// Keep provider zips whole in the store (costs their size), for `tstore push`.
    #[arg(long, global = true, env = "TSTORE_KEEP_ARCHIVES", value_parser = clap::builder::FalseyValueParser::new(), help_heading = "Global options")]
    pub keep_archives: bool,

    /// Where the remote cannot be asked whether a git module's ref still reaches the
    /// commit the module lock pins (an outage), and this machine never checked it, install
    /// what the lock's checksums pin anyway (and say which refs were not checked).
    #[arg(long, global = true, env = "TSTORE_TRUST_LOCK", value_parser = clap::builder::FalseyValueParser::new(), help_heading = "Global options")]
    pub trust_lock: bool,

    /// Choose no module or provider version younger than AGE (7d, 36h, 2w, 90m; 0: off),
    /// for this run: overrides TSTORE_MIN_RELEASE_AGE and min_release_age in .tstore.hcl.
    /// A version a lock file names is installed as locked.
    #[arg(
        long,
        global = true,
        value_name = "AGE",
        help_heading = "Global options"
    )]
    pub min_release_age: Option<String>,

    /// Switch to DIR before doing anything else, as tofu's global `-chdir=DIR` does.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub chdir: Option<PathBuf>,

    /// No colour in log lines and messages (as tofu's `-no-color`; NO_COLOR works too).
    #[arg(long, global = true, help_heading = "Global options")]
    pub no_color: bool,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands. Each one's arguments are defined when it is the one run (or its help,
/// the completions or the man page ask): defining every command's arguments was most of a
/// start's time (`defer`). Their argument structs have plain comments, not doc comments: a
/// deferred struct's doc comment would replace the command's description here.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum Command {
    /// Install the modules and providers of a working directory (the install phase of `tofu init`).
    #[command(
        after_help = "Examples:\n  tstore init                    # the current directory\n  tstore init stacks/app -upgrade  # newest allowed versions, as `tofu init -upgrade`\n  tstore init --explain          # why each module is linked or copied\n  tstore init --json             # a report for scripts\n  tstore init --recursive infra --exclude 'legacy/**'   # every root under infra/, one process"
    )]
    Init(InitArgs),
    /// Inspect and maintain the store.
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore store ls                # the packages in the store\n  tstore store du                # its disk use, and what private copies would cost\n  tstore store verify            # re-hash everything; report only\n  tstore store import /srv/mirror  # a filesystem mirror into the store"
    )]
    Store(StoreCommand),
    /// Mount the store read-only at the mount path (FUSE; a daemon unless --foreground).
    #[command(
        after_help = "Examples:\n  tstore mount                 # start the daemon\n  tstore mount --status --json # exit 0 when the mount path serves this store, 32 when not\n  tstore mount --foreground    # for systemd (contrib/systemd/tstore-mount.service)"
    )]
    Mount(crate::commands::mount::MountArgs),
    /// Unmount the FUSE mount at the mount path and stop its daemon.
    #[command(
        after_help = "Examples:\n  tstore umount          # stop the daemon init or `tstore mount` started\n  tstore umount --lazy   # detach now even while a provider runs from it"
    )]
    Umount(crate::commands::mount::UmountArgs),
    /// Provider commands (like `tofu providers …`).
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore providers lock -platform=linux_amd64 -platform=darwin_arm64"
    )]
    Providers(ProvidersCommand),
    /// Module commands: the module lock file without an install.
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore modules lock            # write .tstore.lock.hcl for this directory\n  tstore modules lock -upgrade   # resolve every call again"
    )]
    Modules(ModulesCommand),
    /// Bring every provider and module package the lock files pin into the store, verified
    /// against them, changing nothing in the working directories (then `tstore push`).
    #[command(
        after_help = "Examples:\n  tstore fetch --recursive -platform=linux_amd64 -platform=darwin_arm64   # a CI image's bake step\n  tstore fetch stacks/app --json"
    )]
    Fetch(crate::commands::fetch::FetchArgs),
    /// Print a CLI configuration with which a plain `tofu init` installs every provider the
    /// store holds from the store (offline), and others as your own configuration says.
    ///
    /// The store's view (a filesystem mirror on the mount path) comes first, then your
    /// configuration's installation methods, with the store's providers excluded from the
    /// network ones; the rest of your configuration (hosts, credentials) is carried over.
    /// Works on an empty store. With --out FILE the file is written and kept current as
    /// providers enter and leave the store.
    #[command(
        after_help = "Examples:\n  tstore cli-config                              # print it\n  tstore cli-config --out ~/.tstore.tfrc         # write it; tstore keeps it current\n  TF_CLI_CONFIG_FILE=~/.tstore.tfrc tofu init    # the providers come from the store"
    )]
    CliConfig(crate::commands::cli_config::CliConfigArgs),
    /// Remove what no live working directory links (safe from cron: waits its turn beside running inits).
    #[command(
        after_help = "Examples:\n  tstore gc --dry-run          # what would go\n  tstore gc --min-age 1h       # from cron: keep anything younger than an hour\n  tstore gc --max-size 20G     # and keep the store under 20 GiB, least recently used first\n  tstore gc --min-free 10G     # or keep 10 GiB free on its filesystem\n  tstore gc --ci .             # before saving a CI cache: only what the locks pin\n  tstore gc --json             # the report for scripts"
    )]
    Gc(crate::commands::gc::GcArgs),
    /// Run the inits of this store's working directories in one process that stays: each
    /// `tstore init` hands its work here and prints what it prints (`docs/reference/serve.md`).
    #[command(
        after_help = "Examples:\n  tstore serve &                    # then run the per-root inits (Terragrunt, Atlantis)\n  tstore serve --idle-timeout 10m   # in CI: stops once no init came for ten minutes\n  TSTORE_NO_SERVER=1 tstore init    # this init runs in its own process"
    )]
    Serve(ServeArgs),
    /// The working directories that keep packages alive.
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore roots ls          # each working directory and its links into the store\n  tstore roots ls --json"
    )]
    Roots(RootsCommand),
    /// Publish the store's providers, or its module packages (a module mirror), to an OCI
    /// registry in OpenTofu's layout (what `oci_mirror`, `oci://` module sources and
    /// `module_mirror` read).
    Push(crate::commands::push::PushArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  mkdir -p ~/.local/share/bash-completion/completions\n  tstore completions bash > ~/.local/share/bash-completion/completions/tstore\n  mkdir -p ~/.zfunc && tstore completions zsh > ~/.zfunc/_tstore\n  mkdir -p ~/.config/fish/completions\n  tstore completions fish > ~/.config/fish/completions/tstore.fish"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per command with --dir.
    ///
    /// Without --dir the top page goes to stdout; with it, `tstore.1` and one page per
    /// command (`tstore-init.1`, `tstore-store-verify.1`, …), the pages the top page refers to.
    #[command(
        after_help = "Examples:\n  tstore man | man -l -                         # read it now\n  mkdir -p ~/.local/share/man/man1\n  tstore man --dir ~/.local/share/man/man1      # then: man tstore-init"
    )]
    Man(crate::commands::man::ManArgs),
    /// Show tstore's version, commit and platform (like `tofu version`).
    ///
    /// Then the provider versions the lock file of the current directory selects, as `tofu
    /// version` lists them.
    #[command(
        after_help = "Examples:\n  tstore version         # tstore v0.1.0 (commit date), on linux_amd64\n  tstore version -json   # the same for scripts"
    )]
    Version(crate::commands::version::VersionArgs),
}

// Arguments of `tstore serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Stop once no init came for this long (`30s`, `15m`, `1h`; default: never).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// Serve clients that hold CAP_SYS_ADMIN (root's inits). Such a client can be confined
    /// by Landlock without a trace in /proc, so a server does not serve it unless told to:
    /// pass this only where no root job runs in such a sandbox.
    #[arg(long)]
    pub privileged_clients: bool,
}

/// `tstore roots …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum RootsCommand {
    /// List the recorded roots and their links.
    #[command(
        after_help = "Examples:\n  tstore roots ls           # DIR, then each link it has into the mount\n  tstore roots ls --json    # for scripts"
    )]
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `tstore providers …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ProvidersCommand {
    /// Record the checksums of the required providers for several platforms in the lock
    /// file (like `tofu providers lock`), and keep the packages in the store.
    #[command(
        after_help = "Examples:\n  tstore providers lock -platform=linux_amd64 -platform=darwin_arm64\n  tstore providers lock --fs-mirror /srv/mirror hashicorp/null"
    )]
    Lock(ProvidersLockArgs),
    /// List the locked providers that `init -upgrade` would move, and the newer versions the
    /// cooldown (min_release_age) holds back with the date each becomes eligible: asks the
    /// CLI configuration's installation sources, changes nothing.
    #[command(after_help = "Examples:
  tstore providers outdated
  tstore providers outdated infra/prod --json
  tstore providers outdated -exit-code   # exit 2 when a provider is outdated")]
    Outdated(ProvidersOutdatedArgs),
}

/// Arguments of `tstore providers outdated`.
#[derive(Debug, Args)]
pub(crate) struct ProvidersOutdatedArgs {
    /// The working directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Exit with status 2 when a provider is outdated (0 otherwise), for a CI job to act on.
    #[arg(long)]
    pub exit_code: bool,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

/// `tstore modules …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ModulesCommand {
    /// Bring every remote module package into the store and write the module lock file
    /// `.tstore.lock.hcl`, without changing `.terraform` (the module twin of `providers
    /// lock`).
    #[command(
        after_help = "Examples:\n  tstore modules lock\n  tstore modules lock -upgrade infra/prod\n  tstore modules lock -upgrade -module=vpc   # resolve one call (and those inside it) again\n  tstore modules lock -lockfile=readonly --json   # fail when the file would change"
    )]
    Lock(ModulesLockArgs),
    /// List the locked calls whose ref now names another commit, whose constraint now
    /// selects a newer version, or whose repository has newer version tags than the one the
    /// call names; with the versions the cooldown holds back: asks the remotes, changes
    /// nothing in the working directory (`cargo update --dry-run` for modules, for a
    /// scheduled CI job).
    #[command(
        after_help = "Examples:\n  tstore modules outdated\n  tstore modules outdated infra/prod --json\n  tstore modules outdated -exit-code   # exit 2 when a call is outdated\n  tstore modules outdated --recursive infra   # every root with a module lock file"
    )]
    Outdated(ModulesOutdatedArgs),
}

/// Arguments of `tstore modules outdated`.
#[derive(Debug, Args)]
pub(crate) struct ModulesOutdatedArgs {
    /// The working directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Every root under DIR (as `init --recursive` finds them) that has a module lock file.
    #[arg(long)]
    pub recursive: bool,
    /// With --recursive: leave out the roots whose path relative to DIR matches this glob;
    /// repeatable.
    #[arg(long, value_name = "GLOB", requires = "recursive")]
    pub exclude: Vec<String>,
    /// Exit with status 2 when a call is outdated (0 otherwise), for a CI job to act on.
    #[arg(long)]
    pub exit_code: bool,
    #[command(flatten)]
    pub vars: RootVariableArgs,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

/// `-var` and `-var-file` of the `modules` commands, for the sources and versions tofu
/// evaluates early.
#[derive(Debug, Args)]
pub(crate) struct RootVariableArgs {
    /// A root module variable (`NAME=VALUE`), for sources and versions tofu evaluates early;
    /// repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = in_order::<String>)]
    pub var: Vec<InOrder<String>>,
    /// A file of root module variable values; repeatable.
    #[arg(long = "var-file", value_name = "FILE", value_parser = in_order::<PathBuf>)]
    pub var_file: Vec<InOrder<PathBuf>>,
}

impl RootVariableArgs {
    /// As [`InitArgs::var_options`].
    pub(crate) fn var_options(&self, cwd: &std::path::Path) -> Vec<VarOption> {
        var_options(&self.var, &self.var_file, cwd)
    }
}

/// Arguments of `tstore modules lock`.
#[derive(Debug, Args)]
pub(crate) struct ModulesLockArgs {
    /// The working directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Resolve every call again (the newest version its constraint allows, the commit its
    /// ref names now) and rewrite the entries.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", hide_default_value = true, value_parser = go_bool)]
    pub upgrade: bool,
    /// With -upgrade: resolve only this call again (a call path as the lock file keys it:
    /// `vpc`, `vpc.label`), with the calls inside it; the others keep their entries.
    /// Repeatable.
    #[arg(long = "module", value_name = "CALL")]
    pub modules: Vec<String>,
    /// `readonly`: fail when an entry would be added, removed or changed.
    #[arg(long, value_enum, value_name = "MODE")]
    pub lockfile: Option<LockfileMode>,
    #[command(flatten)]
    pub vars: RootVariableArgs,
    /// Print a JSON report on stdout instead of human-readable lines.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `tstore providers lock`.
#[derive(Debug, Args)]
pub(crate) struct ProvidersLockArgs {
    /// Only these providers (`[HOST/]NAMESPACE/TYPE`); default: every required provider.
    pub providers: Vec<String>,
    /// A target platform `OS_ARCH`; repeatable (default: the current platform).
    #[arg(long = "platform", value_name = "OS_ARCH", value_parser = parse_platform)]
    pub platforms: Vec<Platform>,
    /// Fetch packages from this filesystem mirror instead of the origin registries.
    #[arg(long, value_name = "DIR", conflicts_with = "net_mirror")]
    pub fs_mirror: Option<PathBuf>,
    /// Fetch packages from this network mirror instead of the origin registries.
    #[arg(long, value_name = "URL")]
    pub net_mirror: Option<String>,
    /// Print a JSON report on stdout instead of human-readable progress.
    #[arg(long)]
    pub json: bool,
}

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
        var_options(&self.var, &self.var_file, cwd)
    }
}

/// `-var` and `-var-file` values in the order they were given, file paths made absolute
/// against `cwd`.
fn var_options(
    var: &[InOrder<String>],
    var_file: &[InOrder<PathBuf>],
    cwd: &std::path::Path,
) -> Vec<VarOption> {
    let vars = var.iter().map(|v| (v.seq, VarOption::Var(v.value.clone())));
    let files = var_file
        .iter()
        .map(|f| (f.seq, VarOption::File(cwd.join(&f.value))));
    let mut all: Vec<(usize, VarOption)> = vars.chain(files).collect();
    all.sort_by_key(|(seq, _)| *seq);
    all.into_iter().map(|(_, o)| o).collect()
}

/// A value of a repeatable option with its position among all such values, so that
/// options of different names keep the order they were given in.
#[derive(Clone, Debug)]
pub(crate) struct InOrder<T> {
    /// Position in parse order.
    pub seq: usize,
    /// The value.
    pub value: T,
}

/// clap parses values in command-line order; numbering them here records that order.
fn in_order<T: From<String>>(text: &str) -> Result<InOrder<T>, String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Ok(InOrder {
        seq: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        value: T::from(text.to_owned()),
    })
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

/// `tstore store …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Ingest every provider package of a filesystem mirror directory (packed or unpacked layout).
    #[command(
        after_help = "Examples:\n  tstore store import /srv/terraform-mirror       # e.g. made by `tofu providers mirror`\n  tstore store import ~/.terraform.d/plugins --json"
    )]
    Import {
        /// The mirror directory.
        path: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the packages in the store.
    #[command(
        after_help = "Examples:\n  tstore store ls                                 # kind, name, version, platform, size\n  tstore store ls --json | jq -r '.packages[].name'"
    )]
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show how much disk the store uses, and what copies per checkout would cost.
    #[command(
        after_help = "Examples:\n  tstore store du           # on disk, and what a private copy per link would cost\n  tstore store du --json    # the counts for scripts"
    )]
    Du {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the recorded facts of configuration files against a fresh parse of their bytes.
    ///
    /// An init records what each configuration file it parses says (module calls,
    /// provider requirements, versions, declarations) by the file's content, so that no
    /// later process parses those bytes again. This derives every recorded fact whose
    /// content the store holds again and compares; exits non-zero when one differs.
    #[command(
        after_help = "Examples:\n  tstore store facts          # recorded, matching, mismatched\n  tstore store facts --json"
    )]
    Facts {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-hash every blob and check that every tree is complete; report only, unless --repair.
    ///
    /// Hashes are recomputed from the bytes (each blob's BLAKE3, each package's h1:, each
    /// kept zip's zh:), never taken from the index. Exits non-zero when anything is bad (a
    /// damaged or missing blob, a bad view, an index record the bytes contradict, an index
    /// SQLite cannot read) or leftovers are found.
    #[command(
        after_help = "Examples:\n  tstore store verify             # report only; exit 1 names what is damaged\n  tstore store verify --dry-run   # what --repair would do\n  tstore store verify --repair    # quarantine damaged packages, rebuild a damaged index"
    )]
    Verify {
        /// Quarantine every package with a bad or missing blob, a bad view or a record its
        /// bytes contradict (the next `tstore init` fetches it again), move bad blob files
        /// to `quarantine/` in the store, and remove leftovers. A damaged index is moved
        /// aside (kept) and rebuilt from the blobs and views. Waits for the exclusive store
        /// lock.
        #[arg(long)]
        repair: bool,
        /// Show what --repair would do and change nothing (implies --repair).
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete the whole store and take down its mount (`rm -rf` fails on its read-only
    /// directories).
    ///
    /// Removes only a directory that is a tstore store owned by you, after running inits
    /// finish. Without --yes it says what it would remove, and which working directories
    /// link into the store (each needs `tstore init` or `tofu init` again), and removes
    /// nothing.
    #[command(
        after_help = "Examples:\n  tstore store rm          # what would go\n  tstore store rm --yes    # remove it"
    )]
    Rm {
        /// Remove it.
        #[arg(long)]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `-lockfile=MODE` of `tstore init`, as tofu names its modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LockfileMode {
    /// Fail instead of changing the lock file.
    Readonly,
}

mod command_line;
#[cfg(test)]
mod tests;
mod values;

pub(crate) use command_line::{parse_from, parse_served, UsageError};
pub(crate) use values::{flavor_parser, go_bool, parse_platform};
pub(crate) use values::{parse_duration, parse_size};
