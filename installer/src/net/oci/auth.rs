//! Authentication to OCI registries: the `WWW-Authenticate` challenge a registry answers
//! with, the token service of the bearer flow (anonymous when no credentials are known),
//! and the credentials a user has configured for a registry.
//!
//! Credentials come from the docker-style files OpenTofu reads (`auths` entries, as `docker
//! login`, `oras login` or `skopeo login` write them), most specific pattern first, and from
//! the docker credential helpers they name (`credHelpers`, `credsStore`), and from the CLI
//! configuration's `oci_credentials` blocks: the most specific pattern wins, a block
//! before a file on a tie.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use super::OciRepository;
use crate::net::http::{call_error, read_body_capped, HttpClient, HttpError};

/// What a registry asked for in its `WWW-Authenticate` header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Challenge {
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
    pub(crate) fn parse(header: &str) -> Challenge {
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

/// Where the login for a registry (or a repository prefix) comes from.
#[derive(Clone, Debug)]
enum CredentialSource {
    /// A user name and password written in the file.
    Login(Login),
    /// A docker credential helper, `docker-credential-NAME get`.
    Helper(String),
}

/// Where docker-style login files are looked for, from the environment the binary read:
/// `HOME`, `XDG_RUNTIME_DIR`, `XDG_CONFIG_HOME`, `DOCKER_CONFIG` (empty values are unset).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoginDirs {
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `XDG_RUNTIME_DIR` (podman's `containers/auth.json`).
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `DOCKER_CONFIG`.
    pub docker_config: Option<PathBuf>,
}

impl LoginDirs {
    /// The directories an environment names.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> LoginDirs {
        let dir = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        LoginDirs {
            home: dir("HOME"),
            xdg_runtime_dir: dir("XDG_RUNTIME_DIR"),
            xdg_config_home: dir("XDG_CONFIG_HOME"),
            docker_config: dir("DOCKER_CONFIG"),
        }
    }
}

/// Registry logins from docker-style config files, by pattern: a registry host, or a host
/// and a repository prefix (`example.com/team`).
#[derive(Clone, Debug, Default)]
pub struct OciCredentials {
    /// The CLI configuration's `oci_credentials` blocks: first on a tie of specificity.
    explicit: Vec<(String, CredentialSource)>,
    /// Patterns with their sources, from every file in discovery order.
    entries: Vec<(String, CredentialSource)>,
    /// The helper for repositories no entry names: the `oci_default_credentials` block's,
    /// else the `credsStore` of the first file that names one.
    default_helper: Option<String>,
}

/// Errors reading a credentials file or running a credential helper.
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
    /// A credential helper failed or answered something else than credentials.
    #[error(
        "the credential helper docker-credential-{helper} failed for {}: {message}",
        super::display_reference(registry)
    )]
    Helper {
        /// The helper's name.
        helper: String,
        /// The registry asked about.
        registry: String,
        /// What went wrong.
        message: String,
    },
}

