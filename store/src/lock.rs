//! The store-wide advisory lock, `<root>/.lock`, and gc's turnstile, `<root>/.gc-intent.lock`.
//!
//! `init`, `import` and `providers lock` hold `.lock` shared; `gc` takes it exclusive. The FUSE
//! daemon takes no lock: it only reads rows and blob files, and gc keeps the packages a
//! process has open or mapped through the mount (`GcOptions::in_use`), which the kernel may
//! read again at any time. The lock is released when the [`StoreLock`] drops. Like
//! cargo, the store tries first and only logs that it waits when it has to.
//!
//! Shared holders overlap, so on a host that is never idle an exclusive request would wait
//! forever (flock has no writer preference). The turnstile gives gc its turn: gc holds
//! `.gc-intent.lock` exclusive while it waits for `.lock`; every shared taker passes the
//! turnstile first (takes it shared and lets go at once), so while gc waits, new inits queue
//! behind it and the running ones drain. gc waits a bounded time ([`StoreLock::exclusive_within`])
//! and gives up — releasing the turnstile — when the store stays busy.
//!
//! Advisory locks are unreliable on some network filesystems; gc safety depends on this lock.

use std::fs::TryLockError;
use std::path::Path;

use fs_err::os::unix::fs::OpenOptionsExt as _;

use crate::Store;
use crate::{Result, StoreError};

/// Whether a [`StoreLock`] is shared or exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    /// Held by init/import/`providers lock`: many at once.
    Shared,
    /// Held by gc: alone.
    Exclusive,
}

/// A held store lock; dropping it releases the lock.
#[derive(Debug)]
pub struct StoreLock {
    file: fs_err::File,
    mode: LockMode,
    /// gc's turnstile, held with an exclusive lock taken through it.
    intent: Option<fs_err::File>,
}

/// The turnstile beside the store lock at `path`.
fn intent_path(path: &Path) -> std::path::PathBuf {
    path.with_file_name(".gc-intent.lock")
}

impl StoreLock {
    /// Shared or exclusive.
    pub fn mode(&self) -> LockMode {
        self.mode
    }

    fn open(path: &Path) -> Result<fs_err::File> {
        fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| StoreError::io(path, e))
    }

    /// Take the lock shared, blocking if gc holds it; `on_wait` runs once before blocking,
    /// so the caller can tell the user why nothing happens.
    pub(crate) fn shared(path: &Path, on_wait: impl FnOnce()) -> Result<StoreLock> {
        let mut on_wait = Some(on_wait);
        // The turnstile: blocks only while gc waits for its turn or runs.
        let intent_file = intent_path(path);
        let intent = Self::open(&intent_file)?;
        match intent.file().try_lock_shared() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                if let Some(f) = on_wait.take() {
                    f();
                }
                intent
                    .file()
                    .lock_shared()
                    .map_err(|e| StoreError::io(&intent_file, e))?;
            }
            Err(TryLockError::Error(e)) => return Err(StoreError::io(&intent_file, e)),
        }
        drop(intent);
        let file = Self::open(path)?;
        match file.file().try_lock_shared() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                tracing::info!(
                    "waiting for the store lock {} (gc is running)",
                    path.display()
                );
                if let Some(f) = on_wait.take() {
                    f();
                }
                file.file()
                    .lock_shared()
                    .map_err(|e| StoreError::io(path, e))?;
            }
            Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
        Ok(StoreLock {
            file,
            mode: LockMode::Shared,
            intent: None,
        })
    }

    /// Take the lock exclusive, blocking while anyone holds it; `on_wait` runs once before
    /// blocking.
    pub(crate) fn exclusive(path: &Path, on_wait: impl FnOnce()) -> Result<StoreLock> {
        let file = Self::open(path)?;
        match file.file().try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                on_wait();
                file.file().lock().map_err(|e| StoreError::io(path, e))?;
            }
            Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
        Ok(StoreLock {
            file,
            mode: LockMode::Exclusive,
            intent: None,
        })
    }

    /// Take the lock exclusive through the turnstile, waiting at most `patience`: new shared
    /// takers queue behind the turnstile while the current ones finish. `None` (and the
    /// turnstile released) when the store stays busy that long.
    pub(crate) fn exclusive_within(
        path: &Path,
        patience: std::time::Duration,
    ) -> Result<Option<StoreLock>> {
        let deadline = std::time::Instant::now() + patience;
        let poll = std::time::Duration::from_millis(5);
        let intent_file = intent_path(path);
        let intent = Self::open(&intent_file)?;
        loop {
            match intent.file().try_lock() {
                Ok(()) => break,
                // Another gc holds the turnstile.
                Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(poll)
                }
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(e)) => return Err(StoreError::io(&intent_file, e)),
            }
        }
        let file = Self::open(path)?;
        loop {
            match file.file().try_lock() {
                Ok(()) => {
                    return Ok(Some(StoreLock {
                        file,
                        mode: LockMode::Exclusive,
                        intent: Some(intent),
                    }))
                }
                Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(poll)
                }
                Err(TryLockError::WouldBlock) => {
                    let _ = intent.file().unlock();
                    return Ok(None);
                }
                Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
            }
        }
    }

    /// Try to take the lock exclusive without waiting; `None` if anyone holds it.
    pub(crate) fn try_exclusive(path: &Path) -> Result<Option<StoreLock>> {
        let file = Self::open(path)?;
        match file.file().try_lock() {
            Ok(()) => Ok(Some(StoreLock {
                file,
                mode: LockMode::Exclusive,
                intent: None,
            })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(StoreError::io(path, e)),
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlock explicitly to be prompt and clear.
        // The store lock goes first, then the turnstile lets the queue through.
        let _ = self.file.file().unlock();
        if let Some(intent) = &self.intent {
            let _ = intent.file().unlock();
        }
    }
}

/// Panic unless `lock` is exclusive: `what` deletes files that a process holding the lock
/// shared may be about to use.
pub(crate) fn assert_exclusive(lock: &StoreLock, what: &str) {
    assert_eq!(
        lock.mode(),
        LockMode::Exclusive,
        "{what} needs the exclusive store lock"
    );
}

/// The store's locks: shared for an install, exclusive for gc and repair, one per root for
/// an init's records.
#[derive(Clone, Copy)]
pub struct Locks<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// The store's locks ([`Locks`]).
    pub fn locks(&self) -> Locks<'_> {
        Locks { store: self }
    }
}

