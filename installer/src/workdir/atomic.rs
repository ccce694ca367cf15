//! Replacing a file atomically, so a crash leaves the old or the new content, never a mix.

use std::path::Path;

use super::safe_fs::{Durability, RelPath, SafeDir, SafeFsError};

/// Replace the file `path` of a directory the user named (the lock file in the working
/// directory): its directory is opened as given, the file itself is never followed: a
/// symlink there is replaced by the new file (as terraform replaces it), not written
/// through. Temp file beside it, fsync, rename, fsync dir ([`SafeDir::write_atomic`]): a
/// file the user commits survives a power loss whole.
pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), SafeFsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| SafeFsError::NotPlain {
        path: path.display().to_string(),
        why: "no file name",
    })?;
    SafeDir::open_trusted(dir)?.write_atomic(&RelPath::new(name)?, contents, Durability::PowerLoss)
}
