//! A zip's central directory and its end records, read as stored: the file ingest reads its
//! names (the `zip` crate keeps only the last of two equal names), the streamed ingest reads
//! every record to hold it against the local headers it has already unpacked.
//!
//! Each reader starts after a record's 4-byte signature, which the caller read to learn what
//! comes next.

use std::io::{self, Read};

/// The signature of a local file header.
pub(super) const LOCAL_HEADER: [u8; 4] = [0x50, 0x4b, 0x03, 0x04];
/// The signature of a central-directory record.
pub(super) const CENTRAL_RECORD: [u8; 4] = [0x50, 0x4b, 0x01, 0x02];
/// The signature of the zip64 end-of-central-directory record.
pub(super) const ZIP64_END: [u8; 4] = [0x50, 0x4b, 0x06, 0x06];
/// The signature of the zip64 end-of-central-directory locator.
pub(super) const ZIP64_LOCATOR: [u8; 4] = [0x50, 0x4b, 0x06, 0x07];
/// The signature of the end-of-central-directory record.
pub(super) const END: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];

/// A 16-bit field that says "see the zip64 record".
const U16_SEE_ZIP64: u64 = 0xFFFF;
/// A 32-bit field that says "see the zip64 extra field or record".
const U32_SEE_ZIP64: u64 = 0xFFFF_FFFF;

/// One central-directory record: what a reader that trusts the central directory (Go's
/// `archive/zip`, the `zip` crate's `ZipArchive`) believes about an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CentralRecord {
    /// The name as stored.
    pub(super) name: Vec<u8>,
    /// The system that made the entry (the high byte of "version made by"): 0 DOS, 3 unix.
    pub(super) system: u8,
    /// The external attributes (a unix mode in the high 16 bits when made on unix).
    pub(super) external: u32,
    /// The general-purpose flags.
    pub(super) flags: u16,
    /// The compression method.
    pub(super) method: u16,
    pub(super) crc32: u32,
    /// Sizes and the local header's offset, zip64 fields applied.
    pub(super) compressed: u64,
    pub(super) size: u64,
    pub(super) offset: u64,
    /// The record's length in bytes, signature included.
    pub(super) length: u64,
    /// Its extra field holds nothing but a well-formed zip64 field (see [`record`]).
    pub(super) plain_extra: bool,
}

impl CentralRecord {
    /// The unix mode the record declares, read as the `zip` crate reads it (so that both
    /// ingests classify an entry alike): the high 16 bits on unix; from the DOS directory
    /// and read-only bits on DOS; none when the attributes are 0 or the system is another.
    pub(super) fn unix_mode(&self) -> Option<u32> {
        if self.external == 0 {
            return None;
        }
        match self.system {
            3 => Some(self.external >> 16),
            0 => {
                let mut mode = if self.external & 0x10 != 0 {
                    0o040775
                } else {
                    0o100664
                };
                // Read-only: the `zip` crate masks with 0o555, which drops the type bits
                // too (a read-only DOS directory is a file to it); so does this reading.
                if self.external & 0x01 != 0 {
                    mode &= 0o555;
                }
                Some(mode)
            }
            _ => None,
        }
    }
}

fn u16_at(b: &[u8], i: usize) -> u64 {
    u64::from(u16::from_le_bytes([b[i], b[i + 1]]))
}

fn u32_at(b: &[u8], i: usize) -> u64 {
    u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]))
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"))
}

