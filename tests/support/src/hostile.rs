//! Hostile provider zips: each one is a plausible provider package (it holds an executable
//! `terraform-provider-evil_v1.0.0`) plus one entry that attacks whoever unpacks it.
//! An installer must reject every one of them without writing anything outside its temp dir.
//!
//! Put one in a packed mirror with [`mirror::write_packed_bytes`](crate::mirror::write_packed_bytes).

use std::io::Write as _;
use std::sync::OnceLock;

use zip::{CompressionMethod, ZipWriter};

use crate::mirror::file_options;

/// The provider binary every hostile zip also holds.
pub const EVIL_PROVIDER_FILE: &str = "terraform-provider-evil_v1.0.0";
/// The content of [`EVIL_PROVIDER_FILE`].
pub const EVIL_PROVIDER_CONTENTS: &[u8] = b"#!/bin/sh\necho evil provider\n";
/// Uncompressed size of the [`HostileKind::RatioBomb`] entry (zeros; about 300 KB deflated).
pub const RATIO_BOMB_SIZE: u64 = 300 * 1024 * 1024;

/// One class of hostile zip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostileKind {
    /// A file entry named `../evil`.
    ParentDir,
    /// A file entry named `/tmp/evil`.
    AbsolutePath,
    /// A symlink entry `link` → `../../outside` (mode 0o120777 in the external attributes).
    EscapingSymlink,
    /// A symlink entry `link` → `/etc/passwd`.
    AbsoluteSymlink,
    /// An entry `device` with unix mode 0o020644: a character device.
    DeviceFile,
    /// The entry [`EVIL_PROVIDER_FILE`] twice, with different contents.
    Duplicate,
    /// An entry `bomb` of [`RATIO_BOMB_SIZE`] zeros, deflated (ratio about 1000:1).
    RatioBomb,
}

impl HostileKind {
    /// Every class, in declaration order.
    pub const ALL: &'static [HostileKind] = &[
        HostileKind::ParentDir,
        HostileKind::AbsolutePath,
        HostileKind::EscapingSymlink,
        HostileKind::AbsoluteSymlink,
        HostileKind::DeviceFile,
        HostileKind::Duplicate,
        HostileKind::RatioBomb,
    ];

    /// A short kebab-case name, for test names and messages (`parent-dir`, ...).
    pub fn name(self) -> &'static str {
        match self {
            HostileKind::ParentDir => "parent-dir",
            HostileKind::AbsolutePath => "absolute-path",
            HostileKind::EscapingSymlink => "escaping-symlink",
            HostileKind::AbsoluteSymlink => "absolute-symlink",
            HostileKind::DeviceFile => "device-file",
            HostileKind::Duplicate => "duplicate",
            HostileKind::RatioBomb => "ratio-bomb",
        }
    }

    /// The zip archive's bytes. Deterministic; the ratio bomb is built once per process.
    pub fn zip_bytes(self) -> Vec<u8> {
        match self {
            HostileKind::ParentDir => with_provider(|zip| add_file(zip, "../evil", b"evil\n")),
            HostileKind::AbsolutePath => with_provider(|zip| add_file(zip, "/tmp/evil", b"evil\n")),
            HostileKind::EscapingSymlink => {
                with_provider(|zip| add_symlink(zip, "link", "../../outside"))
            }
            HostileKind::AbsoluteSymlink => {
                with_provider(|zip| add_symlink(zip, "link", "/etc/passwd"))
            }
            HostileKind::DeviceFile => {
                let bytes = with_provider(|zip| add_file(zip, "device", b""));
                set_external_mode(bytes, "device", 0o020_644)
            }
            HostileKind::Duplicate => duplicate(),
            HostileKind::RatioBomb => {
                static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
                BOMB.get_or_init(ratio_bomb).clone()
            }
        }
    }
}

impl std::fmt::Display for HostileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

