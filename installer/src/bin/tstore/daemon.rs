//! The mount daemon: [`ensure`], which `tstore init` and `tstore mount` call so the mount
//! path resolves before any link into it is made, and the helpers `tstore umount` shares.
//!
//! ```text
//! <store>/mount.pid     pid of the daemon serving the mount (written by the daemon)
//! <store>/mount.log     the daemon's stdout and stderr (appended)
//! <store>/.mount.lock   held while probing and starting a daemon, so two inits start one
//! ```
//!
//! The daemon is `tstore mount --foreground` started detached (its own process group, stdio
//! to `mount.log`, cwd `/`); the starter waits until the mount is listed in
//! `/proc/self/mountinfo` and answers. A mount whose daemon died (kill -9) is *stale*: `stat`
//! answers ENOTCONN. It is detached with `fusermount3 -u -z` and mounted again.
//!
//! Where FUSE cannot be used (`--no-fuse`, `TSTORE_NO_FUSE=1`, no `/dev/fuse`, no
//! `fusermount3`), the mount path is the symlink to `$TSTORE_HOME/views` instead: the same
//! paths, so links never change.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fs_err::os::unix::fs::OpenOptionsExt as _;
use tstore_fsmount::MountState;
use tstore_installer::mountpoint;
use tstore_store::Store;

use crate::Settings;

/// How long a starter waits for a new daemon's mount to appear.
pub(crate) const MOUNT_TIMEOUT: Duration = Duration::from_secs(15);

/// What [`ensure`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ensured {
    /// A live FUSE mount was already there.
    AlreadyMounted,
    /// A daemon was started (`repaired`: after detaching a stale mount).
    Mounted { pid: u32, repaired: bool },
    /// The mount path is the views symlink (why FUSE is not used).
    ViewsLink(String),
}

pub(crate) fn pid_file(settings: &Settings) -> PathBuf {
    settings.store.join("mount.pid")
}

pub(crate) fn read_pid(settings: &Settings) -> Option<u32> {
    let pid: u32 = fs_err::read_to_string(pid_file(settings))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

/// Why FUSE is not used, if it is not.
pub(crate) fn fuse_unavailable(settings: &Settings) -> Option<String> {
    if settings.no_fuse {
        return Some("FUSE disabled by --no-fuse or TSTORE_NO_FUSE".into());
    }
    tstore_fsmount::availability().err().map(|e| e.to_string())
}

/// Make the mount path resolve: a live FUSE mount (starting or repairing the daemon), or the
/// views symlink where FUSE is not used.
pub(crate) fn ensure(settings: &Settings, store: &Store) -> Result<Ensured> {
    let mount = &settings.mount;
    let _guard = mount_lock(settings)?;
    let state = tstore_fsmount::probe(mount, &settings.store);
    // A live mount of this store serves the same paths whatever FUSE's availability now:
    // the common warm case needs no further checks.
    if state == MountState::Live {
        return Ok(Ensured::AlreadyMounted);
    }
    if let Some(why) = fuse_unavailable(settings) {
        match state {
            // A live mount serves the same paths; leave it to whoever uses it.
            MountState::Live => return Ok(Ensured::AlreadyMounted),
            MountState::Stale => detach(mount)?,
            MountState::OtherStore => other_store(settings)?,
            MountState::Foreign => occupied(mount)?,
            MountState::NotMounted => {}
        }
        mountpoint::ensure_views_link(mount, &store.views_dir())?;
        return Ok(Ensured::ViewsLink(why));
    }
    let repaired = match state {
        MountState::Live => return Ok(Ensured::AlreadyMounted),
        MountState::Stale => {
            detach(mount)?;
            true
        }
        MountState::OtherStore => return other_store(settings).map(|()| Ensured::AlreadyMounted),
        MountState::Foreign => return occupied(mount).map(|()| Ensured::AlreadyMounted),
        MountState::NotMounted => false,
    };
    let pid = spawn_daemon(settings, store)?;
    Ok(Ensured::Mounted { pid, repaired })
}

/// The mount path serves another store: linking into it would hand out that store's bytes.
pub(crate) fn other_store(settings: &Settings) -> Result<()> {
    bail!(
        "the tstore mount path {} serves another store than {}; give each store a mount path \
         of its own (TSTORE_MOUNT), or unmount it (`tstore umount` with that store's \
         TSTORE_HOME, or `fusermount3 -u {}`)",
        settings.mount.display(),
        settings.store.display(),
        settings.mount.display()
    )
}

pub(crate) fn occupied(mount: &Path) -> Result<()> {
    bail!(
        "another filesystem is mounted at the tstore mount path {}; unmount it or set \
         TSTORE_MOUNT to another path",
        mount.display()
    )
}

/// Detach a stale mount (its daemon is gone).
pub(crate) fn detach(mount: &Path) -> Result<()> {
    tracing::warn!("detaching the stale tstore mount at {}", mount.display());
    tstore_fsmount::unmount(mount, true)
        .with_context(|| format!("cannot detach the stale mount at {}", mount.display()))
}

/// The lock serializing mount starts between processes (held until dropped).
fn mount_lock(settings: &Settings) -> Result<fs_err::File> {
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
fn spawn_daemon(settings: &Settings, store: &Store) -> Result<u32> {
    mountpoint::prepare_mount_dir(&settings.mount, &store.views_dir())?;
    let log_path = settings.store.join("mount.log");
    let log = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)?;
    let exe = std::env::current_exe().context("cannot find the tstore binary to start")?;
    let mut cmd = Command::new(exe);
    cmd.arg("--store")
        .arg(&settings.store)
        .arg("--mount")
        .arg(&settings.mount)
        .args(["mount", "--foreground"])
        .env_remove("TSTORE_NO_FUSE")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(log.file().try_clone()?)
        .stderr(log.into_file());
    // Its own process group: a Ctrl-C or a CI job's kill of the group that ran `init` must
    // not take the mount down with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .context("cannot start the tstore mount daemon")?;
    let pid = child.id();
    let start = Instant::now();
    loop {
        if tstore_fsmount::probe(&settings.mount, &settings.store) == MountState::Live {
            // Reap it later from nobody: the daemon outlives us and is re-parented.
            std::mem::forget(child);
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

fn log_tail(path: &Path) -> String {
    let text = fs_err::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

pub(crate) fn is_zombie(pid: u32) -> bool {
    fs_err::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}
