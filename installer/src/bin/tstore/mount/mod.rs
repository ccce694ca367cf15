//! The mount's lifecycle, in one place: making the mount path resolve ([`ensure`]: start the
//! daemon and wait for it, or the views symlink where FUSE is not used), serving it
//! ([`serve`], the daemon's body), telling what is there ([`status`]), and taking it down
//! ([`unmount`], [`unmount_if_live`], [`remove`]); the systemd user unit that keeps it up is
//! [`systemd_unit`]. Commands call these and render what they return; the filesystem and the
//! probes are `tstore_fsmount`'s.
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
//! A mount path is only ever changed when it serves this store, or holds nothing or what
//! tstore put there: another store's mount, another filesystem or a foreign file is an
//! error naming it.

mod daemon;
pub(crate) mod systemd_unit;

use std::path::Path;

use anyhow::{Context, Result};
use tstore_fsmount::mount_path::{self, MountPathError};
use tstore_fsmount::MountState;
use tstore_store::Store;

use crate::Settings;

pub(crate) use daemon::serve;

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

/// Make the mount path resolve: a live FUSE mount (starting or repairing the daemon), or the
/// views symlink where FUSE is not used.
pub(crate) fn ensure(settings: &Settings, store: &Store) -> Result<Ensured> {
    let _guard = daemon::start_lock(settings)?;
    // A live mount of this store serves the same paths whatever FUSE's availability now:
    // the common warm case needs no further checks.
    let repaired = match vacate(settings)? {
        Vacated::Live => return Ok(Ensured::AlreadyMounted),
        Vacated::Free { repaired } => repaired,
    };
    if let Some(why) = fuse_unavailable(settings) {
        mount_path::ensure_views_link(&settings.mount, &store.views_dir())
            .map_err(mount_path_error)?;
        return Ok(Ensured::ViewsLink(why));
    }
    let pid = daemon::start(settings, store)?;
    Ok(Ensured::Mounted { pid, repaired })
}

/// What is at the mount path after [`vacate`].
enum Vacated {
    /// A live mount of this store: nothing was changed.
    Live,
    /// Nothing is mounted there now (`repaired`: a stale mount of this store was detached).
    Free { repaired: bool },
}

/// Clear the way for a mount of this store: detach a stale one, refuse another store's
/// mount or another filesystem, leave a live one be.
fn vacate(settings: &Settings) -> Result<Vacated> {
    match tstore_fsmount::probe(&settings.mount, &settings.store) {
        MountState::Live => Ok(Vacated::Live),
        MountState::Stale => {
            detach(&settings.mount)?;
            Ok(Vacated::Free { repaired: true })
        }
        MountState::OtherStore => Err(other_store(settings)),
        MountState::Foreign => Err(occupied(&settings.mount)),
        MountState::NotMounted => Ok(Vacated::Free { repaired: false }),
    }
}

/// Why FUSE is not used, if it is not.
pub(crate) fn fuse_unavailable(settings: &Settings) -> Option<String> {
    if settings.no_fuse {
        return Some("FUSE disabled by --no-fuse or TSTORE_NO_FUSE".into());
    }
    tstore_fsmount::availability(settings.search_path.as_deref())
        .err()
        .map(|e| e.to_string())
}

/// What `tstore umount` did.
pub(crate) enum Unmounted {
    /// The mount was taken down (or, stale, detached).
    TakenDown,
    /// Nothing was mounted at the mount path.
    NothingMounted,
}

/// Take this store's mount down (`lazy`: detach it even if in use) and wait for its daemon
/// to exit, so that a following mount starts clean.
pub(crate) fn unmount(settings: &Settings, lazy: bool) -> Result<Unmounted> {
    let mount = &settings.mount;
    let pid = daemon::running_pid(settings);
    match tstore_fsmount::probe(mount, &settings.store) {
        MountState::Live => tstore_fsmount::unmount(mount, lazy).with_context(|| {
            format!(
                "cannot unmount {}; if it is in use, `tstore umount --lazy` detaches it now",
                mount.display()
            )
        })?,
        MountState::Stale => detach(mount)?,
        MountState::OtherStore => return Err(other_store(settings)),
        MountState::Foreign => return Err(occupied(mount)),
        MountState::NotMounted => return Ok(Unmounted::NothingMounted),
    }
    if let Some(pid) = pid {
        daemon::wait_for_exit(pid);
    }
    daemon::forget_pid(settings);
    Ok(Unmounted::TakenDown)
}