/// Read past `n` bytes, all of which must be there.
fn skip(r: &mut impl Read, n: u64) -> io::Result<()> {
    if io::copy(&mut r.take(n), &mut io::sink())? != n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Read the 4-byte signature of what comes next; `None` at the end of the stream.
pub(super) fn signature(r: &mut impl Read) -> io::Result<Option<[u8; 4]>> {
    let mut sig = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut sig[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(sig))
}

/// One central-directory record, its signature already read.
pub(super) fn record(r: &mut impl Read) -> io::Result<CentralRecord> {
    let mut h = [0u8; 42];
    r.read_exact(&mut h)?;
    // Offsets below are the specification's minus the 4 signature bytes.
    let (name_len, extra_len, comment_len) = (u16_at(&h, 24), u16_at(&h, 26), u16_at(&h, 28));
    let mut name = vec![0u8; name_len as usize];
    r.read_exact(&mut name)?;
    let mut extra = vec![0u8; extra_len as usize];
    r.read_exact(&mut extra)?;
    skip(r, comment_len)?;
    let mut record = CentralRecord {
        name,
        system: h[1],
        external: u32_at(&h, 34) as u32,
        flags: u16_at(&h, 4) as u16,
        method: u16_at(&h, 6) as u16,
        crc32: u32_at(&h, 12) as u32,
        compressed: u32_at(&h, 16),
        size: u32_at(&h, 20),
        offset: u32_at(&h, 38),
        length: 46 + name_len + extra_len + comment_len,
        plain_extra: false,
    };
    record.plain_extra = apply_zip64_extra(&mut record, &extra);
    Ok(record)
}

/// The zip64 extra field (id 1) holds, in this order, each of the uncompressed size, the
/// compressed size and the offset whose 32-bit field is all ones. Applied as Go's
/// `archive/zip` applies it; `false` unless the extra field is that field alone, exactly as
/// long as those values, or nothing (readers differ on anything else: the `zip` crate reads
/// all three values from a field of 24 bytes or more, another field can rename an entry).
fn apply_zip64_extra(record: &mut CentralRecord, extra: &[u8]) -> bool {
    let wide = [record.size, record.compressed, record.offset]
        .iter()
        .filter(|&&v| v == U32_SEE_ZIP64)
        .count();
    if extra.is_empty() {
        return wide == 0;
    }
    let plain = extra.len() >= 4
        && u16_at(extra, 0) == 1
        && u16_at(extra, 2) as usize == 8 * wide
        && extra.len() == 4 + 8 * wide
        && wide > 0;
    if !plain {
        return false;
    }
    let mut values = extra[4..].chunks_exact(8).map(|v| u64_at(v, 0));
    for field in [&mut record.size, &mut record.compressed, &mut record.offset] {
        if *field == U32_SEE_ZIP64 {
            *field = values.next().unwrap_or(U32_SEE_ZIP64);
        }
    }
    true
}

/// Whether a local header's extra field holds nothing but one zip64 field (sizes): what
/// tstore's zips hold; another field can rename an entry for one reader and not another.
pub(super) fn plain_local_extra(extra: &[u8]) -> bool {
    extra.is_empty()
        || (extra.len() >= 4
            && u16_at(extra, 0) == 1
            && extra.len() == 4 + u16_at(extra, 2) as usize)
}

/// What the end records say of the central directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct CentralEnd {
    /// Entries in the central directory.
    pub(super) entries: u64,
    /// Its length in bytes.
    pub(super) size: u64,
    /// Its offset from the start of the archive.
    pub(super) offset: u64,
}

