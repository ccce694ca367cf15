//! Package hashes as written in lock files: `h1:` (Go dirhash "Hash1") and `zh:` (sha256 of a zip).
//!
//! The `h1:` algorithm (OpenTofu's `PackageHashV1`,
//! <https://github.com/opentofu/opentofu/blob/main/internal/getproviders/hash.go>): for every file name (relative, `/`-separated)
//! sorted bytewise, emit `hex(sha256(content)) + "  " + name + "\n"`; the hash is
//! `"h1:" + base64(sha256(all lines))`. Names containing `\n` are an error.
//!
//! The store never re-reads file contents to compute an `h1:`: it records each blob's sha256 at
//! ingest (in the same read pass as its BLAKE3) and computes `h1:` from `(name, sha256)` pairs.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::StoreError;

/// A hash as written in lock files: `h1:<base64>` or `zh:<hex>`; other schemes are kept verbatim.
///
/// Ordering and equality are structural; `Display` round-trips the lock file string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hash {
    /// `h1:` — the base64 part after the prefix.
    H1(String),
    /// `zh:` — the hex part after the prefix.
    Zh(String),
    /// Any other `scheme:value`, the whole string.
    Other(String),
}

impl Hash {
    /// `zh:` of the given sha256 digest.
    pub fn zh_from_sha256(sha256: &[u8; 32]) -> Hash {
        Hash::Zh(hex::encode(sha256))
    }

    /// The scheme: `"h1"`, `"zh"` or whatever precedes the colon.
    pub fn scheme(&self) -> &str {
        match self {
            Hash::H1(_) => "h1",
            Hash::Zh(_) => "zh",
            Hash::Other(s) => s.split_once(':').map_or("", |(scheme, _)| scheme),
        }
    }
}

impl FromStr for Hash {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            Some(("h1", rest)) => Ok(Hash::H1(rest.to_owned())),
            Some(("zh", rest)) => Ok(Hash::Zh(rest.to_owned())),
            Some((scheme, _)) if !scheme.is_empty() => Ok(Hash::Other(s.to_owned())),
            _ => Err(StoreError::InvalidHash(s.to_owned())),
        }
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hash::H1(v) => write!(f, "h1:{v}"),
            Hash::Zh(v) => write!(f, "zh:{v}"),
            Hash::Other(v) => f.write_str(v),
        }
    }
}

impl serde::Serialize for Hash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Hash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Error from [`h1_of_files`]: a file name contains a newline, which dirhash forbids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewlineInName(pub String);

/// `h1:` of a list of `(name, sha256 of content)` pairs (the Go dirhash Hash1 summary).
///
/// The names are sorted bytewise here; the caller passes them in any order. Used for the
/// directory form (names of extracted non-directory entries) and, through
/// [`h1_of_zip_names`], the archive form.
pub fn h1_of_files<S: AsRef<str>>(files: &[(S, [u8; 32])]) -> Result<Hash, NewlineInName> {
    let mut sorted: Vec<(&str, &[u8; 32])> = files.iter().map(|(n, h)| (n.as_ref(), h)).collect();
    sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut summary = Sha256::new();
    for (name, sha) in sorted {
        if name.contains('\n') {
            return Err(NewlineInName(name.to_owned()));
        }
        summary.update(hex::encode(sha).as_bytes());
        summary.update(b"  ");
        summary.update(name.as_bytes());
        summary.update(b"\n");
    }
    let digest = summary.finalize();
    Ok(Hash::H1(
        base64::engine::general_purpose::STANDARD.encode(digest),
    ))
}

/// `h1:` in the Go `HashZip` form: over every central-directory name *as stored*, including
/// directory entries such as `sub/` (whose content, and so sha256, is empty).
///
/// This is the form a lock file `h1:` is checked against before a zip is extracted: tofu hashes
/// a zip it has not extracted with Go's `dirhash.HashZip`
/// (<https://github.com/golang/mod/blob/master/sumdb/dirhash/hash.go>, called from
/// `PackageHashV1` in <https://github.com/opentofu/opentofu/blob/main/internal/getproviders/hash.go>).
/// It differs from the directory form when the zip has directory entries.
pub fn h1_of_zip_names(entries: &[(String, [u8; 32])]) -> Result<Hash, NewlineInName> {
    h1_of_files(entries)
}

/// The sha256 of the empty string, the content of a zip directory entry.
pub(crate) fn sha256_empty() -> [u8; 32] {
    Sha256::digest(b"").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(s: &[u8]) -> [u8; 32] {
        Sha256::digest(s).into()
    }

    fn hex32(s: &str) -> [u8; 32] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    #[test]
    fn v1_null_provider_summary_line() {
        let files = [(
            "terraform-provider-null_v2.1.2_x4",
            hex32("c56285e7bd25a806bf86fcd4893edbe46e621a46e20fe24ef209b6fd0b7cf5fc"),
        )];
        assert_eq!(
            h1_of_files(&files).unwrap().to_string(),
            "h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE="
        );
    }

    #[test]
    fn v2_two_files_any_order() {
        let a = ("terraform-provider-fake", sha(b"hello\n"));
        let b = ("sub/data.txt", sha(b"world\n"));
        let want = "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=";
        assert_eq!(h1_of_files(&[a, b]).unwrap().to_string(), want);
        assert_eq!(h1_of_files(&[b, a]).unwrap().to_string(), want);
    }

    #[test]
    fn v3_zip_names_with_dir_entry() {
        let entries = vec![
            ("terraform-provider-fake".to_owned(), sha(b"hello\n")),
            ("sub/".to_owned(), sha256_empty()),
            ("sub/data.txt".to_owned(), sha(b"world\n")),
        ];
        assert_eq!(
            h1_of_zip_names(&entries).unwrap().to_string(),
            "h1:7ot6ByVSVHrC4ZngFjGA3WZw12dZSuA4qgCzzWy0xqs="
        );
    }

    #[test]
    fn newline_in_name_is_an_error() {
        assert!(h1_of_files(&[("a\nb", sha(b""))]).is_err());
    }

    #[test]
    fn hash_parse_display_round_trip() {
        for s in [
            "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=",
            "zh:9455ba7c20a0eace758a38bef5fc0eb1e47cf231b4eaeaa9b1f26a1eb8acab53",
            "xx:abc",
        ] {
            let h: Hash = s.parse().unwrap();
            assert_eq!(h.to_string(), s);
        }
        assert!(matches!("h1:x".parse::<Hash>().unwrap(), Hash::H1(v) if v == "x"));
        assert!(matches!("xx:abc".parse::<Hash>().unwrap(), Hash::Other(_)));
        assert!("nocolon".parse::<Hash>().is_err());
        assert!(":abc".parse::<Hash>().is_err());
        assert!(Hash::H1("a".into()) < Hash::Zh("a".into()));
    }
}
