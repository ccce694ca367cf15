//! Mount management: `tstore mount [--foreground|--status [--json]]`, `tstore umount`, and
//! [`ensure`], which `tstore init` calls so the mount path resolves before any link is made.
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
//!
//! # `mount --status --json`
//!
//! `{"mount": PATH, "store": PATH, "state": "mounted"|"stale"|"views-link"|"not-mounted"|
//! "foreign", "pid": N|null, "fuse": null|"why FUSE is unavailable"}`

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tstore_fsmount::MountState;
use tstore_installer::mountpoint;
use tstore_store::Store;

use crate::cli::{MountArgs, UmountArgs};
use crate::Settings;

/// How long a starter waits for a new daemon's mount to appear.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(15);

/// What [`ensure`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Ensured {
    /// A live FUSE mount was already there.
    AlreadyMounted,
    /// A daemon was started (`repaired`: after detaching a stale mount).
    Mounted { pid: u32, repaired: bool },
    /// The mount path is the views symlink (why FUSE is not used).
    ViewsLink(String),
}

fn pid_file(settings: &Settings) -> PathBuf {
    settings.store.join("mount.pid")
}

fn read_pid(settings: &Settings) -> Option<u32> {
    let pid: u32 = fs_err::read_to_string(pid_file(settings))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

/// Why FUSE is not used, if it is not.
fn fuse_unavailable(settings: &Settings) -> Option<String> {
    if settings.no_fuse {
        return Some("FUSE disabled by --no-fuse or TSTORE_NO_FUSE".into());
    }
    tstore_fsmount::availability().err().map(|e| e.to_string())
}

/// Make the mount path resolve: a live FUSE mount (starting or repairing the daemon), or the
/// views symlink where FUSE is not used.
pub fn ensure(settings: &Settings, store: &Store) -> Result<Ensured> {
    let mount = &settings.mount;
    let _guard = mount_lock(settings)?;
    let state = tstore_fsmount::probe(mount);
    if let Some(why) = fuse_unavailable(settings) {
        match state {
            // A live mount serves the same paths; leave it to whoever uses it.
            MountState::Live => return Ok(Ensured::AlreadyMounted),
            MountState::Stale => detach(mount)?,
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
        MountState::Foreign => return occupied(mount).map(|()| Ensured::AlreadyMounted),
        MountState::NotMounted => false,
    };
    let pid = spawn_daemon(settings, store)?;
    Ok(Ensured::Mounted { pid, repaired })
}

fn occupied(mount: &Path) -> Result<()> {
    bail!(
        "another filesystem is mounted at the tstore mount path {}; unmount it or set \
         TSTORE_MOUNT to another path",
        mount.display()
    )
}

/// Detach a stale mount (its daemon is gone).
fn detach(mount: &Path) -> Result<()> {
    tracing::warn!("detaching the stale tstore mount at {}", mount.display());
    tstore_fsmount::unmount(mount, true)
        .with_context(|| format!("cannot detach the stale mount at {}", mount.display()))
}

/// The lock serializing mount starts between processes (held until dropped).
fn mount_lock(settings: &Settings) -> Result<fs_err::File> {
    let path = settings.store.join(".mount.lock");
    fs_err::create_dir_all(&settings.store)?;
    let file = fs_err::File::create(&path)?;
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
        if tstore_fsmount::probe(&settings.mount) == MountState::Live {
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

/// `tstore mount …`
pub fn mount(settings: &Settings, args: &MountArgs) -> Result<ExitCode> {
    if args.status {
        return status(settings, args.json);
    }
    let store = Store::open(&settings.store)
        .with_context(|| format!("cannot open the store at {}", settings.store.display()))?;
    if args.foreground {
        return foreground(settings, store);
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
    match tstore_fsmount::probe(mount) {
        MountState::Live => bail!("the store is already mounted at {}", mount.display()),
        MountState::Stale => detach(mount)?,
        MountState::Foreign => occupied(mount)?,
        MountState::NotMounted => {}
    }
    mountpoint::prepare_mount_dir(mount, &store.views_dir())?;
    let pid_path = pid_file(settings);
    fs_err::write(&pid_path, format!("{}\n", std::process::id()))?;
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
pub fn umount(settings: &Settings, args: &UmountArgs) -> Result<ExitCode> {
    let mount = &settings.mount;
    let pid = read_pid(settings);
    match tstore_fsmount::probe(mount) {
        MountState::Live => tstore_fsmount::unmount(mount, args.lazy).with_context(|| {
            format!(
                "cannot unmount {}; if it is in use, `tstore umount --lazy` detaches it now",
                mount.display()
            )
        })?,
        MountState::Stale => detach(mount)?,
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

fn is_zombie(pid: u32) -> bool {
    fs_err::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
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
    let state = match tstore_fsmount::probe(&settings.mount) {
        MountState::Live => "mounted",
        MountState::Stale => "stale",
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
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(ExitCode::SUCCESS);
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
    Ok(ExitCode::SUCCESS)
}
