//! A client's stdout or stderr that can block the server: a pipe or a socket whose reader
//! does not read (`tstore init | sleep 600`). A request writes into a pipe of the server's
//! own instead, and a thread copies it to the client's stream, waiting at most
//! [`WRITE_TIMEOUT`] for the stream to take each piece; a stream that does not take it in
//! time (or whose reader went away) gets nothing more, and the rest is read and dropped,
//! so the request runs to its end and the server is free for the next.
//!
//! A terminal, a regular file or `/dev/null` is handed to the request as it is: writes to
//! them do not wait on a reader, and a terminal must stay a terminal for the request
//! (colours, progress bars).

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags};
use rustix::fs::FileType;

/// How long a client's stream may take to take one piece of output.
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest piece written after the stream said it can take more: a pipe takes up to
/// `PIPE_BUF` bytes at once once it has room.
const PIECE: usize = 4096;

/// A client's output stream as a request writes to it.
pub(super) enum Output {
    /// Written to directly.
    Direct(OwnedFd),
    /// Written to through a pipe of the server's, copied by `copier`, which says on
    /// `copied` when it is done.
    Relayed {
        into: OwnedFd,
        copier: JoinHandle<()>,
        copied: Receiver<()>,
    },
}

impl Output {
    /// The request's side of `stream`: the stream itself, or a pipe into a copier.
    pub(super) fn of(stream: OwnedFd) -> std::io::Result<Output> {
        let kind = FileType::from_raw_mode(rustix::fs::fstat(&stream)?.st_mode);
        if !matches!(kind, FileType::Fifo | FileType::Socket) {
            return Ok(Output::Direct(stream));
        }
        let (from, into) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let (done, copied) = std::sync::mpsc::sync_channel(1);
        let copier = std::thread::Builder::new()
            .name("relay".to_owned())
            .spawn(move || {
                copy(from, &stream);
                let _ = done.send(());
            })?;
        Ok(Output::Relayed {
            into,
            copier,
            copied,
        })
    }

    /// The descriptor the request writes to.
    pub(super) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Output::Direct(fd) | Output::Relayed { into: fd, .. } => fd.as_fd(),
        }
    }

    /// After the request (its standard streams already put back): let the copier end, for
    /// at most [`WRITE_TIMEOUT`] (a process the request left running may still hold the
    /// pipe: its output is then copied, or dropped, without the server waiting). The
    /// request ends the moment the copier does: the client is answered only after its
    /// output, and every served init waits here.
    pub(super) fn finish(self) {
        if let Output::Relayed {
            into,
            copier,
            copied,
        } = self
        {
            drop(into);
            if copied.recv_timeout(WRITE_TIMEOUT).is_ok() {
                let _ = copier.join();
            }
        }
    }
}

/// Copy everything from `from` to `to` while `to` takes it in time; then read the rest and
/// drop it.
fn copy(from: OwnedFd, to: &OwnedFd) {
    let mut from = std::fs::File::from(from);
    let mut buf = [0u8; PIECE];
    let mut taking = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if taking {
            taking = write_in_time(to, &buf[..n]);
        }
    }
}

/// Write `bytes` to `to`, each piece after `to` said it has room, within [`WRITE_TIMEOUT`].
fn write_in_time(to: &OwnedFd, mut bytes: &[u8]) -> bool {
    let timeout = rustix::time::Timespec {
        tv_sec: WRITE_TIMEOUT.as_secs() as i64,
        tv_nsec: 0,
    };
    let mut stream = std::fs::File::from(match to.try_clone() {
        Ok(fd) => fd,
        Err(_) => return false,
    });
    while !bytes.is_empty() {
        let mut fds = [PollFd::new(to, PollFlags::OUT)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(_) => return false,
            Ok(_) if !fds[0].revents().contains(PollFlags::OUT) => return false,
            Ok(_) => {}
        }
        match stream.write(&bytes[..bytes.len().min(PIECE)]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => bytes = &bytes[n..],
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_or_file_is_written_directly_and_a_pipe_through_a_copier() {
        let file = tempfile::tempfile().unwrap();
        assert!(matches!(
            Output::of(OwnedFd::from(file)).unwrap(),
            Output::Direct(_)
        ));
        let (mut reader, writer) = std::io::pipe().unwrap();
        let output = Output::of(OwnedFd::from(writer)).unwrap();
        assert!(matches!(output, Output::Relayed { .. }));
        std::fs::File::from(output.fd().try_clone_to_owned().unwrap())
            .write_all(b"hello\n")
            .unwrap();
        output.finish();
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello\n");
    }

    #[test]
    fn a_request_waits_for_its_copier_only_while_someone_holds_the_pipe() {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let output = Output::of(OwnedFd::from(writer)).unwrap();
        // A process the request left running still holds the pipe for a while.
        let mut held = std::fs::File::from(output.fd().try_clone_to_owned().unwrap());
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            held.write_all(b"late\n").unwrap();
        });
        let started = std::time::Instant::now();
        output.finish();
        let waited = started.elapsed();
        holder.join().unwrap();
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert_eq!(got, "late\n", "the copier copied the holder's output first");
        assert!(
            waited >= Duration::from_millis(250),
            "finished early: {waited:?}"
        );
    }

    #[test]
    fn a_reader_that_went_away_takes_nothing_and_the_rest_is_dropped() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Output::of(OwnedFd::from(writer)).unwrap();
        let mut into = std::fs::File::from(output.fd().try_clone_to_owned().unwrap());
        // More than any pipe holds: the copier keeps reading, so this never blocks.
        for _ in 0..64 {
            into.write_all(&[b'x'; 16 << 10]).unwrap();
        }
        drop(into);
        output.finish();
    }
}
