//! Filesystem mirrors of provider packages, in the two layouts terraform and tofu read:
//!
//! ```text
//! MIRROR/HOST/NS/TYPE/VERSION/OS_ARCH/<files>                          unpacked
//! MIRROR/HOST/NS/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip      packed
//! ```
//!
//! Plus the two package hashes of a lock file, computed independently of tstore so tests can
//! use them as an oracle: [`h1`] (over the unpacked files) and [`zh`] (over a zip).

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::{peers, NULL_PROVIDER_FILE};

/// The address of the null provider as terraform writes it into lock files and mirrors.
pub const NULL_ADDR: &str = "registry.terraform.io/hashicorp/null";
/// The version of the real null provider peer.
pub const NULL_VERSION: &str = "2.1.2";
/// The platform of the real peers.
pub const PLATFORM: &str = "linux_amd64";

/// A file of a provider package.
#[derive(Debug, Clone, Copy)]
pub struct PkgFile<'a> {
    /// Path inside the package, `/`-separated (`terraform-provider-null_v2.1.2_x4`).
    pub path: &'a str,
    /// Content.
    pub contents: &'a [u8],
    /// Mode 0755 if set, else 0644.
    pub executable: bool,
}

/// Write the unpacked layout `MIRROR/HOST/NS/TYPE/VERSION/OS_ARCH/<files>` (`addr` is
/// `HOST/NS/TYPE`, `platform` is `OS_ARCH`) and return the `OS_ARCH` dir.
pub fn write_unpacked(
    mirror: &Path,
    addr: &str,
    version: &str,
    platform: &str,
    files: &[PkgFile],
) -> PathBuf {
    let dir = mirror.join(addr).join(version).join(platform);
    fs_err::create_dir_all(&dir).expect("create unpacked mirror dir");
    for file in files {
        let path = dir.join(file.path);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).expect("create package subdir");
        }
        fs_err::write(&path, file.contents).expect("write package file");
        let mode = if file.executable { 0o755 } else { 0o644 };
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .expect("chmod package file");
    }
    dir
}

/// Write the packed layout `MIRROR/HOST/NS/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip`
/// and return the zip's path. The zip is built as release zips are: deflate, no directory
/// entries, fixed timestamps (2020-01-01), unix modes 0755/0644. See [`zip_bytes`].
pub fn write_packed(
    mirror: &Path,
    addr: &str,
    version: &str,
    platform: &str,
    files: &[PkgFile],
) -> PathBuf {
    write_packed_bytes(mirror, addr, version, platform, &zip_bytes(files))
}

/// Write arbitrary zip bytes (a [`hostile`](crate::hostile) zip, say) where
/// [`write_packed`] would put the package's zip, and return that path.
pub fn write_packed_bytes(
    mirror: &Path,
    addr: &str,
    version: &str,
    platform: &str,
    zip: &[u8],
) -> PathBuf {
    let dir = mirror.join(addr);
    fs_err::create_dir_all(&dir).expect("create packed mirror dir");
    let path = dir.join(packed_name(addr, version, platform));
    fs_err::write(&path, zip).expect("write package zip");
    path
}

/// The file name of a packed package: `terraform-provider-TYPE_VERSION_OS_ARCH.zip`, where
/// TYPE is the last component of `addr`.
pub fn packed_name(addr: &str, version: &str, platform: &str) -> String {
    let kind = addr.rsplit('/').next().unwrap_or(addr);
    format!("terraform-provider-{kind}_{version}_{platform}.zip")
}

/// A package zip of `files`, in order: deflate, no directory entries, timestamps
/// 2020-01-01 00:00:00, unix modes 0755 (executable) or 0644.
pub fn zip_bytes(files: &[PkgFile]) -> Vec<u8> {
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for file in files {
        let mode = if file.executable { 0o755 } else { 0o644 };
        zip.start_file(file.path, file_options(CompressionMethod::Deflated, mode))
            .expect("start zip entry");
        zip.write_all(file.contents).expect("write zip entry");
    }
    zip.finish().expect("finish zip").into_inner()
}