type Zip = ZipWriter<std::io::Cursor<Vec<u8>>>;

/// A zip with the evil provider binary, then whatever `extra` adds.
fn with_provider(extra: impl FnOnce(&mut Zip)) -> Vec<u8> {
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file(
        EVIL_PROVIDER_FILE,
        file_options(CompressionMethod::Deflated, 0o755),
    )
    .expect("start zip entry");
    zip.write_all(EVIL_PROVIDER_CONTENTS)
        .expect("write zip entry");
    extra(&mut zip);
    zip.finish().expect("finish zip").into_inner()
}

fn add_file(zip: &mut Zip, name: &str, contents: &[u8]) {
    zip.start_file(name, file_options(CompressionMethod::Deflated, 0o644))
        .expect("start zip entry");
    zip.write_all(contents).expect("write zip entry");
}

fn add_symlink(zip: &mut Zip, name: &str, target: &str) {
    // The zip crate ORs in S_IFLNK: mode 0o120777.
    zip.add_symlink(name, target, file_options(CompressionMethod::Stored, 0o777))
        .expect("add zip symlink");
}

/// The zip crate refuses to write a duplicate name, so write `EVIL_PROVIDER_FILE` and a
/// same-length twin (stored, so contents are verbatim and cannot contain the names), then
/// rename the twin in its local header and central directory record. Names are not covered
/// by the CRC, so the archive stays well-formed.
fn duplicate() -> Vec<u8> {
    let twin = format!("{}X", &EVIL_PROVIDER_FILE[..EVIL_PROVIDER_FILE.len() - 1]);
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, contents) in [
        (EVIL_PROVIDER_FILE, EVIL_PROVIDER_CONTENTS),
        (
            twin.as_str(),
            b"#!/bin/sh\necho second copy wins\n".as_slice(),
        ),
    ] {
        zip.start_file(name, file_options(CompressionMethod::Stored, 0o755))
            .expect("start zip entry");
        zip.write_all(contents).expect("write zip entry");
    }
    let mut bytes = zip.finish().expect("finish zip").into_inner();
    let replaced = replace_all(&mut bytes, twin.as_bytes(), EVIL_PROVIDER_FILE.as_bytes());
    assert_eq!(
        replaced, 2,
        "twin name in local header and central directory"
    );
    bytes
}

fn ratio_bomb() -> Vec<u8> {
    with_provider(|zip| {
        zip.start_file("bomb", file_options(CompressionMethod::Deflated, 0o644))
            .expect("start zip entry");
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..RATIO_BOMB_SIZE / chunk.len() as u64 {
            zip.write_all(&chunk).expect("write zip entry");
        }
    })
}

fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    assert_eq!(from.len(), to.len());
    let mut count = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            count += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    count
}

