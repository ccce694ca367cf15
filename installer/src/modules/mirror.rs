//! The module mirror: module packages in one OCI repository, found by the `h1:` a module lock
//! entry names, so that a runner that cannot reach a call's origin installs it from the
//! mirror with nothing in the configuration changed (`module_mirror` in `.tstore.hcl`, or
//! `TSTORE_MODULE_MIRROR`). `tstore push --modules` fills it; the fetcher reads it
//! (`fetch/mirror.rs`).
//!
//! Layout, in the repository `oci://REGISTRY/REPOSITORY`:
//!
//! ```text
//! h1-<64 hex>    a module package: OpenTofu's module artifact (artifactType
//!                application/vnd.opentofu.modulepkg, one archive/zip layer: the package's
//!                files as a deterministic zip), so an `oci://…?tag=h1-…` source reads it too;
//!                the tag is the package tree's h1: (its 32 bytes in hex)
//! reg-<64 hex>   a registry module version's resolution: an artifact of type
//!                application/vnd.tstore.module-resolution whose annotations say the
//!                module, the version, the download location the registry named (without
//!                credentials), the subdirectory inside the package and the package's h1:;
//!                the tag is SHA-256 of `HOST/NAMESPACE/NAME/SYSTEM`, NUL, the version;
//!                `tstore.first-seen`: when the mirror first held that resolution
//! reach-<64 hex> a git ref's reach of a locked commit, as the pushing machine checked it:
//!                an artifact of type application/vnd.tstore.git-reach whose annotations
//!                say the repository (as messages show it), the ref, the commit and when
//!                the check was made (seconds since the epoch); the tag is SHA-256 of the
//!                repository's identity (no credentials), NUL, the ref, NUL, the commit;
//!                `tstore.first-seen`: when the mirror first held that claim
//! ```
//!
//! Rules:
//! - A package tag is a function of content: the same tree gives the same zip, manifest and
//!   tag on every runner, so two stores pushing one package agree, and a tag that names
//!   other bytes is a conflict (`--force` replaces it).
//! - The mirror is untrusted. A package is believed only when the tree its layer unpacks to
//!   has the lock entry's `h1:`; anything else is refused, naming the call, the mirror, the
//!   expected and the received hash, and nothing is installed.
//! - A resolution is used only for a call whose lock entry pins that module and version, only
//!   when its `h1:` is one of the entry's, and only when its location is a remote package
//!   address (never a local directory) and its subdirectory stays inside the package. What a
//!   lying mirror can still choose is which subdirectory of the verified package a registry
//!   call installs (the lock records the package, not the registry's location):
//!   `docs/threat-model.md` has the row.
//! - `tstore.first-seen` (seconds since the epoch) is the cooldown's strongest date: the push
//!   that first writes a claim (a resolution's module, version, location, subdirectory and
//!   package; a reach's repository, ref and commit) stamps it, and every later push of the
//!   same claim carries the stamp over, so no push makes a version look younger or older. A
//!   claim with other content (a re-published version, a moved tag) is another claim: its
//!   stamp starts again. A runner uses a resolution's stamp only for the package it names
//!   (`h1:`), and a reach record's only for the commit it names.
//! - A reach record is believed only where the call's remote cannot be asked, only for the
//!   exact repository, ref and commit its tag and annotations both name, and only for the
//!   run that asked (never written to this machine's own records). It is the mirror
//!   writer's word: whoever can write the mirror can assert a reach, which is why a mirror a
//!   checkout names in `.tstore.hcl` is said as such in the warning.

use sha2::{Digest as _, Sha256};
use tstore_store::Hash;

use crate::net::oci::OciRepository;

/// `artifactType` of a registry module version's resolution.
pub(crate) const RESOLUTION_ARTIFACT_TYPE: &str = "application/vnd.tstore.module-resolution";

/// `artifactType` of a git ref's reach record.
pub(crate) const REACH_ARTIFACT_TYPE: &str = "application/vnd.tstore.git-reach";

/// The annotation keys of a resolution.
const MODULE: &str = "tstore.module";
const VERSION: &str = "tstore.version";
const LOCATION: &str = "tstore.location";
const SUBDIR: &str = "tstore.subdir";
const H1: &str = "tstore.h1";

/// The annotation key of when the mirror first held a claim (resolutions and reach records).
const FIRST_SEEN: &str = "tstore.first-seen";

