//! [`Store::verify`]: re-read everything the index vouches for, believing none of the
//! hashes it recorded. Every blob file is re-hashed (BLAKE3 against its name, and SHA-256,
//! what `h1:` is made of), every blob a tree needs must have its file, every tree row must
//! hash to its id and record the `h1:` its files have, every package must record as
//! verified the `h1:` its files have, every kept archive must have the `zh:` it is filed
//! under, and every package's view must match its tree. Nothing is changed here:
//! [`Store::repair`] (repair.rs) acts on the report, and init removes a damaged package it
//! meets via [`Store::reverify_package`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use crate::blob::{exists, BlobId};
use crate::hash::Hash;
use crate::ids::PackageKey;
use crate::ids::TreeId;
use crate::index::query_vec;
use crate::tree::Tree;
use crate::view::check_view;
use crate::{Result, Store};

/// A blob file whose content does not match its name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CorruptBlob {
    /// The blob (from the file name).
    pub blob: BlobId,
    /// The file.
    pub path: PathBuf,
}

/// A blob a tree needs whose file is missing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MissingBlob {
    /// The blob.
    pub blob: BlobId,
    /// A tree that references it.
    pub referenced_by: TreeId,
}

/// A package whose view does not match its tree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BadView {
    /// The package.
    pub package: PackageKey,
    /// Its view directory.
    pub path: PathBuf,
    /// What is wrong, one line each.
    pub problems: Vec<String>,
}

/// An index record that the bytes it describes do not bear out: the index claims something
/// its files contradict (a tampered or restored index, or a bug).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BadClaim {
    /// A tree row: its encoding does not hash to its id, cannot be read, or its memoized
    /// `h1:` is not the one its files have. Every package of the tree is quarantined and the
    /// row goes (a later ingest of the same content would believe it).
    Tree {
        /// The tree row's id, as recorded.
        tree: String,
        /// What is wrong.
        problem: String,
    },
    /// A package records as verified locally an `h1:` that its files do not have (and not
    /// the one they have): it is quarantined.
    Package {
        /// The package.
        package: PackageKey,
        /// What is wrong.
        problem: String,
    },
    /// A kept archive's blob does not hash to the `zh:` it is filed under: the packages of
    /// its tree are quarantined.
    Archive {
        /// The `zh:` it is filed under.
        zh: String,
        /// The tree it is kept for.
        tree: String,
        /// What is wrong.
        problem: String,
    },
    /// A blob row records another SHA-256 than its file has: repair writes the right one.
    Blob {
        /// The blob.
        blob: BlobId,
        /// The SHA-256 recorded (hex).
        recorded: String,
        /// The SHA-256 of the file (hex).
        actual: String,
    },
}

impl BadClaim {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            BadClaim::Tree { tree, problem } => format!("tree {tree}: {problem}"),
            BadClaim::Package { package, problem } => format!("{package}: {problem}"),
            BadClaim::Archive { zh, problem, .. } => format!("kept archive {zh}: {problem}"),
            BadClaim::Blob {
                blob,
                recorded,
                actual,
            } => {
                format!("blob {blob}: the index records SHA-256 {recorded}, its file has {actual}")
            }
        }
    }
}

/// Result of [`Store::verify`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Blob files re-hashed.
    pub blobs_checked: u64,
    /// Bytes read to do so (and to check copied view files).
    pub bytes_checked: u64,
    /// Blob files with the wrong content.
    pub corrupt: Vec<CorruptBlob>,
    /// Blobs referenced by trees but absent.
    pub missing: Vec<MissingBlob>,
    /// Views that do not match their package.
    pub views_bad: Vec<BadView>,
    /// Index records that the bytes contradict.
    pub claims_bad: Vec<BadClaim>,
    /// Whether this machine's tstore wrote the index as it is (see trust.rs); `false` for a
    /// restored cache, a copy or a store of an older tstore, whose packages are re-hashed
    /// before they are used (adoption).
    pub trusted: bool,
    /// The directory `h1:` each tree row's files have, recomputed from their bytes (`None`:
    /// a tree whose files cannot give one: a blob missing or damaged, symlinks that cannot be
    /// hashed); for adoption, which records it in place of what the index claimed.
    #[serde(skip)]
    pub(crate) tree_h1: BTreeMap<String, Option<Hash>>,
}

impl VerifyReport {
    /// Nothing wrong found.
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty()
            && self.missing.is_empty()
            && self.views_bad.is_empty()
            && self.claims_bad.is_empty()
    }
}