/// Set the unix mode (high 16 bits of the external attributes) of the central directory
/// record named `name`, for modes the zip crate will not write (it keeps permission bits only).
fn set_external_mode(mut bytes: Vec<u8>, name: &str, mode: u32) -> Vec<u8> {
    let u16_at = |b: &[u8], i: usize| usize::from(u16::from_le_bytes([b[i], b[i + 1]]));
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    // End of central directory record: signature, then the central directory's entry count
    // at +10 and offset at +16. This crate writes no archive comment, so it is the last 22.
    let eocd = bytes.len() - 22;
    assert_eq!(
        u32_at(&bytes, eocd),
        0x0605_4b50,
        "end of central directory"
    );
    let entries = u16_at(&bytes, eocd + 10);
    let mut pos = u32_at(&bytes, eocd + 16) as usize;
    for _ in 0..entries {
        assert_eq!(u32_at(&bytes, pos), 0x0201_4b50, "central directory record");
        let name_len = u16_at(&bytes, pos + 28);
        let extra_len = u16_at(&bytes, pos + 30);
        let comment_len = u16_at(&bytes, pos + 32);
        if &bytes[pos + 46..pos + 46 + name_len] == name.as_bytes() {
            bytes[pos + 38..pos + 42].copy_from_slice(&(mode << 16).to_le_bytes());
            return bytes;
        }
        pos += 46 + name_len + extra_len + comment_len;
    }
    panic!("no central directory record named {name}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn archive(kind: HostileKind) -> zip::ZipArchive<std::io::Cursor<Vec<u8>>> {
        zip::ZipArchive::new(std::io::Cursor::new(kind.zip_bytes()))
            .unwrap_or_else(|err| panic!("{kind} does not parse: {err}"))
    }

    /// The raw name and unix mode of every entry.
    fn entries(kind: HostileKind) -> Vec<(String, Option<u32>)> {
        let mut zip = archive(kind);
        (0..zip.len())
            .map(|i| {
                let entry = zip.by_index_raw(i).unwrap();
                (entry.name().to_owned(), entry.unix_mode())
            })
            .collect()
    }

    #[test]
    fn every_kind_holds_the_provider_and_parses() {
        assert_eq!(HostileKind::ALL.len(), 7);
        for &kind in HostileKind::ALL {
            if kind == HostileKind::Duplicate {
                continue;
            }
            let mut zip = archive(kind);
            let mut provider = zip.by_name(EVIL_PROVIDER_FILE).unwrap();
            assert_eq!(provider.unix_mode(), Some(0o100_755), "{kind}");
            let mut contents = Vec::new();
            provider.read_to_end(&mut contents).unwrap();
            assert_eq!(contents, EVIL_PROVIDER_CONTENTS, "{kind}");
        }
    }

    #[test]
    fn path_entries() {
        let parent = entries(HostileKind::ParentDir);
        assert_eq!(parent[1], ("../evil".to_owned(), Some(0o100_644)));
        let absolute = entries(HostileKind::AbsolutePath);
        assert_eq!(absolute[1], ("/tmp/evil".to_owned(), Some(0o100_644)));
    }

    #[test]
    fn symlink_entries() {
        for (kind, target) in [
            (HostileKind::EscapingSymlink, "../../outside"),
            (HostileKind::AbsoluteSymlink, "/etc/passwd"),
        ] {
            let mut zip = archive(kind);
            let mut link = zip.by_name("link").unwrap();
            assert_eq!(link.unix_mode(), Some(0o120_777), "{kind}");
            let mut contents = String::new();
            link.read_to_string(&mut contents).unwrap();
            assert_eq!(contents, target, "{kind}");
        }
    }

    #[test]
    fn device_entry() {
        let device = entries(HostileKind::DeviceFile);
        assert_eq!(device[1], ("device".to_owned(), Some(0o020_644)));
    }

    #[test]
    fn duplicate_names() {
        let bytes = HostileKind::Duplicate.zip_bytes();
        let name = EVIL_PROVIDER_FILE.as_bytes();
        let occurrences = bytes.windows(name.len()).filter(|w| *w == name).count();
        assert_eq!(
            occurrences, 4,
            "two local headers, two central directory records"
        );
        assert!(!bytes.windows(name.len()).any(|w| w.ends_with(b"_v1.0.X")));
        // Whatever the zip crate makes of the duplicate, the archive is otherwise well-formed.
        let _ = zip::ZipArchive::new(std::io::Cursor::new(bytes));
    }

    #[test]
    fn ratio_bomb() {
        let bytes = HostileKind::RatioBomb.zip_bytes();
        assert!(bytes.len() < 1024 * 1024, "compressed size {}", bytes.len());
        let mut zip = archive(HostileKind::RatioBomb);
        let bomb = zip.by_name("bomb").unwrap();
        assert_eq!(bomb.size(), RATIO_BOMB_SIZE);
        assert!(bomb.compressed_size() * 500 < bomb.size());
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<&str> = HostileKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), HostileKind::ALL.len());
    }
}