/// Options for one zip entry: the fixed timestamp and a unix mode (permission bits only).
pub(crate) fn file_options(method: CompressionMethod, mode: u32) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(method)
        .last_modified_time(fixed_time())
        .unix_permissions(mode)
}

/// 2020-01-01 00:00:00, the timestamp of every entry this crate writes.
pub(crate) fn fixed_time() -> DateTime {
    DateTime::from_date_and_time(2020, 1, 1, 0, 0, 0).expect("valid zip timestamp")
}

/// The `h1:` hash of a package (terraform's "dirhash" Hash1): SHA-256 over the lines
/// `"<sha256 hex of file>  <path>\n"` of all files sorted by path, base64, prefixed `h1:`.
/// Directories do not count; the executable bit does not count.
pub fn h1(files: &[PkgFile]) -> String {
    let mut sorted: Vec<&PkgFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(b.path));
    let mut summary = Sha256::new();
    for file in sorted {
        let line = format!(
            "{}  {}\n",
            hex::encode(Sha256::digest(file.contents)),
            file.path
        );
        summary.update(line.as_bytes());
    }
    format!(
        "h1:{}",
        base64::engine::general_purpose::STANDARD.encode(summary.finalize())
    )
}

/// The `zh:` hash of a package zip: `zh:` + SHA-256 hex of the file.
pub fn zh(zip: &Path) -> String {
    let bytes = fs_err::read(zip).expect("read zip for zh: hash");
    format!("zh:{}", hex::encode(Sha256::digest(bytes)))
}

/// The real null provider binary, read once per process (about 20 MB).
pub fn null_provider_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| fs_err::read(&peers().null_provider).expect("read null provider"))
}

/// The real null provider 2.1.2 package as a single [`PkgFile`].
pub fn null_files() -> [PkgFile<'static>; 1] {
    [PkgFile {
        path: NULL_PROVIDER_FILE,
        contents: null_provider_bytes(),
        executable: true,
    }]
}

/// Write the real null provider 2.1.2 linux_amd64 into `mirror` in the unpacked layout
/// (`registry.terraform.io/hashicorp/null/2.1.2/linux_amd64/terraform-provider-null_v2.1.2_x4`)
/// and return the mirror root.
pub fn null_unpacked(mirror: &Path) -> PathBuf {
    write_unpacked(mirror, NULL_ADDR, NULL_VERSION, PLATFORM, &null_files());
    mirror.to_path_buf()
}