/// The annotation keys of a reach record.
const REPOSITORY: &str = "tstore.repository";
const REF: &str = "tstore.ref";
const COMMIT: &str = "tstore.commit";
const CHECKED: &str = "tstore.checked";

/// The longest annotation value believed (a location is a URL).
const MAX_VALUE: usize = 4096;

/// A module mirror: the repository, and where the setting was read (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleMirror {
    /// The repository.
    pub repository: OciRepository,
    /// `TSTORE_MODULE_MIRROR`, or the `.tstore.hcl` that names it.
    pub origin: String,
}

impl std::fmt::Display for ModuleMirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}", self.repository)
    }
}

impl ModuleMirror {
    /// Parse `oci://REGISTRY/REPOSITORY` (no tag, digest or query: the mirror's tags are its
    /// own).
    pub fn parse(text: &str, origin: &str) -> Result<ModuleMirror, String> {
        let usage = || {
            format!(
                "{origin}: a module mirror is oci://REGISTRY/REPOSITORY, without a tag or a \
                 query"
            )
        };
        let rest = text.strip_prefix("oci://").ok_or_else(usage)?;
        Ok(ModuleMirror {
            repository: OciRepository::parse(rest).ok_or_else(usage)?,
            origin: origin.to_owned(),
        })
    }
}

impl ModuleMirror {
    /// Whether this mirror's first-seen stamps may date versions under `policy`. A mirror a
    /// checkout names (`.tstore.hcl`) counts only under the same file's policy: under a
    /// job's policy (`TSTORE_MIN_RELEASE_AGE`, `--min-release-age`), which a checkout cannot
    /// lower, a mirror the checkout points at could back-date a version it writes.
    pub(crate) fn dates_count_under(&self, policy: &crate::ReleaseAge) -> bool {
        self.origin == "TSTORE_MODULE_MIRROR"
            || policy.set_by == format!("min_release_age in {}", self.origin)
    }
}

/// The tag of the package whose tree has `h1` (`None`: not a well-formed `h1:`).
pub(crate) fn package_tag(h1: &Hash) -> Option<String> {
    use base64::Engine as _;
    let Hash::H1(b64) = h1 else { return None };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .ok()
        .filter(|b| b.len() == 32)?;
    Some(format!("h1-{}", hex::encode(bytes)))
}

/// The tag of the resolution of registry module `module` (`HOST/NAMESPACE/NAME/SYSTEM`, the
/// host lowercase) at `version`.
pub(crate) fn resolution_tag(module: &str, version: &str) -> String {
    let digest = Sha256::digest(format!("{module}\0{version}").as_bytes());
    format!("reg-{}", hex::encode(digest))
}

/// A registry module version's resolution, as a module mirror holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolution {
    /// `HOST/NAMESPACE/NAME/SYSTEM`, the host lowercase.
    pub(crate) module: String,
    /// The exact version.
    pub(crate) version: String,
    /// The download location the registry named, without credentials.
    pub(crate) location: String,
    /// A subdirectory inside the package (`X-Terraform-Get` hops), or empty.
    pub(crate) subdir: String,
    /// The package tree's `h1:`.
    pub(crate) h1: String,
    /// When the mirror first held this resolution (seconds since the epoch); `None` in one
    /// written before mirrors stamped their claims.
    pub(crate) first_seen: Option<u64>,
}

impl Resolution {
    /// The manifest annotations that carry it.
    pub(crate) fn annotations(&self) -> serde_json::Value {
        with_first_seen(
            serde_json::json!({
                MODULE: self.module,
                VERSION: self.version,
                LOCATION: self.location,
                SUBDIR: self.subdir,
                H1: self.h1,
            }),
            self.first_seen,
        )
    }

    /// Whether `other` makes the same claim (the stamp aside).
    pub(crate) fn same_claim(&self, other: &Resolution) -> bool {
        Resolution {
            first_seen: None,
            ..self.clone()
        } == Resolution {
            first_seen: None,
            ..other.clone()
        }
    }

    /// Read it back from a manifest's annotations: every key present, each value a string
    /// of bounded length; `None` otherwise.
    pub(crate) fn from_annotations(annotations: &serde_json::Value) -> Option<Resolution> {
        let get = |key: &str| {
            annotations[key]
                .as_str()
                .filter(|v| v.len() <= MAX_VALUE)
                .map(str::to_owned)
        };
        Some(Resolution {
            module: get(MODULE)?,
            version: get(VERSION)?,
            location: get(LOCATION)?,
            subdir: get(SUBDIR)?,
            h1: get(H1)?,
            first_seen: first_seen_of(annotations),
        })
    }
}

