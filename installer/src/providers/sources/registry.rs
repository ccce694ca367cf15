//! The provider registry protocol (`providers.v1`), as tofu's client speaks it
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getproviders/registry_client.go>;
//! protocol: <https://github.com/opentofu/opentofu/blob/main/website/docs/internals/provider-registry-protocol.mdx>).
//!
//! ```text
//! GET {base}{ns}/{type}/versions                              → versions, protocols, platforms
//! GET {base}{ns}/{type}/{version}/download/{os}/{arch}        → filename, URLs, shasum, keys
//! GET shasums_url, shasums_signature_url (binary OpenPGP)     → verified before any download
//! GET download_url                                            → the zip (checked by the caller)
//! ```
//!
//! Relative URLs in the download metadata resolve against the metadata document's URL.
//! Requests to the registry API carry the provider host's bearer token; the archive
//! download does not (it often lives on another host).

use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::flavor::Flavor;
use tstore_tofu::version::Version;
use url::Url;

use super::display_url_ref;
use crate::net::http::{HttpClient, HttpError};
use crate::net::signing::{self, SignatureError, SigningKey};

/// Plugin protocol majors this installer accepts (Terraform 0.12+ / OpenTofu).
const SUPPORTED_PROTOCOLS: [u64; 2] = [5, 6];

/// Errors of the registry protocol.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A request failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A document was not what the protocol says.
    #[error("malformed response from {}: {message}", display_url_ref(url))]
    Malformed {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The signature over SHA256SUMS is bad.
    #[error(
        "the SHA256SUMS of {provider} {version} from {} failed authentication",
        display_url_ref(url)
    )]
    Signature {
        /// Fully-qualified address.
        provider: String,
        /// Version.
        version: Version,
        /// The signature URL.
        url: String,
        /// Why.
        #[source]
        source: SignatureError,
    },
    /// The registry's `shasum` is not what its signed SHA256SUMS says for the file.
    #[error(
        "the registry reports shasum {reported} for {filename}, but its signed SHA256SUMS {}",
        match .listed { Some(l) => format!("lists {l}"), None => "has no line for it".to_owned() }
    )]
    ShasumNotSigned {
        /// Archive file name.
        filename: String,
        /// `shasum` from the metadata.
        reported: String,
        /// The SHA256SUMS line's hash, if any.
        listed: Option<String>,
    },
}

/// One version as listed by the registry.
#[derive(Clone, Debug)]
pub(crate) struct RegistryVersion {
    /// The version.
    pub version: Version,
    /// Platforms it is published for.
    pub platforms: Vec<Platform>,
    /// When the registry says it was published (seconds since the epoch), if it does.
    pub published: Option<u64>,
}

/// A package whose SHA256SUMS passed signature verification: what to download and what
/// it must hash to.
#[derive(Clone, Debug)]
pub(crate) struct VerifiedPackage {
    /// The archive's URL.
    pub download_url: String,
    /// The archive's SHA-256, lowercase hex (signed).
    pub shasum: String,
    /// Every line of the signed SHA256SUMS: (hex, file name).
    pub signed_sums: Vec<(String, String)>,
    /// The key that verified the signature (`key_id` as the registry gave it); `None` when
    /// the registry gave no keys and the signature was not checked ([`KeylessSigning`]).
    pub key_id: Option<String>,
    /// Who vouches for the signature (`None` when it was not checked).
    pub(crate) signer: Option<signing::Signer>,
    /// The download metadata's `packages` as given (OpenTofu ≥ 1.12's every-platform
    /// hashes, not covered by the signature): read by [`registry_packages`] only for the
    /// releases that read it.
    pub packages: Option<serde_json::Value>,
    /// The download metadata's URL, for errors.
    pub meta_url: String,
}

