//! Trees: the sorted list of a package's files and symlinks, addressed by the BLAKE3 of a
//! canonical encoding.
//!
//! Directories are implied by the paths of their contents and are not entries (empty
//! directories are not kept; `h1:` ignores them too). The canonical encoding (version 1) is
//!
//! ```text
//! tstore-tree-v1\n
//! f <blob hex> <len>:<path>\n           regular file
//! x <blob hex> <len>:<path>\n           executable regular file
//! l <len>:<target> <len>:<path>\n       symbolic link
//! ```
//!
//! with entries sorted bytewise by path and lengths in decimal bytes, so any path or link target
//! round-trips unambiguously. Two ingests of the same content, in any order, produce the same
//! bytes and so the same [`TreeId`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::str::FromStr;

use crate::blob::{parse_hex32, BlobId};
use crate::error::HostileReason;
use crate::hash::{h1_of_files, Hash};
use crate::ids::TreeId;
use crate::{Result, StoreError};

impl FromStr for TreeId {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self> {
        parse_hex32(s)
            .map(TreeId)
            .ok_or_else(|| StoreError::InvalidId {
                what: "tree",
                input: s.to_owned(),
            })
    }
}

/// What a tree entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File {
        /// Its content.
        blob: BlobId,
        /// Whether it is materialized executable (0555) rather than 0444.
        exec: bool,
    },
    /// A symbolic link (relative, staying inside the package: checked at ingest).
    Symlink {
        /// The link target as stored.
        target: String,
    },
}

/// One entry: a `/`-separated path relative to the package root, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    /// Relative path, `/`-separated, no `.`/`..`/empty components.
    pub path: String,
    /// File or symlink.
    pub kind: EntryKind,
}

/// A validated, sorted list of entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    entries: Vec<TreeEntry>,
}

/// Why a tree cannot be built: which entry, and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreeError {
    pub(crate) entry: String,
    pub(crate) reason: HostileReason,
}

const MAGIC: &[u8] = b"tstore-tree-v1\n";

/// Where a symlink leads, resolved through the tree itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A regular file (index into the entries).
    File(usize),
    /// A directory (possibly the root).
    Dir,
    /// Nothing there.
    Dangling,
    /// Absolute, or `..` beyond the package root at some point.
    Escapes,
    /// Too many symlink hops.
    Loop,
}

/// Check a relative path: non-empty components, none `.`/`..`, no NUL/newline, no leading `/`.
pub(crate) fn check_rel_path(path: &str) -> std::result::Result<(), HostileReason> {
    if path.is_empty() || path.contains('\0') || path.contains('\n') {
        return Err(HostileReason::InvalidName);
    }
    if path.starts_with('/') {
        return Err(HostileReason::AbsolutePath);
    }
    for c in path.split('/') {
        match c {
            ".." => return Err(HostileReason::ParentDir),
            "" | "." => return Err(HostileReason::InvalidName),
            _ => {}
        }
    }
    Ok(())
}

impl Tree {
    /// Build a tree: validate every path, sort, and reject duplicates and file/directory clashes
    /// (`a` a file while `a/b` exists).
    pub(crate) fn new(mut entries: Vec<TreeEntry>) -> std::result::Result<Tree, TreeError> {
        for e in &entries {
            check_rel_path(&e.path).map_err(|reason| TreeError {
                entry: e.path.clone(),
                reason,
            })?;
        }
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        let mut seen = HashSet::new();
        for e in &entries {
            if !seen.insert(e.path.as_str()) {
                return Err(TreeError {
                    entry: e.path.clone(),
                    reason: HostileReason::Duplicate,
                });
            }
        }
        for e in &entries {
            for (i, _) in e.path.match_indices('/') {
                if seen.contains(&e.path[..i]) {
                    return Err(TreeError {
                        entry: e.path[..i].to_owned(),
                        reason: HostileReason::Duplicate,
                    });
                }
            }
        }
        Ok(Tree { entries })
    }

