//! The protocol between a client and the server, over one Unix stream connection per init.
//!
//! Request: a header (`MAGIC_REQUEST`, the body's length as u32 little-endian) sent with
//! four file descriptors (stdin, stdout, stderr, the current directory), then the body:
//! the umask, the arguments and the environment (each a count,
//! then length-prefixed byte strings). Answer: `MAGIC_ANSWER`, then `SERVED` and the exit
//! code, or `DECLINED` and zero.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;

use std::ffi::OsString;
use std::time::Instant;

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

const MAGIC_REQUEST: &[u8; 8] = b"tstore/2";
const MAGIC_ANSWER: &[u8; 8] = b"tstore=2";
const SERVED: u8 = 0;
const DECLINED: u8 = 1;

/// The largest body a server reads: arguments and environment together (Linux allows a
/// process 2 MiB of both at exec; twice that leaves room and bounds a hostile client).
const MAX_BODY: usize = 4 << 20;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum WireError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("not a tstore request or answer")]
    NotOurs,
    #[error("the message is malformed: {0}")]
    Malformed(&'static str),
}

/// One init, as the server receives it.
pub(super) struct Request {
    pub(super) umask: u32,
    pub(super) args: Vec<OsString>,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) stdin: OwnedFd,
    pub(super) stdout: OwnedFd,
    pub(super) stderr: OwnedFd,
    pub(super) cwd: OwnedFd,
}

/// What the client sends.
pub(super) struct Sent<'a> {
    pub(super) umask: u32,
    pub(super) args: &'a [OsString],
    pub(super) env: &'a [(OsString, OsString)],
    /// stdin, stdout, stderr, the current directory.
    pub(super) fds: [BorrowedFd<'a>; 4],
}

/// The server's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// The init ran here and ended with this exit code.
    Served(u8),
    /// The client runs the command itself.
    Declined,
}

pub(super) fn send_request(stream: &mut UnixStream, sent: &Sent<'_>) -> Result<(), WireError> {
    let mut body = Vec::with_capacity(4096);
    body.extend_from_slice(&sent.umask.to_le_bytes());
    put_count(&mut body, sent.args.len());
    for arg in sent.args {
        put_bytes(&mut body, arg.as_bytes());
    }
    put_count(&mut body, sent.env.len());
    for (name, value) in sent.env {
        put_bytes(&mut body, name.as_bytes());
        put_bytes(&mut body, value.as_bytes());
    }
    if body.len() > MAX_BODY {
        return Err(WireError::Malformed(
            "the arguments and environment are too large",
        ));
    }
    let mut header = [0u8; 12];
    header[..8].copy_from_slice(MAGIC_REQUEST);
    header[8..].copy_from_slice(&(body.len() as u32).to_le_bytes());
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&sent.fds));
    let sent_bytes = sendmsg(
        stream.as_fd(),
        &[IoSlice::new(&header)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
    .map_err(std::io::Error::from)?;
    stream.write_all(&header[sent_bytes..])?;
    stream.write_all(&body)?;
    Ok(())
}

/// The request on `stream`, all of it read by `deadline` (a client that sends a byte now
/// and then does not hold the server longer than one that sends nothing).
pub(super) fn receive_request(
    stream: &mut UnixStream,
    deadline: Instant,
) -> Result<Request, WireError> {
    let mut stream = ByDeadline { stream, deadline };
    stream.time_left()?;
    let mut header = [0u8; 12];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        stream.stream.as_fd(),
        &mut [IoSliceMut::new(&mut header)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(std::io::Error::from)?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if received.flags.contains(ReturnFlags::CTRUNC) || fds.len() != 4 {
        return Err(WireError::Malformed(
            "it does not carry four file descriptors",
        ));
    }
    if received.bytes == 0 {
        return Err(WireError::Malformed("the client closed the connection"));
    }
    stream.read_exact(&mut header[received.bytes..])?;
    if &header[..8] != MAGIC_REQUEST {
        return Err(WireError::NotOurs);
    }
    let len = u32::from_le_bytes(header[8..].try_into().expect("four bytes")) as usize;
    if len > MAX_BODY {
        return Err(WireError::Malformed("the body is too large"));
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    let mut fds = fds.into_iter();
    let mut next_fd = || fds.next().expect("four descriptors");
    let mut reader = Body(&body);
    let umask = reader.u32()?;
    let args = (0..reader.count()?)
        .map(|_| reader.os_string())
        .collect::<Result<Vec<_>, _>>()?;
    let env = (0..reader.count()?)
        .map(|_| Ok((reader.os_string()?, reader.os_string()?)))
        .collect::<Result<Vec<_>, WireError>>()?;
    if !reader.0.is_empty() {
        return Err(WireError::Malformed("bytes after the environment"));
    }
    Ok(Request {
        umask,
        args,
        env,
        stdin: next_fd(),
        stdout: next_fd(),
        stderr: next_fd(),
        cwd: next_fd(),
    })
}

/// Reads of a stream that all end by one deadline.
struct ByDeadline<'a> {
    stream: &'a mut UnixStream,
    deadline: Instant,
}

impl ByDeadline<'_> {
    /// Make the stream's next read end by the deadline (or say it has passed).
    fn time_left(&mut self) -> std::io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client did not send its request in time",
            ));
        }
        self.stream.set_read_timeout(Some(left))
    }
}

impl Read for ByDeadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.time_left()?;
        self.stream.read(buf)
    }
}

pub(super) fn send_answer(stream: &mut UnixStream, answer: Answer) -> std::io::Result<()> {
    let (kind, code) = match answer {
        Answer::Served(code) => (SERVED, code),
        Answer::Declined => (DECLINED, 0),
    };
    let mut message = [0u8; 10];
    message[..8].copy_from_slice(MAGIC_ANSWER);
    message[8] = kind;
    message[9] = code;
    stream.write_all(&message)
}

