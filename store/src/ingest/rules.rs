//! The rules an archive entry must pass, as pure functions of what the archive declares
//! about it: they decide before anything is extracted. (Where a symlink finally leads is
//! decided over the whole tree, by [`crate::tree::Tree::escaping_symlink`]; whether content
//! has its declared size, while extracting.)

use std::collections::HashSet;

use super::Limits;
use crate::error::HostileReason;
use crate::tree::check_rel_path;

/// Entries at most this large are exempt from the per-entry compression ratio limit: small
/// files of repetitive text legitimately compress very well.
pub(crate) const RATIO_FLOOR: u64 = 1 << 20;

/// Archives below this many uncompressed bytes are exempt from the whole-archive ratio:
/// small packages of repetitive text legitimately compress very well.
pub(crate) const WHOLE_ARCHIVE_RATIO_FLOOR: u64 = 64 << 20;

/// The longest symlink target read from an archive.
pub(crate) const MAX_LINK_TARGET: u64 = 4096;

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// What an entry declares itself to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeclaredKind {
    /// A directory: its name ends with `/`, or its mode says so.
    Dir,
    /// A regular file (also an entry with no unix mode, or file type bits 0).
    File {
        /// Any x bit is set in its mode.
        exec: bool,
    },
    /// A symbolic link; its content is the target.
    Symlink,
}

