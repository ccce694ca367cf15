//! One request to a registry: its redirects followed a hop at a time, the registry's
//! authentication challenge answered once per scope, and credentials sent only to the
//! registry's own origin (and to a token realm that origin named, over HTTPS).

use super::auth::{self, Challenge};
use super::{OciClient, OciError, OciRepository, MAX_REDIRECTS};
use crate::net::http::{call_error, HttpError};

impl OciClient {
    /// A request to `url` of `repo`, answering the registry's authentication challenge
    /// once; the answer is remembered per registry and scope. Only hops on the registry's
    /// origin carry it ([`OciClient::exchange`]).
    pub(super) fn send(
        &self,
        repo: &OciRepository,
        access: Access,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<ureq::Response, OciError> {
        let scope = match access {
            Access::Pull => format!("repository:{}:pull", repo.name),
            Access::Push => format!("repository:{}:pull,push", repo.name),
        };
        let key = (repo.registry.clone(), scope.clone());
        let cached = self.tokens.lock().expect("token cache").get(&key).cloned();
        let request = Request {
            repo,
            method,
            url,
            headers,
            body,
        };
        let challenge = match self.exchange(&request, cached.as_deref())? {
            Hop::Done(resp) => return Ok(resp),
            Hop::Denied {
                status: 401,
                challenge,
                ..
            } => challenge,
            Hop::Denied { error, .. } => return Err(error.into()),
        };
        let unauthorized = |message: String| OciError::Unauthorized {
            registry: repo.registry.clone(),
            repository: repo.name.clone(),
            message,
        };
        let login = self
            .credentials
            .for_repository(repo)
            .map_err(|e| unauthorized(e.to_string()))?;
        let authorization = match challenge {
            // The realm was named by the registry's own origin (`exchange` answers no other
            // origin's challenge): the login may go there.
            Challenge::Bearer { realm, service } => {
                // Registries are reached over HTTPS: a login is never sent in clear text to
                // a token service one names over plain HTTP (a downgrade anyone on the path
                // could read).
                if login.is_some() && url::Url::parse(&realm).is_ok_and(|u| u.scheme() != "https")
                {
                    return Err(unauthorized(format!(
                        "the registry names a token service that is not HTTPS ({}); tstore does \
                         not send your login there",
                        url::Url::parse(&realm)
                            .map(|u| u.origin().ascii_serialization())
                            .unwrap_or_default()
                    )));
                }
                let token = auth::fetch_token(
                    &self.http,
                    &realm,
                    service.as_deref(),
                    &scope,
                    login.as_ref(),
                )
                .map_err(|e| unauthorized(e.to_string()))?;
                format!("Bearer {token}")
            }
            Challenge::Basic => match &login {
                Some(login) => login.basic_header(),
                None => {
                    return Err(unauthorized(
                        "the registry asks for a user name and password; log in with `docker login` (a docker-style config.json)".into(),
                    ))
                }
            },
            Challenge::Missing => {
                return Err(unauthorized(
                    "HTTP 401 without an authentication challenge".into(),
                ))
            }
            Challenge::Unknown(raw) => {
                return Err(unauthorized(format!(
                    "unsupported authentication challenge {:?}",
                    crate::redact::scrub(&raw, &[])
                )))
            }
        };
        self.tokens
            .lock()
            .expect("token cache")
            .insert(key, authorization.clone());
        match self.exchange(&request, Some(&authorization))? {
            Hop::Done(resp) => Ok(resp),
            Hop::Denied { .. } if login.is_none() => Err(unauthorized(
                "anonymous access does not allow this; log in with `docker login` (a docker-style config.json) or an `oci_credentials` block".into(),
            )),
            Hop::Denied { .. } => Err(unauthorized("the registry refused the credentials".into())),
        }
    }

    /// One request and the redirects it leads to, followed here rather than by ureq so that
    /// each hop's headers are decided by its origin: `authorization` goes to hops on the
    /// registry's origin only, and a hop on another origin that asks for credentials fails
    /// the request ([`OciError::ForeignChallenge`]) instead of being answered. A `303`, and
    /// a `301`/`302` of anything but `GET`/`HEAD`, continue as a `GET` without a body (as
    /// browsers and ureq do); `307`/`308` repeat the request.
    fn exchange(
        &self,
        request: &Request<'_>,
        authorization: Option<&str>,
    ) -> Result<Hop, OciError> {
        let repo = request.repo;
        let registry = registry_origin(repo);
        let mut url = parse_url(request.url)?;
        let mut method = request.method;
        let mut body = request.body;
        for _ in 0..=MAX_REDIRECTS {
            let own = url.origin() == registry;
            let shown = shown_url(&url, &registry);
            let mut req = self.http.request_one_hop(method, url.as_str());
            // Blob transfers are downloads and uploads (the stall rule and the download cap
            // bound them); everything else is a document that must arrive within the
            // document deadline.
            if !url.path().contains("/blobs/") {
                req = req.timeout(self.http.limits().document_deadline);
            }
            for (k, v) in request.headers {
                req = req.set(k, v);
            }
            if let (true, Some(a)) = (own, authorization) {
                req = req.set("Authorization", a);
            }
            let result = match body {
                Some(bytes) => req.send_bytes(bytes),
                None => req.call(),
            };
            let resp = match result {
                Ok(resp) => resp,
                Err(ureq::Error::Status(status @ (401 | 403), resp)) if own => {
                    let challenge = match status {
                        401 => resp
                            .header("WWW-Authenticate")
                            .map(Challenge::parse)
                            .unwrap_or_default(),
                        _ => Challenge::Missing,
                    };
                    let error = call_error(&shown, ureq::Error::Status(status, resp));
                    return Ok(Hop::Denied {
                        status,
                        challenge,
                        error,
                    });
                }
                Err(ureq::Error::Status(401, _)) => {
                    return Err(OciError::ForeignChallenge {
                        registry: repo.registry.clone(),
                        repository: repo.name.clone(),
                        origin: url.origin().ascii_serialization(),
                    })
                }
                Err(e) => return Err(call_error(&shown, e).into()),
            };
            let status = resp.status();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                return Ok(Hop::Done(resp));
            }
            let location = resp.header("Location").ok_or_else(|| OciError::Malformed {
                what: "redirect".into(),
                url: shown.clone(),
                message: format!("HTTP {status} without a Location header"),
            })?;
            url = url.join(location).map_err(|e| OciError::Malformed {
                what: "redirect".into(),
                url: shown.clone(),
                message: format!("its Location is not a URL: {e}"),
            })?;
            if status == 303 || (matches!(status, 301 | 302) && !matches!(method, "GET" | "HEAD")) {
                method = "GET";
                body = None;
            }
        }
        Err(OciError::TooManyRedirects {
            url: request.url.to_owned(),
        })
    }
}

