//! The links a working directory has into the store, which make it a *root* that keeps
//! those packages alive through `tstore gc`.

use std::path::Path;

use tstore_store::{package_of_view_relpath, RootLink};

use super::data_dir::DataDir;
use super::safe_fs::{Kind, RelPath, SafeDir};

/// The links of a working directory (its data directory `data_dir`) into the store: every
/// symlink at `DATA_DIR/providers/H/N/T/V/OS_ARCH` and `DATA_DIR/modules/KEY` whose target is
/// under the mount path or the store's views (`views`) and names a package.
///
/// Only links really inside the data directory count: it is walked as
/// [`safe_fs`](super::safe_fs) walks (no symlink followed, not even a symlinked data
/// directory, `providers` or `modules`), so a root never records links that live outside
/// its checkout. A link is read, never its target.
pub(crate) fn scan_links(data_dir: &DataDir, mount: &Path, views: &Path) -> Vec<RootLink> {
    let mut links = Vec::new();
    let Ok(Some(dir)) = data_dir.open(false) else {
        return links;
    };
    for (sub, depth) in [("providers", 5), ("modules", 1)] {
        let base = RelPath::new(sub).and_then(|r| dir.open_dir(&r));
        if let Ok(Some(base)) = base {
            collect(&base, depth, mount, views, &mut links);
        }
    }
    links
}

/// The store links in `dir` and, `depth` levels down, in its real subdirectories, sorted
/// by name, depth first.
fn collect(dir: &SafeDir, depth: usize, mount: &Path, views: &Path, out: &mut Vec<RootLink>) {
    let Ok(entries) = dir.entries() else {
        return;
    };
    for (name, kind) in entries {
        let Ok(rel) = RelPath::new(&name) else {
            continue;
        };
        match kind {
            Kind::Symlink => {
                let Ok(Some(target)) = dir.read_link(&rel) else {
                    continue;
                };
                let relpath = target
                    .strip_prefix(mount)
                    .or_else(|_| target.strip_prefix(views));
                if let Some(package) = relpath.ok().and_then(package_of_view_relpath) {
                    out.push(RootLink {
                        link: dir.path().join(&name),
                        target,
                        package,
                    });
                }
            }
            Kind::Dir if depth > 1 => {
                if let Ok(Some(sub)) = dir.open_dir(&rel) {
                    collect(&sub, depth - 1, mount, views, out);
                }
            }
            _ => {}
        }
    }
}