/// Write the real null provider 2.1.2 linux_amd64 into `mirror` in the packed layout
/// (`registry.terraform.io/hashicorp/null/terraform-provider-null_2.1.2_linux_amd64.zip`)
/// and return the mirror root. The zip is the same bytes on every call.
pub fn null_packed(mirror: &Path) -> PathBuf {
    static ZIP: OnceLock<Vec<u8>> = OnceLock::new();
    let zip = ZIP.get_or_init(|| zip_bytes(&null_files()));
    write_packed_bytes(mirror, NULL_ADDR, NULL_VERSION, PLATFORM, zip);
    mirror.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NULL_H1;
    use std::io::Read as _;

    const FILES: &[PkgFile] = &[
        PkgFile {
            path: "terraform-provider-demo_v1.0.0",
            contents: b"#!/bin/sh\necho demo\n",
            executable: true,
        },
        PkgFile {
            path: "docs/README.md",
            contents: b"# demo\n",
            executable: false,
        },
    ];

    #[test]
    fn unpacked_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = write_unpacked(
            tmp.path(),
            "example.com/ns/demo",
            "1.0.0",
            "linux_amd64",
            FILES,
        );
        assert_eq!(
            dir,
            tmp.path().join("example.com/ns/demo/1.0.0/linux_amd64")
        );
        let exe = fs_err::metadata(dir.join("terraform-provider-demo_v1.0.0")).unwrap();
        assert_eq!(exe.permissions().mode() & 0o777, 0o755);
        let doc = fs_err::metadata(dir.join("docs/README.md")).unwrap();
        assert_eq!(doc.permissions().mode() & 0o777, 0o644);
    }

    #[test]
    fn packed_layout_has_no_dir_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write_packed(
            tmp.path(),
            "example.com/ns/demo",
            "1.0.0",
            "linux_amd64",
            FILES,
        );
        assert_eq!(
            path,
            tmp.path()
                .join("example.com/ns/demo/terraform-provider-demo_1.0.0_linux_amd64.zip")
        );
        let mut zip = zip::ZipArchive::new(fs_err::File::open(&path).unwrap()).unwrap();
        let names: Vec<String> = zip.file_names().map(str::to_owned).collect();
        assert_eq!(names, ["terraform-provider-demo_v1.0.0", "docs/README.md"]);
        for (i, file) in FILES.iter().enumerate() {
            let mut entry = zip.by_index(i).unwrap();
            assert!(!entry.is_dir());
            assert_eq!(entry.compression(), CompressionMethod::Deflated);
            let mode = if file.executable {
                0o100_755
            } else {
                0o100_644
            };
            assert_eq!(entry.unix_mode(), Some(mode));
            assert_eq!(entry.last_modified(), Some(fixed_time()));
            let mut contents = Vec::new();
            entry.read_to_end(&mut contents).unwrap();
            assert_eq!(contents, file.contents);
        }
        // Deterministic: same files, same bytes.
        assert_eq!(fs_err::read(&path).unwrap(), zip_bytes(FILES));
        assert!(zh(&path).starts_with("zh:") && zh(&path).len() == 3 + 64);
    }

    #[test]
    fn h1_ignores_order() {
        let mut reversed = FILES.to_vec();
        reversed.reverse();
        assert_eq!(h1(FILES), h1(&reversed));
        assert!(h1(FILES).starts_with("h1:"));
    }

    #[test]
    fn null_provider_mirrors_match_the_lock_hash() {
        assert_eq!(h1(&null_files()), NULL_H1);
        let tmp = tempfile::tempdir().unwrap();
        let root = null_unpacked(&tmp.path().join("unpacked"));
        let bin = root
            .join(NULL_ADDR)
            .join("2.1.2/linux_amd64")
            .join(NULL_PROVIDER_FILE);
        assert_eq!(fs_err::read(bin).unwrap(), null_provider_bytes());

        let root = null_packed(&tmp.path().join("packed"));
        let zip_path = root
            .join(NULL_ADDR)
            .join("terraform-provider-null_2.1.2_linux_amd64.zip");
        let zip = zip::ZipArchive::new(fs_err::File::open(&zip_path).unwrap()).unwrap();
        assert_eq!(zip.file_names().collect::<Vec<_>>(), [NULL_PROVIDER_FILE]);
    }
}

/// The mirrors written here are what the real terraform accepts.
#[cfg(test)]
mod terraform_tests {
    use super::*;
    use crate::{run_ok, TestEnv, NULL_H1};

    const MAIN_TF: &str = r#"terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~> 2.1" }
  }
}
resource "null_resource" "x" {}
"#;

    fn terraform_init_from(env: &TestEnv, name: &str, mirror: &Path) -> String {
        let config = env.cli_config_fs_mirror(mirror);
        let dir = env.checkout(name, &[("main.tf", MAIN_TF)]);
        run_ok(
            env.terraform(&dir)
                .env("TF_CLI_CONFIG_FILE", &config)
                .args(["init", "-input=false", "-no-color"]),
        );
        run_ok(
            env.terraform(&dir)
                .env("TF_CLI_CONFIG_FILE", &config)
                .args(["validate", "-no-color"]),
        );
        fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap()
    }

    #[test]
    fn terraform_installs_from_both_layouts() {
        let env = TestEnv::new();
        let unpacked = null_unpacked(&env.root.path().join("mirror-unpacked"));
        let lock = terraform_init_from(&env, "unpacked", &unpacked);
        assert!(lock.contains(NULL_H1), "{lock}");

        let packed = null_packed(&env.root.path().join("mirror-packed"));
        let lock = terraform_init_from(&env, "packed", &packed);
        assert!(lock.contains(NULL_H1), "{lock}");
        // Terraform 1.0.3 records only the h1: of a package from a filesystem mirror, even
        // a packed one: no zh: of our zip.
        assert!(!lock.contains("zh:"), "{lock}");
    }
}
