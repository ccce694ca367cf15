//! Reading tstore's own files from places an attacker may write (`.tstore.hcl` in a
//! checkout, `module-package.meta.hcl` in a module package).
//!
//! The rule: such a file is read only when it is a regular file under the name it is looked
//! up by (never through a symlink, never a FIFO or a device), and at most `max` bytes of it.
//! A checkout committed with `.tstore.hcl -> /proc/self/environ` (or a key outside the
//! checkout) would otherwise have its target parsed, and a syntax error would print the
//! offending line (an environment full of tokens) into a CI log. Errors about these files
//! ([`syntax_error`]) never quote the file's text either.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why one of tstore's own files was not read.
#[derive(Debug, thiserror::Error)]
pub enum OwnFileError {
    /// The name is a symbolic link.
    #[error("it is a symbolic link; tstore reads this file only as a regular file (replace the link with the file itself)")]
    Symlink,
    /// The name is a directory, FIFO, socket or device.
    #[error("it is not a regular file")]
    NotRegular,
    /// It cannot be read, or is larger than tstore reads.
    #[error("cannot read it: {0}")]
    Io(#[source] io::Error),
}

/// The text of `path`, a file of tstore's own format: `Ok(None)` when nothing has that
/// name. The last component is opened with `O_NOFOLLOW` (a symlink is an error, never
/// followed) and `O_NONBLOCK` (a FIFO swapped in cannot hold the open), and what was opened
/// must be a regular file.
pub(crate) fn read_own_file(path: &Path, max: u64) -> Result<Option<String>, OwnFileError> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags())
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => return Err(OwnFileError::Symlink),
        Err(e) => return Err(OwnFileError::Io(e)),
    };
    let meta = file.metadata().map_err(OwnFileError::Io)?;
    if !meta.file_type().is_file() {
        return Err(OwnFileError::NotRegular);
    }
    tstore_tofu::read::read_capped_from(file, meta.len(), max)
        .map(Some)
        .map_err(OwnFileError::Io)
}

fn libc_flags() -> i32 {
    nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC
}

/// An HCL error of one of tstore's own files, said without the source line the parser
/// quotes: the position and the parser's message only.
pub(crate) fn syntax_error(e: &hcl::Error) -> String {
    match e {
        hcl::Error::Parse(p) => format!(
            "invalid HCL at line {}, column {}: {}",
            p.location().line(),
            p.location().column(),
            p.message()
        ),
        hcl::Error::Utf8(_) => "the file is not UTF-8 text".to_owned(),
        // Conversion and evaluation messages may quote the file's values.
        _ => "invalid HCL".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn reads_a_regular_file_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("own.hcl");
        std::fs::write(&file, "a = 1\n").unwrap();
        assert_eq!(
            read_own_file(&file, 100).unwrap().as_deref(),
            Some("a = 1\n")
        );
        assert!(read_own_file(&dir.path().join("missing"), 100)
            .unwrap()
            .is_none());

        let link = dir.path().join("link.hcl");
        symlink(&file, &link).unwrap();
        assert!(matches!(
            read_own_file(&link, 100),
            Err(OwnFileError::Symlink)
        ));
        let dangling = dir.path().join("dangling.hcl");
        symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(matches!(
            read_own_file(&dangling, 100),
            Err(OwnFileError::Symlink)
        ));

        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(matches!(
            read_own_file(&sub, 100),
            Err(OwnFileError::NotRegular)
        ));
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read_own_file(&fifo, 100),
            Err(OwnFileError::NotRegular)
        ));

        assert!(matches!(read_own_file(&file, 3), Err(OwnFileError::Io(_))));
    }

    #[test]
    fn syntax_errors_do_not_quote_the_source() {
        let secret = "TF_TOKEN_x=s3cr3t-value\0PATH=/usr/bin";
        let err = hcl::parse(secret).unwrap_err();
        assert!(
            err.to_string().contains("s3cr3t"),
            "the parser quotes its input"
        );
        let said = syntax_error(&err);
        assert!(!said.contains("s3cr3t"), "{said}");
        assert!(said.contains("line 1"), "{said}");
    }
}