    /// The entries, sorted bytewise by path.
    pub fn entries(&self) -> &[TreeEntry] {
        &self.entries
    }

    /// The canonical encoding (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for e in &self.entries {
            match &e.kind {
                EntryKind::File { blob, exec } => {
                    out.extend_from_slice(if *exec { b"x " } else { b"f " });
                    out.extend_from_slice(blob.to_string().as_bytes());
                }
                EntryKind::Symlink { target } => {
                    out.extend_from_slice(format!("l {}:", target.len()).as_bytes());
                    out.extend_from_slice(target.as_bytes());
                }
            }
            out.extend_from_slice(format!(" {}:", e.path.len()).as_bytes());
            out.extend_from_slice(e.path.as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// The tree's id: BLAKE3 of [`Tree::encode`].
    pub fn id(&self) -> TreeId {
        TreeId(*blake3::hash(&self.encode()).as_bytes())
    }

    /// Parse a canonical encoding (from the index).
    pub fn decode(bytes: &[u8]) -> Result<Tree> {
        let bad = |why: &str| StoreError::CorruptIndex {
            what: format!("tree encoding: {why}"),
        };
        let mut rest = bytes.strip_prefix(MAGIC).ok_or_else(|| bad("bad header"))?;
        fn take_len_str(rest: &mut &[u8]) -> Option<String> {
            let colon = rest.iter().position(|&b| b == b':')?;
            let len: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
            let s = rest.get(colon + 1..colon + 1 + len)?;
            let s = String::from_utf8(s.to_vec()).ok()?;
            *rest = &rest[colon + 1 + len..];
            Some(s)
        }
        let mut entries = Vec::new();
        while !rest.is_empty() {
            let tag = rest[0];
            rest = rest.get(2..).ok_or_else(|| bad("truncated entry"))?;
            let kind = match tag {
                b'f' | b'x' => {
                    let hex = rest.get(..64).ok_or_else(|| bad("truncated blob id"))?;
                    let blob = std::str::from_utf8(hex)
                        .ok()
                        .and_then(parse_hex32)
                        .ok_or_else(|| bad("bad blob id"))?;
                    rest = &rest[64..];
                    EntryKind::File {
                        blob: BlobId(blob),
                        exec: tag == b'x',
                    }
                }
                b'l' => EntryKind::Symlink {
                    target: take_len_str(&mut rest).ok_or_else(|| bad("bad link target"))?,
                },
                _ => return Err(bad("unknown entry kind")),
            };
            rest = rest
                .strip_prefix(b" ")
                .ok_or_else(|| bad("missing separator"))?;
            let path = take_len_str(&mut rest).ok_or_else(|| bad("bad path"))?;
            rest = rest
                .strip_prefix(b"\n")
                .ok_or_else(|| bad("missing newline"))?;
            entries.push(TreeEntry { path, kind });
        }
        let tree =
            Tree::new(entries).map_err(|e| bad(&format!("entry {:?}: {}", e.entry, e.reason)))?;
        if tree.encode() != bytes {
            return Err(bad("not canonical"));
        }
        Ok(tree)
    }

    /// Distinct blobs referenced by the tree.
    pub fn blobs(&self) -> Vec<BlobId> {
        let mut v: Vec<BlobId> = self
            .entries
            .iter()
            .filter_map(|e| match e.kind {
                EntryKind::File { blob, .. } => Some(blob),
                EntryKind::Symlink { .. } => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn lookup(&self, path: &str) -> Option<usize> {
        self.entries
            .binary_search_by(|e| e.path.as_bytes().cmp(path.as_bytes()))
            .ok()
    }

    fn is_dir(&self, path: &str) -> bool {
        // Entries are sorted bytewise, so everything under `path/` is one contiguous run.
        let prefix = format!("{path}/");
        let start = self
            .entries
            .partition_point(|e| e.path.as_bytes() < prefix.as_bytes());
        self.entries
            .get(start)
            .is_some_and(|e| e.path.starts_with(&prefix))
    }

    /// Resolve the symlink at `link_path` with target `target` through the tree, the way the
    /// kernel would once the tree is materialized (following nested symlinks, at most 40 hops).
    pub(crate) fn resolve(&self, link_path: &str, target: &str) -> Resolved {
        if target.is_empty() {
            return Resolved::Dangling;
        }
        if target.starts_with('/') {
            return Resolved::Escapes;
        }
        let mut stack: Vec<&str> = link_path.split('/').collect();
        stack.pop();
        let mut pending: VecDeque<&str> = target.split('/').collect();
        let mut hops = 0;
        while let Some(c) = pending.pop_front() {
            match c {
                "" | "." => {}
                ".." => {
                    if stack.pop().is_none() {
                        return Resolved::Escapes;
                    }
                }
                name => {
                    stack.push(name);
                    let cur = stack.join("/");
                    match self.lookup(&cur).map(|i| (i, &self.entries[i].kind)) {
                        Some((_, EntryKind::Symlink { target })) => {
                            hops += 1;
                            if hops > 40 {
                                return Resolved::Loop;
                            }
                            if target.starts_with('/') {
                                return Resolved::Escapes;
                            }
                            if target.is_empty() {
                                return Resolved::Dangling;
                            }
                            stack.pop();
                            for t in target.split('/').rev() {
                                pending.push_front(t);
                            }
                        }
                        Some((i, EntryKind::File { .. })) => {
                            return if pending.iter().all(|c| c.is_empty()) {
                                Resolved::File(i)
                            } else {
                                Resolved::Dangling
                            };
                        }
                        None if self.is_dir(&cur) => {}
                        None => return Resolved::Dangling,
                    }
                }
            }
        }
        Resolved::Dir
    }

    /// The first symlink that escapes the package root, if any (an error for ingest).
    pub(crate) fn escaping_symlink(&self) -> Option<(&str, &str)> {
        self.entries.iter().find_map(|e| match &e.kind {
            EntryKind::Symlink { target } if self.resolve(&e.path, target) == Resolved::Escapes => {
                Some((e.path.as_str(), target.as_str()))
            }
            _ => None,
        })
    }

    /// The directory-form `h1:` ([`crate::h1_of_files`]) from the recorded sha256 of each blob, without reading
    /// any file. A symlink is hashed as the content of the file it resolves to inside the tree.
    pub(crate) fn h1(&self, sha256_of: &HashMap<BlobId, [u8; 32]>) -> Result<Hash> {
        let missing = |blob: &BlobId| StoreError::CorruptIndex {
            what: format!("no sha256 recorded for blob {blob}"),
        };
        let mut files = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            let blob = match &e.kind {
                EntryKind::File { blob, .. } => blob,
                EntryKind::Symlink { target } => {
                    let reason = match self.resolve(&e.path, target) {
                        Resolved::File(i) => match &self.entries[i].kind {
                            EntryKind::File { blob, .. } => {
                                files.push((
                                    e.path.as_str(),
                                    *sha256_of.get(blob).ok_or_else(|| missing(blob))?,
                                ));
                                continue;
                            }
                            EntryKind::Symlink { .. } => unreachable!("resolve follows symlinks"),
                        },
                        Resolved::Dir => "is a symlink to a directory",
                        Resolved::Dangling => "is a dangling symlink",
                        Resolved::Escapes => "is a symlink leading outside the package",
                        Resolved::Loop => "is a symlink loop",
                    };
                    return Err(StoreError::Unhashable {
                        entry: e.path.clone(),
                        reason: format!("{reason} (target {target:?})"),
                    });
                }
            };
            files.push((
                e.path.as_str(),
                *sha256_of.get(blob).ok_or_else(|| missing(blob))?,
            ));
        }
        h1_of_files(&files).map_err(|e| StoreError::Unhashable {
            entry: e.0,
            reason: "contains a newline".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, content: &[u8], exec: bool) -> TreeEntry {
        TreeEntry {
            path: path.to_owned(),
            kind: EntryKind::File {
                blob: BlobId(*blake3::hash(content).as_bytes()),
                exec,
            },
        }
    }

    fn link(path: &str, target: &str) -> TreeEntry {
        TreeEntry {
            path: path.to_owned(),
            kind: EntryKind::Symlink {
                target: target.to_owned(),
            },
        }
    }

    #[test]
    fn encoding_is_order_independent_and_stable() {
        let a = file("terraform-provider-fake", b"hello\n", true);
        let b = file("sub/data.txt", b"world\n", false);
        let c = link("sub/l", "data.txt");
        let t1 = Tree::new(vec![a.clone(), b.clone(), c.clone()]).unwrap();
        let t2 = Tree::new(vec![c, b, a]).unwrap();
        assert_eq!(t1.encode(), t2.encode());
        assert_eq!(t1.id(), t2.id());
        // Pinned: changing the encoding changes every tree id in existing stores.
        assert_eq!(
            t1.id().to_string(),
            hex::encode(blake3::hash(&t1.encode()).as_bytes())
        );
        let text = String::from_utf8(t1.encode()).unwrap();
        assert!(text.starts_with("tstore-tree-v1\nf "), "{text}");
        assert!(
            text.contains(" 12:sub/data.txt\nl 8:data.txt 5:sub/l\nx "),
            "{text}"
        );
        assert_eq!(Tree::decode(&t1.encode()).unwrap(), t1);
        assert_eq!(t1.id().to_string().parse::<TreeId>().unwrap(), t1.id());
        // The exec bit is part of the tree.
        let t3 = Tree::new(vec![file("a", b"x", true)]).unwrap();
        let t4 = Tree::new(vec![file("a", b"x", false)]).unwrap();
        assert_ne!(t3.id(), t4.id());
    }

    #[test]
    fn rejects_duplicates_and_bad_paths() {
        assert!(Tree::new(vec![file("a", b"1", false), file("a", b"2", false)]).is_err());
        let e = Tree::new(vec![file("a", b"1", false), file("a/b", b"2", false)]).unwrap_err();
        assert_eq!(e.reason, HostileReason::Duplicate);
        assert_eq!(
            Tree::new(vec![file("a/../b", b"1", false)])
                .unwrap_err()
                .reason,
            HostileReason::ParentDir
        );
        assert_eq!(
            Tree::new(vec![file("/b", b"1", false)]).unwrap_err().reason,
            HostileReason::AbsolutePath
        );
    }

    #[test]
    fn resolves_symlinks_inside_the_tree() {
        let t = Tree::new(vec![
            file("bin/tool", b"x", true),
            link("tool", "bin/tool"),
            link("bin/up", ".."),
            link("d/l", ".."),
            link("m", "d/l/.."),
            link("abs", "/etc/passwd"),
            link("dangle", "nope"),
            link("loop", "loop"),
            link("via", "bin/up/bin/tool"),
        ])
        .unwrap();
        let tool = t.lookup("bin/tool").unwrap();
        assert_eq!(t.resolve("tool", "bin/tool"), Resolved::File(tool));
        assert_eq!(t.resolve("via", "bin/up/bin/tool"), Resolved::File(tool));
        assert_eq!(t.resolve("bin/up", ".."), Resolved::Dir);
        // Lexically "d/l/.." is "d", but d/l is the root, so ".." leaves the package.
        assert_eq!(t.resolve("m", "d/l/.."), Resolved::Escapes);
        assert_eq!(t.resolve("abs", "/etc/passwd"), Resolved::Escapes);
        assert_eq!(t.resolve("x", "../x"), Resolved::Escapes);
        assert_eq!(t.resolve("dangle", "nope"), Resolved::Dangling);
        assert_eq!(t.resolve("loop", "loop"), Resolved::Loop);
        assert!(t.escaping_symlink().is_some());
    }
}