/// Detach this store's mount if one is live (lazily: what is open stays readable); whether
/// there was one. The caller says what failing to means.
pub(crate) fn unmount_if_live(settings: &Settings) -> std::io::Result<bool> {
    if tstore_fsmount::probe(&settings.mount, &settings.store) != MountState::Live {
        return Ok(false);
    }
    tstore_fsmount::unmount(&settings.mount, true)?;
    Ok(true)
}

/// For removing the store: unmount it (lazily: a provider still running from it keeps what
/// it has open), then remove the mount path if tstore made it: an empty directory, or a
/// symlink into this store. Anything else there is left alone.
pub(crate) fn remove(settings: &Settings) -> Result<()> {
    let mount = &settings.mount;
    match tstore_fsmount::probe(mount, &settings.store) {
        MountState::Live | MountState::Stale => tstore_fsmount::unmount(mount, true)
            .with_context(|| format!("cannot unmount {}", mount.display()))?,
        MountState::OtherStore | MountState::Foreign | MountState::NotMounted => {}
    }
    match fs_err::symlink_metadata(mount) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = fs_err::read_link(mount)?;
            if target.starts_with(&settings.store) {
                fs_err::remove_file(mount)?;
            }
        }
        Ok(m) if m.is_dir() => {
            // Only an empty directory: a live mount of someone else is not empty.
            let _ = std::fs::remove_dir(mount);
        }
        _ => {}
    }
    Ok(())
}

/// What the mount path is, for `tstore mount --status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// A live FUSE mount of this store.
    Mounted,
    /// A mount of this store whose daemon is gone.
    Stale,
    /// A tstore mount of another store.
    OtherStore,
    /// Another filesystem.
    Foreign,
    /// A symlink (the views fallback).
    ViewsLink,
    /// Nothing mounted.
    NotMounted,
}

impl State {
    /// The name `mount --status --json` gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            State::Mounted => "mounted",
            State::Stale => "stale",
            State::OtherStore => "other-store",
            State::Foreign => "foreign",
            State::ViewsLink => "views-link",
            State::NotMounted => "not-mounted",
        }
    }

    /// Whether the mount path serves this store's packages.
    pub(crate) fn serves_the_store(self) -> bool {
        matches!(self, State::Mounted | State::ViewsLink)
    }
}

/// What [`status`] found.
pub(crate) struct Status {
    pub(crate) state: State,
    /// The daemon's pid, for a live mount whose daemon wrote it.
    pub(crate) pid: Option<u32>,
    /// Why FUSE is not used here, if it is not.
    pub(crate) fuse_unavailable: Option<String>,
}

/// What is at the mount path, changing nothing.
pub(crate) fn status(settings: &Settings) -> Status {
    let state = match tstore_fsmount::probe(&settings.mount, &settings.store) {
        MountState::Live => State::Mounted,
        MountState::Stale => State::Stale,
        MountState::OtherStore => State::OtherStore,
        MountState::Foreign => State::Foreign,
        MountState::NotMounted if settings.mount.is_symlink() => State::ViewsLink,
        MountState::NotMounted => State::NotMounted,
    };
    Status {
        state,
        pid: if state == State::Mounted {
            daemon::running_pid(settings)
        } else {
            None
        },
        fuse_unavailable: fuse_unavailable(settings),
    }
}

/// The mount path serves another store: linking into it would hand out that store's bytes.
fn other_store(settings: &Settings) -> anyhow::Error {
    anyhow::anyhow!(
        "the tstore mount path {} serves another store than {}; give each store a mount path \
         of its own (TSTORE_MOUNT), or unmount it (`tstore umount` with that store's \
         TSTORE_HOME, or `fusermount3 -u {}`)",
        settings.mount.display(),
        settings.store.display(),
        settings.mount.display()
    )
}

fn occupied(mount: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "another filesystem is mounted at the tstore mount path {}; unmount it or set \
         TSTORE_MOUNT to another path",
        mount.display()
    )
}

/// The library's error, with what a user can do about something else at the mount path.
fn mount_path_error(err: MountPathError) -> anyhow::Error {
    match err {
        MountPathError::Occupied { .. } => {
            anyhow::anyhow!("{err}; remove it or set TSTORE_MOUNT to another path")
        }
        MountPathError::Io { .. } => err.into(),
    }
}

/// Detach a stale mount (its daemon is gone).
fn detach(mount: &Path) -> Result<()> {
    tracing::warn!("detaching the stale tstore mount at {}", mount.display());
    tstore_fsmount::unmount(mount, true)
        .with_context(|| format!("cannot detach the stale mount at {}", mount.display()))
}
