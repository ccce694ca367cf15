//! Roots: the working directories whose links keep packages alive.
//!
//! A **root** is a working directory that `tstore init` linked into the store. Each root
//! records its **links**: the absolute path of every symlink it has into the store
//! (`.terraform/providers/H/N/T/V/OS_ARCH`, `.terraform/modules/KEY`), the target the
//! symlink had, and the package that target names. The store knows nothing of
//! `.terraform`: the installer finds the links, and [`Store::gc`](crate::Store::gc)
//! re-reads exactly the recorded paths (`readlink(link) == target`).
//!
//! ```text
//! roots(id, path UNIQUE, created_at, updated_at)
//! root_links(root → roots ON DELETE CASCADE, link, target, package → packages ON DELETE CASCADE)
//! ```
//!
//! [`Roots::record`] replaces a root's links and stamps the linked packages' `used_at`
//! in one `BEGIN IMMEDIATE` transaction. A root recorded with exactly these links, whose
//! record and packages were stamped less than [`RESTAMP_AFTER`] ago, is left as it is: a
//! re-init that changes nothing writes nothing to the index (no WAL frame, so no checkpoint
//! and no fsync when its connection closes), and a stamp is at most that much older than the
//! last init that used the package. The caller must hold the store lock shared from
//! before it looked the packages up until this returns: gc, which needs the lock exclusive,
//! can then never run between a package being committed (or found) and its root being
//! recorded (ARCHITECTURE.md, "Concurrency").

use std::path::{Component, Path, PathBuf};

use crate::ids::PackageKey;
use crate::index::{now, package_id, query_vec};
use crate::lock::StoreLock;
use crate::{Result, Store, StoreError};

/// A symlink of a working directory into the store.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RootLink {
    /// The symlink (absolute).
    pub link: PathBuf,
    /// Its target when recorded (under the mount path or the store's views).
    pub target: PathBuf,
    /// The package the target names.
    pub package: PackageKey,
}

/// A recorded root.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Root {
    /// The working directory.
    pub path: PathBuf,
    /// When it was first recorded (seconds since the epoch).
    pub created_at: i64,
    /// When its links were last recorded.
    pub updated_at: i64,
    /// Its links, sorted by link path.
    pub links: Vec<RootLink>,
}

/// What [`Roots::record`] recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordedRoot {
    /// Links recorded.
    pub links: u64,
    /// Links skipped because the store holds no such package (a dangling link).
    pub unknown: Vec<PackageKey>,
}

/// The package a path relative to the views names: `providers/H/N/T/V/OS_ARCH[/…]` or
/// `modules/ID[/…]`.
pub fn package_of_view_relpath(rel: &Path) -> Option<PackageKey> {
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    match parts.as_slice() {
        ["providers", host, ns, kind, version, platform, ..] => Some(PackageKey::provider(
            format!("{host}/{ns}/{kind}"),
            *version,
            *platform,
        )),
        ["modules", id, ..] => Some(PackageKey::module(*id)),
        _ => None,
    }
}

/// How old a root's record and its packages' stamps may be before an init that changes
/// none of its links stamps them again (seconds). Ten minutes: far inside gc's default grace
/// period (`--min-age 1h`), which only an unlinked package's stamp is compared with.
pub(crate) const RESTAMP_AFTER: i64 = 600;

/// Whether the root at `dir` is recorded with exactly `links` (link, target, package id),
/// its record and every linked package stamped within [`RESTAMP_AFTER`] of `t`.
fn recorded_recently(
    conn: &rusqlite::Connection,
    dir: &str,
    links: &[(String, String, i64)],
    t: i64,
) -> rusqlite::Result<bool> {
    use rusqlite::OptionalExtension as _;
    let Some((root, updated_at)) = crate::index::query_row_cached(
        conn,
        "SELECT id, updated_at FROM roots WHERE path = ?1",
        [dir],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )
    .optional()?
    else {
        return Ok(false);
    };
    if t - updated_at >= RESTAMP_AFTER {
        return Ok(false);
    }
    let mut recorded = query_vec(
        conn,
        "SELECT l.link, l.target, l.package, p.used_at FROM root_links l
         JOIN packages p ON p.id = l.package WHERE l.root = ?1",
        [root],
        |r| {
            Ok((
                (
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ),
                r.get::<_, i64>(3)?,
            ))
        },
    )?;
    if recorded
        .iter()
        .any(|(_, used_at)| t - used_at >= RESTAMP_AFTER)
    {
        return Ok(false);
    }
    let mut wanted = links.to_vec();
    wanted.sort();
    wanted.dedup_by(|a, b| a.0 == b.0);
    recorded.sort();
    Ok(recorded.len() == wanted.len()
        && recorded
            .iter()
            .zip(&wanted)
            .all(|((have, _), want)| have == want))
}

impl Store {}

pub(crate) fn path_str(p: &Path) -> Result<String> {
    p.to_str()
        .map(str::to_owned)
        .ok_or_else(|| StoreError::CorruptIndex {
            what: format!("path {} is not UTF-8", p.display()),
        })
}

/// The working directories that use packages (gc's roots).
#[derive(Clone, Copy)]
pub struct Roots<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// The roots ([`Roots`]).
    pub fn roots(&self) -> Roots<'_> {
        Roots { store: self }
    }
}

