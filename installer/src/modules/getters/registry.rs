//! The module registry protocol: `modules.v1` discovery, `versions`, and `download` answering
//! `204` + `X-Terraform-Get` (or `200` + `{"location":…}`), as tofu's registry client reads
//! them (<https://github.com/opentofu/opentofu/blob/main/internal/registry/client.go>).

use crate::modules::FetchError;
use tstore_tofu::version::{ModuleVersionConstraints, Version};

use crate::net::http::HttpClient;
use crate::net::{discovery, NetworkSettings};
use crate::redact::display_url;

/// A registry module address.
#[derive(Clone, Debug)]
pub(crate) struct RegistryModule<'a> {
    /// Host (maybe with port).
    pub host: &'a str,
    /// `NS/NAME/SYSTEM`.
    pub path: String,
}

/// A `versions` answer.
#[derive(serde::Deserialize)]
pub(crate) struct Versions {
    modules: Vec<VersionList>,
}

#[derive(serde::Deserialize)]
struct VersionList {
    versions: Vec<VersionEntry>,
}

#[derive(serde::Deserialize)]
struct VersionEntry {
    version: String,
    /// When the registry took the version in, where its answer says.
    #[serde(flatten)]
    dates: crate::cooldown::RegistryDates,
}

/// A version a registry lists, with its publish time when the registry gives one.
pub(crate) type Listed = (Version, Option<u64>);

/// When the module mirror first held a version's resolution, and the package (`h1:`) it
/// names; `None`: the mirror has no stamped resolution of it (or is not asked).
pub(crate) type MirrorDate<'a> = &'a dyn Fn(&Version) -> Option<(u64, String)>;

/// Select the newest version matching `constraints` (the version listing is read every
/// time, as tofu does), under `cooldown` the newest that is old enough, and return it with
/// its download endpoint and, under the cooldown, when it was published.
pub(crate) fn select(
    run: &crate::Run,
    http: &HttpClient,
    net: &NetworkSettings,
    m: &RegistryModule<'_>,
    constraints: &ModuleVersionConstraints,
    cooldown: Option<&crate::ReleaseAge>,
    mirror_date: MirrorDate<'_>,
) -> Result<Selected, FetchError> {
    let token = net.credentials.token(m.host);
    let base = discovery::discover(http, &net.hosts, m.host, "modules.v1", token)
        .map_err(FetchError::from)?;
    let versions_url = base
        .join(&format!("{}/versions", m.path))
        .map_err(FetchError::from)?;
    let listed = versions(run, http, token, &versions_url, m)?;
    let available: Vec<Version> = listed.iter().map(|(v, _)| v.clone()).collect();
    let selectable = constraints.selectable(&available);
    if let Some(policy) = cooldown.filter(|p| p.applies_to(&forms(m))) {
        // Newest first, each dated by the strongest source that has a date (the module
        // mirror's first sighting, then the registry's own), until one is old enough: older
        // versions are never asked about.
        let now = crate::cooldown::now();
        let mut dated: Vec<(Version, Option<crate::Published>)> = Vec::new();
        let mut vouched_h1 = None;
        for v in &selectable {
            let (published, h1) = match mirror_date(v) {
                Some((at, h1)) => (
                    Some(crate::Published::by(at, crate::AgeSource::Mirror)),
                    Some(h1),
                ),
                None => {
                    let at = listed.iter().find(|(l, _)| l == *v).and_then(|(_, at)| *at);
                    (
                        at.map(|at| crate::Published::by(at, crate::AgeSource::Registry)),
                        None,
                    )
                }
            };
            dated.push(((*v).clone(), published));
            if published.is_some_and(|p| policy.is_old_enough(p.at, now)) {
                vouched_h1 = h1;
                break;
            }
        }
        if !dated.is_empty() {
            let chosen = policy
                .choose(&dated, now)
                .map_err(|held| FetchError::HeldBack {
                    module: format!("{}/{}", m.host, m.path),
                    constraint: constraints.to_go_string(),
                    held,
                    policy: policy.describe(),
                })?;
            let download = base
                .join(&format!("{}/{}/download", m.path, chosen.version))
                .map_err(FetchError::from)?;
            return Ok(Selected {
                version: chosen.version,
                download,
                published: chosen.published,
                held_back: chosen.held_back,
                vouched_h1,
            });
        }
    }
    let version = selectable.first().map(|v| (*v).clone()).ok_or_else(|| {
        // terraform's "Unresolvable module version constraint", with the newest release.
        let newest = available.iter().filter(|v| !v.is_prerelease()).max();
        FetchError::Unresolvable {
            module: format!("{}/{}", m.host, m.path),
            constraint: constraints.to_go_string(),
            newest: newest.map(ToString::to_string),
        }
    })?;
    let download = base
        .join(&format!("{}/{version}/download", m.path))
        .map_err(FetchError::from)?;
    Ok(Selected {
        version,
        download,
        published: None,
        held_back: Vec::new(),
        vouched_h1: None,
    })
}

/// A version selected from a registry's list.
pub(crate) struct Selected {
    pub(crate) version: Version,
    /// Its download endpoint.
    pub(crate) download: url::Url,
    /// Under the cooldown, when it was published.
    pub(crate) published: Option<crate::Published>,
    /// Under the cooldown, the newer versions held back.
    pub(crate) held_back: Vec<crate::HeldBack>,
    /// When the chosen version's date is the module mirror's: the package (`h1:`) its
    /// resolution names, the only one that date is for.
    pub(crate) vouched_h1: Option<String>,
}