impl OciCredentials {
    /// The docker-style files OpenTofu consults, in its order (an earlier file wins for a
    /// pattern): `$XDG_RUNTIME_DIR/containers/auth.json`,
    /// `$XDG_CONFIG_HOME/containers/auth.json` (`~/.config` by default),
    /// `~/.docker/config.json` (or `$DOCKER_CONFIG/config.json`), `~/.dockercfg`.
    ///
    /// `explicit` are the CLI configuration's `oci_credentials` blocks: they win over a file
    /// entry of the same specificity, not over a more specific one.
    ///
    /// `defaults` (the `oci_default_credentials` block) may name other files instead, which
    /// must then exist, turn the files off, and name a helper for every repository no entry
    /// names (before any `credsStore`).
    pub fn from_environment(
        dirs: &LoginDirs,
        explicit: &BTreeMap<String, tstore_tofu::cliconfig::OciCredentialsBlock>,
        defaults: &tstore_tofu::cliconfig::OciDefaultCredentials,
    ) -> Result<OciCredentials, CredentialsError> {
        let home = dirs.home.as_deref();
        let var = |k: &str| match k {
            "XDG_RUNTIME_DIR" => dirs.xdg_runtime_dir.clone(),
            "XDG_CONFIG_HOME" => dirs.xdg_config_home.clone(),
            "DOCKER_CONFIG" => dirs.docker_config.clone(),
            _ => None,
        };
        let mut files = Vec::new();
        if let Some(dir) = var("XDG_RUNTIME_DIR") {
            files.push((dir.join("containers/auth.json"), false));
        }
        match (var("XDG_CONFIG_HOME"), home) {
            (Some(dir), _) => files.push((dir.join("containers/auth.json"), false)),
            (None, Some(home)) => files.push((home.join(".config/containers/auth.json"), false)),
            (None, None) => {}
        }
        match (var("DOCKER_CONFIG"), home) {
            (Some(dir), _) => files.push((dir.join("config.json"), false)),
            (None, Some(home)) => files.push((home.join(".docker/config.json"), false)),
            (None, None) => {}
        }
        if let Some(home) = home {
            files.push((home.join(".dockercfg"), true));
        }
        let mut creds = OciCredentials {
            default_helper: defaults.docker_credentials_helper.clone(),
            ..OciCredentials::default()
        };
        for (label, block) in explicit {
            let source = match block {
                tstore_tofu::cliconfig::OciCredentialsBlock::Login { username, password } => {
                    CredentialSource::Login(Login {
                        username: username.clone(),
                        password: password.clone(),
                    })
                }
                tstore_tofu::cliconfig::OciCredentialsBlock::Helper(helper) => {
                    CredentialSource::Helper(helper.clone())
                }
            };
            creds.explicit.push((label.clone(), source));
        }
        if !defaults.discover_ambient_credentials {
            return Ok(creds);
        }
        match &defaults.docker_style_config_files {
            // Files the user named must be there.
            Some(named) => {
                for file in named {
                    creds.read_file(file, false)?;
                }
            }
            // Files found by searching are other programs' too: one tstore cannot read is
            // skipped with a warning (as OpenTofu does), never a reason to fail.
            None => {
                for (file, legacy) in &files {
                    if file.is_file() {
                        if let Err(e) = creds.read_file(file, *legacy) {
                            tracing::warn!("skipping registry credentials: {e}");
                        }
                    }
                }
            }
        }
        Ok(creds)
    }

    fn read_file(&mut self, path: &Path, legacy: bool) -> Result<(), CredentialsError> {
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
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        // ~/.dockercfg is the old format: the `auths` object is the whole document.
        let auths = if legacy { Some(&doc) } else { doc.get("auths") };
        // Nothing of a file is taken unless all of it is valid.
        let mut entries = Vec::new();
        if let Some(helpers) = doc.get("credHelpers").and_then(|h| h.as_object()) {
            for (key, helper) in helpers {
                if let Some(helper) = helper.as_str().filter(|h| valid_helper_name(h)) {
                    entries.push((pattern_of(key), CredentialSource::Helper(helper.to_owned())));
                }
            }
        }
        for (key, entry) in auths.and_then(|a| a.as_object()).into_iter().flatten() {
            if let Some(login) = login_of(entry)
                .map_err(|m| invalid(format!("auths[{:?}]: {m}", super::display_reference(key))))?
            {
                entries.push((pattern_of(key), CredentialSource::Login(login)));
            }
        }
        self.entries.extend(entries);
        if self.default_helper.is_none() {
            self.default_helper = doc
                .get("credsStore")
                .and_then(|h| h.as_str())
                .filter(|h| valid_helper_name(h))
                .map(str::to_owned);
        }
        Ok(())
    }

    /// The login for `repo`: the entry whose pattern matches it most specifically (a
    /// repository prefix before its registry), a CLI-config block's and then the first
    /// file's on a tie; else the default
    /// credential helper (`credsStore`), asked about the registry; else none.
    pub fn for_repository(&self, repo: &OciRepository) -> Result<Option<Login>, CredentialsError> {
        let registry = repo.registry.to_ascii_lowercase();
        let full = format!("{registry}/{}", repo.name);
        // The most specific pattern wins across every source; on a tie the CLI
        // configuration's blocks come first, then the files in discovery order (as tofu
        // orders them).
        let all: Vec<(String, CredentialSource)> =
            self.explicit.iter().chain(&self.entries).cloned().collect();
        let chosen = most_specific(&all, &registry, &full);
        match chosen {
            Some(CredentialSource::Login(login)) => Ok(Some(login.clone())),
            Some(CredentialSource::Helper(helper)) => run_helper(helper, &registry),
            None => match &self.default_helper {
                Some(helper) => run_helper(helper, &registry),
                None => Ok(None),
            },
        }
    }
}

