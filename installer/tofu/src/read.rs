//! Reading the small text files the language is made of, with a size cap: a checkout or a
//! module package is hostile input, and a file read whole must not exhaust memory.

use std::io::{self, Read};
use std::path::Path;

/// Configuration files (`.tf`, `.tf.json`, `.tofu`, `modules.json`): generous, since
/// generated configuration can be large.
pub const MAX_CONFIG_FILE: u64 = 64 << 20;
/// The dependency lock file.
pub const MAX_LOCK_FILE: u64 = 16 << 20;
/// A CLI configuration file.
pub const MAX_CLI_CONFIG_FILE: u64 = 1 << 20;

/// Read `path` as UTF-8 text, failing with `InvalidData` when it is larger than `max`
/// bytes, and with `InvalidInput` when it is not a regular file ([`open_regular`]). The
/// error names no path: callers say which file it was.
pub fn read_capped(path: &Path, max: u64) -> io::Result<String> {
    let file = open_regular(path)?;
    let size = file.metadata().map_or(0, |m| m.len());
    read_capped_from(file, size, max)
}

/// Open `path` (symlinks followed, as the tools follow them) for reading, only when what
/// is opened is a regular file. A FIFO, socket or device put in a checkout under a file's
/// name would block the open or the read forever, holding the store's locks meanwhile:
/// it is opened without blocking (`O_NONBLOCK`, which a regular file ignores) and refused.
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket, device or directory is not read)",
        ));
    }
    Ok(file)
}

/// [`read_capped`] of one of tstore's own files in a checkout: the last component is opened
/// with `O_NOFOLLOW`, so a symlink is an error (`InvalidInput`, saying so), never followed.
pub fn read_own_capped(path: &Path, max: u64) -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "it is a symbolic link; tstore reads this file only as a regular file \
                     (replace the link with the file itself)",
                )
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket, device or directory is not read)",
        ));
    }
    read_capped_from(file, meta.len(), max)
}

/// [`read_capped`] of a file already open, whose size is `size` (it sizes the buffer, so
/// the whole file, and one byte to see it end, is one read).
pub fn read_capped_from(file: std::fs::File, size: u64, max: u64) -> io::Result<String> {
    let mut text = String::with_capacity(size.min(max) as usize + 1);
    let read = file.take(max + 1).read_to_string(&mut text)?;
    if read as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the file is larger than {max} bytes, the most tstore reads"),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_capped(&path, 5).unwrap(), "12345");
        let err = read_capped(&path, 4).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(read_capped(&dir.path().join("missing"), 5).is_err());
    }

    #[test]
    fn a_fifo_or_a_directory_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_bits_truncate(0o600),
            0,
        )
        .unwrap();
        // No writer ever opens it: a blocking open would wait here forever.
        let err = read_capped(&fifo, 5).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let err = read_capped(dir.path(), 5).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        // Through a symlink too.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(read_capped(&link, 5).is_err());
    }
}
