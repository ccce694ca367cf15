//! HTTP(S) module packages, as tofu's go-getter `http` getter fetches them
//! (<https://github.com/opentofu/opentofu/blob/main/internal/getmodules/getter.go>): archives
//! by extension or `?archive=`, and pages answering `?terraform-get=1` with an
//! `X-Terraform-Get` address.
//!
//! This getter only downloads: the archive, zip or tar, is the store's to check and ingest
//! (`Ingest::zip`, `Ingest::module_tar`).

use crate::modules::FetchError;
use std::io::Read;
use std::path::Path;

use crate::net::http::{HttpClient, Validators};
use crate::redact::display_url;

/// An archive format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArchiveKind {
    /// `.zip`.
    Zip,
    /// `.tar.gz`, `.tgz`.
    TarGz,
    /// `.tar`.
    Tar,
    /// `.tar.xz`, `.txz`.
    TarXz,
    /// `.tar.bz2`, `.tbz2`.
    TarBz2,
}

impl ArchiveKind {
    /// How a tar archive of this kind is compressed; `None` for a zip.
    pub(crate) fn tar_compression(self) -> Option<tstore_store::TarCompression> {
        use tstore_store::TarCompression as C;
        match self {
            ArchiveKind::Zip => None,
            ArchiveKind::Tar => Some(C::None),
            ArchiveKind::TarGz => Some(C::Gzip),
            ArchiveKind::TarXz => Some(C::Xz),
            ArchiveKind::TarBz2 => Some(C::Bzip2),
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<ArchiveKind> {
        let n = name.to_ascii_lowercase();
        if n.ends_with(".zip") || n == "zip" {
            Some(ArchiveKind::Zip)
        } else if n.ends_with(".tar.gz") || n.ends_with(".tgz") || n == "tar.gz" || n == "tgz" {
            Some(ArchiveKind::TarGz)
        } else if n.ends_with(".tar.xz") || n.ends_with(".txz") || n == "tar.xz" || n == "txz" {
            Some(ArchiveKind::TarXz)
        } else if n.ends_with(".tar.bz2") || n.ends_with(".tbz2") || n == "tar.bz2" || n == "tbz2" {
            Some(ArchiveKind::TarBz2)
        } else if n.ends_with(".tar") || n == "tar" {
            Some(ArchiveKind::Tar)
        } else {
            None
        }
    }
}

/// What an HTTP address gave.
#[derive(Debug)]
pub(crate) enum HttpFetch {
    /// An archive, downloaded to the given file.
    Archive {
        /// Its format.
        kind: ArchiveKind,
        /// SHA-256 of its bytes.
        sha256: [u8; 32],
        /// The response's `ETag` / `Last-Modified`.
        validators: Validators,
    },
    /// An archive the server says is unchanged since `since` (`304 Not Modified`).
    NotModified,
    /// A page that names another address (`X-Terraform-Get`).
    Redirect(String),
}

/// Fetch `url` (archive into `dest`, or the page's `X-Terraform-Get`). An archive is asked
/// for conditionally when `since` has validators (`If-None-Match` for a strong `ETag`,
/// `If-Modified-Since`), and may then be [`HttpFetch::NotModified`].
pub(crate) fn fetch(
    http: &HttpClient,
    url: &str,
    dest: &Path,
    since: Option<&Validators>,
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<HttpFetch, FetchError> {
    let mut parsed = url::Url::parse(url)
        .map_err(|e| FetchError::Address(format!("invalid URL {:?}: {e}", display_url(url))))?;
    let forced = parsed
        .query_pairs()
        .find(|(k, _)| k == "archive")
        .map(|(_, v)| v.into_owned());
    if forced.is_some() {
        let kept: Vec<(String, String)> = parsed
            .query_pairs()
            .filter(|(k, _)| k != "archive")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        parsed.set_query(None);
        if !kept.is_empty() {
            parsed.query_pairs_mut().extend_pairs(kept);
        }
    }
    let kind = match &forced {
        Some(f) => Some(ArchiveKind::from_name(f).ok_or_else(|| {
            FetchError::Address(format!(
                "archive type {f:?} is not supported (zip, tar.gz, tar.xz, tar.bz2, tar)"
            ))
        })?),
        None => ArchiveKind::from_name(parsed.path()),
    };
    if let Some(kind) = kind {
        // Only a strong ETag says "the same bytes"; a weak one (`W/"…"`) only "equivalent".
        let since = Validators {
            etag: since
                .and_then(|v| v.etag.clone())
                .filter(|e| !e.starts_with("W/")),
            last_modified: since.and_then(|v| v.last_modified.clone()),
        };
        let conditional = since.etag.is_some() || since.last_modified.is_some();
        return match http
            .download_if_changed(parsed.as_str(), dest, &since, progress)
            .map_err(FetchError::from)?
        {
            Some(d) => Ok(HttpFetch::Archive {
                kind,
                sha256: d.sha256,
                validators: d.validators,
            }),
            None if conditional => Ok(HttpFetch::NotModified),
            None => Err(FetchError::HostileArchive(format!(
                "{} answered 304 Not Modified to an unconditional request",
                display_url(url)
            ))),
        };
    }
    parsed.query_pairs_mut().append_pair("terraform-get", "1");
    let resp = http.get(parsed.as_str(), None).map_err(FetchError::from)?;
    if let Some(loc) = resp.header("X-Terraform-Get") {
        return Ok(HttpFetch::Redirect(loc.to_owned()));
    }
    let mut body = String::new();
    resp.into_reader()
        .take(1 << 20)
        .read_to_string(&mut body)
        .map_err(|source| {
            FetchError::from(crate::net::http::HttpError::Body {
                url: url.to_owned(),
                source,
            })
        })?;
    meta_terraform_get(&body)
        .map(HttpFetch::Redirect)
        .ok_or_else(|| {
            FetchError::Protocol(format!(
                "{} is neither an archive (zip, tar.gz, tar.xz, tar.bz2, tar) nor a page with an \
                 X-Terraform-Get header or terraform-get meta tag",
                display_url(url)
            ))
        })
}

/// `<meta name="terraform-get" content="…">` in an HTML page.
fn meta_terraform_get(html: &str) -> Option<String> {
    let i = html.find("name=\"terraform-get\"")?;
    let rest = &html[i..];
    let c = rest.find("content=\"")? + 9;
    let end = rest[c..].find('"')?;
    Some(rest[c..c + end].to_owned())
}

/// A one-shot HTTP server for tests: answers the first request with `response` (a whole
/// HTTP/1.1 response) and closes; returns `http://127.0.0.1:PORT`.
#[cfg(test)]
pub(crate) fn serve_once(response: &'static str) -> String {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let _ = (&stream).write_all(response.as_bytes());
        }
    });
    format!("http://{addr}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_no_secret(message: &str) {
        for secret in ["s3cret", "TOK3N", "SIGV4"] {
            assert!(!message.contains(secret), "{secret} echoed: {message}");
        }
    }

