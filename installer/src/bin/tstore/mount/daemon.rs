//! The daemon process: started detached by [`start`], which waits for its mount; its body,
//! [`serve`]; its pid file, and waiting for it to exit.

use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fs_err::os::unix::fs::OpenOptionsExt as _;
use tstore_fsmount::mount_path;
use tstore_fsmount::MountState;
use tstore_store::Store;

use super::{fuse_unavailable, mount_path_error, vacate, Vacated};
use crate::Settings;

/// How long a starter waits for a new daemon's mount to appear, and `umount` for the daemon
/// to exit.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(15);

fn pid_file(settings: &Settings) -> PathBuf {
    settings.store.join("mount.pid")
}

/// The pid the daemon recorded, if that process still exists.
pub(super) fn running_pid(settings: &Settings) -> Option<u32> {
    let pid: u32 = fs_err::read_to_string(pid_file(settings))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

/// Remove the pid file of a daemon that is gone.
pub(super) fn forget_pid(settings: &Settings) {
    let _ = fs_err::remove_file(pid_file(settings));
}

/// The lock serializing mount starts between processes (held until dropped).
pub(super) fn start_lock(settings: &Settings) -> Result<fs_err::File> {
    let path = settings.store.join(".mount.lock");
    // The store root is private to its owner; the store checks this when it opens.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&settings.store)
        .with_context(|| format!("cannot create {}", settings.store.display()))?;
    let file = fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)?;
    file.file()
        .lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// Start `tstore mount --foreground` detached and wait for its mount.
pub(super) fn start(settings: &Settings, store: &Store) -> Result<u32> {
    mount_path::prepare_mount_dir(&settings.mount, &store.views_dir()).map_err(mount_path_error)?;
    let log_path = settings.store.join("mount.log");
    let log = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)?;
    let exe = std::env::current_exe().context("cannot find the tstore binary to start")?;
    let mut cmd = tstore_process::Command::new(exe);
    cmd.arg("--store")
        .arg(&settings.store)
        .arg("--mount")
        .arg(&settings.mount)
        .args(["mount", "--foreground"])
        .env_remove("TSTORE_NO_FUSE")
        .stdin(Stdio::null())
        .stdout(log.file().try_clone()?)
        .stderr(log.into_file());
    // Its own process group: a Ctrl-C or a CI job's kill of the group that ran `init` must
    // not take the mount down with it.
    cmd.process_group(0);
    let mut child = cmd
        .spawn()
        .context("cannot start the tstore mount daemon")?;
    let pid = child.id();
    let start = Instant::now();
    loop {
        if tstore_fsmount::probe(&settings.mount, &settings.store) == MountState::Live {
            // Let go of it: dropping a child neither waits for it nor kills it (the daemon
            // outlives us and is re-parented); its private directory is removed.
            drop(child);
            return Ok(pid);
        }
        if let Some(status) = child.try_wait()? {
            bail!(
                "the tstore mount daemon exited ({status}) before mounting {}; see {}:\n{}",
                settings.mount.display(),
                log_path.display(),
                log_tail(&log_path)
            );
        }
        if start.elapsed() > MOUNT_TIMEOUT {
            let _ = child.kill();
            bail!(
                "the tstore mount daemon did not mount {} within {}s; see {}",
                settings.mount.display(),
                MOUNT_TIMEOUT.as_secs(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The daemon's body: mount the store and serve it in this process until it is unmounted,
/// with this process's pid in the pid file meanwhile.
pub(crate) fn serve(settings: &Settings, store: Store) -> Result<()> {
    let mount = &settings.mount;
    check_servable(settings)?;
    mount_path::prepare_mount_dir(mount, &store.views_dir()).map_err(mount_path_error)?;
    let pid_path = pid_file(settings);
    fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&pid_path)?
        .write_all(format!("{}\n", std::process::id()).as_bytes())?;
    let options = tstore_fsmount::MountOptions {
        threads: std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8)),
        passthrough: settings.fuse_passthrough,
    };
    tracing::info!(
        "serving {} at {}",
        settings.store.display(),
        mount.display()
    );
    let result = tstore_fsmount::mount(store, mount, &options);
    if fs_err::read_to_string(&pid_path).is_ok_and(|p| p.trim() == std::process::id().to_string()) {
        let _ = fs_err::remove_file(&pid_path);
    }
    result.with_context(|| format!("cannot serve the FUSE mount at {}", mount.display()))
}

/// Refuse to serve when FUSE cannot be used or something is mounted there already.
fn check_servable(settings: &Settings) -> Result<()> {
    if let Some(why) = fuse_unavailable(settings) {
        bail!("cannot mount {} with FUSE: {why}", settings.mount.display());
    }
    match vacate(settings)? {
        Vacated::Live => bail!(
            "the store is already mounted at {}",
            settings.mount.display()
        ),
        Vacated::Free { .. } => Ok(()),
    }
}

/// Wait (at most [`MOUNT_TIMEOUT`]) for the daemon `pid` to exit: it does when its session
/// ends.
pub(super) fn wait_for_exit(pid: u32) {
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() && start.elapsed() < MOUNT_TIMEOUT {
        if is_zombie(pid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn log_tail(path: &Path) -> String {
    let text = fs_err::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

fn is_zombie(pid: u32) -> bool {
    fs_err::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}
