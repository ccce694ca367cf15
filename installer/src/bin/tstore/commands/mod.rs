//! One function per command. Human output goes to stdout in tofu's words; `--json`
//! replaces it with one JSON document; errors go to stderr.
//!
//! # JSON formats
//!
//! - `init --json`: [`InitReport`]: `{"providers":[{"provider","version","platform",
//!   "source" (`filesystem_mirror:PATH`, `registry:URL`, `network_mirror:URL`),"auth",
//!   "obtained":"ingested"|"memoized"|"downloaded"|"in_store"|"store_by_lock",
//!   "hashes":[{"hash","disposition":{"verified_locally","reported_by_registry",
//!   "signed_by_key_ids"}}],
//!   "link","target","link_outcome"}],"lock_file":"created"|"updated"|"unchanged",
//!   "bytes_hashed":N,"modules":[CallReport…],
//!   "module_packages":{"fetched":[package id…],"reused":[package id…]}}`
//! - `store ls --json`: `{"packages":[Package…]}`
//! - `store du --json`: the store's `DiskUsage`
//! - `store verify --json`: the store's `VerifyReport`
//! - `store import --json`: `{"imported":[Package…]}`

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tstore_installer::addr::Platform;
use tstore_installer::cliconfig::CliConfig;
use tstore_installer::fsmirror::{self, FilesystemMirror, MirrorLocation};
use tstore_installer::install::{self, Event, InitOptions, InstallError, Reporter};
use tstore_store::{PackageKey, SourceFingerprint, Store};

use crate::cli::{Command, InitArgs, StoreCommand};
use crate::Settings;

/// Run one command.
pub fn run(settings: &Settings, command: Command) -> Result<ExitCode> {
    match command {
        Command::Init(args) => init(settings, args),
        Command::Store(StoreCommand::Import { path, json }) => store_import(settings, &path, json),
        Command::Store(StoreCommand::Ls { json }) => store_ls(settings, json),
        Command::Store(StoreCommand::Du { json }) => store_du(settings, json),
        Command::Store(StoreCommand::Verify { json }) => store_verify(settings, json),
        Command::Mount(args) => crate::mount::mount(settings, &args),
        Command::Umount(args) => crate::mount::umount(settings, &args),
        Command::Providers(crate::cli::ProvidersCommand::Lock(args)) => {
            crate::providers_cmd::lock(settings, args)
        }
        Command::CliConfig => crate::providers_cmd::cli_config(settings),
        Command::Gc(args) => crate::gc_cmd::gc(settings, &args),
        Command::Roots(crate::cli::RootsCommand::Ls { json }) => {
            crate::gc_cmd::roots_ls(settings, json)
        }
    }
}

pub(crate) fn open_store(settings: &Settings) -> Result<Store> {
    let store = Store::open(&settings.store)
        .with_context(|| format!("cannot open the store at {}", settings.store.display()))?;
    Ok(store.with_limits(settings.limits.clone()))
}

/// Prints tofu-style progress lines to stdout; downloads get an indicatif bar on a
/// terminal (stderr) and one plain line otherwise.
pub(crate) struct HumanReporter {
    /// Present when stderr is a terminal.
    bars: Option<indicatif::MultiProgress>,
    active: std::sync::Mutex<std::collections::HashMap<String, indicatif::ProgressBar>>,
}

impl HumanReporter {
    pub(crate) fn new() -> Self {
        use std::io::IsTerminal;
        HumanReporter {
            bars: std::io::stderr()
                .is_terminal()
                .then(indicatif::MultiProgress::new),
            active: Default::default(),
        }
    }

