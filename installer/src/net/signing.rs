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
