//! Links from a working directory into the store's view.
//!
//! Every link is an absolute symlink whose target is a path under `TSTORE_MOUNT`
//! (default `~/.tofu-store`), never a path inside `TSTORE_HOME`: the mount path is the
//! one string that stays valid whether the store is served by FUSE or by on-disk views,
//! so switching between the two never rewrites a working directory.
//!
//! Links are replaced atomically (a new symlink under a temporary name, renamed over
//! the old entry), so a concurrent reader sees the old or the new link, never nothing.

use std::path::{Path, PathBuf};

use super::safe_fs::{Kind, RelPath, SafeDir, SafeFsError};

/// Why a link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// tstore refused: the link would be made through a symlinked directory, or its path is
    /// not plain. The message names what to remove.
    #[error(transparent)]
    Refused(SafeFsError),
    /// A filesystem operation on the link path failed.
    #[error("cannot link {} -> {}", .link.display(), .target.display())]
    Io {
        /// The link being written.
        link: PathBuf,
        /// What it should point at.
        target: PathBuf,
        /// The underlying error.
        #[source]
        source: SafeFsError,
    },
}

impl LinkError {
    /// `source` as a refusal (its message names what to remove) or as a failure to make
    /// `link` -> `target`.
    pub fn new(source: SafeFsError, link: PathBuf, target: &Path) -> LinkError {
        if source.is_refusal() {
            LinkError::Refused(source)
        } else {
            LinkError::Io {
                link,
                target: target.to_owned(),
                source,
            }
        }
    }
}

/// What [`ensure_symlink`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkOutcome {
    /// The link already pointed at the target.
    Unchanged,
    /// Nothing was there; the link was created.
    Created,
    /// Something else was there (another link, a copied directory); it was replaced.
    Replaced,
}

/// Make `link` (below `dir`, the data directory) a symlink to `target`, replacing whatever
/// is there. No directory between `dir` and `link` may be a symlink (refused, see
/// [`safe_fs`](super::safe_fs)).
///
/// What may be replaced: the entry at `link` itself, which is the slot this install fills
/// (terraform replaces it too). A link there is replaced as a link (its target untouched);
/// a directory there (left by `terraform init`, or a private copy) is moved aside and
/// removed without following anything in it.
pub(crate) fn ensure_symlink(
    dir: &SafeDir,
    link: &RelPath,
    target: &Path,
) -> Result<LinkOutcome, LinkError> {
    let err = |source: SafeFsError| LinkError::new(source, dir.display_path(link), target);
    let parent = match link.parent() {
        Some(p) => Some(dir.create_dir_all(&p).map_err(err)?),
        None => None,
    };
    let parent = parent.as_ref().unwrap_or(dir);
    let name = RelPath::new(link.file_name()).map_err(err)?;
    let mut existing = parent.kind(&name).map_err(err)?;
    // Nothing there (a new checkout): the link is made under its own name. Anything there,
    // or put there since, is replaced through a temporary name and a rename.
    if existing.is_none() {
        if parent
            .symlink_if_absent(name.file_name(), target)
            .map_err(err)?
        {
            return Ok(LinkOutcome::Created);
        }
        existing = parent.kind(&name).map_err(err)?;
    }
    if existing == Some(Kind::Symlink)
        && parent.read_link(&name).map_err(err)?.as_deref() == Some(target)
    {
        return Ok(LinkOutcome::Unchanged);
    }
    let temp = parent
        .fresh_symlink(name.file_name(), target)
        .map_err(err)?;
    let temp = RelPath::new(&temp).map_err(err)?;
    // A directory cannot be renamed over: move it aside first, removed once the new link
    // is in place.
    let aside = match existing {
        Some(Kind::Dir) => match parent.rename_aside(name.file_name()) {
            Ok(a) => Some(RelPath::new(&a).map_err(err)?),
            Err(e) => {
                let _ = parent.remove(&temp);
                return Err(err(e));
            }
        },
        _ => None,
    };
    if let Err(e) = parent.rename(&temp, &name) {
        let _ = parent.remove(&temp);
        return Err(err(e));
    }
    if let Some(aside) = aside {
        parent.remove(&aside).map_err(err)?;
    }
    Ok(match existing {
        None => LinkOutcome::Created,
        Some(_) => LinkOutcome::Replaced,
    })
}

