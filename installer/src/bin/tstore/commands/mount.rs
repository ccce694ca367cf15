//! `tstore mount [--foreground|--status [--json]]` and `tstore umount`; the daemon itself
//! is managed by [`crate::daemon`].
//!
//! # `mount --status --json`
//!
//! `{"mount": PATH, "store": PATH, "state": "mounted"|"stale"|"views-link"|"not-mounted"|
//! "foreign"|"other-store", "pid": N|null, "fuse": null|"why FUSE is unavailable"}`
//!
//! The exit status says whether the mount path serves this store, like `mountpoint -q`:
//! 0 for `mounted` and `views-link`, 32 for every other state.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fs_err::os::unix::fs::OpenOptionsExt as _;
use tstore_fsmount::MountState;
use tstore_installer::mountpoint;
use tstore_store::Store;

use crate::cli::{MountArgs, UmountArgs};
use crate::daemon::{
    detach, ensure, fuse_unavailable, is_zombie, occupied, other_store, pid_file, read_pid,
    Ensured, MOUNT_TIMEOUT,
};
use crate::json;
use crate::Settings;

/// `tstore mount …`
pub(crate) fn mount(settings: &Settings, args: &MountArgs) -> Result<ExitCode> {
    if args.status {
        return status(settings, args.json);
    }
    if args.enable {
        return super::mount_unit::enable(settings);
    }
    if args.disable {
        return super::mount_unit::disable();
    }
    let store = Store::open(&settings.store)
        .with_context(|| format!("cannot open the store at {}", settings.store.display()))?;
    if args.foreground {
        return foreground(settings, store);
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
    let mut out = std::io::stdout();
    match ensure(settings, &store)? {
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

/// Serve the mount in this process until it is unmounted.
fn foreground(settings: &Settings, store: Store) -> Result<ExitCode> {
    let mount = &settings.mount;
    if let Some(why) = fuse_unavailable(settings) {
        bail!("cannot mount {} with FUSE: {why}", mount.display());
    }
    match tstore_fsmount::probe(mount, &settings.store) {
        MountState::Live => bail!("the store is already mounted at {}", mount.display()),
        MountState::Stale => detach(mount)?,
        MountState::OtherStore => other_store(settings)?,
        MountState::Foreign => occupied(mount)?,
        MountState::NotMounted => {}
    }
    mountpoint::prepare_mount_dir(mount, &store.views_dir())?;
    let pid_path = pid_file(settings);
    fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&pid_path)?
        .write_all(format!("{}\n", std::process::id()).as_bytes())?;
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8));
    tracing::info!(
        "serving {} at {}",
        settings.store.display(),
        mount.display()
    );
    let result = tstore_fsmount::mount(store, mount, threads);
    if fs_err::read_to_string(&pid_path).is_ok_and(|p| p.trim() == std::process::id().to_string()) {
        let _ = fs_err::remove_file(&pid_path);
    }
    result.with_context(|| format!("cannot serve the FUSE mount at {}", mount.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// `tstore umount`
pub(crate) fn umount(settings: &Settings, args: &UmountArgs) -> Result<ExitCode> {
    let mount = &settings.mount;
    let pid = read_pid(settings);
    match tstore_fsmount::probe(mount, &settings.store) {
        MountState::Live => tstore_fsmount::unmount(mount, args.lazy).with_context(|| {
            format!(
                "cannot unmount {}; if it is in use, `tstore umount --lazy` detaches it now",
                mount.display()
            )
        })?,
        MountState::Stale => detach(mount)?,
        MountState::OtherStore => other_store(settings)?,
        MountState::Foreign => occupied(mount)?,
        MountState::NotMounted => {
            println!("Nothing is mounted at {}.", mount.display());
            return Ok(ExitCode::SUCCESS);
        }
    }
    // The daemon exits when its session ends; wait for it so a following mount is clean.
    if let Some(pid) = pid {
        let start = Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists() && start.elapsed() < MOUNT_TIMEOUT {
            if is_zombie(pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = fs_err::remove_file(pid_file(settings));
    println!("Unmounted the store from {}.", mount.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Serialize)]
struct Status {
    mount: PathBuf,
    store: PathBuf,
    state: &'static str,
    pid: Option<u32>,
    fuse: Option<String>,
}

fn status(settings: &Settings, json: bool) -> Result<ExitCode> {
    let state = match tstore_fsmount::probe(&settings.mount, &settings.store) {
        MountState::Live => "mounted",
        MountState::Stale => "stale",
        MountState::OtherStore => "other-store",
        MountState::Foreign => "foreign",
        MountState::NotMounted if settings.mount.is_symlink() => "views-link",
        MountState::NotMounted => "not-mounted",
    };
    let status = Status {
        mount: settings.mount.clone(),
        store: settings.store.clone(),
        state,
        pid: if state == "mounted" {
            read_pid(settings)
        } else {
            None
        },
        fuse: fuse_unavailable(settings),
    };
    // `mountpoint`'s code for "not a mount point".
    let code = if matches!(state, "mounted" | "views-link") {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(32)
    };
    if json {
        json::print(&status)?;
        return Ok(code);
    }
    let what = match state {
        "mounted" => format!(
            "mounted (FUSE, read-only{})",
            status
                .pid
                .map(|p| format!(", daemon pid {p}"))
                .unwrap_or_default()
        ),
        "stale" => "stale: the FUSE daemon is gone; `tstore mount` repairs it".into(),
        "foreign" => "another filesystem is mounted there".into(),
        "views-link" => "a symlink to the store's views (no FUSE)".into(),
        _ => "not mounted; `tstore mount` mounts it".into(),
    };
    println!("{}: {what}", settings.mount.display());
    if let Some(why) = &status.fuse {
        println!("FUSE unavailable: {why}");
    }
    Ok(code)
}
