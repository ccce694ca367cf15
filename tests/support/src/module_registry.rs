//! [`ModuleRegistry`]: a module registry (`modules.v1`, the module registry protocol:
//! <https://github.com/opentofu/opentofu/blob/main/website/docs/internals/module-registry-protocol.mdx>)
//! and an archive host on one loopback [`Server`].
//!
//! ```text
//! /v1/modules/NS/NAME/SYSTEM/versions            {"modules":[{"versions":[{"version":…}]}]}
//! /v1/modules/NS/NAME/SYSTEM/VERSION/download    204 + X-Terraform-Get: LOCATION
//! /archives/NAME                                 archive bytes + ETag; 304 to If-None-Match
//! ```
//!
//! Its registry host is `127.0.0.1:PORT`: terraform 1.0.3 takes that (not `localhost:PORT`)
//! as a registry address, and both tools reach it over plain HTTP through a CLI
//! configuration `host` block ([`ModuleRegistry::write_cli_config`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::server::Server;

/// A module registry fixture.
#[derive(Debug)]
pub struct ModuleRegistry {
    /// The HTTP server.
    pub server: Server,
    versions: Mutex<BTreeMap<String, Vec<Listed>>>,
}

/// A listed version, and its publish date if the listing gives one.
type Listed = (String, Option<String>);

impl ModuleRegistry {
    /// Start a server with no modules.
    pub fn start() -> ModuleRegistry {
        ModuleRegistry {
            server: Server::start(),
            versions: Mutex::default(),
        }
    }

    /// `127.0.0.1:PORT`: the registry host to write in module sources.
    pub fn host(&self) -> String {
        self.server.url().trim_start_matches("http://").to_owned()
    }

    /// The `modules.v1` base URL.
    pub fn modules_url(&self) -> String {
        format!("{}/v1/modules/", self.server.url())
    }

    /// Publish `module` (`NS/NAME/SYSTEM`) `version`, whose download answers `204` with
    /// `X-Terraform-Get: location` (a go-getter address, or a URL relative to the download
    /// endpoint when it starts with `/`, `./` or `../`).
    pub fn publish(&self, module: &str, version: &str, location: &str) {
        self.publish_dated(module, version, location, None);
    }

    /// [`ModuleRegistry::publish`], the version listed with `published_at` (RFC 3339) as
    /// the public registries' APIs date their versions (the protocol has no date).
    pub fn publish_dated(
        &self,
        module: &str,
        version: &str,
        location: &str,
        published_at: Option<&str>,
    ) {
        self.server.route_with_headers(
            &format!("/v1/modules/{module}/{version}/download"),
            204,
            &[("X-Terraform-Get", location)],
            Vec::new(),
        );
        let mut all = self.versions.lock().unwrap();
        let list = all.entry(module.to_owned()).or_default();
        list.push((version.to_owned(), published_at.map(str::to_owned)));
        let doc = serde_json::json!({"modules": [{"versions": list
            .iter()
            .map(|(v, at)| match at {
                Some(at) => serde_json::json!({"version": v, "published_at": at}),
                None => serde_json::json!({"version": v}),
            })
            .collect::<Vec<_>>()}]});
        self.server.route(
            &format!("/v1/modules/{module}/versions"),
            "application/json",
            doc.to_string(),
        );
    }

    /// Serve `bytes` at `/archives/NAME` and return its absolute URL. The route has a strong
    /// `ETag` derived from the bytes ([`Server::route_versioned`]): a conditional GET for
    /// the same bytes answers `304`; serving new bytes at the same name changes the tag.
    pub fn archive(&self, name: &str, bytes: Vec<u8>) -> String {
        let path = format!("/archives/{name}");
        self.server
            .route_versioned(&path, "application/octet-stream", bytes, None);
        format!("{}{path}", self.server.url())
    }

