//! Downloading an archive into the store's temp dir and ingesting it, its hash checked
//! first.

use tstore_store::Hash;

use super::{ObtainContext, SelectedPackage};
use crate::net::http::{HttpClient, HttpError};
use crate::providers::{Event, InstallError, RemoteError};

/// Download `url` into the store's temp dir and ingest it; the archive's zh must be
/// `expected_zh` (if given) — checked before anything is extracted.
pub(crate) fn download_and_ingest(
    cx: ObtainContext<'_>,
    http: &HttpClient,
    package: &SelectedPackage<'_>,
    url: &str,
    expected_zh: Option<&Hash>,
) -> Result<tstore_store::IngestedArchive, InstallError> {
    fetch_and_ingest(cx, package, url, expected_zh, |dest, progress| {
        let (sha, _bytes) = http.download(url, dest, progress)?;
        Ok(sha)
    })
}

/// [`download_and_ingest`] with the transfer done by `fetch`, which writes the archive to
/// the path it is given and returns the SHA-256 of what it wrote (an OCI blob, fetched
/// with the registry's authentication).
pub(crate) fn fetch_and_ingest(
    cx: ObtainContext<'_>,
    package: &SelectedPackage<'_>,
    url: &str,
    expected_zh: Option<&Hash>,
    fetch: impl FnOnce(&std::path::Path, &dyn Fn(u64, Option<u64>)) -> Result<[u8; 32], RemoteError>,
) -> Result<tstore_store::IngestedArchive, InstallError> {
    let (store, reporter) = (cx.store, cx.reporter);
    let (display, version) = (package.display, package.version);
    let remote_err =
        |source: RemoteError| package.remote_error(format!("archive at {url}"), source);
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
                provider: package.addr.to_string(),
                version: version.clone(),
                url: url.to_owned(),
                computed: zh.to_string(),
                expected: expected.to_string(),
            });
        }
    }
    store
        .ingest()
        .zip_keeping_it(temp.path())
        .map_err(|e| package.store_error(e))
}