/// What a registry's `packages` says, checked as OpenTofu ≥ 1.12 checks it
/// (upstream: internal/getproviders/package_authentication.go@v1.12.0,
/// `registryPackageAuthentication`): every platform's key `OS_ARCH` and every hash
/// `scheme:value`; for the platform installed, an entry with a positive `package_size` and
/// `zh:` hashes that are all the signed `shasum`. Returns every platform's `h1:` and `zh:`
/// hashes (other schemes left out, as tofu's `PreferredHashes` does), or tofu's words for
/// what is wrong. `None` (absent, `null`, `{}`): nothing is said, as before 1.12.
pub(crate) fn registry_packages(
    packages: Option<&serde_json::Value>,
    platform: &Platform,
    shasum: &str,
) -> Result<RegistryPackages, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        hashes: Vec<String>,
        #[serde(default)]
        package_size: i64,
    }
    let Some(value) = packages.filter(|v| !v.is_null()) else {
        return Ok(RegistryPackages::default());
    };
    let entries: std::collections::BTreeMap<String, Entry> =
        serde_json::from_value(value.clone()).map_err(|e| format!("invalid packages: {e}"))?;
    if entries.is_empty() {
        return Ok(RegistryPackages::default());
    }
    let mut all = Vec::new();
    let mut this = None;
    for (key, entry) in &entries {
        let valid_platform =
            key.split('_').count() == 2 && !key.starts_with('_') && !key.ends_with('_');
        if !valid_platform {
            return Err(format!(
                "registry response includes invalid package platform {key:?}: must be two words separated by an underscore"
            ));
        }
        for hash in &entry.hashes {
            let valid = hash
                .split_once(':')
                .is_some_and(|(scheme, _)| !scheme.is_empty());
            if !valid {
                return Err(format!(
                    "registry response includes invalid package hash {hash:?}: hash string must start with a scheme keyword followed by a colon"
                ));
            }
            if hash.starts_with("h1:") || hash.starts_with("zh:") {
                all.push(hash.clone());
            }
        }
        if *key == platform.to_string() {
            this = Some(entry);
        }
    }
    let Some(entry) = this else {
        return Err(format!(
            "registry response missing package with platform \"{platform}\""
        ));
    };
    if entry.package_size <= 0 {
        return Err(format!(
            "registry response has invalid package size {}",
            entry.package_size
        ));
    }
    let mut has_zh = false;
    for hash in entry.hashes.iter().filter_map(|h| h.strip_prefix("zh:")) {
        has_zh = true;
        if !hash.eq_ignore_ascii_case(shasum) {
            return Err(format!(
                "registry response expected sha256sum is {shasum:?}, which does not match the platform's value of {hash:?}"
            ));
        }
    }
    if !has_zh {
        return Err(
            "registry response does not contain matching sha256sum package entry and is invalid"
                .into(),
        );
    }
    Ok(RegistryPackages {
        hashes: all,
        size: u64::try_from(entry.package_size).ok(),
    })
}

/// What a registry's `packages` says that init uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RegistryPackages {
    /// Every platform's `h1:` and `zh:` hashes.
    pub(crate) hashes: Vec<String>,
    /// The installed platform's archive size, which the download must have (OpenTofu
    /// refuses another: "registry response indicates a package of size …").
    pub(crate) size: Option<u64>,
}

/// The download's size against the one the registry's `packages` gives, in OpenTofu's
/// words (upstream: internal/getproviders/package_authentication.go@v1.12.0, checked before
/// any hash).
pub(crate) fn check_package_size(reported: Option<u64>, received: u64) -> Result<(), String> {
    match reported {
        Some(size) if size != received => Err(format!(
            "registry response indicates a package of size {size}, but received a package of size {received}"
        )),
        _ => Ok(()),
    }
}

/// What a download answer without signing keys means. OpenTofu installs a provider of its
/// default registry that was published without keys, the checksums still checked, unless
/// `OPENTOFU_ENFORCE_GPG_VALIDATION=true` (upstream:
/// internal/getproviders/package_authentication.go@v1.12.2,
/// `ShouldEnforceGPGValidationForProvider`); every other host, and terraform, refuse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeylessSigning {
    /// Refused: the signature must verify with one of the registry's keys.
    Refused,
    /// The signature is not checked; the package is "signing skipped".
    Skipped,
}

impl KeylessSigning {
    /// The rule for `addr` under `flavor`, with `OPENTOFU_ENFORCE_GPG_VALIDATION=true` or not.
    pub(crate) fn for_provider(addr: &ProviderAddr, flavor: Flavor, enforce: bool) -> Self {
        let exempt =
            flavor == Flavor::Tofu && addr.host == Flavor::Tofu.default_registry_host() && !enforce;
        if exempt {
            KeylessSigning::Skipped
        } else {
            KeylessSigning::Refused
        }
    }
}

