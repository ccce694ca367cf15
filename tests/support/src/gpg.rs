//! [`GpgKey`]: an RSA-2048 signing key made by the real `gpg` in a temp `GNUPGHOME`, for
//! signing a test registry's `SHA256SUMS` (binary detached signatures, as registries serve).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use tempfile::TempDir;

/// A generated key; its `GNUPGHOME` (and agent) go away on drop.
#[derive(Debug)]
pub struct GpgKey {
    home: TempDir,
    /// The long key ID, 16 uppercase hex digits.
    pub key_id: String,
    /// The ASCII-armored public key.
    pub armor: String,
}

impl GpgKey {
    /// Generate a key (a second or so).
    pub fn generate() -> GpgKey {
        // Short path: gpg-agent's socket lives in the home and socket paths are limited.
        let home = tempfile::Builder::new()
            .prefix("gpg")
            .tempdir_in("/tmp")
            .expect("temp GNUPGHOME");
        let mut key = GpgKey {
            home,
            key_id: String::new(),
            armor: String::new(),
        };
        key.gpg(&[
            "--passphrase",
            "",
            "--quick-gen-key",
            "tstore test <test@tstore.test>",
            "rsa2048",
            "sign",
            "never",
        ]);
        let listing = String::from_utf8(key.gpg(&["--with-colons", "--list-keys"])).unwrap();
        let key_id = listing
            .lines()
            .find(|l| l.starts_with("pub:"))
            .and_then(|l| l.split(':').nth(4))
            .expect("gpg lists the new key")
            .to_owned();
        let armor = String::from_utf8(key.gpg(&["--armor", "--export"])).unwrap();
        key.key_id = key_id;
        key.armor = armor;
        key
    }

    fn path(&self) -> PathBuf {
        self.home.path().to_path_buf()
    }

    fn gpg(&self, args: &[&str]) -> Vec<u8> {
        self.gpg_stdin(args, &[])
    }

    fn gpg_stdin(&self, args: &[&str], input: &[u8]) -> Vec<u8> {
        let mut child = Command::new("gpg")
            .arg("--homedir")
            .arg(self.path())
            .args(["--batch", "--yes", "--pinentry-mode", "loopback"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run gpg (install gnupg)");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "gpg {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// The public key in OpenPGP's binary form (what a trust signature is made over).
    pub fn export_binary(&self) -> Vec<u8> {
        self.gpg(&["--export"])
    }

    /// An ASCII-armored detached signature over `data` (a registry's `trust_signature`).
    pub fn sign_armored(&self, data: &[u8]) -> String {
        String::from_utf8(self.gpg_stdin(
            &[
                "--passphrase",
                "",
                "--armor",
                "--detach-sign",
                "--output",
                "-",
            ],
            data,
        ))
        .unwrap()
    }

    /// A binary detached signature over `data`.
    pub fn sign(&self, data: &[u8]) -> Vec<u8> {
        self.gpg_stdin(
            &["--passphrase", "", "--detach-sign", "--output", "-"],
            data,
        )
    }
}

impl Drop for GpgKey {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .arg("--homedir")
            .arg(self.path())
            .args(["--kill", "gpg-agent"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
