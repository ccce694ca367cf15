//! The index directories (the root, `providers/`, `modules/` and every level above a package
//! root), built from the package list: [`rebuild`] from all of it, [`apply`] from the changes
//! since the last look, so that a new package costs the daemon its own path, not a walk over
//! the whole store.
//!
//! Either way an index-level name keeps its inode number for the life of the mount
//! (`State::known`), and a package root keeps its contents only while its tree is the same.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Component;

use tstore_store::{PackageChange, PackageKey, TreeId};

use super::{Node, State, ROOT};

/// The top-level index directories, always present.
const TOP: [&str; 2] = ["providers", "modules"];

/// Replace every index directory's children with those the package list gives.
pub(super) fn rebuild(state: &mut State, packages: &[(PackageKey, TreeId)]) {
    let mut fresh: BTreeMap<u64, BTreeMap<OsString, u64>> = BTreeMap::new();
    fresh.insert(ROOT, BTreeMap::new());
    for top in TOP {
        let ino = child(state, ROOT, OsStr::new(top), None);
        fresh.entry(ROOT).or_default().insert(top.into(), ino);
        fresh.entry(ino).or_default();
    }
    for (key, tree) in packages {
        let Some((dirs, last)) = view_parts(key) else {
            continue;
        };
        let mut parent = ROOT;
        for dir in &dirs {
            let ino = child(state, parent, dir, None);
            fresh.entry(parent).or_default().insert(dir.clone(), ino);
            fresh.entry(ino).or_default();
            parent = ino;
        }
        let ino = child(state, parent, &last, Some(*tree));
        fresh.entry(parent).or_default().insert(last, ino);
    }
    for (ino, children) in fresh {
        if let Some(Node::IndexDir { children: c }) = state.nodes.get_mut(ino as usize - 1) {
            *c = children;
        }
    }
}

/// Apply changes to the package list, in order: a package with a tree is added (or
/// re-pointed), one without is removed, and index directories left empty go with it. Applying
/// a change already reflected changes nothing.
pub(super) fn apply(state: &mut State, changes: &[PackageChange]) {
    for (key, tree) in changes {
        let Some((dirs, last)) = view_parts(key) else {
            continue;
        };
        match tree {
            Some(tree) => {
                let mut parent = ROOT;
                for dir in &dirs {
                    let ino = child(state, parent, dir, None);
                    link(state, parent, dir, ino);
                    parent = ino;
                }
                let ino = child(state, parent, &last, Some(*tree));
                link(state, parent, &last, ino);
            }
            None => remove(state, &dirs, &last),
        }
    }
}

/// Remove package root `last` under `dirs`, then every directory of `dirs` it leaves empty
/// (never a top-level one).
fn remove(state: &mut State, dirs: &[OsString], last: &OsStr) {
    let mut path = vec![ROOT];
    for dir in dirs {
        let parent = *path.last().expect("the root is on the path");
        match children(state, parent).and_then(|c| c.get(dir.as_os_str())) {
            Some(&ino) => path.push(ino),
            None => return,
        }
    }
    let mut name = last.to_os_string();
    for depth in (0..path.len()).rev() {
        let parent = path[depth];
        if let Some(Node::IndexDir { children }) = state.nodes.get_mut(parent as usize - 1) {
            children.remove(&name);
            if !children.is_empty() || depth <= 1 {
                return;
            }
        }
        if depth == 0 {
            return;
        }
        name = dirs[depth - 1].clone();
    }
}

/// `parent`'s children, if it is an index directory.
fn children(state: &State, parent: u64) -> Option<&BTreeMap<OsString, u64>> {
    match state.node(parent) {
        Some(Node::IndexDir { children }) => Some(children),
        _ => None,
    }
}

/// Make `ino` the child `name` of index directory `parent`.
fn link(state: &mut State, parent: u64, name: &OsStr, ino: u64) {
    if let Some(Node::IndexDir { children }) = state.nodes.get_mut(parent as usize - 1) {
        children.insert(name.to_os_string(), ino);
    }
}