    /// Download events; `true` if `event` was one.
    fn download_event(&self, event: &Event<'_>) -> bool {
        match *event {
            Event::Downloading {
                provider,
                version,
                url,
            } => {
                match &self.bars {
                    Some(multi) => {
                        let bar = multi.add(indicatif::ProgressBar::new(0));
                        bar.set_style(
                            indicatif::ProgressStyle::with_template(
                                "  {msg} [{bar:30}] {bytes}/{total_bytes}",
                            )
                            .expect("valid template")
                            .progress_chars("=> "),
                        );
                        bar.set_message(format!("{provider} v{version}"));
                        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
                        active.insert(provider.to_owned(), bar);
                    }
                    None => {
                        let _ = writeln!(
                            std::io::stderr(),
                            "- Downloading {provider} v{version} from {url}"
                        );
                    }
                }
                true
            }
            Event::DownloadProgress {
                provider,
                bytes,
                total,
            } => {
                let active = self.active.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(bar) = active.get(provider) {
                    if let Some(total) = total {
                        bar.set_length(total);
                    }
                    bar.set_position(bytes);
                }
                true
            }
            _ => false,
        }
    }
}

impl Reporter for HumanReporter {
    fn event(&self, event: Event<'_>) {
        if self.download_event(&event) {
            return;
        }
        // Phase 3 (linking) has begun once these come: downloads are over.
        let linking = matches!(
            event,
            Event::Installing { .. } | Event::UsingPreviouslyInstalled { .. }
        );
        if linking {
            let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
            for (_, bar) in active.drain() {
                bar.finish_and_clear();
            }
        }
        let line = match event {
            Event::Downloading { .. } | Event::DownloadProgress { .. } => return,
            Event::ReusingLocked { provider } => {
                format!("- Reusing previous version of {provider} from the dependency lock file")
            }
            Event::Finding {
                provider,
                constraints: "",
            } => format!("- Finding latest version of {provider}..."),
            Event::Finding {
                provider,
                constraints,
            } => format!("- Finding {provider} versions matching \"{constraints}\"..."),
            Event::UsingPreviouslyInstalled { provider, version } => {
                format!("- Using previously-installed {provider} v{version}")
            }
            Event::UsingFromStore { provider, version } => {
                format!("- Using {provider} v{version} from the store")
            }
            Event::Fetching {
                provider,
                version,
                platform,
            } => format!("- Fetching {provider} {version} for {platform}..."),
            Event::ObtainedChecksums {
                provider,
                platform,
                auth,
            } => format!("- Obtained {provider} checksums for {platform} ({auth})"),
            Event::Installing { provider, version } => {
                format!("- Installing {provider} v{version}...")
            }
            Event::Installed {
                provider,
                version,
                auth,
                from_store,
            } => {
                let store = if from_store { ", from the store" } else { "" };
                format!("- Installed {provider} v{version} ({auth}{store})")
            }
        };
        let _ = writeln!(std::io::stdout(), "{line}");
    }
}

/// Reports nothing (for `--json`).
struct Silent;

impl Reporter for Silent {
    fn event(&self, _: Event<'_>) {}
}

fn init(settings: &Settings, args: InitArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let dir = match args.dir.clone() {
        Some(d) if d.is_absolute() => d,
        Some(d) => cwd.join(d),
        None => cwd.clone(),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "the working directory {} does not exist or is not a directory",
            dir.display()
        );
    }
    let env = |k: &str| std::env::var(k).ok();
    let cli_config = CliConfig::load(settings.flavor, &env)?;
    let methods =
        cli_config.effective_methods(settings.flavor, &cwd, &env, &fsmirror::providers_in);
    let store = open_store(settings)?;
    // Shared: any number of inits and imports at once; gc takes it exclusive. Held until
    // the root is recorded (issue 7, ARCHITECTURE.md "Concurrency").
    let lock = store.lock_shared()?;
    let result = init_locked(settings, args, &store, dir.clone(), &cli_config, methods);
    // On failure too: the links the directory has now (kept or made) stay pinned.
    let recorded = crate::gc_cmd::record_root(settings, &store, &lock, &dir);
    let code = result?;
    recorded?;
    Ok(code)
}

