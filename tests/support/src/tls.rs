//! [`TestCa`]: a certificate authority made at test time, and a server certificate it
//! signed, for the HTTPS mode of the loopback [`Server`](crate::server::Server).
//!
//! The CA's PEM goes into a file that both tstore and the real terraform get as
//! `SSL_CERT_FILE` (which replaces the system roots for both), so the test server is trusted
//! by exactly those processes and nothing else. Keys are ECDSA P-256 (`rcgen`, `ring`); the
//! server side is rustls, the same version tstore's client uses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A test CA and one server certificate, valid for `127.0.0.1`, `::1`, `localhost` and the
/// extra DNS names given to [`TestCa::new`].
#[derive(Clone)]
pub struct TestCa {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// The rustls configuration serving the server certificate (ALPN `http/1.1`).
    pub server_config: Arc<rustls::ServerConfig>,
    /// The server certificate and the CA's, PEM (for servers that read files).
    pub server_chain_pem: String,
    /// The server certificate's private key, PEM (PKCS#8).
    pub server_key_pem: String,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

impl TestCa {
    /// Make a CA and a server certificate for the loopback names plus `extra_names`.
    pub fn new(extra_names: &[&str]) -> TestCa {
        let ca_key = KeyPair::generate().expect("generate the CA key");
        let mut ca_params = CertificateParams::default();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "tstore test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign the CA");

        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let mut sans = vec![
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ];
        for name in std::iter::once("localhost").chain(extra_names.iter().copied()) {
            sans.push(SanType::DnsName(
                name.to_owned().try_into().expect("a valid DNS name"),
            ));
        }
        params.subject_alt_names = sans;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("generate the server key");
        let cert = params
            .signed_by(&key, &ca_cert, &ca_key)
            .expect("sign the server certificate");

        let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone(), ca_cert.der().clone()];
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS protocol versions")
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .expect("a usable server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        TestCa {
            ca_pem: ca_cert.pem(),
            server_config: Arc::new(config),
            server_chain_pem: format!("{}{}", cert.pem(), ca_cert.pem()),
            server_key_pem: key.serialize_pem(),
        }
    }

    /// Write the CA's PEM to `path` (parents created) and return the path: the value for
    /// `SSL_CERT_FILE`.
    pub fn write_pem(&self, path: &Path) -> PathBuf {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).expect("create the CA file's dir");
        }
        fs_err::write(path, &self.ca_pem).expect("write the CA file");
        path.to_path_buf()
    }
}
