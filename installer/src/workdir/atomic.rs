//! Replacing a file atomically, so a crash leaves the old or the new content, never a mix.

use std::path::Path;

/// Write a file atomically: temp file in the same directory, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(contents)?;
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    fs_err::File::open(dir)?.sync_all()?;
    Ok(())
}
