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
//! [`mount`] serves the filesystem, blocking the caller until it is unmounted. Around it,
//! what managing a mount needs: [`probe`] (what is mounted at a path, and whether it
//! answers), [`unmount`] and [`availability`] (`fusermount3`), and [`mount_path`] (the path
//! made a directory for the mount, or the symlink to the store's views that replaces it
//! where FUSE is not used).
//!
//! **Architecture Invariant:** fsmount only reads the store; it never writes.
//!
//! # Example
//!
//! ```no_run
//! let store = tstore_store::Store::open("/home/me/.local/share/tstore".as_ref())?;
//! // Blocks until `fusermount3 -u /home/me/.tofu-store`.
//! let options = tstore_fsmount::MountOptions { threads: 4, passthrough: false };
//! tstore_fsmount::mount(store, "/home/me/.tofu-store".as_ref(), &options)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod fs;
mod fusermount;
mod in_use;
pub mod mount_path;
mod probe;

use std::io;
use std::path::Path;

pub use fs::StoreFs;
pub use fusermount::{availability, unmount, Unavailable};
pub use in_use::files_in_use_under;
pub use probe::{mount_type, probe, MountState};
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

/// How [`mount`] serves.
#[derive(Clone, Debug)]
pub struct MountOptions {
    /// Worker threads answering the kernel (at least one).
    pub threads: usize,
    /// Ask the kernel for FUSE passthrough (Linux 6.9+, needs `CAP_SYS_ADMIN`): reads of an
    /// opened file go straight to its blob file. Opt-in: on a test machine (Linux 6.18, store
    /// on overlayfs) reads through it answered EIO.
    pub passthrough: bool,
}

/// Mount `store` read-only at `mountpoint` and serve it until the filesystem is unmounted
/// (`fusermount3 -u`). The mount point must be an existing directory.
pub fn mount(store: Store, mountpoint: &Path, options: &MountOptions) -> io::Result<()> {
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
    config.n_threads = Some(options.threads.max(1));
    config.clone_fd = true;
    let fs = StoreFs::new(store).with_passthrough(options.passthrough);
    let watcher = fs.watcher();
    let session = fuser::Session::new(fs, mountpoint, &config)?;
    let notifier = session.notifier();
    std::thread::Builder::new()
        .name("tstore-revalidate".into())
        .spawn(move || watcher.run(notifier))?;
    session.run()
}