impl Roots<'_> {
    /// Replace the links recorded for working directory `dir` (see the module docs). A root
    /// with no link left is forgotten. Links to packages the store does not hold are skipped
    /// and returned.
    pub fn record(
        &self,
        _lock: &StoreLock,
        dir: &Path,
        links: &[RootLink],
    ) -> Result<RecordedRoot> {
        let dir = fs_err::canonicalize(dir).map_err(|e| StoreError::io(dir, e))?;
        let dir_str = path_str(&dir)?;
        let mut index = self.store.index();
        let t = now();
        // Unchanged and recently stamped: nothing to write (read without the write lock).
        let mut wanted = Vec::with_capacity(links.len());
        for l in links {
            match package_id(&index.conn, &l.package).map_err(index.err("reading a package"))? {
                Some(id) => wanted.push((path_str(&l.link)?, path_str(&l.target)?, id)),
                None => break,
            }
        }
        if !wanted.is_empty()
            && wanted.len() == links.len()
            && recorded_recently(&index.conn, &dir_str, &wanted, t)
                .map_err(index.err("reading a root"))?
        {
            return Ok(RecordedRoot {
                links: wanted.len() as u64,
                unknown: Vec::new(),
            });
        }
        let (tx, op) = index.write(format!("recording root {}", dir.display()))?;
        let err = op.err();
        let mut recorded = RecordedRoot::default();
        let mut resolved = Vec::new();
        for l in links {
            match package_id(&tx, &l.package).map_err(err)? {
                Some(id) => resolved.push((path_str(&l.link)?, path_str(&l.target)?, id)),
                None => recorded.unknown.push(l.package.clone()),
            }
        }
        if resolved.is_empty() {
            tx.execute("DELETE FROM roots WHERE path = ?1", [&dir_str])
                .map_err(err)?;
        } else {
            tx.execute(
                "INSERT INTO roots (path, created_at, updated_at) VALUES (?1, ?2, ?2)
                 ON CONFLICT (path) DO UPDATE SET updated_at = excluded.updated_at",
                rusqlite::params![dir_str, t],
            )
            .map_err(err)?;
            let root: i64 = tx
                .query_row("SELECT id FROM roots WHERE path = ?1", [&dir_str], |r| {
                    r.get(0)
                })
                .map_err(err)?;
            tx.execute("DELETE FROM root_links WHERE root = ?1", [root])
                .map_err(err)?;
            for (link, target, package) in &resolved {
                tx.execute(
                    "INSERT OR REPLACE INTO root_links (root, link, target, package) VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![root, link, target, package],
                )
                .map_err(err)?;
                tx.execute(
                    "UPDATE packages SET used_at = ?2 WHERE id = ?1",
                    rusqlite::params![package, t],
                )
                .map_err(err)?;
                recorded.links += 1;
            }
        }
        tx.commit().map_err(err)?;
        Ok(recorded)
    }

    /// Stamp the packages `keys` used now, though no link names them (a module package a
    /// working directory got a private copy of): `gc --min-age` keeps them as it keeps what
    /// was linked within the grace period. Keys the store does not hold are skipped.
    pub fn mark_used(&self, _lock: &StoreLock, keys: &[PackageKey]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut index = self.store.index();
        let (tx, op) = index.write("stamping packages used".to_owned())?;
        let err = op.err();
        let t = now();
        for key in keys {
            if let Some(id) = package_id(&tx, key).map_err(err)? {
                tx.execute(
                    "UPDATE packages SET used_at = ?2 WHERE id = ?1",
                    rusqlite::params![id, t],
                )
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// Every recorded root with its links, sorted by path.
    pub fn list(&self) -> Result<Vec<Root>> {
        let index = self.store.index();
        let err = || index.err("listing roots");
        let rows = query_vec(
            &index.conn,
            "SELECT r.path, r.created_at, r.updated_at, l.link, l.target,
                        p.kind, p.name, p.version, p.platform
                 FROM roots r JOIN root_links l ON l.root = r.id JOIN packages p ON p.id = l.package
                 ORDER BY r.path, l.link",
            [],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, String>(7)?,
                    r.get::<_, String>(8)?,
                ))
            },
        )
        .map_err(err())?;
        let mut roots: Vec<Root> = Vec::new();
        for (path, created_at, updated_at, link, target, kind, name, version, platform) in rows {
            let link = RootLink {
                link: link.into(),
                target: target.into(),
                package: PackageKey::from_columns(&kind, name, version, platform)?,
            };
            let path = PathBuf::from(path);
            match roots.last_mut() {
                Some(r) if r.path == path => r.links.push(link),
                _ => roots.push(Root {
                    path,
                    created_at,
                    updated_at,
                    links: vec![link],
                }),
            }
        }
        Ok(roots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_relpaths_name_packages() {
        assert_eq!(
            package_of_view_relpath(Path::new(
                "providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64"
            )),
            Some(PackageKey::provider(
                "registry.terraform.io/hashicorp/null",
                "2.1.2",
                "linux_amd64"
            ))
        );
        assert_eq!(
            package_of_view_relpath(Path::new("modules/git-x-0123/sub/dir")),
            Some(PackageKey::module("git-x-0123"))
        );
        assert_eq!(package_of_view_relpath(Path::new("providers/a/b")), None);
        assert_eq!(package_of_view_relpath(Path::new("other/x")), None);
        assert_eq!(package_of_view_relpath(Path::new("modules/../x")), None);
    }
}
