//! Which programs found on `PATH` root may run: none that another user can change.
//!
//! tstore runs as root in CI, on shared hosts and from cron, and starts `git`, `terraform`
//! (`version -json`), credential helpers, `systemctl` and `fusermount3` by name. A `PATH`
//! directory that another user owns (`/home/alice/bin`), or can write into (a 0777
//! directory, a group-writable one), lets that user put a `git` there that root then runs.
//! As sudo's `secure_path` and OpenSSH's `safe_path` reason, when the effective uid is 0 a
//! candidate is run only if nobody but root can change what its path resolves to:
//!
//! - **Every entry on the way is root's.** From `/` down to the file, every directory,
//!   every symbolic link (each followed as the kernel follows it, its own entries checked
//!   the same way) and the file itself is owned by uid 0 (for root, the effective uid and
//!   root are one). The owner of any of them could rename, replace or rewrite it.
//! - **No directory on the way is writable by group or others without the sticky bit.**
//!   Whoever can write a directory can rename root's entry away and put their own in its
//!   place between this check and the `exec`. With the sticky bit (`/tmp`, 1777) they can
//!   remove only their own entries, and every entry on the way is root's: accepted.
//! - **The file itself is not writable by group or others.**
//!
//! The whole path is checked, not only the `PATH` directory: `/opt/tools/bin` is another
//! user's if they own `/opt/tools`. It costs a few `lstat`s per program started, against a
//! `fork` and `exec`. ACLs and capabilities are not looked at: mode bits and owners only.
//!
//! A candidate that fails is skipped and the search goes on in the next directory, as if
//! it were not there. Each directory skipped is named (`tracing::warn!`), with the entry
//! and the reason, never a file's content; the warning carries the field `once` (the
//! directory), by which the log of a run says it once. Non-root
//! processes search as before: the rule applies only when the effective uid is 0.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

/// The most symbolic links followed in one candidate's path (the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Group- and other-write permission bits.
const WRITABLE_BY_OTHERS: u32 = 0o022;
/// The sticky bit: only an entry's owner (or the directory's, or root) may remove it.
const STICKY: u32 = 0o1000;

/// Whether this process runs as root (effective uid 0), where [`check`] applies.
pub(crate) fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Why root does not run a candidate found on `PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Untrusted {
    /// The entry on the way that fails the rule (the candidate, a directory or a link).
    pub(crate) entry: PathBuf,
    /// What is wrong with it.
    pub(crate) why: Why,
}

/// What is wrong with an entry on a candidate's way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// Owned by another user.
    Owner(u32),
    /// A directory writable by group or others, without the sticky bit.
    WritableDir,
    /// The file writable by group or others.
    WritableFile,
    /// More than [`MAX_LINKS`] symbolic links.
    TooManyLinks,
    /// `lstat` or `readlink` failed.
    Uninspectable(std::io::ErrorKind),
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entry = self.entry.display();
        match &self.why {
            Why::Owner(uid) => write!(f, "{entry} is owned by uid {uid}, not root"),
            Why::WritableDir => write!(
                f,
                "{entry} is writable by group or others without the sticky bit"
            ),
            Why::WritableFile => write!(f, "{entry} is writable by group or others"),
            Why::TooManyLinks => write!(f, "{entry} goes through more than {MAX_LINKS} links"),
            Why::Uninspectable(kind) => write!(f, "{entry} cannot be inspected ({kind})"),
        }
    }
}

/// Check the absolute path `candidate` under the module's rule: every entry the kernel
/// passes to reach it (links followed as it follows them) owned by root, no directory on
/// the way writable by group or others unless sticky, the file not writable by them.
pub(crate) fn check(candidate: &Path) -> Result<(), Untrusted> {
    let root = Path::new("/");
    check_mode(root, owned_by_root(root)?.mode(), true)?;
    let mut todo: VecDeque<OsString> = VecDeque::new();
    push_front(&mut todo, candidate);
    let mut at = root.to_path_buf();
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        if part == ".." {
            // `at` holds no link, so its parent is the directory `..` names (checked).
            at.pop();
            continue;
        }
        let next = at.join(&part);
        let meta = owned_by_root(&next)?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(Untrusted {
                    entry: candidate.to_owned(),
                    why: Why::TooManyLinks,
                });
            }
            let target = std::fs::read_link(&next).map_err(|e| Untrusted {
                entry: next.clone(),
                why: Why::Uninspectable(e.kind()),
            })?;
            if target.is_absolute() {
                at = root.to_path_buf();
            }
            push_front(&mut todo, &target);
            continue;
        }
        check_mode(&next, meta.mode(), meta.is_dir())?;
        at = next;
    }
    Ok(())
}

/// The entry `path` (a link not followed), if root owns it.
fn owned_by_root(path: &Path) -> Result<std::fs::Metadata, Untrusted> {
    let fail = |why| Untrusted {
        entry: path.to_owned(),
        why,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| fail(Why::Uninspectable(e.kind())))?;
    if meta.uid() != 0 {
        return Err(fail(Why::Owner(meta.uid())));
    }
    Ok(meta)
}

/// A directory writable by group or others is accepted only with the sticky bit; a file
/// not at all.
fn check_mode(path: &Path, mode: u32, is_dir: bool) -> Result<(), Untrusted> {
    let why = if mode & WRITABLE_BY_OTHERS == 0 {
        return Ok(());
    } else if !is_dir {
        Why::WritableFile
    } else if mode & STICKY == 0 {
        Why::WritableDir
    } else {
        return Ok(());
    };
    Err(Untrusted {
        entry: path.to_owned(),
        why,
    })
}

/// Put `path`'s components (`..` kept, `.` and `/` left out) in front of `todo`, in order.
fn push_front(todo: &mut VecDeque<OsString>, path: &Path) {
    for part in path.components().rev() {
        match part {
            Component::Normal(p) => todo.push_front(p.to_owned()),
            Component::ParentDir => todo.push_front(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}

/// Say that `dir` was skipped and why; the run's log says it once per directory (the
/// `once` field: the binary's log drops an event whose `once` it has said in this run).
pub(crate) fn warn_skipped(dir: &Path, name: &str, untrusted: &Untrusted) {
    tracing::warn!(
        once = %format_args!("PATH {}", dir.display()),
        "PATH directory {} is skipped: tstore runs as root and {untrusted}, so another \
         user could change the {name} found there (make the way to it root's alone, or \
         take the directory out of root's PATH)",
        dir.display()
    );
}