/// The forms of a registry module an exclusion pattern may match: in full, and without
/// its host.
pub(crate) fn forms(m: &RegistryModule<'_>) -> Vec<String> {
    vec![format!("{}/{}", m.host, m.path), m.path.clone()]
}

/// The versions each registry listed in a run, by URL.
pub(crate) type Listings = super::asked_once::AskedOnce<String, Vec<Listed>>;

/// The versions a registry lists at `url`: asked once per run (a run over many roots
/// shares it, as one init's calls of one module do).
fn versions(
    run: &crate::Run,
    http: &HttpClient,
    token: Option<&str>,
    url: &url::Url,
    m: &RegistryModule<'_>,
) -> Result<Vec<Listed>, FetchError> {
    // Roots fetched in parallel wait for the first asker instead of asking again.
    run.listings
        .get_or_ask(url.to_string(), || list_versions(http, token, url, m))
}

/// [`versions`]' question to the registry.
fn list_versions(
    http: &HttpClient,
    token: Option<&str>,
    url: &url::Url,
    m: &RegistryModule<'_>,
) -> Result<Vec<Listed>, FetchError> {
    let list: Versions = http.get_json(url.as_str(), token).map_err(|e| match e {
        crate::net::http::HttpError::Status { status: 404, .. } => FetchError::ModuleNotFound {
            host: m.host.to_owned(),
            path: m.path.to_owned(),
        },
        e => FetchError::from(e),
    })?;
    Ok(listed_dated(&list))
}

/// The versions a `versions` answer lists, with their publish times where given.
fn listed_dated(list: &Versions) -> Vec<Listed> {
    list.modules
        .first()
        .map(|l| {
            l.versions
                .iter()
                .filter_map(|v| {
                    let version = Version::parse_lenient(&v.version).ok()?;
                    Some((version, v.dates.published()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The versions a `versions` answer lists (those that do not parse left out).
#[cfg(any(fuzzing, test))]
pub(crate) fn listed_versions(list: &Versions) -> Vec<Version> {
    list.modules
        .first()
        .map(|l| {
            l.versions
                .iter()
                .filter_map(|v| Version::parse_lenient(&v.version).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The package address the `download` endpoint names (relative locations resolved against
/// the download URL).
pub(crate) fn location(
    http: &HttpClient,
    net: &NetworkSettings,
    m: &RegistryModule<'_>,
    download: &url::Url,
) -> Result<String, FetchError> {
    let token = net.credentials.token(m.host);
    let resp = http
        .get(download.as_str(), token)
        .map_err(FetchError::from)?;
    let location = match resp.header("X-Terraform-Get") {
        Some(l) => l.to_owned(),
        None => {
            let body: Location = serde_json::from_reader(resp.into_reader()).map_err(|e| {
                FetchError::Protocol(format!(
                    "{} answered neither X-Terraform-Get nor a JSON location: {e}",
                    display_url(download.as_str())
                ))
            })?;
            body.location
        }
    };
    resolve_location(download, location)
}

/// A `download` answer's JSON body (when it has no `X-Terraform-Get` header).
#[derive(serde::Deserialize)]
pub(crate) struct Location {
    /// The package's address.
    pub(crate) location: String,
}

/// The package address `location` (from a `download` answer) means: relative ones resolved
/// against the download URL.
pub(crate) fn resolve_location(
    download: &url::Url,
    location: String,
) -> Result<String, FetchError> {
    let location = if ["/", "./", "../"].iter().any(|p| location.starts_with(p)) {
        download
            .join(&location)
            .map_err(FetchError::from)?
            .to_string()
    } else {
        location
    };
    Ok(location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_with_hostile_dates_lists_its_versions_undated() {
        let list: Versions = serde_json::from_str(
            r#"{"modules":[{"versions":[
                {"version":"1.0.0","published_at":"1970-01-02T00:00:00Z"},
                {"version":"1.1.0","published_at":5,"discovered":["x"]},
                {"version":"bad"}
            ]}]}"#,
        )
        .unwrap();
        let listed = listed_dated(&list);
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].1, Some(86_400));
        assert_eq!(listed[1].1, None);
        assert_eq!(listed_versions(&list).len(), 2);
    }

    #[test]
    fn download_without_location_is_shown_without_credentials() {
        let base = crate::modules::getters::archive::serve_once(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\
             Connection: close\r\n\r\nnothing",
        );
        let download = url::Url::parse(
            &(base.replace("http://", "http://user:s3cret@")
                + "/v1/modules/a/b/c/1.0.0/download?X-Amz-Signature=SIGV4"),
        )
        .unwrap();
        let http = HttpClient::new(None, Default::default()).unwrap();
        let m = RegistryModule {
            host: "127.0.0.1",
            path: "a/b/c".into(),
        };
        let err = location(&http, &NetworkSettings::default(), &m, &download)
            .unwrap_err()
            .to_string();
        assert!(err.contains("answered neither X-Terraform-Get"), "{err}");
        assert!(err.contains("X-Amz-Signature=redacted"), "{err}");
        assert!(!err.contains("s3cret") && !err.contains("SIGV4"), "{err}");
    }
}