fn init_locked(
    settings: &Settings,
    args: InitArgs,
    store: &Store,
    dir: std::path::PathBuf,
    cli_config: &CliConfig,
    methods: Vec<tstore_installer::cliconfig::InstallMethod>,
) -> Result<ExitCode> {
    // The mount path must resolve before any link into it is made (issue 6).
    match crate::mount::ensure(settings, store)? {
        crate::mount::Ensured::Mounted { pid, repaired } => eprintln!(
            "tstore: {} the store at {} (FUSE, read-only; daemon pid {pid})",
            if repaired {
                "the mount was stale; remounted"
            } else {
                "mounted"
            },
            settings.mount.display()
        ),
        crate::mount::Ensured::AlreadyMounted | crate::mount::Ensured::ViewsLink(_) => {}
    }
    let opts = InitOptions {
        dir,
        flavor: settings.flavor,
        upgrade: args.upgrade,
        lockfile_readonly: args.lockfile.as_deref() == Some("readonly"),
        platform: Platform::current(),
        mount: settings.mount.clone(),
        methods,
        network: install::NetworkSettings::from_environment(cli_config),
    };
    let mut out = std::io::stdout();
    // Modules first: provider requirements are read through the installed modules (issue 5).
    let (modules, warnings) = tstore_installer::modules::install(
        store,
        &tstore_installer::modules::ModuleOptions {
            dir: opts.dir.clone(),
            mount: opts.mount.clone(),
            upgrade: args.upgrade,
            default_host: settings.flavor.default_registry_host().to_owned(),
            network: opts.network.clone(),
            assume_read_only: args.assume_read_only,
            progress: !args.json,
        },
    )?;
    for w in warnings {
        eprintln!("Warning: {w}");
    }
    if !args.json {
        write!(out, "{}", modules.render(args.explain))?;
        writeln!(out, "\nInitializing provider plugins...")?;
    }
    let human = HumanReporter::new();
    let reporter: &dyn Reporter = if args.json { &Silent } else { &human };
    let report = install::init(store, &opts, reporter)?;
    if args.json {
        let mut report = serde_json::to_value(&report)?;
        report["modules"] = serde_json::to_value(&modules.calls)?;
        report["module_packages"] = serde_json::json!({
            "fetched": modules.fetched,
            "reused": modules.reused,
        });
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let tool = match settings.flavor {
        tstore_installer::flavor::Flavor::Tofu => "OpenTofu",
        tstore_installer::flavor::Flavor::Terraform => "Terraform",
    };
    match report.lock_file {
        install::LockFileChange::Created => writeln!(
            out,
            "\n{tool} has created a lock file .terraform.lock.hcl to record the provider\n\
             selections it made above. Include this file in your version control repository\n\
             so that {tool} can guarantee to make the same selections by default when\n\
             you run \"{}\" in the future.",
            settings.flavor.init_command()
        )?,
        install::LockFileChange::Updated => writeln!(
            out,
            "\n{tool} has made some changes to the provider dependency selections recorded\n\
             in the .terraform.lock.hcl file. Review those changes and commit them to your\n\
             version control system if they represent changes you intended to make."
        )?,
        install::LockFileChange::Unchanged => {}
    }
    writeln!(
        out,
        "\ntstore has installed the providers of this working directory."
    )?;
    Ok(ExitCode::SUCCESS)
}

fn store_import(settings: &Settings, path: &std::path::Path, json: bool) -> Result<ExitCode> {
    let store = open_store(settings)?;
    let _lock = store.lock_shared()?;
    let mirror = FilesystemMirror {
        root: std::path::absolute(path)?,
    };
    let mut imported = Vec::new();
    for (addr, package) in mirror.all_packages()? {
        let key = PackageKey::Provider {
            addr: addr.to_string(),
            version: package.version.to_string(),
            platform: package.platform.to_string(),
        };
        let source = match &package.location {
            MirrorLocation::Packed(p) | MirrorLocation::Unpacked(p) => p,
        };
        let (tree, hashes) = install::ingest_mirror_package(&store, &package.location)
            .with_context(|| format!("cannot import {}", source.display()))?;
        let fingerprint = SourceFingerprint::of_path(source)?;
        let pkg = store
            .commit_package(&key, &tree, &hashes, Some((source, &fingerprint)))
            .with_context(|| format!("cannot import {}", source.display()))?;
        if !json {
            println!(
                "- Imported {} v{} ({})",
                addr, package.version, package.platform
            );
        }
        imported.push(pkg);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "imported": imported }))?
        );
    } else if imported.is_empty() {
        println!("No provider packages found in {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn store_ls(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_store(settings)?;
    let packages = store.packages()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "packages": packages }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for p in &packages {
        let PackageKey::Provider {
            addr,
            version,
            platform,
        } = &p.key
        else {
            println!(
                "{}  {} files, {} bytes  tree {}",
                p.key, p.files, p.bytes, p.tree
            );
            continue;
        };
        println!(
            "provider {addr} {version} {platform}  {} files, {} bytes  tree {}",
            p.files, p.bytes, p.tree
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn store_du(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_store(settings)?;
    let du = store.disk_usage()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&du)?);
    } else {
        println!(
            "{} packages, {} trees, {} blobs\n{} bytes on disk (blobs)\n\
             {} bytes if every package were a separate copy\n\
             {} bytes if each of the {} links from working directories were a private copy",
            du.packages,
            du.trees,
            du.blobs,
            du.blob_bytes,
            du.logical_bytes,
            du.linked_bytes,
            du.links
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn store_verify(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_store(settings)?;
    // Issue 7: leftovers of crashed processes are removed first when no other tstore runs,
    // else only reported (they may be in progress).
    let leftovers = crate::gc_cmd::verify_leftovers(&store)?;
    let report = store.verify()?;
    if json {
        let mut value = serde_json::to_value(&report)?;
        value["leftovers"] = serde_json::to_value(&leftovers)?;
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let verb = if leftovers.removed {
            "removed"
        } else {
            "found (store busy, not removed)"
        };
        for path in leftovers
            .tmp
            .iter()
            .chain(&leftovers.views)
            .chain(&leftovers.blobs)
        {
            println!("leftover {verb}: {}", path.display());
        }
        println!(
            "checked {} blobs ({} bytes)",
            report.blobs_checked, report.bytes_checked
        );
        for c in &report.corrupt {
            println!(
                "corrupt: blob {} ({}): its content does not match its name",
                c.blob,
                c.path.display()
            );
        }
        for m in &report.missing {
            println!(
                "missing: blob {} (referenced by tree {})",
                m.blob, m.referenced_by
            );
        }
        for v in &report.views_bad {
            for problem in &v.problems {
                println!("bad view: {} ({}): {problem}", v.package, v.path.display());
            }
        }
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        if !json {
            eprintln!(
                "Error: the store is damaged; see the list above\n\n  hint: run `tstore init` \
                 again in the affected working directories: damaged packages are fetched again"
            );
        }
        ExitCode::from(1)
    })
}

/// Print an error as tofu does (`Error: summary`, blank line, detail), then the chain
/// of causes and a hint when there is one.
pub fn print_error(err: &anyhow::Error) {
    let mut out = String::new();
    if let Some(install) = err.downcast_ref::<InstallError>() {
        out.push_str(&format!("\nError: {}\n\n{install}\n", install.summary()));
        let mut source = std::error::Error::source(install);
        while let Some(cause) = source {
            out.push_str(&format!("  caused by: {cause}\n"));
            source = cause.source();
        }
        if let Some(hint) = install.hint() {
            out.push_str(&format!("\n  hint: {hint}\n"));
        }
    } else {
        out.push_str(&format!("\nError: {err}\n"));
        for cause in err.chain().skip(1) {
            out.push_str(&format!("  caused by: {cause}\n"));
        }
    }
    let _ = std::io::stderr().write_all(out.as_bytes());
}
