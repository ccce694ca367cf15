//! Where provider packages come from, one module per installation method: filesystem
//! mirrors ([`fs_mirror`]), origin registries ([`registry`]), network mirrors
//! ([`net_mirror`]) and OCI registries ([`oci_mirror`]). Each lists versions and hands over a package with the hashes it
//! vouches for; verifying and committing them is the install flow's job.

pub(crate) mod fs_mirror;
pub(crate) mod net_mirror;
pub(crate) mod oci_mirror;
pub(crate) mod registry;

/// A URL or URL reference a source names (absolute, or relative to the document that
/// names it) as messages show it: by [`display_url`](crate::redact::display_url), and a
/// network-path reference (`//TOKEN@host/…`) as its `https:` form would be shown.
pub(crate) fn display_url_ref(url: &str) -> String {
    match url.strip_prefix("//") {
        Some(rest) => {
            let shown = crate::redact::display_url(&format!("https://{rest}"));
            format!("//{}", shown.strip_prefix("https://").unwrap_or(&shown))
        }
        None => crate::redact::display_url(url),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn url_references_are_shown_without_credentials() {
        assert_eq!(
            super::display_url_ref("//TOK3N@cdn.test/p.zip?X-Amz-Signature=SIGV4"),
            "//cdn.test/p.zip?X-Amz-Signature=redacted"
        );
        assert_eq!(
            super::display_url_ref("https://u:s3cret@cdn.test/p.zip?sig=SIGV4"),
            "https://cdn.test/p.zip?sig=redacted"
        );
        assert_eq!(super::display_url_ref("../p.zip"), "../p.zip");
    }
}
