//! Authentication to OCI registries: the `WWW-Authenticate` challenge a registry answers
//! with, the token service of the bearer flow (anonymous when no credentials are known),
//! and the credentials a user has configured for a registry.
//!
//! Credentials come from docker-style `config.json` files (`auths` entries, as `docker
//! login` writes them), the same files tofu reads. Credential helpers (`credsStore`,
//! `credHelpers`) run a program and are not supported yet: a registry that needs them
//! answers 401 and the error says which registry asked.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::net::http::{call_error, read_body_capped, HttpClient, HttpError};

/// What a registry asked for in its `WWW-Authenticate` header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Challenge {
    /// `Bearer realm="…",service="…"`: get a token from `realm`.
    Bearer {
        /// The token service URL.
        realm: String,
        /// The `service` parameter to pass back.
        service: Option<String>,
    },
    /// `Basic`: send a user name and password.
    Basic,
    /// Anything else (kept for the message).
    Unknown(String),
    /// No header at all.
    #[default]
    Missing,
}

impl Challenge {
    /// Parse a `WWW-Authenticate` header value.
    pub fn parse(header: &str) -> Challenge {
        let (scheme, rest) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => Challenge::Basic,
            "bearer" => {
                let params = auth_params(rest);
                match params.get("realm") {
                    Some(realm) => Challenge::Bearer {
                        realm: realm.clone(),
                        service: params.get("service").cloned(),
                    },
                    None => Challenge::Unknown(header.to_owned()),
                }
            }
            _ => Challenge::Unknown(header.to_owned()),
        }
    }
}

/// `key="value"` pairs of a challenge, commas inside quotes kept.
fn auth_params(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            }
        };
        out.insert(key, value.to_owned());
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

/// A user name and password (or identity token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("username", &self.username)
            .field("password", &"…")
            .finish()
    }
}

impl Login {
    /// `Basic base64(user:password)`.
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

/// Credentials by registry host, read from docker-style `config.json` files.
#[derive(Clone, Debug, Default)]
pub struct OciCredentials {
    logins: BTreeMap<String, Login>,
}

/// Errors reading a credentials file.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The file could not be read.
    #[error("cannot read the registry credentials in {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a docker-style config.
    #[error("{} is not a valid docker-style config.json: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl OciCredentials {
    /// The `auths` of the docker-style config files tofu consults, in its order:
    /// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`; then
    /// `$XDG_RUNTIME_DIR/containers/auth.json` (Podman's). An earlier file wins for a host.
    pub fn from_environment(home: Option<&Path>) -> Result<OciCredentials, CredentialsError> {
        let mut files = Vec::new();
        match std::env::var_os("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
            Some(dir) => files.push(PathBuf::from(dir).join("config.json")),
            None => {
                if let Some(home) = home {
                    files.push(home.join(".docker/config.json"));
                }
            }
        }
        if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
            files.push(PathBuf::from(dir).join("containers/auth.json"));
        }
        let mut creds = OciCredentials::default();
        for file in files.iter().rev() {
            if file.is_file() {
                creds.logins.extend(read_docker_config(file)?);
            }
        }
        Ok(creds)
    }

    /// The login for `registry` (`host[:port]`), if any.
    pub fn for_registry(&self, registry: &str) -> Option<Login> {
        self.logins.get(&registry.to_ascii_lowercase()).cloned()
    }
}

