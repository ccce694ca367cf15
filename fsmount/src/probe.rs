//! What is mounted at a mount path: `/proc/self/mountinfo` says whether and what, and for a
//! tstore mount which store it serves; listing its root says whether its daemon still answers.
//! A path the kernel says is no mount point (`statx`'s `STATX_ATTR_MOUNT_ROOT`, Linux 5.8)
//! is not mounted, without reading the mount table (hundreds of lines on a CI host, read by
//! every init).

use std::path::Path;

use crate::{fs_name, FS_NAME};

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
/// whether and what is mounted (the `fsname` names the store); listing it says whether a
/// FUSE daemon still answers.
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
    if daemon_answers(path) {
        MountState::Live
    } else {
        MountState::Stale
    }
}

/// Whether the FUSE daemon behind the mount at `path` answers: a directory listing is a
/// request the daemon must serve (ENOTCONN once it is gone), where a `stat` may be answered
/// from the kernel's attribute cache for a while after the daemon died, so that an init
/// right then took a dead mount for a live one.
fn daemon_answers(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none_or(|e| e.is_ok()))
}

/// The filesystem type and source of the mount at exactly `path` (the last one, if
/// stacked), if any.
pub fn mount_type(path: &Path) -> Option<(String, String)> {
    if is_mount_root(path) == Some(false) {
        return None;
    }
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

/// Whether `path` itself (not followed if a symlink) is the root of a mount, when the
/// kernel says (`None`: no `statx`, a kernel without the attribute, or a path that cannot be
/// stat'ed, such as a dead FUSE mount: the mount table decides).
fn is_mount_root(path: &Path) -> Option<bool> {
    use rustix::fs::{AtFlags, StatxAttributes, StatxFlags, CWD};
    let st = rustix::fs::statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::empty()).ok()?;
    st.stx_attributes_mask
        .contains(StatxAttributes::MOUNT_ROOT)
        .then(|| st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT))
}

/// Mount points in mountinfo have space, tab, newline and backslash octal-escaped.
fn escape_mountinfo(path: &str) -> String {
    path.replace('\\', r"\134")
        .replace(' ', r"\040")
        .replace('\t', r"\011")
        .replace('\n', r"\012")
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

    /// The kernel's answer agrees with the mount table's, for mount points and not.
    #[test]
    fn the_mount_root_attribute_agrees_with_the_mount_table() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/proc", &link).unwrap();
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let listed = |p: &str| table.lines().any(|l| l.split(' ').nth(4) == Some(p));
        for (path, mounted) in [("/proc", true), ("/", true), ("/proc/self", false)] {
            assert_eq!(listed(path), mounted, "{path} in the mount table");
            assert_eq!(is_mount_root(Path::new(path)), Some(mounted), "{path}");
        }
        assert_eq!(is_mount_root(dir.path()), Some(false));
        // A symlink to a mount point is no mount point, as in the mount table.
        assert_eq!(is_mount_root(&link), Some(false));
        assert_eq!(mount_type(&link), None);
        assert_eq!(is_mount_root(&dir.path().join("absent")), None);
    }
}