/// A `versions` answer.
#[derive(serde::Deserialize)]
pub(crate) struct VersionsDoc {
    versions: Vec<VersionEntry>,
}

#[derive(serde::Deserialize)]
struct VersionEntry {
    version: String,
    #[serde(default)]
    protocols: Vec<String>,
    #[serde(default)]
    platforms: Vec<PlatformEntry>,
    /// When the registry took the version in, where its answer says (the cooldown).
    #[serde(flatten)]
    dates: crate::cooldown::RegistryDates,
}

#[derive(serde::Deserialize)]
struct PlatformEntry {
    os: String,
    arch: String,
}

/// A `download` answer (the package's metadata).
#[derive(serde::Deserialize)]
pub(crate) struct DownloadDoc {
    pub(crate) filename: String,
    pub(crate) download_url: String,
    pub(crate) shasums_url: String,
    pub(crate) shasums_signature_url: String,
    pub(crate) shasum: String,
    #[serde(default)]
    signing_keys: SigningKeys,
    /// OpenTofu ≥ 1.12's every-platform hashes, kept raw: older releases ignore the field
    /// whatever it holds.
    #[serde(default)]
    pub(crate) packages: Option<serde_json::Value>,
}

#[derive(Default, serde::Deserialize)]
struct SigningKeys {
    #[serde(default)]
    gpg_public_keys: Vec<KeyEntry>,
}

#[derive(serde::Deserialize)]
struct KeyEntry {
    key_id: String,
    ascii_armor: String,
    /// A detached signature over the key by HashiCorp's partners key (empty: none).
    #[serde(default)]
    trust_signature: Option<String>,
}

/// A registry's `providers.v1` endpoint.
#[derive(Clone, Debug)]
pub(crate) struct Registry {
    /// The discovered base URL (ends in `/`).
    pub base: Url,
    /// The provider host's bearer token.
    pub token: Option<String>,
}

impl Registry {
    fn url(&self, rel: &str) -> Result<Url, RegistryError> {
        self.base.join(rel).map_err(|e| RegistryError::Malformed {
            url: format!("{}{rel}", self.base),
            message: e.to_string(),
        })
    }

    /// The versions of `addr` that speak a supported protocol (unparseable versions are
    /// skipped, as tofu does).
    pub(crate) fn versions(
        &self,
        http: &HttpClient,
        addr: &ProviderAddr,
    ) -> Result<Vec<RegistryVersion>, RegistryError> {
        let url = self.url(&format!("{}/{}/versions", addr.namespace, addr.kind))?;
        let doc: VersionsDoc = http.get_json(url.as_str(), self.token.as_deref())?;
        Ok(supported_versions(doc, addr))
    }

