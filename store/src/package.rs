//! Packages: named things that resolve to a tree, with the hashes trusted for them.
//!
//! The store treats names as opaque strings; the caller (the installer) normalizes provider
//! addresses before it asks. The store only checks that each name segment can safely be a path
//! component of the view.

use std::path::PathBuf;

use crate::hash::Hash;
use crate::ids::PackageKey;
use crate::ids::TreeId;
use crate::{Result, StoreError};

/// How a hash came to be trusted (its "disposition", as OpenTofu calls it: `HashDisposition`
/// in <https://github.com/opentofu/opentofu/blob/main/internal/getproviders/hash.go>); stored
/// per package per hash.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Disposition {
    /// The store computed this hash itself over content it holds.
    pub verified_locally: bool,
    /// A registry (or mirror) reported this hash for the package.
    pub reported_by_registry: bool,
    /// Key ids of signatures (e.g. on SHA256SUMS) that cover this hash.
    pub signed_by_key_ids: Vec<String>,
}

impl Disposition {
    /// OR the flags and union the key ids (sorted, deduplicated).
    pub fn merge(&mut self, other: &Disposition) {
        self.verified_locally |= other.verified_locally;
        self.reported_by_registry |= other.reported_by_registry;
        self.signed_by_key_ids
            .extend(other.signed_by_key_ids.iter().cloned());
        self.signed_by_key_ids.sort();
        self.signed_by_key_ids.dedup();
    }
}

/// One hash of a package and how it came to be trusted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HashRecord {
    /// The hash (serialized as its lock file string).
    pub hash: Hash,
    /// How it is trusted.
    pub disposition: Disposition,
}

impl HashRecord {
    /// A hash the store computed itself.
    pub fn verified_locally(hash: Hash) -> HashRecord {
        HashRecord {
            hash,
            disposition: Disposition {
                verified_locally: true,
                ..Disposition::default()
            },
        }
    }
}

/// Merge hash records: one record per hash, dispositions OR-ed; sorted by hash.
pub(crate) fn merge_hash_records(records: impl IntoIterator<Item = HashRecord>) -> Vec<HashRecord> {
    let mut map: std::collections::BTreeMap<Hash, Disposition> = Default::default();
    for r in records {
        map.entry(r.hash).or_default().merge(&r.disposition);
    }
    map.into_iter()
        .map(|(hash, disposition)| HashRecord { hash, disposition })
        .collect()
}

fn check_segment(key: &PackageKey, what: &str, s: &str) -> Result<()> {
    let reason = if s.is_empty() {
        Some("is empty")
    } else if s == "." || s == ".." {
        Some("is \".\" or \"..\"")
    } else if s.contains('/') || s.contains('\\') {
        Some("contains a slash")
    } else if s.contains('\0') || s.contains('\n') {
        Some("contains a NUL or newline")
    } else {
        None
    };
    match reason {
        Some(r) => Err(StoreError::InvalidPackageKey {
            key: key.to_string(),
            reason: format!("{what} {s:?} {r}"),
        }),
        None => Ok(()),
    }
}

impl PackageKey {
    /// Rebuild a key from its index columns.
    pub(crate) fn from_columns(
        kind: &str,
        name: String,
        version: String,
        platform: String,
    ) -> Result<Self> {
        match kind {
            "provider" => Ok(PackageKey::Provider {
                addr: name,
                version,
                platform,
            }),
            "module" => Ok(PackageKey::Module { id: name }),
            other => Err(StoreError::CorruptIndex {
                what: format!("unknown package kind {other:?}"),
            }),
        }
    }

