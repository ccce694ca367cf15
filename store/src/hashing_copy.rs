//! Copying content into a blob's temp file while hashing it: BLAKE3 (the blob's address) and
//! SHA-256 (for `h1:`), in the one read pass.
//!
//! Large content (a provider binary of hundreds of megabytes, inflated from a zip) is copied
//! on a pipeline, so that the work overlaps instead of adding up: the caller's thread reads
//! (inflates) the next chunk while a second thread hashes and writes the previous one, and a
//! third asks the kernel to write back what is already written (`fdatasync` every
//! [`WRITEBACK_EVERY`] bytes), so that the fsync that makes the blob durable finds little
//! left to do. Small content is copied inline: a thread per file would cost more than it
//! saves.

use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use sha2::{Digest, Sha256};

/// Content of at least this many bytes (as announced) is copied on the pipeline.
pub(crate) const PIPELINE_MIN: u64 = 4 << 20;

/// The chunk a read fills.
const CHUNK: usize = 256 * 1024;

/// Chunks in flight between the reading and the hashing thread.
const CHUNKS_IN_FLIGHT: usize = 8;

/// Bytes written between two early writebacks.
const WRITEBACK_EVERY: u64 = 32 << 20;

/// What a copy produced.
pub(crate) struct Copied {
    pub(crate) blake3: [u8; 32],
    pub(crate) sha256: [u8; 32],
    pub(crate) size: u64,
}

/// Why a copy failed: reading the source (the caller knows what it was) or writing the file.
pub(crate) enum CopyError {
    Read(io::Error),
    Write(io::Error),
}

/// Copy `reader` to the end of `out`, hashing; on a pipeline when `size_hint` (what the
/// caller expects to copy) is at least [`PIPELINE_MIN`].
pub(crate) fn copy_hashing(
    reader: &mut dyn Read,
    out: &std::fs::File,
    size_hint: u64,
) -> Result<Copied, CopyError> {
    if size_hint >= PIPELINE_MIN {
        copy_pipelined(reader, out)
    } else {
        copy_inline(reader, out)
    }
}

/// Read, hash and write on the caller's thread.
fn copy_inline(reader: &mut dyn Read, mut out: &std::fs::File) -> Result<Copied, CopyError> {
    let mut hashing = Hashing::default();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = read_some(reader, &mut buf)?;
        if n == 0 {
            return Ok(hashing.finish());
        }
        hashing.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(CopyError::Write)?;
    }
}

/// Read on the caller's thread; hash and write on a second; write back early on a third.
fn copy_pipelined(reader: &mut dyn Read, out: &std::fs::File) -> Result<Copied, CopyError> {
    let (full_tx, full_rx) = sync_channel::<(Vec<u8>, usize)>(CHUNKS_IN_FLIGHT);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 1);
    for _ in 0..=CHUNKS_IN_FLIGHT {
        empty_tx.send(vec![0u8; CHUNK]).expect("the pool has room");
    }
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || hash_and_write(out, full_rx, empty_tx));
        let read = read_into(reader, &empty_rx, &full_tx);
        // The writer ends once every chunk sent is written (or at its first error).
        drop(full_tx);
        let written = writer.join().expect("the blob writer thread panicked");
        // A read error is the cause; a write error stops the reads (the pool runs dry).
        read?;
        written.map_err(CopyError::Write)
    })
}

/// Fill chunks from the pool with `reader` and send them to the writer, until the end of
/// the content or until the writer stops taking them.
fn read_into(
    reader: &mut dyn Read,
    empty: &Receiver<Vec<u8>>,
    full: &SyncSender<(Vec<u8>, usize)>,
) -> Result<(), CopyError> {
    while let Ok(mut buf) = empty.recv() {
        let n = read_some(reader, &mut buf)?;
        if n == 0 || full.send((buf, n)).is_err() {
            break;
        }
    }
    Ok(())
}

