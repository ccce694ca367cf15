//! [`TokenService`]: the token service of the distribution spec's bearer flow, on loopback over
//! HTTPS, for a real `docker-registry` configured with `auth: token` ([`crate::oci_registry`])
//! to trust.
//!
//! It hands out ES256 JSON web tokens signed by its own key, whose self-signed certificate
//! travels in each token's `x5c` header and is the registry's `rootcertbundle`. Anonymous
//! requests get the `pull` actions they ask for; `user` with `password` (HTTP basic) gets
//! `pull` and `push`; a wrong password gets 401. Every request is logged.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

use crate::server::{Request, Response, Server};

/// The `service` (token audience) the registry and the service agree on.
pub const SERVICE: &str = "tstore-test-registry";
/// The token issuer the registry trusts.
pub const ISSUER: &str = "tstore-test-token-service";

/// A running token service; stopped when dropped.
#[derive(Debug)]
pub struct TokenService {
    server: Server,
    cert_pem: String,
}

impl TokenService {
    /// Start the service; `user`/`password` may push, anyone may pull.
    pub fn start(user: &str, password: &str) -> TokenService {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec![ISSUER.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let signer = Signer {
            key: EcdsaKeyPair::from_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &key.serialize_der(),
                &SystemRandom::new(),
            )
            .unwrap(),
            cert_der_b64: base64::engine::general_purpose::STANDARD.encode(cert.der()),
        };
        let server = Server::start_tls(&["localhost"]);
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        server.route_fn("/token", move |req| answer(req, &basic, &signer));
        TokenService {
            server,
            cert_pem: cert.pem(),
        }
    }

    /// The `realm` the registry names in its challenges.
    pub fn realm(&self) -> String {
        format!("{}/token", self.server.url())
    }

    /// Write the CA that signed the service's HTTPS certificate (for `SSL_CERT_FILE`).
    pub fn write_https_ca(&self, path: &Path) {
        let ca = self.server.ca().expect("the service runs HTTPS");
        fs_err::write(path, &ca.ca_pem).unwrap();
    }

    /// Write the certificate of the token-signing key (the registry's `rootcertbundle`).
    pub fn write_signing_cert(&self, path: &Path) {
        fs_err::write(path, &self.cert_pem).unwrap();
    }

    /// Every token request so far: `(anonymous, scope)` each.
    pub fn requests(&self) -> Vec<(bool, String)> {
        self.server
            .requests()
            .into_iter()
            .map(|r| (r.authorization.is_none(), scopes(&r.path).join(" ")))
            .collect()
    }
}

struct Signer {
    key: EcdsaKeyPair,
    cert_der_b64: String,
}

/// The service's answer to one token request.
fn answer(req: &Request, basic: &str, signer: &Signer) -> Response {
    let json = |status, body: serde_json::Value| Response {
        status,
        content_type: "application/json".into(),
        body: body.to_string().into_bytes(),
        headers: Vec::new(),
    };
    let may_push = match req.authorization.as_deref() {
        None => false,
        Some(a) if a == basic => true,
        Some(_) => return json(401, serde_json::json!({"details": "wrong login"})),
    };
    let access: Vec<serde_json::Value> = scopes(&req.path)
        .iter()
        .filter_map(|scope| {
            let mut parts = scope.splitn(3, ':');
            let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
            let granted: Vec<&str> = actions
                .split(',')
                .filter(|a| *a == "pull" || (may_push && *a == "push"))
                .collect();
            Some(serde_json::json!({"type": kind, "name": name, "actions": granted}))
        })
        .collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = serde_json::json!({
        "iss": ISSUER,
        "sub": if may_push { "pusher" } else { "" },
        "aud": SERVICE,
        "exp": now + 300,
        "nbf": now - 10,
        "iat": now,
        "jti": format!("{now}-{}", req.path.len()),
        "access": access,
    });
    let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "x5c": [signer.cert_der_b64]});
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    let signing_input = format!("{}.{}", b64(&header), b64(&claims));
    let signature = signer
        .key
        .sign(&SystemRandom::new(), signing_input.as_bytes())
        .unwrap();
    let token = format!(
        "{signing_input}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature.as_ref())
    );
    json(200, serde_json::json!({"token": token, "expires_in": 300}))
}

/// The `scope` parameters of a request path, decoded.
fn scopes(path: &str) -> Vec<String> {
    let query = path.split_once('?').map_or("", |(_, q)| q);
    url::form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .collect()
}
