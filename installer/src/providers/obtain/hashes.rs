//! Hash records with their dispositions, and how tofu summarizes them.

use tstore_store::{Disposition, Hash, HashRecord};
use tstore_tofu::flavor::Flavor;

/// The authentication tofu reports for a package, from its hashes' dispositions: signed
/// if any hash carries a key ID, "signing skipped" if a registry reported one, else
/// "verified checksum" (the store computed the hash that matched).
/// The authentication of a package whose checksums a registry reported without a
/// signature that was checked, in OpenTofu's word.
pub const SIGNING_SKIPPED: &str = "signing skipped";

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
        return SIGNING_SKIPPED.into();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_summary_table() {
        let h1 = || Hash::H1("abc".into());
        let zh = || Hash::Zh("def".into());
        let cases = [
            ("no hashes", vec![], Flavor::Tofu, "verified checksum"),
            (
                "verified locally only",
                vec![record(h1(), true, false, None)],
                Flavor::Tofu,
                "verified checksum",
            ),
            (
                "reported by a registry, unsigned",
                vec![
                    record(h1(), true, false, None),
                    record(zh(), true, true, None),
                ],
                Flavor::Tofu,
                "signing skipped",
            ),
            (
                "signed, tofu's words",
                vec![
                    record(h1(), true, false, None),
                    record(zh(), true, true, Some("ABCD")),
                ],
                Flavor::Tofu,
                "signed, key ID ABCD",
            ),
            (
                "signed, terraform's words",
                vec![record(zh(), false, true, Some("ABCD"))],
                Flavor::Terraform,
                "self-signed, key ID ABCD",
            ),
        ];
        for (case, hashes, flavor, want) in cases {
            assert_eq!(auth_summary(&hashes, flavor), want, "{case}");
        }
    }
}