    #[test]
    fn invalid_archive_url_is_shown_without_credentials() {
        let http = HttpClient::new(None, Default::default()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let err = fetch(
            &http,
            "https://user:s3cret@h.test:bad/x.zip?token=TOK3N",
            &tmp.path().join("a"),
            None,
            &|_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("invalid URL"), "{err}");
        assert!(
            err.contains("https://h.test:bad/x.zip?token=redacted"),
            "{err}"
        );
        assert_no_secret(&err);
    }

    #[test]
    fn page_without_location_is_shown_without_credentials() {
        let base = serve_once(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\
             Connection: close\r\n\r\n<html></html>",
        );
        let url = base.replace("http://", "http://user:s3cret@")
            + "/page?X-Amz-Signature=SIGV4&private_token=TOK3N";
        let http = HttpClient::new(None, Default::default()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let err = fetch(&http, &url, &tmp.path().join("a"), None, &|_, _| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("is neither an archive"), "{err}");
        assert!(err.contains(&format!("{base}/page?")), "{err}");
        assert_no_secret(&err);
    }

    /// An archive's download reports its bytes as they come, against its length (the
    /// module archive's bar on a terminal).
    #[test]
    fn an_archive_download_reports_its_progress() {
        let base = serve_once(
            "HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\nContent-Length: 10\r\n\
             Connection: close\r\n\r\n0123456789",
        );
        let http = HttpClient::new(None, Default::default()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        let got = fetch(
            &http,
            &format!("{base}/m.zip"),
            &tmp.path().join("a"),
            None,
            &|bytes, total| seen.lock().unwrap().push((bytes, total)),
        )
        .unwrap();
        assert!(matches!(got, HttpFetch::Archive { .. }));
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.last(), Some(&(10, Some(10))), "{seen:?}");
    }

    #[test]
    fn unconditional_304_is_shown_without_credentials() {
        let base = serve_once("HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n");
        let url = base.replace("http://", "http://TOK3N@") + "/m.zip?sig=SIGV4";
        let http = HttpClient::new(None, Default::default()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let err = fetch(&http, &url, &tmp.path().join("a"), None, &|_, _| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("304 Not Modified"), "{err}");
        assert_no_secret(&err);
    }

    #[test]
    fn kinds_by_name_and_archive_param() {
        for (name, kind) in [
            ("https://h/p.tar.xz", ArchiveKind::TarXz),
            ("p.txz", ArchiveKind::TarXz),
            ("tar.bz2", ArchiveKind::TarBz2),
            ("p.tbz2", ArchiveKind::TarBz2),
            ("p.tgz", ArchiveKind::TarGz),
            ("p.zip", ArchiveKind::Zip),
            ("p.tar", ArchiveKind::Tar),
        ] {
            assert_eq!(ArchiveKind::from_name(name), Some(kind), "{name}");
        }
        assert_eq!(ArchiveKind::from_name("page"), None);
    }
}