/// The entry whose pattern (`registry` or `registry/path-prefix`) matches the repository
/// `full` (`registry/name`) with the longest pattern; the first such entry on a tie.
fn most_specific<'a>(
    entries: &'a [(String, CredentialSource)],
    registry: &str,
    full: &str,
) -> Option<&'a CredentialSource> {
    let mut best: Option<(usize, &CredentialSource)> = None;
    for (pattern, source) in entries {
        let matches = pattern == registry
            || (full.starts_with(pattern.as_str())
                && full.as_bytes().get(pattern.len()) == Some(&b'/'))
            || pattern == full;
        if matches && best.is_none_or(|(len, _)| pattern.len() > len) {
            best = Some((pattern.len(), source));
        }
    }
    best.map(|(_, s)| s)
}

/// A config key as a pattern: `https://host/v1/` and `host/` become `host`, paths are kept.
fn pattern_of(key: &str) -> String {
    let key = key
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let key = key
        .strip_suffix("/v1")
        .or(key.strip_suffix("/v2"))
        .unwrap_or(key);
    key.to_ascii_lowercase()
}

/// A helper name may not name a path: it is appended to `docker-credential-`.
fn valid_helper_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// The login of one `auths` entry: `auth` (base64 of `user:password`) or `username` and
/// `password`; `None` for an entry with neither (it defers to a helper).
fn login_of(entry: &serde_json::Value) -> Result<Option<Login>, String> {
    if let Some(auth) = entry
        .get("auth")
        .and_then(|a| a.as_str())
        .filter(|a| !a.is_empty())
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth)
            .map_err(|e| format!("auth is not base64: {e}"))?;
        let decoded = String::from_utf8(decoded).map_err(|_| "auth is not UTF-8".to_owned())?;
        let Some((user, pass)) = decoded.split_once(':') else {
            return Err("auth is not user:password".into());
        };
        return Ok(Some(Login {
            username: user.to_owned(),
            password: pass.to_owned(),
        }));
    }
    match (
        entry.get("username").and_then(|v| v.as_str()),
        entry.get("password").and_then(|v| v.as_str()),
    ) {
        (Some(user), Some(pass)) => Ok(Some(Login {
            username: user.to_owned(),
            password: pass.to_owned(),
        })),
        _ => Ok(None),
    }
}

/// Ask `docker-credential-HELPER get` (on `PATH`) for the login of `registry`: the
/// server URL `https://REGISTRY` on stdin (what OpenTofu sends), `{"Username","Secret"}` on stdout. A helper that knows no login for
/// it ("credentials not found") gives none.
fn run_helper(helper: &str, registry: &str) -> Result<Option<Login>, CredentialsError> {
    use std::io::Write as _;
    use std::process::Stdio;
    use tstore_process::Command;
    let fail = |message: String| CredentialsError::Helper {
        helper: helper.to_owned(),
        registry: registry.to_owned(),
        message,
    };
    let mut child = Command::new(format!("docker-credential-{helper}"))
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("cannot start it ({e}); is it on PATH?")))?;
    // The server URL OpenTofu asks helpers about: the registry's HTTPS address.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(format!("https://{registry}").as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if said.contains("credentials not found") {
            return Ok(None);
        }
        let err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        return Err(fail(format!("{} {said} {err}", out.status)));
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(rename = "Username")]
        username: String,
        #[serde(rename = "Secret")]
        secret: String,
    }
    let answer: Answer = serde_json::from_slice(&out.stdout)
        .map_err(|e| fail(format!("its answer is not credentials JSON: {e}")))?;
    Ok(Some(Login {
        username: answer.username,
        password: answer.secret,
    }))
}