/// One request of [`OciClient::send`], as first asked for.
struct Request<'a> {
    repo: &'a OciRepository,
    method: &'a str,
    url: &'a str,
    headers: &'a [(&'a str, &'a str)],
    body: Option<&'a [u8]>,
}

/// How an [`OciClient::exchange`] ended.
enum Hop {
    /// The last hop's response (not an error status, not a redirect).
    Done(ureq::Response),
    /// The registry's own origin answered `401` (with its challenge) or `403`.
    Denied {
        /// 401 or 403.
        status: u16,
        /// The `WWW-Authenticate` challenge of a 401.
        challenge: Challenge,
        /// The answer as an error, for a caller that will not answer the challenge.
        error: HttpError,
    },
}

/// The origin credentials for `repo` belong to: `https://REGISTRY`.
pub(super) fn registry_origin(repo: &OciRepository) -> url::Origin {
    match url::Url::parse(&format!("https://{}/", repo.registry)) {
        Ok(url) => url.origin(),
        // A registry that is not a host matches no URL: nothing gets its credentials.
        Err(_) => url::Origin::new_opaque(),
    }
}

pub(super) fn parse_url(url: &str) -> Result<url::Url, OciError> {
    url::Url::parse(url).map_err(|e| {
        OciError::Http(HttpError::Malformed {
            url: url.to_owned(),
            message: e.to_string(),
        })
    })
}

/// `url` as messages show it, by [`display_url`](crate::redact::display_url) (no user
/// information, no secret query value): whole on the registry's origin; elsewhere also
/// without its query and fragment, where storage hosts put signatures that grant access.
pub(super) fn shown_url(url: &url::Url, registry: &url::Origin) -> String {
    if url.origin() == *registry {
        return crate::redact::display_url(url.as_str());
    }
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    crate::redact::display_url(shown.as_str())
}

/// What a request needs the registry to allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    Pull,
    Push,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_carry_no_credentials() {
        let repo = OciRepository {
            registry: "r.test".into(),
            name: "a".into(),
        };
        let registry = registry_origin(&repo);
        let own = url::Url::parse("https://user:s3cret@r.test/v2/a/tags/list?last=b&token=TOK3N")
            .unwrap();
        assert_eq!(
            shown_url(&own, &registry),
            "https://r.test/v2/a/tags/list?last=b&token=redacted"
        );
        let cdn = url::Url::parse("https://TOK3N@cdn.test/blob?X-Amz-Signature=SIGV4#f").unwrap();
        assert_eq!(shown_url(&cdn, &registry), "https://cdn.test/blob");
    }
}
