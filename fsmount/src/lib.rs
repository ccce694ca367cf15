//! The read-only FUSE filesystem over the store, and the mount-point probes around it.
//!
//! [`StoreFs`] serves
//!
//! ```text
//! <mount>/
//! ├── providers/HOST/NS/TYPE/VERSION/OS_ARCH/…   one directory per provider package
//! └── modules/<id>/…                             one directory per module package
//! ```
//!
//! straight from the store's blobs, built from the SQLite index, the same paths as the
//! materialized views (`$TSTORE_HOME/views`), so a link in a working directory is the same
//! string with or without FUSE. Every mutation answers `EROFS` (and the mount is `ro`), so no
//! one, root included, can change a shared package through it. Packages committed while
//! mounted appear without a remount.
//!
//! [`mount`] serves the filesystem, blocking the caller until it is unmounted; [`probe`],
//! [`unmount`] and [`availability`] are what mount management needs around it.
//!
//! **Architecture Invariant:** fsmount only reads the store; it never writes.
//!
//! # Example
//!
//! ```no_run
//! let store = tstore_store::Store::open("/home/me/.local/share/tstore".as_ref())?;
//! // Blocks until `fusermount3 -u /home/me/.tofu-store`.
//! tstore_fsmount::mount(store, "/home/me/.tofu-store".as_ref(), 4)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod fs;
mod in_use;

use std::io;
use std::path::Path;
use std::process::Command;

pub use fs::StoreFs;
pub use in_use::files_in_use_under;
use tstore_store::Store;

/// The subtype of tstore mounts (type `fuse.tstore` in `/proc/self/mountinfo`), and the
/// prefix of their `fsname`.
pub const FS_NAME: &str = "tstore";

/// The `fsname` of a mount serving the store at `store_root`: `tstore:` and 16 hex digits of
/// the BLAKE3 of the store's canonical path. A probe compares it, so two stores pointed at
/// one mount path never serve each other's packages.
pub fn fs_name(store_root: &Path) -> String {
    let canonical = std::fs::canonicalize(store_root).unwrap_or_else(|_| store_root.to_owned());
    let hash = blake3::hash(canonical.as_os_str().as_encoded_bytes());
    format!("{FS_NAME}:{}", &hash.to_hex()[..16])
}

/// Mount `store` read-only at `mountpoint` and serve it with `threads` worker threads until
/// the filesystem is unmounted (`fusermount3 -u`). The mount point must be an existing
/// directory.
pub fn mount(store: Store, mountpoint: &Path, threads: usize) -> io::Result<()> {
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(fs_name(store.root())),
        fuser::MountOption::Subtype(FS_NAME.into()),
        fuser::MountOption::RO,
        // Providers are executed straight from the mount (terraform execs them).
        fuser::MountOption::Exec,
        fuser::MountOption::NoDev,
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoAtime,
    ];
    // A store is private to its owner, and so is its mount: FUSE's default lets only the
    // mounting user in (root included: a root-owned store is not served to other users).
    config.n_threads = Some(threads.max(1));
    config.clone_fd = true;
    let fs = StoreFs::new(store);
    let watcher = fs.watcher();
    let session = fuser::Session::new(fs, mountpoint, &config)?;
    let notifier = session.notifier();
    std::thread::Builder::new()
        .name("tstore-revalidate".into())
        .spawn(move || watcher.run(notifier))?;
    session.run()
}

/// What is at a mount path, as far as FUSE is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountState {
    /// A live tstore FUSE mount.
    Live,
    /// A tstore mount that does not answer `stat`; usually its daemon is gone and `stat`
    /// answers "Transport endpoint is not connected".
    Stale,
    /// A tstore mount of another store (or of a tstore too old to say which store).
    OtherStore,
    /// Some other filesystem is mounted there.
    Foreign,
    /// Nothing is mounted there.
    NotMounted,
}

/// Probe `path` for a mount of the store at `store_root`: `/proc/self/mountinfo` says
/// whether and what is mounted (the `fsname` names the store); `stat` says whether a FUSE
/// daemon still answers.
pub fn probe(path: &Path, store_root: &Path) -> MountState {
    let Some((fstype, source)) = mount_type(path) else {
        return MountState::NotMounted;
    };
    // Mounted directly (as root) the type is `fuse`, through fusermount3 `fuse.tstore`; the
    // source is the fsname either way.
    if !fstype.starts_with("fuse") {
        return MountState::Foreign;
    }
    if source != fs_name(store_root) {
        let ours = source == FS_NAME || source.starts_with(&format!("{FS_NAME}:"));
        return if ours {
            MountState::OtherStore
        } else {
            MountState::Foreign
        };
    }
    match std::fs::metadata(path) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => MountState::Stale,
        Err(_) => MountState::Stale,
        Ok(_) => MountState::Live,
    }
}

/// The filesystem type and source of the mount at exactly `path` (the last one, if
/// stacked), if any.
pub fn mount_type(path: &Path) -> Option<(String, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = escape_mountinfo(&path.to_string_lossy());
    info.lines()
        .rev()
        .filter(|line| line.split(' ').nth(4) == Some(want.as_str()))
        .filter_map(|line| {
            // After the optional fields comes "-", then the filesystem type.
            let mut fields = line.split(' ').skip_while(|f| *f != "-");
            fields.next()?;
            Some((fields.next()?.to_owned(), fields.next()?.to_owned()))
        })
        .next()
}

/// Mount points in mountinfo have space, tab, newline and backslash octal-escaped.
fn escape_mountinfo(path: &str) -> String {
    path.replace('\\', r"\134")
        .replace(' ', r"\040")
        .replace('\t', r"\011")
        .replace('\n', r"\012")
}

/// Unmount the FUSE mount at `path` with `fusermount3 -u` (`-z`, lazily, if `lazy`: for a
/// stale mount or one still in use).
pub fn unmount(path: &Path, lazy: bool) -> io::Result<()> {
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd.arg("--").arg(path).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "fusermount3 -u{} {} failed: {}",
            if lazy { " -z" } else { "" },
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Why FUSE cannot be used on this machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// `/dev/fuse` is missing or cannot be opened.
    #[error("/dev/fuse is not available ({0})")]
    NoDevice(String),
    /// `fusermount3` is not on `PATH`.
    #[error("fusermount3 is not installed (install the fuse3 package)")]
    NoFusermount,
}

/// Whether FUSE mounts can be made here: `/dev/fuse` opens and `fusermount3` is on `PATH`.
pub fn availability() -> Result<(), Unavailable> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map_err(|e| Unavailable::NoDevice(e.to_string()))?;
    let found = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join("fusermount3").is_file())
    });
    if found {
        Ok(())
    } else {
        Err(Unavailable::NoFusermount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(escape_mountinfo("/a b\\c"), r"/a\040b\134c");
    }

    #[test]
    fn a_plain_directory_is_not_mounted() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(probe(dir.path(), dir.path()), MountState::NotMounted);
        let (fstype, _) = mount_type(Path::new("/proc")).unwrap();
        assert_eq!(fstype, "proc");
    }
}