/// The tag of the reach record of `reference` of the repository `repo` and `commit`.
pub(crate) fn reach_tag(repo: &str, reference: &str, commit: &str) -> String {
    let identity = crate::redact::url_identity(repo);
    let digest = Sha256::digest(
        format!("{identity}\0{reference}\0{}", commit.to_ascii_lowercase()).as_bytes(),
    );
    format!("reach-{}", hex::encode(digest))
}

/// A git ref's reach of a locked commit, as a module mirror holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReachRecord {
    /// The repository as messages show it (no user information, no secret-looking query
    /// value): the mirror is read by other runners.
    pub(crate) repository: String,
    /// The ref.
    pub(crate) reference: String,
    /// The commit, lowercase.
    pub(crate) commit: String,
    /// When the pushing machine found the ref reaching the commit (seconds since the epoch).
    pub(crate) checked: u64,
    /// When the mirror first held this claim (seconds since the epoch); `None` in a record
    /// written before mirrors stamped their claims.
    pub(crate) first_seen: Option<u64>,
}

impl ReachRecord {
    /// The record of `reference` of `repo` reaching `commit`, checked at `checked`.
    pub(crate) fn new(repo: &str, reference: &str, commit: &str, checked: u64) -> ReachRecord {
        ReachRecord {
            repository: crate::redact::display_url(repo),
            reference: reference.to_owned(),
            commit: commit.to_ascii_lowercase(),
            checked,
            first_seen: None,
        }
    }

    /// Whether it is the record of `reference` of `repo` reaching `commit`, whenever made.
    pub(crate) fn is_of(&self, repo: &str, reference: &str, commit: &str) -> bool {
        self.repository == crate::redact::display_url(repo)
            && self.reference == reference
            && self.commit.eq_ignore_ascii_case(commit)
    }

    /// The manifest annotations that carry it.
    pub(crate) fn annotations(&self) -> serde_json::Value {
        with_first_seen(
            serde_json::json!({
                REPOSITORY: self.repository,
                REF: self.reference,
                COMMIT: self.commit,
                CHECKED: self.checked.to_string(),
            }),
            self.first_seen,
        )
    }

    /// Read it back from a manifest's annotations: every key present, each value a string
    /// of bounded length, the time a number; `None` otherwise.
    pub(crate) fn from_annotations(annotations: &serde_json::Value) -> Option<ReachRecord> {
        let get = |key: &str| {
            annotations[key]
                .as_str()
                .filter(|v| v.len() <= MAX_VALUE)
                .map(str::to_owned)
        };
        Some(ReachRecord {
            repository: get(REPOSITORY)?,
            reference: get(REF)?,
            commit: get(COMMIT)?,
            checked: get(CHECKED)?.parse().ok()?,
            first_seen: first_seen_of(annotations),
        })
    }
}

/// `annotations` with the stamp, when there is one.
fn with_first_seen(
    mut annotations: serde_json::Value,
    first_seen: Option<u64>,
) -> serde_json::Value {
    if let Some(at) = first_seen {
        annotations[FIRST_SEEN] = serde_json::Value::String(at.to_string());
    }
    annotations
}