impl Locks<'_> {
    /// Take the store lock shared (init, import, `providers lock`), waiting while gc holds it.
    pub fn shared(&self) -> Result<StoreLock> {
        StoreLock::shared(&self.store.layout.lock, || {})
    }

    /// [`Locks::shared`], calling `on_wait` once if it has to wait (gc holds the
    /// lock), so a command can say why it blocks, as cargo does for its package lock.
    pub fn shared_or_wait(&self, on_wait: impl FnOnce()) -> Result<StoreLock> {
        StoreLock::shared(&self.store.layout.lock, on_wait)
    }

    /// Take the lock of one root (a working directory, named by its canonical path)
    /// exclusive, waiting while another process holds it; `on_wait` runs once before
    /// waiting. Two inits of one directory would otherwise remove each other's private
    /// copies and write each other's half of `modules.json`. The lock file is
    /// `roots.lock.d/<BLAKE3 of the path>` (never the path itself): empty, one per directory
    /// ever initialised, kept so that a waiter and a newcomer always lock the same inode.
    pub fn root(&self, root: &Path, on_wait: impl FnOnce()) -> Result<StoreLock> {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = self.store.layout.root.join("roots.lock.d");
        crate::layout::create_store_dir_all(&self.store.layout.root, &dir)?;
        let name = blake3::hash(root.as_os_str().as_bytes()).to_hex();
        StoreLock::exclusive(&dir.join(name.as_str()), on_wait)
    }

    /// Take the store lock exclusive (`store verify --repair`), waiting while other tstore
    /// processes hold it; `on_wait` runs once before waiting.
    pub fn exclusive_or_wait(&self, on_wait: impl FnOnce()) -> Result<StoreLock> {
        StoreLock::exclusive(&self.store.layout.lock, on_wait)
    }

    /// Try to take the store lock exclusive without waiting; `None` if the store is busy.
    pub fn try_exclusive(&self) -> Result<Option<StoreLock>> {
        StoreLock::try_exclusive(&self.store.layout.lock)
    }

    /// Take the store lock exclusive for gc through the turnstile (see `lock.rs`): new
    /// shared takers wait while the running ones finish, for at most `patience`; `None` if
    /// the store stayed busy.
    pub fn exclusive_within(&self, patience: std::time::Duration) -> Result<Option<StoreLock>> {
        StoreLock::exclusive_within(&self.store.layout.lock, patience)
    }
}
