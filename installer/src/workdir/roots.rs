//! The links a working directory has into the store, which make it a *root* that keeps
//! those packages alive through `tstore gc`.

use std::path::Path;

use tstore_store::{package_of_view_relpath, RootLink};

/// The links of a working directory (its data directory `data_dir`) into the store: every
/// symlink at `DATA_DIR/providers/H/N/T/V/OS_ARCH` and `DATA_DIR/modules/KEY` whose target is under
/// the mount path or the store's views (`views`) and names a package. Symlinks are never
/// followed: a link is read, not its target.
pub fn scan_links(data_dir: &Path, mount: &Path, views: &Path) -> Vec<RootLink> {
    let dot = data_dir;
    let mut links = Vec::new();
    for (sub, depth) in [("providers", 5), ("modules", 1)] {
        let base = dot.join(sub);
        if !base.is_dir() {
            continue;
        }
        for entry in walkdir::WalkDir::new(&base)
            .min_depth(1)
            .max_depth(depth)
            .sort_by_file_name()
            .into_iter()
            .filter_map(std::result::Result::ok)
            .filter(|e| e.path_is_symlink())
        {
            let Ok(target) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let rel = target
                .strip_prefix(mount)
                .or_else(|_| target.strip_prefix(views));
            if let Some(package) = rel.ok().and_then(package_of_view_relpath) {
                links.push(RootLink {
                    link: entry.into_path(),
                    target,
                    package,
                });
            }
        }
    }
    links
}