/// The stamp in `annotations`: a decimal number of seconds; anything else is no stamp (the
/// claim stays readable, and undated).
fn first_seen_of(annotations: &serde_json::Value) -> Option<u64> {
    annotations[FIRST_SEEN]
        .as_str()
        .filter(|v| v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_tag_is_the_h1_in_hex_and_a_valid_oci_tag() {
        let h1: Hash = "h1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
            .parse()
            .unwrap();
        let tag = package_tag(&h1).unwrap();
        assert_eq!(
            tag,
            "h1-000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        );
        // The OCI distribution spec's tag grammar: [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}.
        assert!(tag.len() <= 128);
        assert!(tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
        for bad in [Hash::H1("AAEC".into()), Hash::Zh("00".into())] {
            assert_eq!(package_tag(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_resolution_tag_names_module_and_version_apart() {
        let a = resolution_tag("r.test/ns/vpc/aws", "1.0.0");
        assert_eq!(a.len(), 68);
        assert_ne!(a, resolution_tag("r.test/ns/vpc/aws", "1.0.1"));
        // The NUL keeps `a/b` + `1` apart from `a/b1` + ``.
        assert_ne!(
            resolution_tag("r.test/ns/vpc/aws1", "0"),
            resolution_tag("r.test/ns/vpc/aws", "10")
        );
    }

    #[test]
    fn a_resolution_round_trips_and_a_partial_one_is_refused() {
        let r = Resolution {
            module: "r.test/ns/vpc/aws".into(),
            version: "1.0.0".into(),
            location: "git::https://git.test/vpc?ref=v1.0.0".into(),
            subdir: String::new(),
            h1: "h1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into(),
            first_seen: Some(1_700_000_000),
        };
        let annotations = r.annotations();
        assert_eq!(annotations[FIRST_SEEN], "1700000000");
        assert_eq!(Resolution::from_annotations(&annotations), Some(r.clone()));
        // The stamp is no part of the claim; a malformed stamp is no stamp.
        let unstamped = Resolution {
            first_seen: None,
            ..r.clone()
        };
        assert!(unstamped.same_claim(&r));
        assert!(!Resolution {
            h1: "h1:other".into(),
            ..r.clone()
        }
        .same_claim(&r));
        let mut bad = annotations.clone();
        for stamp in ["-1", "1e9", "yesterday", "99999999999999999999999"] {
            bad[FIRST_SEEN] = serde_json::Value::String(stamp.into());
            assert_eq!(
                Resolution::from_annotations(&bad),
                Some(unstamped.clone()),
                "{stamp}"
            );
        }
        let mut partial = annotations.clone();
        partial.as_object_mut().unwrap().remove(LOCATION);
        assert_eq!(Resolution::from_annotations(&partial), None);
        let mut long = annotations;
        long[LOCATION] = serde_json::Value::String("x".repeat(MAX_VALUE + 1));
        assert_eq!(Resolution::from_annotations(&long), None);
    }

    #[test]
    fn a_reach_record_round_trips_names_its_claim_apart_and_keeps_no_credentials() {
        let repo = "https://user:S3CRET@git.test/org/net.git";
        let r = ReachRecord::new(repo, "main", "ABCDEF01", 1_700_000_000);
        assert_eq!(r.repository, "https://git.test/org/net.git");
        assert_eq!(r.commit, "abcdef01");
        assert!(r.is_of("https://git.test/org/net.git", "main", "abcdef01"));
        assert!(!r.is_of(repo, "v1", "abcdef01"));
        assert!(!r.is_of(repo, "main", "abcdef02"));
        assert!(!r.annotations().to_string().contains("S3CRET"));
        assert_eq!(ReachRecord::from_annotations(&r.annotations()), Some(r));
        let mut untimed = ReachRecord::new(repo, "main", "ab", 1).annotations();
        untimed[CHECKED] = serde_json::Value::String("yesterday".into());
        assert_eq!(ReachRecord::from_annotations(&untimed), None);
        // The tag: the identity without credentials, apart per ref and commit.
        let tag = reach_tag(repo, "main", "ABCDEF01");
        assert_eq!(
            tag,
            reach_tag("https://git.test/org/net.git", "main", "abcdef01")
        );
        assert_eq!(tag.len(), "reach-".len() + 64);
        assert_ne!(tag, reach_tag(repo, "main", "abcdef02"));
        assert_ne!(tag, reach_tag(repo, "mai", "nabcdef01"));
    }

    #[test]
    fn mirror_addresses() {
        let m = ModuleMirror::parse("oci://Reg.test:5000/team/modules", "TSTORE_MODULE_MIRROR")
            .unwrap();
        assert_eq!(m.repository.registry, "reg.test:5000");
        assert_eq!(m.repository.name, "team/modules");
        assert_eq!(m.to_string(), "oci://reg.test:5000/team/modules");
        for bad in [
            "reg.test/modules",
            "oci://reg.test",
            "oci://reg.test/modules?tag=x",
            "oci://reg.test/Modules",
            "oci://reg.test//modules",
            "oci://user:pw@reg.test/modules",
        ] {
            let err = ModuleMirror::parse(bad, "TSTORE_MODULE_MIRROR").unwrap_err();
            assert!(err.starts_with("TSTORE_MODULE_MIRROR: "), "{err}");
            assert!(!err.contains("pw@"), "{err}");
        }
    }
}