    /// Write a CLI config to `path` with a `host` block for [`ModuleRegistry::host`] naming
    /// its `modules.v1` service (plain HTTP), followed by `extra` verbatim.
    pub fn write_cli_config(&self, path: &Path, extra: &str) -> PathBuf {
        let text = format!(
            "host \"{}\" {{\n  services = {{\n    \"modules.v1\" = \"{}\"\n  }}\n}}\n\n{extra}",
            self.host(),
            self.modules_url()
        );
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).unwrap();
        }
        fs_err::write(path, text).unwrap();
        path.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn raw(server: &Server, request: &str) -> String {
        let addr = server.url().trim_start_matches("http://").to_owned();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn download_answers_204_with_x_terraform_get() {
        let reg = ModuleRegistry::start();
        reg.publish("acme/pkg/null", "1.0.0", "git::file:///r.git?ref=v1.0.0");
        reg.publish("acme/pkg/null", "1.1.0", "../../archives/p.zip");
        let resp = raw(
            &reg.server,
            "GET /v1/modules/acme/pkg/null/1.0.0/download HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        assert!(resp.starts_with("HTTP/1.1 204 No Content\r\n"), "{resp}");
        assert!(
            resp.contains("\r\nX-Terraform-Get: git::file:///r.git?ref=v1.0.0\r\n"),
            "{resp}"
        );
        assert!(!resp.contains("Content-Length"), "{resp}");
        let versions = raw(
            &reg.server,
            "GET /v1/modules/acme/pkg/null/versions HTTP/1.1\r\n\r\n",
        );
        assert!(
            versions.ends_with(
                r#"{"modules":[{"versions":[{"version":"1.0.0"},{"version":"1.1.0"}]}]}"#
            ),
            "{versions}"
        );
        reg.archive("p.zip", b"zipbytes".to_vec());
        let head = raw(&reg.server, "HEAD /archives/p.zip HTTP/1.1\r\n\r\n");
        assert!(head.contains("Content-Length: 8\r\n"), "{head}");
        assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head}");
        let log = reg.server.requests();
        assert_eq!(log.last().unwrap().method, "HEAD");
        assert_eq!(log[0].method, "GET");
    }

    #[test]
    fn archives_answer_conditional_gets_with_304_until_their_bytes_change() {
        let reg = ModuleRegistry::start();
        reg.archive("p.zip", b"one".to_vec());
        let first = raw(&reg.server, "GET /archives/p.zip HTTP/1.1\r\n\r\n");
        let etag = first
            .lines()
            .find_map(|l| l.strip_prefix("ETag: "))
            .unwrap()
            .to_owned();
        assert_eq!(etag, crate::server::etag_of(b"one"));
        let again = raw(
            &reg.server,
            &format!("GET /archives/p.zip HTTP/1.1\r\nIf-None-Match: {etag}\r\n\r\n"),
        );
        assert!(
            again.starts_with("HTTP/1.1 304 Not Modified\r\n"),
            "{again}"
        );
        assert!(
            again.ends_with("\r\n\r\n") && !again.contains("Content-Length"),
            "{again}"
        );
        reg.archive("p.zip", b"two".to_vec());
        let changed = raw(
            &reg.server,
            &format!("GET /archives/p.zip HTTP/1.1\r\nif-none-match: {etag}\r\n\r\n"),
        );
        assert!(
            changed.starts_with("HTTP/1.1 200 OK\r\n") && changed.ends_with("two"),
            "{changed}"
        );
        // Last-Modified, when no If-None-Match is sent.
        let lm = "Tue, 01 Apr 2025 10:00:00 GMT";
        reg.server
            .route_versioned("/lm", "text/plain", "x", Some(lm));
        let cond = raw(
            &reg.server,
            &format!("GET /lm HTTP/1.1\r\nIf-Modified-Since: {lm}\r\n\r\n"),
        );
        assert!(cond.starts_with("HTTP/1.1 304 "), "{cond}");
        let statuses: Vec<u16> = reg.server.requests().iter().map(|r| r.status).collect();
        assert_eq!(statuses, [200, 304, 200, 304]);
        assert_eq!(
            reg.server.requests()[1].if_none_match.as_deref(),
            Some(etag.as_str())
        );
        assert_eq!(
            reg.server.requests()[3].if_modified_since.as_deref(),
            Some(lm)
        );
    }
}
