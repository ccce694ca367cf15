//! HTTP(S) module packages (spec/modules.md §2): archives by extension or `?archive=`, and
//! pages answering `?terraform-get=1` with an `X-Terraform-Get` address.
//!
//! Tar archives are checked entry by entry as the store checks zips (no absolute paths, no
//! `..`, only files, directories and symlinks, size limits enforced while extracting); the
//! extracted directory then goes through the store's directory ingest, which refuses symlinks
//! leading out of the package. Zips go straight to the store's zip ingest.

use std::io::Read;
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use crate::http::HttpClient;

/// An archive format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// `.zip`.
    Zip,
    /// `.tar.gz`, `.tgz`.
    TarGz,
    /// `.tar`.
    Tar,
}

impl ArchiveKind {
    fn from_name(name: &str) -> Option<ArchiveKind> {
        let n = name.to_ascii_lowercase();
        if n.ends_with(".zip") || n == "zip" {
            Some(ArchiveKind::Zip)
        } else if n.ends_with(".tar.gz") || n.ends_with(".tgz") || n == "tar.gz" || n == "tgz" {
            Some(ArchiveKind::TarGz)
        } else if n.ends_with(".tar") || n == "tar" {
            Some(ArchiveKind::Tar)
        } else {
            None
        }
    }
}

/// What an HTTP address gave.
#[derive(Debug)]
pub enum HttpFetch {
    /// An archive, downloaded to the given file.
    Archive {
        /// Its format.
        kind: ArchiveKind,
        /// SHA-256 of its bytes.
        sha256: [u8; 32],
    },
    /// A page that names another address (`X-Terraform-Get`).
    Redirect(String),
}

/// Fetch `url` (archive into `dest`, or the page's `X-Terraform-Get`).
pub fn fetch(http: &HttpClient, url: &str, dest: &Path) -> Result<HttpFetch, String> {
    let mut parsed = url::Url::parse(url).map_err(|e| format!("invalid URL {url:?}: {e}"))?;
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
        Some(f) => Some(
            ArchiveKind::from_name(f)
                .ok_or_else(|| format!("archive type {f:?} is not supported (zip, tar.gz, tar)"))?,
        ),
        None => ArchiveKind::from_name(parsed.path()),
    };
    if let Some(kind) = kind {
        let (sha256, _) = http
            .download(parsed.as_str(), dest, &|_, _| {})
            .map_err(|e| crate::modules::chain(&e))?;
        return Ok(HttpFetch::Archive { kind, sha256 });
    }
    parsed.query_pairs_mut().append_pair("terraform-get", "1");
    let resp = http
        .get(parsed.as_str(), None)
        .map_err(|e| crate::modules::chain(&e))?;
    if let Some(loc) = resp.header("X-Terraform-Get") {
        return Ok(HttpFetch::Redirect(loc.to_owned()));
    }
    let mut body = String::new();
    let _ = resp.into_reader().take(1 << 20).read_to_string(&mut body);
    meta_terraform_get(&body)
        .map(HttpFetch::Redirect)
        .ok_or_else(|| {
            format!(
                "{url} is neither an archive (zip, tar.gz, tar) nor a page with an \
                 X-Terraform-Get header or terraform-get meta tag"
            )
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

/// SHA-256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<[u8; 32]> {
    let mut f = fs_err::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(h.finalize().into())
}

/// Extract a tar (optionally gzipped) into `dest` with the store's archive checks.
pub fn extract_tar(
    archive: &Path,
    gz: bool,
    dest: &Path,
    limits: &tstore_store::Limits,
) -> Result<(), String> {
    let file = fs_err::File::open(archive).map_err(|e| e.to_string())?;
    let reader: Box<dyn Read> = if gz {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut tar = tar::Archive::new(reader);
    let mut total = 0u64;
    let mut count = 0u64;
    let mut seen = std::collections::HashSet::new();
    for entry in tar.entries().map_err(|e| format!("corrupt archive: {e}"))? {
        let mut entry = entry.map_err(|e| format!("corrupt archive: {e}"))?;
        let raw = entry
            .path()
            .map_err(|e| format!("corrupt archive: {e}"))?
            .into_owned();
        let name = raw.display().to_string();
        let mut rel = std::path::PathBuf::new();
        for c in raw.components() {
            match c {
                Component::Normal(p) => rel.push(p),
                Component::CurDir => {}
                _ => return Err(format!("entry {name:?} has an absolute path or \"..\"")),
            }
        }
        // `git archive` writes a global pax header; skip metadata entries.
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
        {
            continue;
        }
        if rel.as_os_str().is_empty() {
            continue;
        }
        count += 1;
        if count > limits.max_entries {
            return Err(format!("more than {} entries", limits.max_entries));
        }
        if !seen.insert(rel.clone()) && !kind.is_dir() {
            return Err(format!("entry {name:?} appears twice"));
        }
        let out = dest.join(&rel);
        if let Some(parent) = out.parent() {
            // A symlinked parent would let a later entry write outside `dest`.
            let mut p = dest.to_path_buf();
            for c in rel.parent().into_iter().flat_map(|r| r.components()) {
                p.push(c);
                if fs_err::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(format!("entry {name:?} is inside a symlinked directory"));
                }
            }
            fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        if kind.is_dir() {
            fs_err::create_dir_all(&out).map_err(|e| e.to_string())?;
        } else if kind.is_file() {
            let mode = entry.header().mode().unwrap_or(0o644);
            let mut f = fs_err::File::create(&out).map_err(|e| e.to_string())?;
            let remaining = limits.max_total_bytes.saturating_sub(total);
            let n = std::io::copy(
                &mut (&mut entry).take(remaining.min(limits.max_entry_bytes) + 1),
                &mut f,
            )
            .map_err(|e| format!("corrupt archive: {e}"))?;
            if n > limits.max_entry_bytes {
                return Err(format!(
                    "entry {name:?} is larger than {} bytes",
                    limits.max_entry_bytes
                ));
            }
            total += n;
            if total > limits.max_total_bytes {
                return Err(format!(
                    "more than {} bytes in total",
                    limits.max_total_bytes
                ));
            }
            use std::os::unix::fs::PermissionsExt as _;
            fs_err::set_permissions(
                &out,
                std::fs::Permissions::from_mode(if mode & 0o111 != 0 { 0o755 } else { 0o644 }),
            )
            .map_err(|e| e.to_string())?;
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(|e| format!("corrupt archive: {e}"))?
                .ok_or_else(|| format!("symlink {name:?} has no target"))?;
            if target.is_absolute() {
                return Err(format!("symlink {name:?} has an absolute target"));
            }
            std::os::unix::fs::symlink(&target, &out).map_err(|e| e.to_string())?;
        } else {
            return Err(format!(
                "entry {name:?} is not a file, directory or symlink"
            ));
        }
    }
    Ok(())
}