    /// Fetch the download metadata, `SHA256SUMS` and its signature; verify the signature
    /// and that `shasum` is the signed line for `filename`.
    pub(crate) fn verified_package(
        &self,
        http: &HttpClient,
        addr: &ProviderAddr,
        version: &Version,
        platform: &Platform,
        keyless: KeylessSigning,
        roots: &signing::TrustRoots,
    ) -> Result<VerifiedPackage, RegistryError> {
        let meta_url = self.url(&format!(
            "{}/{}/{version}/download/{}/{}",
            addr.namespace, addr.kind, platform.os, platform.arch
        ))?;
        let doc: DownloadDoc = http.get_json(meta_url.as_str(), self.token.as_deref())?;
        let resolve = |u: &str| resolve_url(&meta_url, u);
        let shasums_url = resolve(&doc.shasums_url)?;
        let signature_url = resolve(&doc.shasums_signature_url)?;
        let download_url = resolve(&doc.download_url)?;
        let sums = http.get_bytes(&shasums_url, None)?;
        let signature = http.get_bytes(&signature_url, None)?;
        let keys: Vec<SigningKey> = doc
            .signing_keys
            .gpg_public_keys
            .into_iter()
            .map(|k| SigningKey {
                key_id: k.key_id,
                ascii_armor: k.ascii_armor,
                trust_signature: k.trust_signature.filter(|t| !t.trim().is_empty()),
            })
            .collect();
        let signature_err = |source| RegistryError::Signature {
            provider: addr.to_string(),
            version: version.clone(),
            url: signature_url.clone(),
            source,
        };
        let (key_id, signer) = if keys.is_empty() && keyless == KeylessSigning::Skipped {
            // The install line says it, in OpenTofu's words (`ProviderInstalledSkippedSignature`);
            // tofu writes nothing more.
            tracing::debug!(
                "skipping the signature check of {addr} {version}: the registry gave no signing keys"
            );
            (None, None)
        } else {
            let key_id =
                signing::verify_detached(&keys, &sums, &signature).map_err(signature_err)?;
            let key = keys
                .iter()
                .find(|k| k.key_id == key_id)
                .expect("the verifying key is one of the registry's");
            let signer = signing::signer(roots, key, &sums, &signature).map_err(signature_err)?;
            (Some(key_id), Some(signer))
        };
        let signed_sums = parse_sha256sums(&sums).map_err(|message| RegistryError::Malformed {
            url: shasums_url.clone(),
            message,
        })?;
        let shasum = doc.shasum.to_ascii_lowercase();
        let listed = signed_sums
            .iter()
            .find(|(_, f)| *f == doc.filename)
            .map(|(h, _)| h.clone());
        if listed.as_deref() != Some(shasum.as_str()) {
            return Err(RegistryError::ShasumNotSigned {
                filename: doc.filename,
                reported: shasum,
                listed,
            });
        }
        Ok(VerifiedPackage {
            download_url,
            shasum,
            signed_sums,
            key_id,
            signer,
            packages: doc.packages,
            meta_url: meta_url.to_string(),
        })
    }
}

/// The versions of a `versions` answer for `addr` that speak a supported protocol
/// (unparseable versions are skipped, as tofu does).
pub(crate) fn supported_versions(doc: VersionsDoc, addr: &ProviderAddr) -> Vec<RegistryVersion> {
    let mut out = Vec::new();
    for entry in doc.versions {
        let Ok(version) = Version::parse(&entry.version) else {
            continue;
        };
        let compatible = entry.protocols.is_empty()
            || entry.protocols.iter().any(|p| {
                p.split('.')
                    .next()
                    .and_then(|m| m.parse::<u64>().ok())
                    .is_some_and(|m| SUPPORTED_PROTOCOLS.contains(&m))
            });
        if !compatible {
            tracing::debug!("skipping {addr} {version}: protocols {:?}", entry.protocols);
            continue;
        }
        out.push(RegistryVersion {
            published: entry.dates.published(),
            version,
            platforms: entry
                .platforms
                .into_iter()
                .map(|p| Platform {
                    os: p.os,
                    arch: p.arch,
                })
                .collect(),
        });
    }
    out
}

/// `u`, a URL of the download metadata, resolved against the metadata's own URL.
pub(crate) fn resolve_url(meta_url: &Url, u: &str) -> Result<String, RegistryError> {
    meta_url
        .join(u)
        .map(String::from)
        .map_err(|e| RegistryError::Malformed {
            url: meta_url.to_string(),
            message: format!("bad URL {:?}: {e}", display_url_ref(u)),
        })
}

