//! URLs as messages show them: never with a secret in them.
//!
//! A source address may carry credentials (`https://TOKEN@host/…`, `ssh://git:pass@host/…`)
//! or a signed query (`?X-Amz-Signature=…`, `?sig=…`, `?sshkey=…`). No error message, log
//! line or output echoes them: [`display_url`] is what a person sees of a URL, and
//! [`scrub`] cleans text that may quote one (a `git` command's stderr).

/// What the query value of `name` is replaced with.
const REDACTED: &str = "redacted";

/// `url` as messages and output show it: an `http(s)` URL without its user information
/// (a token often stands there alone, `https://TOKEN@host`), another scheme's URL without
/// its password (an `ssh://git@host` user is kept), and the value of every query parameter
/// whose name looks like a secret replaced by `redacted`. A go-getter forced getter
/// (`git::`) is kept; an address without `scheme://` (an scp-like `git@host:org/repo.git`, a
/// path) keeps its body as written.
pub fn display_url(url: &str) -> String {
    let (forced, rest) = match url.split_once("::") {
        Some((f, rest)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            (&url[..f.len() + 2], rest)
        }
        _ => ("", url),
    };
    let (body, fragment) = match rest.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (rest, None),
    };
    let (body, query) = match body.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (body, None),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(forced);
    out.push_str(&without_credentials(body));
    if let Some(q) = query {
        out.push('?');
        out.push_str(&redact_query(q));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// `text` with every URL in it as [`display_url`] shows it: each of `urls` where it
/// appears as written, then whatever else looks like `scheme://…`; last, each secret of
/// `urls` wherever it is left (git quotes the URLs it was given rewritten, a `file://` URL
/// as a path with its query, in its messages) replaced by `redacted`.
pub(crate) fn scrub(text: &str, urls: &[&str]) -> String {
    let mut out = text.to_owned();
    let mut secrets = Vec::new();
    for url in urls {
        let shown = display_url(url);
        if !url.is_empty() && shown != *url {
            out = out.replace(url, &shown);
            secrets.extend(secrets_of(url));
        }
    }
    out = scrub_embedded(&out);
    // The longest first: a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), REDACTED);
    }
    out
}

/// What [`display_url`] leaves out of `url` that is a secret (the user information it
/// drops, secret query values), as written and percent-decoded.
fn secrets_of(url: &str) -> Vec<String> {
    let rest = match url.split_once("::") {
        Some((f, rest)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric()) => rest,
        _ => url,
    };
    let rest = rest.split_once('#').map_or(rest, |(b, _)| b);
    let (body, query) = match rest.split_once('?') {
        Some((b, q)) => (b, q),
        None => (rest, ""),
    };
    let mut found = Vec::new();
    if let Some(scheme_end) = body.find("://") {
        let scheme = body[..scheme_end].rsplit(':').next().unwrap_or_default();
        let after = &body[scheme_end + 3..];
        let authority = &after[..authority_end(after)];
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            let http = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
            match userinfo.split_once(':') {
                Some((user, password)) => {
                    found.push(password);
                    if http {
                        found.push(user);
                    }
                }
                None if http => found.push(userinfo),
                None => {}
            }
        }
    }
    for pair in query.split('&') {
        if let Some((name, value)) = pair.split_once('=') {
            // A value of a secret-looking name, or any longer value of a name not known
            // to be harmless (short ones, `1`, would replace every such text of a message).
            let secret = secret_name(name) || (!harmless_name(name) && value.len() >= 8);
            if secret && value != REDACTED {
                found.push(value);
            }
        }
    }
    found
        .into_iter()
        .filter(|s| !s.is_empty())
        .flat_map(|s| [s.to_owned(), percent_decoded(s)])
        .collect()
}

/// `s` with its `%XX` escapes decoded (invalid UTF-8 replaced).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The URL body `body` without its credentials (the rule of [`display_url`]'s authority).
pub(crate) fn without_credentials(body: &str) -> String {
    let Some(scheme_end) = body.find("://") else {
        return body.to_owned();
    };
    // The scheme proper (text quoting a URL may run into it: `error:https://…`).
    let scheme = body[..scheme_end].rsplit(':').next().unwrap_or_default();
    let rest = &body[scheme_end + 3..];
    let authority_end = authority_end(rest);
    let authority = &rest[..authority_end];
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return body.to_owned();
    };
    let http = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    let user = match userinfo.split_once(':') {
        _ if http => "",
        Some((user, _)) => user,
        None => userinfo,
    };
    let at = if user.is_empty() { "" } else { "@" };
    format!(
        "{}{user}{at}{host}{}",
        &body[..scheme_end + 3],
        &rest[authority_end..]
    )
}