/// The writer's side: hash and write each chunk, return it to the pool, and have a third
/// thread write back early every [`WRITEBACK_EVERY`] bytes.
fn hash_and_write(
    out: &std::fs::File,
    full: Receiver<(Vec<u8>, usize)>,
    empty: SyncSender<Vec<u8>>,
) -> io::Result<Copied> {
    let syncer_file = out.try_clone()?;
    let (wake_tx, wake_rx) = sync_channel::<()>(1);
    std::thread::scope(|scope| {
        // Errors here are not the copy's: the fsync that makes the blob durable comes later
        // and reports them. The syncer ends when `wake_tx` goes, with the chunk loop.
        scope.spawn(move || {
            while wake_rx.recv().is_ok() {
                let _ = syncer_file.sync_data();
            }
        });
        write_chunks(out, full, empty, wake_tx)
    })
}

/// Hash and write each chunk, return it to the pool, and wake the syncer every
/// [`WRITEBACK_EVERY`] bytes.
fn write_chunks(
    mut out: &std::fs::File,
    full: Receiver<(Vec<u8>, usize)>,
    empty: SyncSender<Vec<u8>>,
    wake: SyncSender<()>,
) -> io::Result<Copied> {
    let mut hashing = Hashing::default();
    let mut since_writeback = 0u64;
    for (buf, n) in full {
        hashing.update(&buf[..n]);
        out.write_all(&buf[..n])?;
        since_writeback += n as u64;
        if since_writeback >= WRITEBACK_EVERY {
            since_writeback = 0;
            // Full: a writeback is already asked for, which covers this too.
            let _ = wake.try_send(());
        }
        // The reader may have stopped: then nobody needs the chunk back.
        let _ = empty.send(buf);
    }
    Ok(hashing.finish())
}

/// One `read`, retried when interrupted.
fn read_some(reader: &mut dyn Read, buf: &mut [u8]) -> Result<usize, CopyError> {
    loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        }
    }
}

/// Both hashes and the size, fed in order.
#[derive(Default)]
struct Hashing {
    blake: blake3::Hasher,
    sha: Sha256,
    size: u64,
}

impl Hashing {
    fn update(&mut self, bytes: &[u8]) {
        self.blake.update(bytes);
        self.sha.update(bytes);
        self.size += bytes.len() as u64;
    }

    fn finish(self) -> Copied {
        Copied {
            blake3: *self.blake.finalize().as_bytes(),
            sha256: self.sha.finalize().into(),
            size: self.size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes and bytes of a copy.
    fn copy(content: &[u8], size_hint: u64) -> (Vec<u8>, [u8; 32], [u8; 32], u64) {
        let file = tempfile::tempfile().unwrap();
        let Ok(copied) = copy_hashing(&mut &content[..], &file, size_hint) else {
            panic!("copy failed");
        };
        let mut back = Vec::new();
        let mut f = &file;
        std::io::Seek::rewind(&mut f).unwrap();
        f.read_to_end(&mut back).unwrap();
        (back, copied.blake3, copied.sha256, copied.size)
    }

    #[test]
    fn pipelined_and_inline_copies_agree_with_the_hashes_of_the_content() {
        // Not a multiple of the chunk, and more than the pool holds.
        let content: Vec<u8> = (0..(CHUNK * (CHUNKS_IN_FLIGHT + 5) + 1234))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let inline = copy(&content, 0);
        let pipelined = copy(&content, PIPELINE_MIN);
        assert_eq!(inline, pipelined);
        assert_eq!(inline.0, content);
        assert_eq!(inline.1, *blake3::hash(&content).as_bytes());
        assert_eq!(inline.2, <[u8; 32]>::from(Sha256::digest(&content)));
        assert_eq!(inline.3, content.len() as u64);
        // Empty content too.
        assert_eq!(copy(b"", PIPELINE_MIN).3, 0);
    }

    /// A reader that fails after some chunks.
    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("broken archive"));
            }
            self.0 -= 1;
            buf.fill(1);
            Ok(buf.len())
        }
    }

    #[test]
    fn a_read_error_is_the_copys_error_on_both_paths() {
        for hint in [0, PIPELINE_MIN] {
            let file = tempfile::tempfile().unwrap();
            match copy_hashing(&mut Failing(CHUNKS_IN_FLIGHT * 2), &file, hint) {
                Err(CopyError::Read(e)) => assert_eq!(e.to_string(), "broken archive"),
                _ => panic!("a read error was not reported (hint {hint})"),
            }
        }
    }
}
