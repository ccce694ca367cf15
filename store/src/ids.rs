//! The names the store gives what it holds: a tree by the hash of its encoding
//! ([`TreeId`]), a package by its kind and name ([`PackageKey`]). Plain values that every
//! room can name, errors included; what checks or parses them (and can fail) is beside the
//! thing they name (`tree.rs`, `package.rs`).

use std::fmt;

use serde::ser::SerializeStruct as _;

/// BLAKE3 of a tree's canonical encoding; `Display`/`FromStr` use 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeId(pub(crate) [u8; 32]);

impl fmt::Display for TreeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for TreeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TreeId({self})")
    }
}

impl serde::Serialize for TreeId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Identity of a package: a provider for one platform, or a module package.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PackageKey {
    /// A provider package for one platform.
    Provider {
        /// `host/namespace/type`, already normalized by the caller.
        addr: String,
        /// The version, e.g. `2.1.2`.
        version: String,
        /// `os_arch`, e.g. `linux_amd64`.
        platform: String,
    },
    /// A module package: what one fetch yields (a repository at a commit, an
    /// extracted archive). The id is chosen by the installer from the normalized source and
    /// the resolved commit or content hash; it must be one path segment.
    Module {
        /// Filesystem-safe id, e.g. `git-repo-3fbb99d1be85-<blake3 prefix>`.
        id: String,
    },
}

impl PackageKey {
    /// A provider key.
    pub fn provider(
        addr: impl Into<String>,
        version: impl Into<String>,
        platform: impl Into<String>,
    ) -> PackageKey {
        PackageKey::Provider {
            addr: addr.into(),
            version: version.into(),
            platform: platform.into(),
        }
    }

    /// A module package key.
    pub fn module(id: impl Into<String>) -> PackageKey {
        PackageKey::Module { id: id.into() }
    }

    /// The kind as stored in the index and in JSON: `"provider"` or `"module"`.
    pub fn kind(&self) -> &'static str {
        match self {
            PackageKey::Provider { .. } => "provider",
            PackageKey::Module { .. } => "module",
        }
    }

    /// The name (provider address, or module package id).
    pub fn name(&self) -> &str {
        match self {
            PackageKey::Provider { addr, .. } => addr,
            PackageKey::Module { id } => id,
        }
    }

    /// The version (empty for modules: the id already names the content).
    pub fn version(&self) -> &str {
        match self {
            PackageKey::Provider { version, .. } => version,
            PackageKey::Module { .. } => "",
        }
    }

    /// The platform (`os_arch`; empty for modules).
    pub fn platform(&self) -> &str {
        match self {
            PackageKey::Provider { platform, .. } => platform,
            PackageKey::Module { .. } => "",
        }
    }
}

impl fmt::Display for PackageKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PackageKey::Provider {
                addr,
                version,
                platform,
            } => write!(f, "provider {addr} {version} ({platform})"),
            PackageKey::Module { id } => write!(f, "module package {id}"),
        }
    }
}

/// Serialized as the fields `kind`, `name`, `version`, `platform`.
impl serde::Serialize for PackageKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("PackageKey", 4)?;
        s.serialize_field("kind", self.kind())?;
        s.serialize_field("name", self.name())?;
        s.serialize_field("version", self.version())?;
        s.serialize_field("platform", self.platform())?;
        s.end()
    }
}
