//! The command line as clap parses it: the top-level `Cli`, the global flags and the command
//! list, in the order `tstore --help` lists it. Each command's own arguments live beside its
//! code (`commands/NAME.rs`, `commands/init/args.rs`, `serve/server.rs`), as cargo keeps a
//! command's `cli()` with its `exec()`; what several commands share is here: the value
//! parsers (`values.rs`), `-var`/`-var-file` (`variables.rs`) and the single-dash rewriting
//! (`command_line.rs`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use tstore_tofu::flavor::Flavor;

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
    Init(crate::commands::init::InitArgs),
    /// Inspect and maintain the store.
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore store ls                # the packages in the store\n  tstore store du                # its disk use, and what private copies would cost\n  tstore store verify            # re-hash everything; report only\n  tstore store import /srv/mirror  # a filesystem mirror into the store"
    )]
    Store(crate::commands::store::StoreCommand),
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
    Providers(crate::commands::providers::ProvidersCommand),
    /// Module commands: the module lock file without an install.
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore modules lock            # write .tstore.lock.hcl for this directory\n  tstore modules lock -upgrade   # resolve every call again"
    )]
    Modules(crate::commands::modules::ModulesCommand),
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
    Serve(crate::serve::ServeArgs),
    /// The working directories that keep packages alive.
    #[command(
        subcommand,
        after_help = "Examples:\n  tstore roots ls          # each working directory and its links into the store\n  tstore roots ls --json"
    )]
    Roots(crate::commands::roots::RootsCommand),
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

mod command_line;
#[cfg(test)]
mod tests;
pub(crate) mod values;
pub(crate) mod variables;

pub(crate) use command_line::{parse_from, parse_served, UsageError};
use values::flavor_parser;