/// The end records after the central directory, from signature `sig` (read already) to
/// the end of the stream, which must follow the end record: a zip64 end record and its
/// locator (whose offset must be `zip64_at`, where that record began), then the end record.
/// `None` when they are not in the one shape every reader agrees on (one disk, no comment,
/// no zip64 extensible data, the two records agreeing), or data follows them.
pub(super) fn end_records(
    r: &mut impl Read,
    mut sig: [u8; 4],
    zip64_at: u64,
) -> io::Result<Option<CentralEnd>> {
    let mut zip64 = None;
    if sig == ZIP64_END {
        let mut head = [0u8; 8];
        r.read_exact(&mut head)?;
        // No extensible data: nothing for a reader to find in it.
        if u64_at(&head, 0) != 44 {
            return Ok(None);
        }
        let mut body = [0u8; 44];
        r.read_exact(&mut body)?;
        // One disk: this one, holding every entry; a version a reader accepts (the `zip`
        // crate refuses a record that needs a later version than made it).
        let one_disk = u16_at(&body, 2) <= u16_at(&body, 0)
            && u32_at(&body, 4) == 0
            && u32_at(&body, 8) == 0
            && u64_at(&body, 12) == u64_at(&body, 20);
        if !one_disk {
            return Ok(None);
        }
        zip64 = Some(CentralEnd {
            entries: u64_at(&body, 20),
            size: u64_at(&body, 28),
            offset: u64_at(&body, 36),
        });
        if signature(r)? != Some(ZIP64_LOCATOR) {
            return Ok(None);
        }
        let mut locator = [0u8; 16];
        r.read_exact(&mut locator)?;
        if u32_at(&locator, 0) != 0 || u64_at(&locator, 4) != zip64_at || u32_at(&locator, 12) > 1 {
            return Ok(None);
        }
        match signature(r)? {
            Some(s) => sig = s,
            None => return Ok(None),
        }
    }
    if sig != END {
        return Ok(None);
    }
    let mut e = [0u8; 18];
    r.read_exact(&mut e)?;
    // No comment: a reader that looks for the end record from the end of the file would
    // find one hidden in it, with another central directory.
    if u16_at(&e, 16) != 0 {
        return Ok(None);
    }
    // One disk, this one, holding every entry (all ones: see the zip64 record, checked).
    let (disk, directory_disk) = (u16_at(&e, 0), u16_at(&e, 2));
    let one_disk = [disk, directory_disk]
        .iter()
        .all(|&d| d == 0 || (d == U16_SEE_ZIP64 && zip64.is_some()))
        && u16_at(&e, 4) == u16_at(&e, 6);
    if !one_disk {
        return Ok(None);
    }
    let mut rest = [0u8; 1];
    if r.read(&mut rest)? != 0 {
        return Ok(None);
    }
    // A field all ones defers to the zip64 record; where there is one, every value of it
    // is the one in force (readers differ on which of two they believe).
    let resolve = |short: u64, all_ones: u64, long: Option<u64>| match long {
        Some(long) if short == all_ones || short == long => Some(long),
        Some(_) => None,
        None if short == all_ones => None,
        None => Some(short),
    };
    let end = (|| {
        Some(CentralEnd {
            entries: resolve(u16_at(&e, 6), U16_SEE_ZIP64, zip64.map(|z| z.entries))?,
            size: resolve(u32_at(&e, 8), U32_SEE_ZIP64, zip64.map(|z| z.size))?,
            offset: resolve(u32_at(&e, 12), U32_SEE_ZIP64, zip64.map(|z| z.offset))?,
        })
    })();
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dos(external: u32) -> CentralRecord {
        CentralRecord {
            name: b"x".to_vec(),
            system: 0,
            external,
            flags: 0,
            method: 0,
            crc32: 0,
            compressed: 0,
            size: 0,
            offset: 0,
            length: 47,
            plain_extra: true,
        }
    }

    #[test]
    fn a_dos_mode_is_read_as_the_zip_crate_reads_it() {
        assert_eq!(dos(0x20).unix_mode(), Some(0o100664));
        assert_eq!(dos(0x10).unix_mode(), Some(0o040775));
        // Read-only: the type bits go with the write bits.
        assert_eq!(dos(0x11).unix_mode(), Some(0o555));
        assert_eq!(dos(0x21).unix_mode(), Some(0o444));
        assert_eq!(dos(0).unix_mode(), None);
        let unix = CentralRecord {
            system: 3,
            ..dos(0o100755 << 16)
        };
        assert_eq!(unix.unix_mode(), Some(0o100755));
        let other = CentralRecord { system: 30, ..unix };
        assert_eq!(other.unix_mode(), None);
    }
}