pub(super) fn receive_answer(stream: &mut UnixStream) -> Result<Answer, WireError> {
    let mut message = [0u8; 10];
    stream.read_exact(&mut message)?;
    if &message[..8] != MAGIC_ANSWER {
        return Err(WireError::NotOurs);
    }
    match message[8] {
        SERVED => Ok(Answer::Served(message[9])),
        DECLINED => Ok(Answer::Declined),
        _ => Err(WireError::Malformed("an unknown answer")),
    }
}

fn put_count(body: &mut Vec<u8>, count: usize) {
    body.extend_from_slice(&(count as u32).to_le_bytes());
}

fn put_bytes(body: &mut Vec<u8>, bytes: &[u8]) {
    put_count(body, bytes.len());
    body.extend_from_slice(bytes);
}

/// The unread rest of a body.
struct Body<'a>(&'a [u8]);

impl Body<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Malformed("it ends early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    /// A count of items, each at least four bytes long: never more than the bytes left.
    fn count(&mut self) -> Result<usize, WireError> {
        let count = self.u32()? as usize;
        if count > self.0.len() / 4 {
            return Err(WireError::Malformed("a count larger than the body"));
        }
        Ok(count)
    }

    fn os_string(&mut self) -> Result<OsString, WireError> {
        let len = self.u32()? as usize;
        Ok(OsString::from_vec(self.take(len)?.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn pair() -> (UnixStream, UnixStream) {
        UnixStream::pair().unwrap()
    }

    fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(30)
    }

    #[test]
    fn a_client_that_drips_its_request_is_cut_off_at_the_deadline() {
        let (mut client, mut server) = pair();
        let dripping = std::thread::spawn(move || {
            // A header with descriptors, then one byte of the body every 100 ms.
            let dir = tempfile::tempdir().unwrap();
            let cwd = std::fs::File::open(dir.path()).unwrap();
            let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
            let mut header = [0u8; 12];
            header[..8].copy_from_slice(MAGIC_REQUEST);
            header[8..].copy_from_slice(&1000u32.to_le_bytes());
            let fds = [stdin.as_fd(), stdout.as_fd(), stderr.as_fd(), cwd.as_fd()];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            control.push(SendAncillaryMessage::ScmRights(&fds));
            sendmsg(
                client.as_fd(),
                &[IoSlice::new(&header)],
                &mut control,
                SendFlags::NOSIGNAL,
            )
            .unwrap();
            for _ in 0..30 {
                if client.write_all(b"x").is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        // Each byte comes within a read's timeout; the request as a whole does not (a
        // timeout per read would end at the client's close instead: an early end).
        let deadline = Instant::now() + std::time::Duration::from_millis(500);
        let err = receive_request(&mut server, deadline)
            .err()
            .expect("cut off");
        assert!(
            matches!(&err, WireError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut
                || e.kind() == std::io::ErrorKind::WouldBlock),
            "{err}"
        );
        drop(server);
        dripping.join().unwrap();
    }

    #[test]
    fn a_request_arrives_as_sent_with_its_descriptors() {
        let (mut client, mut server) = pair();
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::fs::File::open(dir.path()).unwrap();
        let args: Vec<OsString> = ["tstore", "init", "-upgrade"].map(OsString::from).to_vec();
        let env = vec![
            (OsString::from("A"), OsString::from_vec(vec![0xff, b'x'])),
            (OsString::from("EMPTY"), OsString::new()),
        ];
        let stdin = std::io::stdin();
        let stdout = std::io::stdout();
        let stderr = std::io::stderr();
        let sent = Sent {
            umask: 0o027,
            args: &args,
            env: &env,
            fds: [stdin.as_fd(), stdout.as_fd(), stderr.as_fd(), cwd.as_fd()],
        };
        send_request(&mut client, &sent).unwrap();
        let got = receive_request(&mut server, far()).unwrap();
        assert_eq!(got.umask, 0o027);
        assert_eq!((got.args, got.env), (args, env));
        let received = std::fs::File::from(got.cwd).metadata().unwrap();
        let original = cwd.metadata().unwrap();
        assert_eq!(
            (received.dev(), received.ino()),
            (original.dev(), original.ino())
        );
        send_answer(&mut server, Answer::Served(130)).unwrap();
        assert_eq!(receive_answer(&mut client).unwrap(), Answer::Served(130));
    }

    #[test]
    fn a_request_without_descriptors_is_refused() {
        let (mut client, mut server) = pair();
        let mut header = Vec::from(&MAGIC_REQUEST[..]);
        header.extend_from_slice(&0u32.to_le_bytes());
        client.write_all(&header).unwrap();
        assert!(matches!(
            receive_request(&mut server, far()),
            Err(WireError::Malformed(_))
        ));
    }

    #[test]
    fn counts_and_lengths_beyond_the_body_are_refused() {
        let mut body = Vec::new();
        put_count(&mut body, 1_000_000);
        assert!(matches!(Body(&body).count(), Err(WireError::Malformed(_))));
        let mut body = Vec::new();
        put_count(&mut body, 10);
        body.extend_from_slice(b"abc");
        assert!(matches!(
            Body(&body).os_string(),
            Err(WireError::Malformed(_))
        ));
    }

    #[test]
    fn an_answer_of_another_protocol_is_refused() {
        let (mut client, mut server) = pair();
        server.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        assert!(matches!(
            receive_answer(&mut client),
            Err(WireError::NotOurs)
        ));
    }
}