/// Where the files of an installed module directory (`installed`: a path `modules.json`
/// names, `MODULES/KEY` or under it) can be read without the mount: when `MODULES/KEY` is
/// a link into `MOUNT/modules/ID`, the store's view of package `ID`, which holds the same
/// files the mount serves. `None` (read `installed` itself) for anything else: a private
/// copy, a link elsewhere, a path that is not plain, a view the store lacks.
pub(crate) fn module_view_behind(
    store: &tstore_store::Store,
    modules: &Path,
    mount: &Path,
    installed: &Path,
) -> Option<PathBuf> {
    use std::path::Component;
    let plain = |p: &Path| p.components().all(|c| matches!(c, Component::Normal(_)));
    let rest = installed.strip_prefix(modules).ok()?;
    let mut parts = rest.components();
    let Some(Component::Normal(key)) = parts.next() else {
        return None;
    };
    let below = parts.as_path();
    let target = std::fs::read_link(modules.join(key)).ok()?;
    let id = target.strip_prefix(mount.join("modules")).ok()?;
    if !plain(id) || id.components().count() != 1 || !plain(below) {
        return None;
    }
    let view = store
        .view_dir(&tstore_store::PackageKey::module(id.to_str()?))
        .ok()?;
    let dir = view.join(below);
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> RelPath {
        RelPath::new(s).unwrap()
    }

    #[test]
    fn a_module_linked_into_the_mount_is_read_from_its_view() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tstore_store::Store::open(&tmp.path().join("store")).unwrap();
        let mount = tmp.path().join("mount");
        let modules = tmp.path().join("work/.terraform/modules");
        std::fs::create_dir_all(&modules).unwrap();
        let id = "git-0123456789ab-net-0123456789abcdef0123";
        let view = store
            .view_dir(&tstore_store::PackageKey::module(id))
            .unwrap();
        std::fs::create_dir_all(view.join("sub")).unwrap();
        let link = |key: &str, target: &Path| std::os::unix::fs::symlink(target, modules.join(key));
        link("net", &mount.join("modules").join(id)).unwrap();
        link("elsewhere", &tmp.path().join("other")).unwrap();
        link("up", &mount.join("modules/../modules").join(id)).unwrap();
        link("missing", &mount.join("modules/git-none")).unwrap();
        std::fs::create_dir_all(modules.join("copy")).unwrap();
        let behind = |p: &str| module_view_behind(&store, &modules, &mount, &modules.join(p));
        assert_eq!(behind("net"), Some(view.clone()));
        assert_eq!(behind("net/sub"), Some(view.join("sub")));
        // Anything else is read where it is.
        for other in [
            "net/absent",
            "net/../copy",
            "elsewhere",
            "up",
            "missing",
            "copy",
        ] {
            assert_eq!(behind(other), None, "{other}");
        }
        assert_eq!(
            module_view_behind(&store, &modules, &mount, &tmp.path().join("work/x")),
            None
        );
    }

    #[test]
    fn creates_keeps_and_replaces_links() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SafeDir::open_trusted(tmp.path()).unwrap();
        let link = rel("a/b/link");
        let t1 = tmp.path().join("t1");
        let t2 = tmp.path().join("t2");
        assert_eq!(
            ensure_symlink(&dir, &link, &t1).unwrap(),
            LinkOutcome::Created
        );
        assert_eq!(
            ensure_symlink(&dir, &link, &t1).unwrap(),
            LinkOutcome::Unchanged
        );
        assert_eq!(
            ensure_symlink(&dir, &link, &t2).unwrap(),
            LinkOutcome::Replaced
        );
        assert_eq!(std::fs::read_link(tmp.path().join("a/b/link")).unwrap(), t2);
    }

    #[test]
    fn replaces_a_real_directory_without_following_links_in_it() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let victim = tmp.path().join("victim");
        std::fs::create_dir_all(victim.join("inner")).unwrap();
        std::fs::write(victim.join("inner/file"), "keep").unwrap();
        let before = tstore_test_support::snapshot(&victim);
        let entry = work.join("linux_amd64");
        std::fs::create_dir_all(entry.join("sub")).unwrap();
        std::fs::write(entry.join("sub/file"), "x").unwrap();
        std::os::unix::fs::symlink(&victim, entry.join("sub/out")).unwrap();
        let dir = SafeDir::open_trusted(&work).unwrap();
        let target = tmp.path().join("target");
        assert_eq!(
            ensure_symlink(&dir, &rel("linux_amd64"), &target).unwrap(),
            LinkOutcome::Replaced
        );
        assert_eq!(std::fs::read_link(&entry).unwrap(), target);
        let leftovers: Vec<_> = std::fs::read_dir(&work).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp entries left behind");
        assert_eq!(tstore_test_support::snapshot(&victim), before);
    }

    #[test]
    fn refuses_a_symlinked_parent_and_leaves_its_target_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let victim = tmp.path().join("victim");
        std::fs::create_dir_all(victim.join("linux_amd64")).unwrap();
        std::fs::create_dir_all(work.join("providers/h/n/t")).unwrap();
        std::os::unix::fs::symlink(&victim, work.join("providers/h/n/t/1.0.0")).unwrap();
        let before = tstore_test_support::snapshot(&victim);
        let dir = SafeDir::open_trusted(&work).unwrap();
        let err = ensure_symlink(
            &dir,
            &rel("providers/h/n/t/1.0.0/linux_amd64"),
            Path::new("/mount/x"),
        )
        .unwrap_err();
        assert!(matches!(err, LinkError::Refused(_)), "{err}");
        assert!(err.to_string().contains("1.0.0 is a symlink"), "{err}");
        assert_eq!(tstore_test_support::snapshot(&victim), before);
    }
}