/// Parse sha256sum output: `<64 hex>  <file name>` per line (a `*` binary marker before the
/// name is tolerated).
pub(crate) fn parse_sha256sums(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SHA256SUMS is not UTF-8".to_owned())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (hash, rest) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("SHA256SUMS line {} has no file name", i + 1))?;
        let name = rest.trim_start().trim_start_matches('*');
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("SHA256SUMS line {} has no SHA-256", i + 1));
        }
        out.push((hash.to_ascii_lowercase(), name.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_do_not_echo_credentials() {
        let errors = [
            RegistryError::Malformed {
                url: "https://user:s3cret@r.test/v1/providers/a/b/versions?token=TOK3N".into(),
                message: "bad".into(),
            },
            RegistryError::Signature {
                provider: "r.test/a/b".into(),
                version: Version::parse("1.0.0").unwrap(),
                url: "https://TOK3N@cdn.test/SHA256SUMS.sig?X-Amz-Signature=SIGV4".into(),
                source: SignatureError::NoKeys,
            },
            RegistryError::Malformed {
                url: "https://r.test/v1/providers/a/b/1.0.0/download/linux/amd64".into(),
                message: format!(
                    "bad URL {:?}: invalid port number",
                    display_url_ref("//TOK3N@cdn.test:bad/p.zip?sig=SIGV4")
                ),
            },
        ];
        for e in errors {
            let shown = e.to_string();
            assert!(
                shown.contains("r.test") || shown.contains("cdn.test"),
                "{shown}"
            );
            for secret in ["s3cret", "TOK3N", "SIGV4"] {
                assert!(!shown.contains(secret), "{secret} echoed: {shown}");
            }
        }
    }

    #[test]
    fn sha256sums_lines() {
        let h = "9455ba7c20a0eace758a38bef5fc0eb1e47cf231b4eaeaa9b1f26a1eb8acab53";
        let text = format!("{h}  a.zip\n{}  *b.zip\n", h.to_uppercase());
        let sums = parse_sha256sums(text.as_bytes()).unwrap();
        assert_eq!(sums[0], (h.to_owned(), "a.zip".to_owned()));
        assert_eq!(sums[1], (h.to_owned(), "b.zip".to_owned()));
        assert!(parse_sha256sums(b"abc  x.zip\n").is_err());
    }

    /// upstream: internal/getproviders/package_authentication_test.go@v1.12.0
    /// (`TestRegistryPackageAuthentication`): the same cases, tstore's fixtures.
    #[test]
    fn registry_packages_are_checked_as_tofu_checks_them() {
        let linux = Platform {
            os: "linux".into(),
            arch: "amd64".into(),
        };
        let sum = "086119a26576d06b8281a97e8644380da89ce16197cd955f74ea5ee664e9358b";
        let check = |v: serde_json::Value| registry_packages(Some(&v), &linux, sum);
        // Absent, null or empty: nothing said.
        let nothing = RegistryPackages::default();
        assert_eq!(registry_packages(None, &linux, sum).unwrap(), nothing);
        assert_eq!(check(serde_json::json!(null)).unwrap(), nothing);
        assert_eq!(check(serde_json::json!({})).unwrap(), nothing);
        // Every platform's h1: and zh:, other schemes left out.
        let ok = check(serde_json::json!({
            "linux_amd64": {"hashes": [format!("zh:{sum}"), "h1:tru5tm3br0", "h2:x"], "package_size": 294},
            "darwin_arm64": {"hashes": ["h1:other"], "package_size": 1}
        }))
        .unwrap();
        assert_eq!(
            ok.hashes,
            ["h1:other", &format!("zh:{sum}"), "h1:tru5tm3br0"]
        );
        assert_eq!(ok.size, Some(294));
        assert_eq!(check_package_size(ok.size, 294), Ok(()));
        assert_eq!(
            check_package_size(ok.size, 295).unwrap_err(),
            "registry response indicates a package of size 294, but received a package of size 295"
        );
        assert_eq!(check_package_size(None, 1), Ok(()));
        let err = |v| check(v).unwrap_err();
        assert_eq!(
            err(serde_json::json!({"darwin_arm64": {"hashes": ["h1:x"], "package_size": 1}})),
            "registry response missing package with platform \"linux_amd64\""
        );
        assert_eq!(
            err(
                serde_json::json!({"linux_amd64": {"hashes": [format!("zh:{sum}")], "package_size": -200}})
            ),
            "registry response has invalid package size -200"
        );
        assert!(err(
            serde_json::json!({"linux_amd64": {"hashes": ["zh:0000"], "package_size": 294}})
        )
        .starts_with("registry response expected sha256sum is"));
        assert_eq!(
            err(serde_json::json!({"linux_amd64": {"hashes": ["h1:x"], "package_size": 294}})),
            "registry response does not contain matching sha256sum package entry and is invalid"
        );
        assert!(
            err(serde_json::json!({"linux": {"hashes": [], "package_size": 1}}))
                .contains("invalid package platform \"linux\"")
        );
        assert!(
            err(serde_json::json!({"linux_amd64": {"hashes": ["nope"], "package_size": 1}}))
                .contains("invalid package hash \"nope\"")
        );
    }
}