/// The rows whose claims [`Store::verify`] checks.
struct Claims {
    /// `(id, encoding, h1)` of every tree row.
    trees: Vec<(String, Vec<u8>, String)>,
    /// `(id, sha256)` of every blob row.
    blobs: Vec<(String, Vec<u8>)>,
    /// `(zh, tree, blob)` of every kept archive.
    archives: Vec<(String, String, String)>,
    /// Every package with its tree and the `h1:` hashes it records as verified locally.
    packages: Vec<(PackageKey, String, Vec<String>)>,
}

impl Store {
    /// Re-hash every blob file (BLAKE3 against its name, and SHA-256), check that every
    /// tree's blobs exist, that every record of the index agrees with the bytes (tree ids and
    /// `h1:` memos, the `h1:` each package records as verified, kept archives' `zh:`, blob
    /// rows' SHA-256), and that every package's view matches its tree. Bytes read count into
    /// [`Store::bytes_hashed`].
    pub fn verify(&self) -> Result<VerifyReport> {
        let before = self.bytes_hashed();
        let (blobs_checked, corrupt, sha_of) = self.hash_blob_files()?;
        let (tree_blobs, packages, claims) = {
            let index = self.index();
            let err = || index.err("verifying");
            let rows = query_vec(
                &index.conn,
                "SELECT tree, blob FROM tree_blobs ORDER BY tree, blob",
                [],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
            )
            .map_err(err())?;
            let packages = query_vec(
                &index.conn,
                "SELECT p.kind, p.name, p.version, p.platform, p.tree FROM packages p",
                [],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .map_err(err())?;
            let claims = read_claims(&index.conn).map_err(err())?;
            (rows, packages, claims)
        };
        let missing = self.missing_blobs(tree_blobs)?;
        let (claims_bad, trees, tree_h1) = check_claims(claims, &sha_of);
        let mut views_bad = Vec::new();
        for (kind, name, version, platform, tree) in packages {
            let key = PackageKey::from_columns(&kind, name, version, platform)?;
            // A tree row that cannot be read is a bad claim already; its packages go with it.
            let Some(tree) = trees.get(&tree) else {
                continue;
            };
            if let Some(bad) = self.bad_view(key, tree)? {
                views_bad.push(bad);
            }
        }
        views_bad.sort_by(|a, b| a.package.cmp(&b.package));
        Ok(VerifyReport {
            blobs_checked,
            bytes_checked: self.bytes_hashed() - before,
            corrupt,
            missing,
            views_bad,
            claims_bad,
            trusted: self.is_trusted()?,
            tree_h1,
        })
    }

    /// Re-hash every file of `blobs-v1/` named like a blob (primary or twin) against that
    /// name, in name order: how many were checked, those whose content differs, and the
    /// SHA-256 of every intact primary file. Files not named like a blob are not the
    /// store's and are skipped.
    #[allow(clippy::type_complexity)]
    fn hash_blob_files(&self) -> Result<(u64, Vec<CorruptBlob>, HashMap<BlobId, [u8; 32]>)> {
        let mut checked = 0;
        let mut corrupt = Vec::new();
        let mut sha_of = HashMap::new();
        for file in self.layout.blob_files() {
            let file = file?;
            checked += 1;
            let (actual, sha) = file.hash(&self.bytes_hashed)?;
            if !file.holds(&actual) {
                corrupt.push(CorruptBlob {
                    blob: file.blob,
                    path: file.entry.into_path(),
                });
            } else if let Some(sha) = sha {
                sha_of.insert(file.blob, sha);
            }
        }
        Ok((checked, corrupt, sha_of))
    }

    /// The `(tree, blob)` rows whose blob has no primary file.
    fn missing_blobs(&self, tree_blobs: Vec<(String, String)>) -> Result<Vec<MissingBlob>> {
        let mut missing = Vec::new();
        for (tree, blob) in tree_blobs {
            let blob: BlobId = blob.parse()?;
            if !exists(&self.layout.blob_path(&blob))? {
                missing.push(MissingBlob {
                    blob,
                    referenced_by: tree.parse()?,
                });
            }
        }
        Ok(missing)
    }

    /// The view of package `key` checked against its tree; `None` when it matches.
    fn bad_view(&self, key: PackageKey, tree: &Tree) -> Result<Option<BadView>> {
        let path = self.view_dir(&key)?;
        let problems = check_view(&self.layout, tree, &path, &self.bytes_hashed)?;
        Ok((!problems.is_empty()).then_some(BadView {
            package: key,
            path,
            problems,
        }))
    }
}

/// The rows whose claims are checked.
fn read_claims(conn: &rusqlite::Connection) -> rusqlite::Result<Claims> {
    let trees = query_vec(
        conn,
        "SELECT id, encoding, h1 FROM trees ORDER BY id",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let blobs = query_vec(conn, "SELECT id, sha256 FROM blobs ORDER BY id", [], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    let archives = query_vec(
        conn,
        "SELECT zh, tree, blob FROM archives ORDER BY zh",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let rows: Vec<(String, String, String, String, String, Option<String>)> = query_vec(
        conn,
        "SELECT p.kind, p.name, p.version, p.platform, p.tree, h.hash FROM packages p
         LEFT JOIN package_hashes h ON h.package = p.id AND h.verified_locally AND h.hash LIKE 'h1:%'
         ORDER BY p.id",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
    )?;
    let mut packages: Vec<(PackageKey, String, Vec<String>)> = Vec::new();
    for (kind, name, version, platform, tree, hash) in rows {
        let Ok(key) = PackageKey::from_columns(&kind, name, version, platform) else {
            continue;
        };
        match packages.last_mut() {
            Some((last, _, hashes)) if *last == key => hashes.extend(hash),
            _ => packages.push((key, tree, hash.into_iter().collect())),
        }
    }
    Ok(Claims {
        trees,
        blobs,
        archives,
        packages,
    })
}

/// Check the index's claims against the SHA-256 of the intact blob files: the bad claims,
/// every readable tree by id, and the `h1:` each tree's files have.
#[allow(clippy::type_complexity)]
fn check_claims(
    claims: Claims,
    sha_of: &HashMap<BlobId, [u8; 32]>,
) -> (
    Vec<BadClaim>,
    HashMap<String, Tree>,
    BTreeMap<String, Option<Hash>>,
) {
    let mut bad = Vec::new();
    let mut trees = HashMap::new();
    let mut tree_h1 = BTreeMap::new();
    for (id, encoding, memo) in claims.trees {
        let tree = match Tree::decode(&encoding) {
            Ok(tree) => tree,
            Err(e) => {
                bad.push(BadClaim::Tree {
                    tree: id,
                    problem: format!("its encoding cannot be read ({e})"),
                });
                continue;
            }
        };
        let actual_id = tree.id().to_string();
        if actual_id != id {
            bad.push(BadClaim::Tree {
                tree: id.clone(),
                problem: format!("its encoding hashes to {actual_id}, not to its id"),
            });
        }
        // Only a tree whose every blob file is intact has a known h1: (a missing or
        // damaged blob is reported on its own).
        if !tree.blobs().iter().all(|b| sha_of.contains_key(b)) {
            tree_h1.insert(id.clone(), None);
            trees.insert(id, tree);
            continue;
        }
        // `None`: symlinks that cannot be hashed as files (a module's), recorded as no memo.
        let h1 = tree.h1(sha_of).ok();
        let actual = h1.as_ref().map(ToString::to_string);
        if !memo.is_empty() && actual.as_deref() != Some(memo.as_str()) {
            bad.push(BadClaim::Tree {
                tree: id.clone(),
                problem: format!(
                    "it records {memo}, its files have {}",
                    actual.unwrap_or_else(|| "no h1: (they cannot be hashed as files)".to_owned())
                ),
            });
        }
        tree_h1.insert(id.clone(), h1);
        trees.insert(id, tree);
    }
    for (key, tree, recorded) in claims.packages {
        // A tree whose files cannot all be read has been reported already.
        let Some(Some(h1)) = tree_h1.get(&tree) else {
            continue;
        };
        let actual = h1.to_string();
        if !recorded.is_empty() && !recorded.contains(&actual) {
            bad.push(BadClaim::Package {
                package: key,
                problem: format!(
                    "it records {} as verified locally, its files have {actual}",
                    recorded.join(", ")
                ),
            });
        }
    }
    for (zh, tree, blob) in claims.archives {
        let Some(sha) = blob.parse::<BlobId>().ok().and_then(|b| sha_of.get(&b)) else {
            continue;
        };
        let actual = Hash::zh_from_sha256(sha).to_string();
        if actual != zh {
            bad.push(BadClaim::Archive {
                zh,
                tree,
                problem: format!("its blob {blob} has {actual}"),
            });
        }
    }
    for (blob, recorded) in claims.blobs {
        let Ok(id) = blob.parse::<BlobId>() else {
            continue;
        };
        if let Some(sha) = sha_of.get(&id) {
            if recorded.as_slice() != sha.as_slice() {
                bad.push(BadClaim::Blob {
                    blob: id,
                    recorded: hex::encode(&recorded),
                    actual: hex::encode(sha),
                });
            }
        }
    }
    (bad, trees, tree_h1)
}