/// Whether a name or link target is absolute on some system, and so would land outside the
/// package wherever it is unpacked: a leading `/`, a drive letter (`C:`), or any backslash
/// (a Windows separator, which would also hide a `..` from the `/`-split).
pub(crate) fn looks_absolute(s: &str) -> bool {
    let b = s.as_bytes();
    s.starts_with('/')
        || s.contains('\\')
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

/// Normalize an archive entry name to a tree path, or say why not: nothing absolute, no NUL
/// or newline, no `..` component; empty and `.` components are dropped. `None` names the
/// package root itself (`./`).
pub(crate) fn normalize_name(name: &str) -> Result<Option<String>, HostileReason> {
    if looks_absolute(name) {
        return Err(HostileReason::AbsolutePath);
    }
    if name.contains('\0') || name.contains('\n') {
        return Err(HostileReason::InvalidName);
    }
    let mut parts = Vec::new();
    for c in name.split('/') {
        match c {
            ".." => return Err(HostileReason::ParentDir),
            "" | "." => {}
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let path = parts.join("/");
    check_rel_path(&path)?;
    Ok(Some(path))
}

/// What an entry is, from its name and unix mode. Only directories, regular files and
/// symlinks may be unpacked: a device, FIFO or socket is refused.
pub(crate) fn classify(name: &str, mode: Option<u32>) -> Result<DeclaredKind, HostileReason> {
    let file_type = mode.map_or(S_IFREG, |m| m & S_IFMT);
    if name.ends_with('/') || file_type == S_IFDIR {
        return Ok(DeclaredKind::Dir);
    }
    match file_type {
        S_IFLNK => Ok(DeclaredKind::Symlink),
        0 | S_IFREG => Ok(DeclaredKind::File {
            exec: mode.is_some_and(|m| m & 0o111 != 0),
        }),
        _ => Err(HostileReason::SpecialFile {
            mode: mode.unwrap_or(0),
        }),
    }
}

/// The size rules of one entry, from what the central directory declares: at most
/// `max_entry_bytes` uncompressed; the running `total` (this entry included) at most
/// `max_total_bytes`; and, above [`RATIO_FLOOR`], at most `max_ratio` times its compressed
/// size.
pub(crate) fn check_sizes(
    limits: &Limits,
    declared: u64,
    compressed: u64,
    total: u64,
) -> Result<(), HostileReason> {
    if declared > limits.max_entry_bytes {
        return Err(HostileReason::EntryTooLarge {
            size: declared,
            limit: limits.max_entry_bytes,
        });
    }
    if total > limits.max_total_bytes {
        return Err(HostileReason::TotalTooLarge {
            size: total,
            limit: limits.max_total_bytes,
        });
    }
    if declared > RATIO_FLOOR && declared / compressed.max(1) > limits.max_ratio {
        return Err(HostileReason::CompressionRatio {
            size: declared,
            compressed,
            limit: limits.max_ratio,
        });
    }
    Ok(())
}

/// The whole-archive ratio: many entries, each under [`RATIO_FLOOR`], can still make a bomb
/// together. Above [`WHOLE_ARCHIVE_RATIO_FLOOR`], the declared `total` may be at most
/// `max_ratio` times the archive's size on disk.
pub(crate) fn check_whole_ratio(
    limits: &Limits,
    archive_size: u64,
    total: u64,
) -> Result<(), HostileReason> {
    let whole_limit = archive_size
        .saturating_mul(limits.max_ratio)
        .max(WHOLE_ARCHIVE_RATIO_FLOOR);
    if total > whole_limit {
        return Err(HostileReason::CompressionRatio {
            size: total,
            compressed: archive_size,
            limit: limits.max_ratio,
        });
    }
    Ok(())
}

/// A symlink target as stored: UTF-8, not empty, no NUL, and not absolute. (Whether a relative
/// target leads outside the package is decided over the whole tree.)
pub(crate) fn check_link_target(target: Vec<u8>) -> Result<String, HostileReason> {
    let target = String::from_utf8(target)
        .ok()
        .filter(|t| !t.contains('\0') && !t.is_empty())
        .ok_or(HostileReason::InvalidName)?;
    if looks_absolute(&target) {
        return Err(HostileReason::EscapingSymlink { target });
    }
    Ok(target)
}

/// The normalized paths an archive has claimed so far: each may be claimed once, as a file
/// (or symlink) or as a directory, so `x` and `./x`, or `a` and `a/`, cannot both be entries.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    files: HashSet<String>,
    dirs: HashSet<String>,
}

impl Claims {
    /// Claim `path`; `false` if it was claimed before, as either kind.
    pub(crate) fn claim(&mut self, path: &str, is_dir: bool) -> bool {
        let (mine, other) = if is_dir {
            (&mut self.dirs, &self.files)
        } else {
            (&mut self.files, &self.dirs)
        };
        !other.contains(path) && mine.insert(path.to_owned())
    }

    /// Whether `path` was claimed as a directory.
    pub(crate) fn is_dir(&self, path: &str) -> bool {
        self.dirs.contains(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HostileReason::*;

    #[test]
    fn absolute_names_on_any_system() {
        for (s, want) in [
            ("/etc/passwd", true),
            ("C:/evil", true),
            ("c:evil", true),
            ("a\\..\\evil", true),
            ("\\evil", true),
            ("1:x", false),
            ("a/b", false),
            ("a:b", true),
            ("ab:c", false),
            ("", false),
            ("C", false),
        ] {
            assert_eq!(looks_absolute(s), want, "{s:?}");
        }
    }

    #[test]
    fn names_normalize_or_are_refused() {
        let ok = |s: &str| Ok(Some(s.to_owned()));
        for (name, want) in [
            ("a", ok("a")),
            ("./a", ok("a")),
            ("a//b/./c", ok("a/b/c")),
            ("sub/", ok("sub")),
            ("./", Ok(None)),
            ("", Ok(None)),
            (".", Ok(None)),
            ("../evil", Err(ParentDir)),
            ("a/../../evil", Err(ParentDir)),
            ("a/..", Err(ParentDir)),
            ("/etc/evil", Err(AbsolutePath)),
            ("C:/evil", Err(AbsolutePath)),
            ("a\\b", Err(AbsolutePath)),
            ("a\0b", Err(InvalidName)),
            ("a\nb", Err(InvalidName)),
        ] {
            assert_eq!(normalize_name(name), want, "{name:?}");
        }
    }

    #[test]
    fn kinds_from_name_and_mode() {
        let file = |exec| Ok(DeclaredKind::File { exec });
        for (name, mode, want) in [
            ("a", None, file(false)),
            ("a", Some(0o100644), file(false)),
            ("a", Some(0o100755), file(true)),
            ("a", Some(0o000644), file(false)),
            ("a", Some(0o000100), file(true)),
            ("a/", None, Ok(DeclaredKind::Dir)),
            ("a/", Some(0o100644), Ok(DeclaredKind::Dir)),
            ("a", Some(0o040755), Ok(DeclaredKind::Dir)),
            ("l", Some(0o120777), Ok(DeclaredKind::Symlink)),
            ("dev", Some(0o020644), Err(SpecialFile { mode: 0o020644 })),
            ("blk", Some(0o060644), Err(SpecialFile { mode: 0o060644 })),
            ("fifo", Some(0o010644), Err(SpecialFile { mode: 0o010644 })),
            ("sock", Some(0o140755), Err(SpecialFile { mode: 0o140755 })),
            // A name ending in `/` is a directory whatever its mode says.
            ("dev/", Some(0o020644), Ok(DeclaredKind::Dir)),
        ] {
            assert_eq!(classify(name, mode), want, "{name:?} {mode:?}");
        }
    }

    #[test]
    fn size_rules() {
        let limits = Limits {
            max_total_bytes: 10 << 20,
            max_entry_bytes: 4 << 20,
            max_entries: 10,
            max_ratio: 100,
        };
        const MIB: u64 = 1 << 20;
        for (declared, compressed, total, want) in [
            (10, 1, 10, Ok(())),
            (4 * MIB, 4 * MIB, 10 * MIB, Ok(())),
            (
                4 * MIB + 1,
                4 * MIB,
                4 * MIB + 1,
                Err(EntryTooLarge {
                    size: 4 * MIB + 1,
                    limit: 4 * MIB,
                }),
            ),
            (
                1,
                1,
                10 * MIB + 1,
                Err(TotalTooLarge {
                    size: 10 * MIB + 1,
                    limit: 10 * MIB,
                }),
            ),
            // At most RATIO_FLOOR: any ratio, even from nothing.
            (MIB, 0, MIB, Ok(())),
            // Above it: at most max_ratio times the compressed size.
            (MIB + 100, (MIB + 100) / 100, 2 * MIB, Ok(())),
            (
                2 * MIB,
                (2 * MIB) / 101,
                2 * MIB,
                Err(CompressionRatio {
                    size: 2 * MIB,
                    compressed: (2 * MIB) / 101,
                    limit: 100,
                }),
            ),
            (
                MIB + 1,
                0,
                MIB + 1,
                Err(CompressionRatio {
                    size: MIB + 1,
                    compressed: 0,
                    limit: 100,
                }),
            ),
        ] {
            assert_eq!(
                check_sizes(&limits, declared, compressed, total),
                want,
                "{declared} {compressed} {total}"
            );
        }
    }

    #[test]
    fn whole_archive_ratio() {
        let limits = Limits::default();
        let floor = WHOLE_ARCHIVE_RATIO_FLOOR;
        for (size, total, refused) in [
            (1, floor, false),
            (1, floor + 1, true),
            (1 << 20, 200 << 20, false),
            (1 << 20, (200 << 20) + 1, true),
            (u64::MAX, u64::MAX, false),
        ] {
            let got = check_whole_ratio(&limits, size, total);
            assert_eq!(got.is_err(), refused, "{size} {total}");
            if refused {
                assert_eq!(
                    got,
                    Err(CompressionRatio {
                        size: total,
                        compressed: size,
                        limit: 200
                    })
                );
            }
        }
    }

    #[test]
    fn link_targets() {
        let escaping = |t: &str| {
            Err(EscapingSymlink {
                target: t.to_owned(),
            })
        };
        for (target, want) in [
            (&b"bin/tool"[..], Ok("bin/tool".to_owned())),
            (b"../x", Ok("../x".to_owned())),
            (b"/etc/passwd", escaping("/etc/passwd")),
            (b"C:/x", escaping("C:/x")),
            (b"a\\b", escaping("a\\b")),
            (b"", Err(InvalidName)),
            (b"a\0b", Err(InvalidName)),
            (b"\xff", Err(InvalidName)),
        ] {
            assert_eq!(check_link_target(target.to_vec()), want, "{target:?}");
        }
    }

    #[test]
    fn a_path_is_claimed_once_as_either_kind() {
        let mut claims = Claims::default();
        assert!(claims.claim("a", false));
        assert!(!claims.claim("a", false));
        assert!(!claims.claim("a", true));
        assert!(claims.claim("d", true));
        assert!(!claims.claim("d", true));
        assert!(!claims.claim("d", false));
        assert!(claims.claim("d/a", false));
    }
}