/// Where the authority of `after_scheme` (the text after `scheme://`) ends: at the first
/// `/`, `?` or `#` (RFC 3986, section 3.2, as the `url` crate and git read it). Ending it at
/// the first `/` alone made `https://evil?x=@good/repo` look like a URL of `good`.
fn authority_end(after_scheme: &str) -> usize {
    after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len())
}

/// The identity of a remote URL, for what is kept per URL (the git cache): the exact URL as
/// the `url` crate parses it, without user information; a text that is no URL (an scp-like
/// `git@host:org/repo`, a path) is kept as written, credentials removed as
/// [`without_credentials`] removes them.
pub(crate) fn url_identity(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.has_host() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => without_credentials(url),
    }
}

/// A query string as messages, reports and the committed lock show it: the value of every
/// parameter not known to be harmless replaced by `redacted`. Names are judged decoded
/// (`%74oken` is `token`), and only an allowlist keeps its value: a source built from
/// `TF_VAR_*` values can carry a secret under any name.
pub(crate) fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() && !harmless_name(name) => {
                format!("{name}={REDACTED}")
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters whose values are shown and locked as written: go-getter's and
/// OCI's own arguments (a source's `tag`/`digest`, the registry API's `n`/`last` pages),
/// which select content and never carry a credential.
const HARMLESS: &[&str] = &[
    "n",
    "last",
    "ref",
    "depth",
    "archive",
    "checksum",
    "filename",
    "region",
    "version",
    "submodules",
    "tag",
    "digest",
];

/// Whether the parameter `name` (judged decoded, in any case) is one of [`HARMLESS`].
pub(crate) fn harmless_name(name: &str) -> bool {
    let name = percent_decoded(name).to_ascii_lowercase();
    HARMLESS.contains(&name.as_str())
}

/// Whether the parameter `name`, decoded, is go-getter's `sshkey` (never written anywhere).
pub(crate) fn is_sshkey(name: &str) -> bool {
    percent_decoded(name).eq_ignore_ascii_case("sshkey")
}

/// Whether a query parameter named `name` carries a secret: go-getter's `sshkey`, tokens,
/// passwords, signatures and signed-URL credentials (S3, GCS, Azure SAS `sig`), keys.
fn secret_name(name: &str) -> bool {
    let name = percent_decoded(name).to_ascii_lowercase().replace('-', "_");
    const EXACT: &[&str] = &["sig", "key", "sshkey", "pass", "passwd", "pwd", "auth"];
    const PARTS: &[&str] = &[
        "token",
        "password",
        "passwd",
        "secret",
        "signature",
        "credential",
        "apikey",
        "api_key",
        "access_key",
        "private_key",
        "sshkey",
    ];
    EXACT.contains(&name.as_str())
        || PARTS.iter().any(|p| name.contains(p))
        || name.ends_with("_key")
}

/// `text` with each `scheme://…` run in it (up to whitespace or a quote) shown by
/// [`display_url`].
fn scrub_embedded(text: &str) -> String {
    let is_scheme = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b':');
    let is_end = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>');
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let sep = from + found;
        let mut start = sep;
        while start > done && is_scheme(bytes[start - 1]) {
            start -= 1;
        }
        let end = text[sep..].find(is_end).map_or(text.len(), |e| sep + e);
        if start < sep {
            out.push_str(&text[done..start]);
            out.push_str(&display_url(&text[start..end]));
            done = end;
        }
        from = end.max(sep + 3);
    }
    out.push_str(&text[done..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authority_ends_where_the_url_crate_ends_it() {
        for url in [
            "https://evil.example?x=@real.example/org/repo.git",
            "https://evil.example#@real.example/org/repo.git",
            "https://user:pw@real.example/org/repo.git?ref=v1",
            "ssh://git@real.example/org/repo.git",
            "https://real.example",
        ] {
            let host = url::Url::parse(url).unwrap().host_str().unwrap().to_owned();
            let shown = without_credentials(url);
            let after = &shown[shown.find("://").unwrap() + 3..];
            let authority = &after[..authority_end(after)];
            let shown_host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            assert_eq!(shown_host, host, "{url}: shown as {shown}");
        }
        // Two URLs of different hosts never share an identity.
        assert_ne!(
            url_identity("https://evil.example?x=@real.example/org/repo.git"),
            url_identity("https://real.example/org/repo.git")
        );
        assert_eq!(
            url_identity("https://TOKEN@real.example/org/repo.git"),
            url_identity("https://real.example/org/repo.git")
        );
    }

    #[test]
    fn https_user_information_is_dropped() {
        assert_eq!(
            display_url("https://ghp_TOKEN@github.com/org/repo.git"),
            "https://github.com/org/repo.git"
        );
        assert_eq!(
            display_url("git::https://user:pass@host.test/r.git?ref=v1"),
            "git::https://host.test/r.git?ref=v1"
        );
        assert_eq!(
            display_url("HTTP://user:pass@host.test"),
            "HTTP://host.test"
        );
    }

    #[test]
    fn other_schemes_keep_the_user_and_lose_the_password() {
        assert_eq!(
            display_url("ssh://git@host.test/org/repo.git"),
            "ssh://git@host.test/org/repo.git"
        );
        assert_eq!(
            display_url("git::ssh://git:hunter2@host.test/org/repo.git?ref=v1"),
            "git::ssh://git@host.test/org/repo.git?ref=v1"
        );
    }

    #[test]
    fn only_harmless_query_values_are_shown_names_judged_decoded() {
        assert_eq!(
            display_url("https://h/x.zip?%74oken=S3CRET&db_pw=HUNTER2&ref=v1&Archive=zip"),
            "https://h/x.zip?%74oken=redacted&db_pw=redacted&ref=v1&Archive=zip"
        );
        assert!(is_sshkey("ssh%6Bey") && is_sshkey("SSHKEY") && !is_sshkey("key"));
        // git's stderr quoting the value elsewhere: a long value of an unknown name goes.
        assert_eq!(
            scrub(
                "fatal: cannot reach /x?db_pw=HUNTER2LONG",
                &["https://h/x.git?db_pw=HUNTER2LONG"]
            ),
            "fatal: cannot reach /x?db_pw=redacted"
        );
    }

    #[test]
    fn secret_query_values_are_redacted() {
        assert_eq!(
            display_url("git::ssh://git@h/r.git?ref=v1&sshkey=LS0tLS1CRUdJTg&depth=1"),
            "git::ssh://git@h/r.git?ref=v1&sshkey=redacted&depth=1"
        );
        assert_eq!(
            display_url(
                "https://b.s3.amazonaws.com/m.zip?X-Amz-Credential=AKIA%2F&X-Amz-Signature=abc\
                 &X-Amz-Security-Token=t&archive=zip"
            ),
            "https://b.s3.amazonaws.com/m.zip?X-Amz-Credential=redacted\
             &X-Amz-Signature=redacted&X-Amz-Security-Token=redacted&archive=zip"
        );
        for name in [
            "token",
            "private_token",
            "access_token",
            "password",
            "secret",
            "signature",
            "sig",
            "key",
            "api-key",
        ] {
            assert_eq!(
                display_url(&format!("https://h/x.zip?{name}=S3CRET")),
                format!("https://h/x.zip?{name}=redacted"),
                "{name}"
            );
        }
        assert_eq!(
            display_url("https://h/x.zip?ref=main&checksum=sha256:ab#frag"),
            "https://h/x.zip?ref=main&checksum=sha256:ab#frag"
        );
    }

    #[test]
    fn addresses_without_credentials_are_unchanged() {
        for url in [
            "git::file:///x",
            "file:///B/repo.git?ref=v1",
            "git@github.com:org/repo.git",
            "git::git@github.com:org/repo.git?ref=v1",
            "/abs/path",
            "fd::0",
            "https://[::1]:8443/x.zip",
            "registry.example/ns/name/system 1.2.0",
        ] {
            assert_eq!(display_url(url), url);
        }
    }

    #[test]
    fn scrub_cleans_urls_inside_text() {
        let raw = "https://user:TOKEN@host.test/r.git";
        let stderr = format!(
            "fatal: repository '{raw}/' not found\nfatal: unable to access \
             'https://TOKEN2@other.test/x?private_token=T3': 403"
        );
        let clean = scrub(&stderr, &[raw]);
        assert_eq!(
            clean,
            "fatal: repository 'https://host.test/r.git/' not found\nfatal: unable to access \
             'https://other.test/x?private_token=redacted': 403"
        );
        assert!(!clean.contains("TOKEN"));
        // git names a file:// repository by its path, query included.
        assert_eq!(
            scrub(
                "fatal: '/tmp/r.git?token=T0KEN' does not appear to be a git repository",
                &["file://git:p%40ss@localhost/tmp/r.git?token=T0KEN", "--"]
            ),
            "fatal: '/tmp/r.git?token=redacted' does not appear to be a git repository"
        );
        assert_eq!(
            scrub("auth failed for p@ss", &["ssh://git:p%40ss@h/r"]),
            "auth failed for redacted"
        );
        assert_eq!(scrub("no url here: x", &["fd::0"]), "no url here: x");
        assert_eq!(scrub("a :// b", &[]), "a :// b");
    }
}