/// Errors of the token service.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    /// The token request failed.
    #[error("token service: {0}")]
    Http(#[from] HttpError),
    /// The answer had no token.
    #[error(
        "the token service at {} answered without a token",
        crate::redact::display_url(realm)
    )]
    NoToken {
        /// The token service.
        realm: String,
    },
}

/// A bearer token for `scope` from the token service `realm` (the distribution spec's
/// token flow), with `login` as basic credentials when given, anonymously otherwise.
pub(crate) fn fetch_token(
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
    let mut req = http
        .request("GET", url.as_str())
        .timeout(http.limits().document_deadline);
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
    fn docker_config_auths_most_specific_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        fs_err::write(
            &path,
            r#"{"auths":{
                "https://Index.Registry.Test/v1/":{"auth":"dXNlcjpwYXNz"},
                "r.test:5000":{"username":"u2","password":"p2"},
                "r.test:5000/team":{"username":"team","password":"p3"},
                "helper.test":{}
            }}"#,
        )
        .unwrap();
        let mut creds = OciCredentials::default();
        creds.read_file(&path, false).unwrap();
        let repo = |registry: &str, name: &str| OciRepository {
            registry: registry.into(),
            name: name.into(),
        };
        let login = |r: OciRepository| creds.for_repository(&r).unwrap().map(|l| l.username);
        assert_eq!(
            login(repo("index.registry.test", "a")).as_deref(),
            Some("user")
        );
        assert_eq!(login(repo("r.test:5000", "other/x")).as_deref(), Some("u2"));
        assert_eq!(
            login(repo("r.test:5000", "team/x")).as_deref(),
            Some("team")
        );
        assert_eq!(login(repo("r.test:5000", "teamx/y")).as_deref(), Some("u2"));
        assert_eq!(login(repo("helper.test", "a")), None);
        assert_eq!(
            Login {
                username: "u2".into(),
                password: "p2".into()
            }
            .basic_header(),
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("u2:p2")
            )
        );
    }

    #[test]
    fn the_most_specific_pattern_wins_across_sources_and_blocks_win_ties() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        fs_err::write(
            &path,
            r#"{"auths":{"r.test":{"username":"file","password":"p"},
                "r.test/bar":{"username":"file-bar","password":"p"}}}"#,
        )
        .unwrap();
        let mut creds = OciCredentials::default();
        creds.explicit.push((
            "r.test".into(),
            CredentialSource::Login(Login {
                username: "block".into(),
                password: "p".into(),
            }),
        ));
        creds.read_file(&path, false).unwrap();
        let user = |name: &str| {
            let repo = OciRepository {
                registry: "r.test".into(),
                name: name.into(),
            };
            creds.for_repository(&repo).unwrap().map(|l| l.username)
        };
        assert_eq!(user("foo/x").as_deref(), Some("block"));
        assert_eq!(user("bar/x").as_deref(), Some("file-bar"));
    }

    #[test]
    fn errors_do_not_echo_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        fs_err::write(
            &path,
            r#"{"auths":{"https://user:s3cret@r.test/v1/?token=TOK3N":{"auth":"bm9jb2xvbg=="}}}"#,
        )
        .unwrap();
        let mut creds = OciCredentials::default();
        let invalid = creds.read_file(&path, false).unwrap_err().to_string();
        assert!(
            invalid.contains("https://r.test/v1/?token=redacted"),
            "{invalid}"
        );
        let helper = CredentialsError::Helper {
            helper: "pass".into(),
            registry: "TOK3N@r.test".into(),
            message: "exit status: 1".into(),
        }
        .to_string();
        let no_token = TokenError::NoToken {
            realm: "https://user:s3cret@auth.test/token?sig=SIGV4".into(),
        }
        .to_string();
        assert!(
            no_token.contains("https://auth.test/token?sig=redacted"),
            "{no_token}"
        );
        for shown in [invalid, helper, no_token] {
            for secret in ["s3cret", "TOK3N", "SIGV4"] {
                assert!(!shown.contains(secret), "{secret} echoed: {shown}");
            }
        }
    }

    #[test]
    fn helper_names_cannot_name_paths() {
        assert!(valid_helper_name("ecr-login"));
        assert!(!valid_helper_name("../../bin/sh"));
        assert!(!valid_helper_name(""));
    }
}
