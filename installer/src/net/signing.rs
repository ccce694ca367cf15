//! OpenPGP verification of a registry's `SHA256SUMS`: a **binary** detached signature over
//! the exact bytes, checked against the ASCII-armored public keys the registry returned with
//! the download metadata, as tofu's `signatureAuthentication` does
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getproviders/package_authentication.go>).
//! Pure Rust (rpgp); no `gpg` needed.

use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};

/// One key of `signing_keys.gpg_public_keys[]`.
#[derive(Clone, Debug)]
pub(crate) struct SigningKey {
    /// The registry's `key_id` (16 uppercase hex, the long key ID).
    pub key_id: String,
    /// The ASCII-armored public key.
    pub ascii_armor: String,
    /// An armored detached signature over the key (its binary form) by HashiCorp's partners
    /// key, when the registry gives one (`trust_signature`).
    pub trust_signature: Option<String>,
}

/// Who vouches for a verified `SHA256SUMS`, as terraform names it
/// (internal/getproviders/package_authentication.go, `signatureAuthentication`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signer {
    /// The signature verifies with HashiCorp's own release key: "signed by HashiCorp".
    HashiCorp,
    /// The signing key carries a trust signature by HashiCorp's partners key that verifies:
    /// "signed by a HashiCorp partner".
    Partner,
    /// Any other key the registry gave: "self-signed".
    Community,
}

/// The keys that make a signature HashiCorp's or a partner's: HashiCorp's release key and
/// its partners key, as terraform embeds them (public keys, `net/keys/`); a test's
/// stand-ins where one is given (`TSTORE_TEST_TRUST_ROOTS`, read by the binary).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustRoots {
    /// HashiCorp's release key, armored.
    pub official: String,
    /// HashiCorp's partners key, armored.
    pub partners: String,
}

impl Default for TrustRoots {
    fn default() -> Self {
        TrustRoots {
            official: include_str!("keys/hashicorp.asc").to_owned(),
            partners: include_str!("keys/hashicorp-partners.asc").to_owned(),
        }
    }
}

impl TrustRoots {
    /// A test's stand-ins: `official.asc` and `partners.asc` in `dir`, read as the user's own
    /// small regular files (never through a link); `None` when either cannot be read, and
    /// the embedded keys stay in force.
    pub fn from_dir(dir: &std::path::Path) -> Option<TrustRoots> {
        let read = |name: &str| tstore_tofu::read::read_own_capped(&dir.join(name), 1 << 20).ok();
        Some(TrustRoots {
            official: read("official.asc")?,
            partners: read("partners.asc")?,
        })
    }
}

/// Whether `signature` over `data` verifies with the armored key `armored` (its primary key
/// or a bound subkey); a key that does not parse verifies nothing.
fn verifies_with(armored: &str, data: &[u8], signature: &DetachedSignature) -> bool {
    let Ok((public, _)) = SignedPublicKey::from_string(armored) else {
        return false;
    };
    if public.verify_bindings().is_err() {
        return false;
    }
    signature.verify(&public.primary_key, data).is_ok()
        || public
            .public_subkeys
            .iter()
            .any(|sub| signature.verify(&sub.key, data).is_ok())
}

/// Who vouches for `signature` over `data`, which `signing_key` (one of the registry's) has
/// verified: HashiCorp when HashiCorp's own key verifies it too; a partner when the signing
/// key's trust signature verifies with the partners key over the key's binary form (one that
/// does not is an error, as terraform fails the install); else the key's owner alone.
pub(crate) fn signer(
    roots: &TrustRoots,
    signing_key: &SigningKey,
    data: &[u8],
    signature: &[u8],
) -> Result<Signer, SignatureError> {
    let sig = DetachedSignature::from_bytes(signature)
        .map_err(|e| SignatureError::Malformed(e.to_string()))?;
    if verifies_with(&roots.official, data, &sig) {
        return Ok(Signer::HashiCorp);
    }
    let Some(trust) = &signing_key.trust_signature else {
        return Ok(Signer::Community);
    };
    let untrusted = || SignatureError::TrustSignature {
        key_id: signing_key.key_id.clone(),
    };
    let mut author = Vec::new();
    std::io::Read::read_to_end(
        &mut pgp::armor::Dearmor::new(signing_key.ascii_armor.as_bytes()),
        &mut author,
    )
    .map_err(|_| untrusted())?;
    let (trust, _) = DetachedSignature::from_string(trust).map_err(|_| untrusted())?;
    if verifies_with(&roots.partners, &author, &trust) {
        Ok(Signer::Partner)
    } else {
        Err(untrusted())
    }
}

/// Why a signature was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The signature file is not an OpenPGP signature.
    #[error("the signature is not a valid OpenPGP detached signature: {0}")]
    Malformed(String),
    /// The registry returned no keys to check against.
    #[error("the registry returned no signing keys")]
    NoKeys,
    /// The signing key's trust signature does not verify with HashiCorp's partners key.
    #[error(
        "the trust signature of signing key {key_id} does not verify with HashiCorp's partners key"
    )]
    TrustSignature {
        /// The signing key.
        key_id: String,
    },
    /// No key verifies the signature.
    #[error("the signature does not verify with any of the registry's keys ({keys}){}", render_issuer(.issuer))]
    NoValidKey {
        /// The key IDs tried.
        keys: String,
        /// The key ID the signature names, if any.
        issuer: Option<String>,
    },
}

fn render_issuer(issuer: &Option<String>) -> String {
    issuer
        .as_ref()
        .map(|i| format!("; it was made by key ID {i}"))
        .unwrap_or_default()
}

/// Verify `signature` (binary) over `data` against `keys`; return the `key_id` of the key
/// that verified it. Keys that do not parse are skipped (another may still verify).
pub(crate) fn verify_detached(
    keys: &[SigningKey],
    data: &[u8],
    signature: &[u8],
) -> Result<String, SignatureError> {
    if keys.is_empty() {
        return Err(SignatureError::NoKeys);
    }
    let sig = DetachedSignature::from_bytes(signature)
        .map_err(|e| SignatureError::Malformed(e.to_string()))?;
    for key in keys {
        let Ok((public, _headers)) = SignedPublicKey::from_string(&key.ascii_armor) else {
            tracing::warn!(
                "skipping signing key {}: not an armored public key",
                key.key_id
            );
            continue;
        };
        if public.verify_bindings().is_err() {
            tracing::warn!(
                "skipping signing key {}: invalid self-signatures",
                key.key_id
            );
            continue;
        }
        if sig.verify(&public.primary_key, data).is_ok() {
            return Ok(key.key_id.clone());
        }
        // Signing subkeys are bound to the primary by the binding signatures checked above.
        if public
            .public_subkeys
            .iter()
            .any(|sub| sig.verify(&sub.key, data).is_ok())
        {
            return Ok(key.key_id.clone());
        }
    }
    Err(SignatureError::NoValidKey {
        keys: keys
            .iter()
            .map(|k| k.key_id.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        issuer: sig
            .signature
            .issuer_key_id()
            .first()
            .map(|id| hex::encode_upper(id.as_ref())),
    })
}