    /// Path of the package's view relative to `views/`:
    /// `providers/HOST/NS/TYPE/VERSION/OS_ARCH`. Every segment is checked: non-empty, not
    /// `.`/`..`, no slash inside (the address has exactly two).
    pub fn view_relpath(&self) -> Result<PathBuf> {
        match self {
            PackageKey::Provider {
                addr,
                version,
                platform,
            } => {
                let parts: Vec<&str> = addr.split('/').collect();
                if parts.len() != 3 {
                    return Err(StoreError::InvalidPackageKey {
                        key: self.to_string(),
                        reason: format!("provider address {addr:?} is not HOST/NAMESPACE/TYPE"),
                    });
                }
                let mut p = PathBuf::from("providers");
                for part in parts {
                    check_segment(self, "address segment", part)?;
                    p.push(part);
                }
                check_segment(self, "version", version)?;
                check_segment(self, "platform", platform)?;
                p.push(version);
                p.push(platform);
                Ok(p)
            }
            PackageKey::Module { id } => {
                check_segment(self, "module package id", id)?;
                Ok(PathBuf::from("modules").join(id))
            }
        }
    }
}

/// A package as recorded in the index.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Package {
    /// Its identity (serialized as `kind`, `name`, `version`, `platform`).
    #[serde(flatten)]
    pub key: PackageKey,
    /// Its content.
    pub tree: TreeId,
    /// The hashes trusted for it, sorted, one record per hash.
    pub hashes: Vec<HashRecord>,
    /// Number of regular files in the tree.
    pub files: u64,
    /// Total size of those files.
    pub bytes: u64,
    /// When it was first committed (Unix seconds).
    pub created_at: i64,
    /// What vouches for its name (`provenance.rs`).
    pub provenance: crate::Provenance,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_relpath_checks_segments() {
        let k = PackageKey::provider(
            "registry.terraform.io/hashicorp/null",
            "2.1.2",
            "linux_amd64",
        );
        assert_eq!(
            k.view_relpath().unwrap(),
            PathBuf::from("providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
        );
        for (addr, v, p) in [
            ("a/b", "1", "x"),
            ("a/b/c/d", "1", "x"),
            ("a//c", "1", "x"),
            ("a/../c", "1", "x"),
            ("a/b/c", "..", "x"),
            ("a/b/c", "1", "linux/amd64"),
            ("a/b/c", "1", ""),
        ] {
            assert!(
                PackageKey::provider(addr, v, p).view_relpath().is_err(),
                "{addr} {v} {p}"
            );
        }
    }

    #[test]
    fn module_keys_live_under_modules() {
        let k = PackageKey::module("git-repo-3fbb99d1be85");
        assert_eq!(
            k.view_relpath().unwrap(),
            PathBuf::from("modules/git-repo-3fbb99d1be85")
        );
        assert_eq!(k.kind(), "module");
        assert_eq!(
            PackageKey::from_columns("module", k.name().into(), String::new(), String::new())
                .unwrap(),
            k
        );
        for bad in ["", "..", "a/b"] {
            assert!(PackageKey::module(bad).view_relpath().is_err(), "{bad}");
        }
    }

    #[test]
    fn merge_ors_dispositions() {
        let h: Hash = "h1:abc".parse().unwrap();
        let merged = merge_hash_records([
            HashRecord::verified_locally(h.clone()),
            HashRecord {
                hash: h.clone(),
                disposition: Disposition {
                    reported_by_registry: true,
                    signed_by_key_ids: vec!["K2".into(), "K1".into()],
                    ..Default::default()
                },
            },
        ]);
        assert_eq!(merged.len(), 1);
        let d = &merged[0].disposition;
        assert!(d.verified_locally && d.reported_by_registry);
        assert_eq!(d.signed_by_key_ids, vec!["K1", "K2"]);
    }

    #[test]
    fn package_serializes_key_fields() {
        let k = PackageKey::provider("example.com/test/fake", "1.0.0", "linux_amd64");
        let v = serde_json::to_value(Package {
            key: k,
            tree: TreeId([0; 32]),
            hashes: vec![HashRecord::verified_locally("h1:x".parse().unwrap())],
            files: 1,
            bytes: 2,
            created_at: 3,
            provenance: crate::Provenance::Origin,
        })
        .unwrap();
        assert_eq!(v["kind"], "provider");
        assert_eq!(v["name"], "example.com/test/fake");
        assert_eq!(v["platform"], "linux_amd64");
        assert_eq!(v["hashes"][0]["hash"], "h1:x");
    }
}
