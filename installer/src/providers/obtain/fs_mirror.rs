//! A filesystem mirror's package into the store: from the source memo, or ingested.

use tstore_store::{Disposition, Hash, HashRecord, SourceFingerprint, Store, StoreError, TreeId};

use crate::providers::sources::fs_mirror::MirrorLocation;
use crate::providers::{Obtained, Obtainment};

/// A filesystem mirror package: from the source memo, or ingested.
pub(crate) fn obtain_fs(
    store: &Store,
    location: &MirrorLocation,
) -> Result<Obtainment, StoreError> {
    let (path, origin) = match location {
        MirrorLocation::Packed(p) => (p.clone(), "current"),
        MirrorLocation::Unpacked(p) => (p.clone(), "local"),
    };
    let fingerprint = SourceFingerprint::of_path(&path)?;
    let memo = match store.memos().source(&path, &fingerprint)? {
        // A store that keeps archives ingests a zip again whose copy it lacks.
        Some(memo) if store.keeps_archives() && matches!(location, MirrorLocation::Packed(_)) => {
            store.kept_archive_of(&memo.hashes)?.map(|_| memo)
        }
        memo => memo,
    };
    let (tree, hashes, obtained) = match memo {
        Some(memo) => (memo.tree, memo.hashes, Obtained::Memoized),
        None => {
            let (tree, hashes) = ingest_mirror_package(store, location)?;
            (tree, hashes, Obtained::Ingested)
        }
    };
    let dir_h1 = hashes
        .first()
        .map(|r| r.hash.clone())
        .expect("ingest records the directory h1 first");
    // The zh: of a zip read and verified now (not one the store's memo recalls), which
    // `providers lock` records (`Obtainment::verified_zh`; `init` does not: `local_archive`).
    let verified_zh = hashes
        .iter()
        .filter(|_| obtained == Obtained::Ingested)
        .find(|r| matches!(r.hash, Hash::Zh(_)) && r.disposition.verified_locally)
        .map(|r| r.hash.to_string());
    Ok(Obtainment {
        tree,
        hashes,
        dir_h1,
        lock_extra: Vec::new(),
        verified_zh,
        local_archive: matches!(location, MirrorLocation::Packed(_)),
        source: format!("filesystem_mirror:{}", path.display()),
        memo: Some((path, fingerprint)),
        auth: "unauthenticated".into(),
        obtained,
        origin,
    })
}

/// Ingest a filesystem-mirror package, with the hashes verified locally for it: the
/// directory `h1:` (always first), and for a zip its archive-form `h1:` when different and
/// its `zh:`.
pub fn ingest_mirror_package(
    store: &Store,
    location: &MirrorLocation,
) -> Result<(TreeId, Vec<HashRecord>), StoreError> {
    let local = |hash| HashRecord {
        hash,
        disposition: Disposition {
            verified_locally: true,
            ..Disposition::default()
        },
    };
    match location {
        MirrorLocation::Unpacked(dir) => {
            let ingested = store.ingest().dir(dir)?;
            Ok((ingested.tree, vec![local(ingested.h1)]))
        }
        MirrorLocation::Packed(zip) => {
            let archive = store.ingest().zip_keeping_it(zip)?;
            let mut hashes = vec![local(archive.ingested.h1.clone())];
            // A zip with directory entries has a different archive-form h1: tofu checks a
            // lock's h1: against an archive with dirhash.HashZip, which hashes the entries as
            // stored, but writes the h1: of the extracted directory
            // (https://github.com/opentofu/opentofu/blob/main/internal/getproviders/hash.go,
            // PackageHashV1). Remember it too, so a lock written by tofu from that zip still
            // matches.
            if archive.h1_zip != archive.ingested.h1 {
                hashes.push(local(archive.h1_zip));
            }
            hashes.push(local(archive.zh));
            Ok((archive.ingested.tree, hashes))
        }
    }
}
