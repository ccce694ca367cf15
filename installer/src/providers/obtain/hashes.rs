//! Hash records with their dispositions, and how tofu summarizes them.

use tstore_store::{Disposition, Hash, HashRecord};
use tstore_tofu::flavor::Flavor;

/// The authentication summary of seed 001 from a package's hash dispositions: signed if
/// any hash carries a key ID, "signing skipped" if reported by a registry, else
/// "verified checksum" (the store computed the hash that matched the lock).
pub(crate) fn auth_summary(hashes: &[HashRecord], flavor: Flavor) -> String {
    if let Some(key_id) = hashes
        .iter()
        .find_map(|r| r.disposition.signed_by_key_ids.first())
    {
        return match flavor {
            Flavor::Terraform => format!("self-signed, key ID {key_id}"),
            Flavor::Tofu => format!("signed, key ID {key_id}"),
        };
    }
    if hashes.iter().any(|r| r.disposition.reported_by_registry) {
        return "signing skipped".into();
    }
    "verified checksum".into()
}

pub(crate) fn record(
    hash: Hash,
    verified_locally: bool,
    reported: bool,
    key: Option<&str>,
) -> HashRecord {
    HashRecord {
        hash,
        disposition: Disposition {
            verified_locally,
            reported_by_registry: reported,
            signed_by_key_ids: key.map(|k| vec![k.to_owned()]).unwrap_or_default(),
        },
    }
}

pub(crate) fn join_hashes(hashes: impl Iterator<Item = String>) -> String {
    hashes.collect::<Vec<_>>().join(", ")
}
