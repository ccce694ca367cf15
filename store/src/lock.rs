//! The store-wide advisory lock, `<root>/.lock`.
//!
//! `init`, `import` and `providers lock` hold it shared; `gc` takes it exclusive, without
//! waiting (run from cron, it skips when the store is busy). The FUSE daemon takes no lock: it
//! only reads rows and blob files, and an unlinked blob stays readable through an open handle.
//! The lock is released when the [`StoreLock`] drops. Like cargo, the store tries first and only
//! logs that it waits when it has to.
//!
//! Advisory locks are unreliable on some network filesystems; gc safety depends on this lock.

use std::fs::TryLockError;
use std::path::Path;

use fs_err::os::unix::fs::OpenOptionsExt as _;

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
        let file = Self::open(path)?;
        match file.file().try_lock_shared() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                tracing::info!(
                    "waiting for the store lock {} (gc is running)",
                    path.display()
                );
                on_wait();
                file.file()
                    .lock_shared()
                    .map_err(|e| StoreError::io(path, e))?;
            }
            Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
        Ok(StoreLock {
            file,
            mode: LockMode::Shared,
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
        })
    }

    /// Try to take the lock exclusive without waiting; `None` if anyone holds it.
    pub(crate) fn try_exclusive(path: &Path) -> Result<Option<StoreLock>> {
        let file = Self::open(path)?;
        match file.file().try_lock() {
            Ok(()) => Ok(Some(StoreLock {
                file,
                mode: LockMode::Exclusive,
            })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(StoreError::io(path, e)),
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlock explicitly to be prompt and clear.
        let _ = self.file.file().unlock();
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
