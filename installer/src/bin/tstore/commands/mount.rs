//! `tstore mount [--foreground|--status [--json]|--enable|--disable]` and `tstore umount`:
//! the arguments and what is printed; the mount itself is [`crate::mount`]'s.
//!
//! # `mount --status --json`
//!
//! `{"mount": PATH, "store": PATH, "state": "mounted"|"stale"|"views-link"|"not-mounted"|
//! "foreign"|"other-store", "pid": N|null, "fuse": null|"why FUSE is unavailable"}`
//!
//! The exit status says whether the mount path serves this store, like `mountpoint -q`:
//! 0 for `mounted` and `views-link`, 32 for every other state.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use tstore_store::Store;

use crate::json;
use crate::mount::systemd_unit::{self, Disabled, Enabled, UNIT};
use crate::mount::{self, Ensured, State, Unmounted};
use crate::Settings;

// Arguments of `tstore umount`.
#[derive(Debug, Args)]
pub(crate) struct UmountArgs {
    /// Detach the mount even if it is in use (`fusermount3 -u -z`).
    #[arg(long)]
    pub lazy: bool,
}

// Arguments of `tstore mount`.
#[derive(Debug, Args)]
pub(crate) struct MountArgs {
    /// Serve the mount in this process until it is unmounted (for systemd and tests).
    #[arg(long, conflicts_with = "status")]
    pub foreground: bool,
    /// Keep the mount up across reboots: write the systemd user unit `tstore-mount.service`
    /// (this binary, this store and mount path) and enable it where systemd runs; where it
    /// does not, say what to do instead.
    #[arg(long, conflicts_with_all = ["foreground", "status", "disable"])]
    pub enable: bool,
    /// Stop and remove the unit `--enable` wrote.
    #[arg(long, conflicts_with_all = ["foreground", "status"])]
    pub disable: bool,
    /// Report whether the mount path serves this store instead of mounting (exit 0 when
    /// it does, 32 when not, like `mountpoint -q`).
    #[arg(long)]
    pub status: bool,
    /// With --status: print JSON.
    #[arg(long, requires = "status")]
    pub json: bool,
}

/// `tstore mount …`
pub(crate) fn mount(settings: &Settings, args: &MountArgs) -> Result<ExitCode> {
    if args.status {
        return status(settings, args.json);
    }
    if args.enable {
        return enable(settings);
    }
    if args.disable {
        return disable(settings);
    }
    let store = Store::open(&settings.store)
        .with_context(|| format!("cannot open the store at {}", settings.store.display()))?;
    if args.foreground {
        mount::serve(settings, store)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Tools read what the mount serves without checking it against a lock (tofu through
    // `tstore cli-config`): a store this machine did not write (a restored cache) is
    // re-verified before it is served.
    {
        let trusting = super::open_store(settings)?;
        let _lock = super::lock_store(&trusting)?;
        trusting
            .ensure_trusted()
            .context("cannot re-verify the store before serving it")?;
    }
    let mut out = crate::say::stdout();
    match mount::ensure(settings, &store)? {
        Ensured::AlreadyMounted => {
            writeln!(
                out,
                "The store is already mounted at {}.",
                settings.mount.display()
            )?;
        }
        Ensured::Mounted { pid, repaired } => writeln!(
            out,
            "{} the store at {} (FUSE, read-only; daemon pid {pid}).",
            if repaired { "Remounted" } else { "Mounted" },
            settings.mount.display()
        )?,
        Ensured::ViewsLink(why) => writeln!(
            out,
            "{why}: {} links to the store's read-only views instead.",
            settings.mount.display()
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `tstore umount`
pub(crate) fn umount(settings: &Settings, args: &UmountArgs) -> Result<ExitCode> {
    let mount = settings.mount.display();
    match mount::unmount(settings, args.lazy)? {
        Unmounted::NothingMounted => outln!("Nothing is mounted at {mount}."),
        Unmounted::TakenDown => outln!("Unmounted the store from {mount}."),
    }
    Ok(ExitCode::SUCCESS)
}

/// `tstore mount --enable`
fn enable(settings: &Settings) -> Result<ExitCode> {
    match systemd_unit::enable(settings)? {
        Enabled::Started => outln!(
            "Enabled {UNIT}: the store is mounted at {} now and at every login \
             (`systemctl --user status {UNIT}`). For a mount before login, also run \
             `loginctl enable-linger`.",
            settings.mount.display()
        ),
        Enabled::WrittenOnly(path) => outln!(
            "Wrote {}, but no systemd user manager runs here, so nothing was enabled.\n\
             Where systemd runs: `systemctl --user daemon-reload && systemctl --user enable \
             --now {UNIT}`.\n\
             Without systemd: run `tstore mount` at login (your shell profile) or in the CI \
             job's setup; `tstore init` also mounts on demand and repairs a stale mount.",
            path.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `tstore mount --disable`
fn disable(settings: &Settings) -> Result<ExitCode> {
    match systemd_unit::disable(settings)? {
        Disabled::NoUnit => outln!("There is no {UNIT} to remove."),
        Disabled::Removed(path) => outln!("Removed {}.", path.display()),
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Serialize)]
struct StatusJson {
    mount: PathBuf,
    store: PathBuf,
    state: &'static str,
    pid: Option<u32>,
    fuse: Option<String>,
}

/// `tstore mount --status [--json]`
fn status(settings: &Settings, json: bool) -> Result<ExitCode> {
    let status = mount::status(settings);
    // `mountpoint`'s code for "not a mount point".
    let code = if status.state.serves_the_store() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(32)
    };
    if json {
        json::print(&StatusJson {
            mount: settings.mount.clone(),
            store: settings.store.clone(),
            state: status.state.name(),
            pid: status.pid,
            fuse: status.fuse_unavailable,
        })?;
        return Ok(code);
    }
    let what = match status.state {
        State::Mounted => format!(
            "mounted (FUSE, read-only{})",
            status
                .pid
                .map(|p| format!(", daemon pid {p}"))
                .unwrap_or_default()
        ),
        State::Stale => "stale: the FUSE daemon is gone; `tstore mount` repairs it".into(),
        State::Foreign => "another filesystem is mounted there".into(),
        State::ViewsLink => "a symlink to the store's views (no FUSE)".into(),
        State::OtherStore | State::NotMounted => "not mounted; `tstore mount` mounts it".into(),
    };
    outln!("{}: {what}", settings.mount.display());
    if let Some(why) = &status.fuse_unavailable {
        outln!("FUSE unavailable: {why}");
    }
    Ok(code)
}