/// The `auths` of one docker-style config file: host → login. Keys may be URLs
/// (`https://host/v1/`), as older `docker login` wrote them.
fn read_docker_config(path: &Path) -> Result<BTreeMap<String, Login>, CredentialsError> {
    let invalid = |message: String| CredentialsError::Invalid {
        path: path.to_owned(),
        message,
    };
    let mut text = String::new();
    fs_err::File::open(path)
        .and_then(|f| f.take(1 << 20).read_to_string(&mut text))
        .map_err(|source| CredentialsError::Read {
            path: path.to_owned(),
            source,
        })?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let mut out = BTreeMap::new();
    let Some(auths) = doc.get("auths").and_then(|a| a.as_object()) else {
        return Ok(out);
    };
    for (key, entry) in auths {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let login = if let Some(auth) = entry.get("auth").and_then(|a| a.as_str()) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth)
                .map_err(|e| invalid(format!("auths[{key:?}].auth is not base64: {e}")))?;
            let decoded = String::from_utf8(decoded)
                .map_err(|_| invalid(format!("auths[{key:?}].auth is not UTF-8")))?;
            let Some((user, pass)) = decoded.split_once(':') else {
                return Err(invalid(format!("auths[{key:?}].auth is not user:password")));
            };
            Login {
                username: user.to_owned(),
                password: pass.to_owned(),
            }
        } else if let (Some(user), Some(pass)) = (
            entry.get("username").and_then(|v| v.as_str()),
            entry.get("password").and_then(|v| v.as_str()),
        ) {
            Login {
                username: user.to_owned(),
                password: pass.to_owned(),
            }
        } else {
            continue;
        };
        out.insert(host, login);
    }
    Ok(out)
}

/// Errors of the token service.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token request failed.
    #[error("token service: {0}")]
    Http(#[from] HttpError),
    /// The answer had no token.
    #[error("the token service at {realm} answered without a token")]
    NoToken {
        /// The token service.
        realm: String,
    },
}

/// A bearer token for `scope` from the token service `realm` (the distribution spec's
/// token flow), with `login` as basic credentials when given, anonymously otherwise.
pub fn fetch_token(
    http: &HttpClient,
    realm: &str,
    service: Option<&str>,
    scope: &str,
    login: Option<&Login>,
) -> Result<String, TokenError> {
    let mut url = url::Url::parse(realm).map_err(|e| {
        TokenError::Http(HttpError::Malformed {
            url: realm.to_owned(),
            message: e.to_string(),
        })
    })?;
    {
        let mut query = url.query_pairs_mut();
        if let Some(service) = service {
            query.append_pair("service", service);
        }
        query.append_pair("scope", scope);
    }
    let mut req = http.request("GET", url.as_str());
    if let Some(login) = login {
        req = req.set("Authorization", &login.basic_header());
    }
    let resp = req.call().map_err(|e| call_error(url.as_str(), e))?;
    #[derive(serde::Deserialize)]
    struct TokenDoc {
        token: Option<String>,
        access_token: Option<String>,
    }
    let body = read_body_capped(resp, url.as_str(), 1 << 20)?;
    let doc: TokenDoc = serde_json::from_slice(&body).map_err(|e| HttpError::Malformed {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    doc.token
        .or(doc.access_token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| TokenError::NoToken {
            realm: realm.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        assert_eq!(
            Challenge::parse(
                r#"Bearer realm="https://auth.test/token",service="registry.test",scope="repository:a/b:pull""#
            ),
            Challenge::Bearer {
                realm: "https://auth.test/token".into(),
                service: Some("registry.test".into()),
            }
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="Registry Realm""#),
            Challenge::Basic
        );
        assert!(matches!(
            Challenge::parse("Negotiate"),
            Challenge::Unknown(_)
        ));
    }

    #[test]
    fn docker_config_auths() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        fs_err::write(
            &path,
            r#"{"auths":{
                "https://Index.Registry.Test/v1/":{"auth":"dXNlcjpwYXNz"},
                "r.test:5000":{"username":"u2","password":"p2"},
                "helper.test":{}
            }}"#,
        )
        .unwrap();
        let logins = read_docker_config(&path).unwrap();
        assert_eq!(logins["index.registry.test"].username, "user");
        assert_eq!(logins["index.registry.test"].password, "pass");
        assert_eq!(logins["r.test:5000"].password, "p2");
        assert!(!logins.contains_key("helper.test"));
        assert_eq!(
            logins["r.test:5000"].basic_header(),
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("u2:p2")
            )
        );
    }
}
