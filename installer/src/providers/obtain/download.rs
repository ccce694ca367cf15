//! Downloading an archive into the store's temp dir and ingesting it, its hash checked
//! first.

use tstore_store::{Hash, Store};
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::version::Version;

use crate::net::http::{HttpClient, HttpError};
use crate::providers::{Event, InstallError, RemoteError, Reporter};

/// Download `url` into the store's temp dir and ingest it; the archive's zh must be one of
/// `expected` (if any is given) — checked before anything is extracted.
#[allow(clippy::too_many_arguments)]
pub(crate) fn download_and_ingest(
    store: &Store,
    http: &HttpClient,
    reporter: &dyn Reporter,
    display: &str,
    addr: &ProviderAddr,
    version: &Version,
    url: &str,
    expected_zh: Option<&Hash>,
) -> Result<tstore_store::IngestedArchive, InstallError> {
    fetch_and_ingest(
        store,
        reporter,
        display,
        addr,
        version,
        url,
        expected_zh,
        |dest, progress| {
            let (sha, _bytes) = http.download(url, dest, progress)?;
            Ok(sha)
        },
    )
}

/// [`download_and_ingest`] with the transfer done by `fetch`, which writes the archive to
/// the path it is given and returns the SHA-256 of what it wrote (an OCI blob, fetched
/// with the registry's authentication).
#[allow(clippy::too_many_arguments)]
pub(crate) fn fetch_and_ingest(
    store: &Store,
    reporter: &dyn Reporter,
    display: &str,
    addr: &ProviderAddr,
    version: &Version,
    url: &str,
    expected_zh: Option<&Hash>,
    fetch: impl FnOnce(&std::path::Path, &dyn Fn(u64, Option<u64>)) -> Result<[u8; 32], RemoteError>,
) -> Result<tstore_store::IngestedArchive, InstallError> {
    let remote_err = |source: RemoteError| InstallError::Remote {
        provider: addr.to_string(),
        version: Some(version.clone()),
        what: format!("archive at {url}"),
        source,
    };
    let store_err = |source| InstallError::Store {
        provider: addr.to_string(),
        version: version.clone(),
        source,
    };
    let tmp_dir = store.root().join("tmp");
    let temp = tempfile::Builder::new()
        .prefix(&tstore_store::temp_prefix("download"))
        .suffix(".zip")
        .tempfile_in(&tmp_dir)
        .map_err(|source| {
            remote_err(RemoteError::Http(HttpError::Write {
                url: url.to_owned(),
                path: tmp_dir.clone(),
                source,
            }))
        })?;
    reporter.event(Event::Downloading {
        provider: display,
        version,
        url,
    });
    let progress = |bytes, total| {
        reporter.event(Event::DownloadProgress {
            provider: display,
            bytes,
            total,
        })
    };
    let sha = fetch(temp.path(), &progress).map_err(remote_err)?;
    let zh = Hash::zh_from_sha256(&sha);
    if let Some(expected) = expected_zh {
        if *expected != zh {
            return Err(InstallError::ArchiveChecksum {
                provider: addr.to_string(),
                version: version.clone(),
                url: url.to_owned(),
                computed: zh.to_string(),
                expected: expected.to_string(),
            });
        }
    }
    store.ingest_zip_keeping_it(temp.path()).map_err(store_err)
}