/// The inode of index-level child `name` of `parent`: the known one if it is still the same
/// kind of node (a package root with the same tree), else a new one. `tree` is set for a
/// package root.
fn child(state: &mut State, parent: u64, name: &OsStr, tree: Option<TreeId>) -> u64 {
    let key = (parent, name.to_os_string());
    let existing = state.known.get(&key).copied().filter(|&ino| {
        match (state.node(ino), tree) {
            (Some(Node::IndexDir { .. }), None) => true,
            // The same package root keeps its contents only if its tree is the same.
            (Some(Node::Package { tree: t }), Some(want)) => *t == want,
            (Some(Node::Dir { .. }), Some(_)) => state.known_trees.get(&ino) == tree.as_ref(),
            _ => false,
        }
    });
    existing.unwrap_or_else(|| {
        let ino = match tree {
            None => state.push(Node::IndexDir {
                children: BTreeMap::new(),
            }),
            Some(tree) => state.push(Node::Package { tree }),
        };
        if let Some(tree) = tree {
            state.known_trees.insert(ino, tree);
        }
        state.known.insert(key, ino);
        ino
    })
}

/// The index directories above a package's root and the root's own name, from its view path
/// (`providers/HOST/NS/TYPE/VERSION` and `OS_ARCH`, or `modules` and the id).
fn view_parts(key: &PackageKey) -> Option<(Vec<OsString>, OsString)> {
    let rel = key.view_relpath().ok()?;
    let mut parts: Vec<OsString> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            _ => None,
        })
        .collect();
    let last = parts.pop()?;
    Some((parts, last))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn state() -> State {
        let mut state = State {
            nodes: Vec::new(),
            known: HashMap::new(),
            known_trees: HashMap::new(),
            generation: None,
            package_generation: None,
        };
        state.push(Node::IndexDir {
            children: BTreeMap::new(),
        });
        state
    }

    fn tree(n: u8) -> TreeId {
        format!("{n:02x}").repeat(32).parse().unwrap()
    }

    fn provider(name: &str, version: &str) -> PackageKey {
        PackageKey::provider(format!("example.test/ns/{name}"), version, "linux_amd64")
    }

    /// The inode at `path` (names from the root), if listed.
    fn lookup(state: &State, path: &str) -> Option<u64> {
        path.split('/').try_fold(ROOT, |ino, name| {
            children(state, ino).and_then(|c| c.get(OsStr::new(name)).copied())
        })
    }

    #[test]
    fn applied_changes_match_a_rebuild_and_keep_inode_numbers() {
        let (a, b) = (provider("a", "1.0.0"), provider("b", "2.0.0"));
        let mut incremental = state();
        rebuild(&mut incremental, &[(a.clone(), tree(1))]);
        let a_root = lookup(
            &incremental,
            "providers/example.test/ns/a/1.0.0/linux_amd64",
        )
        .unwrap();
        apply(&mut incremental, &[(b.clone(), Some(tree(2)))]);
        assert!(lookup(
            &incremental,
            "providers/example.test/ns/b/2.0.0/linux_amd64"
        )
        .is_some());
        // Removing a takes its now empty directories with it, up to the shared namespace.
        apply(&mut incremental, &[(a.clone(), None)]);
        assert_eq!(lookup(&incremental, "providers/example.test/ns/a"), None);
        assert!(lookup(&incremental, "providers/example.test/ns").is_some());
        // The same as listing everything anew.
        let mut rebuilt = state();
        rebuild(&mut rebuilt, &[(b.clone(), tree(2))]);
        let listing = |s: &State, path: &str| {
            children(s, lookup(s, path).unwrap())
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        for path in [
            "providers",
            "providers/example.test/ns",
            "providers/example.test/ns/b/2.0.0",
        ] {
            assert_eq!(
                listing(&incremental, path),
                listing(&rebuilt, path),
                "{path}"
            );
        }
        // Removing the last package leaves the top-level directories.
        apply(&mut incremental, &[(b.clone(), None), (b.clone(), None)]);
        assert!(listing(&incremental, "providers").is_empty());
        assert_eq!(listing(&incremental, "modules").len(), 0);
        // Back with the same tree: the same inode; with another tree: a new one.
        apply(&mut incremental, &[(a.clone(), Some(tree(1)))]);
        assert_eq!(
            lookup(
                &incremental,
                "providers/example.test/ns/a/1.0.0/linux_amd64"
            ),
            Some(a_root)
        );
        apply(&mut incremental, &[(a, Some(tree(3)))]);
        assert_ne!(
            lookup(
                &incremental,
                "providers/example.test/ns/a/1.0.0/linux_amd64"
            ),
            Some(a_root)
        );
    }
}
