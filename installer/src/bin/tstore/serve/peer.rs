//! The process at the other end of a connection, pinned before anything of it is read.
//!
//! The kernel names the peer of a Unix connection (`SO_PEERCRED`: pid, user, group), but a
//! pid is only a number: the peer may exit and its pid go to another process before its
//! `/proc` entries are read. So the peer is held by a pidfd (`SO_PEERPIDFD`, Linux 6.5;
//! before that `pidfd_open` of the pid, accepted only when that process started before the
//! connection was taken), its `/proc/PID` directory opened, and the pidfd asked afterwards
//! whether its process still runs: a pid is not reused while its process lives, so the
//! directory is then the peer's, and every entry is read through that directory.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::event::{PollFd, PollFlags};
use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, PidfdFlags};

/// The peer of a connection: who the kernel says it is, and its `/proc` directory.
pub(super) struct PeerProcess {
    pub(super) pid: i32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    /// `/proc/PID`, opened while the peer was known to run.
    pub(super) proc_dir: OwnedFd,
}

impl PeerProcess {
    /// The peer of `stream`, or why it cannot be pinned (it exited, `/proc` is not there).
    pub(super) fn of(stream: &UnixStream) -> std::io::Result<PeerProcess> {
        let taken_at = boot_ticks();
        let cred = rustix::net::sockopt::socket_peercred(stream)?;
        let pid = cred.pid.as_raw_nonzero().get();
        let pidfd = match nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerPidfd)
        {
            Ok(pidfd) => pidfd,
            Err(nix::errno::Errno::ENOPROTOOPT | nix::errno::Errno::EINVAL) => {
                pidfd_of_started_before(cred.pid, taken_at)?
            }
            Err(nix::errno::Errno::ESRCH) => return Err(gone()),
            Err(e) => return Err(e.into()),
        };
        let proc_dir = rustix::fs::open(
            format!("/proc/{pid}"),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        if ended(&pidfd)? {
            return Err(gone());
        }
        Ok(PeerProcess {
            pid,
            uid: cred.uid.as_raw(),
            gid: cred.gid.as_raw(),
            proc_dir,
        })
    }
}

fn gone() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "the peer exited before it could be checked",
    )
}

/// Whether the process a pidfd holds has ended (its pidfd is readable then).
fn ended(pidfd: &OwnedFd) -> std::io::Result<bool> {
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut fds, Some(&zero))?;
    Ok(!fds[0].revents().is_empty())
}

/// A kernel without `SO_PEERPIDFD`: a pidfd of `pid`, if the process that has it now started
/// before the connection was taken (a process started later cannot have made it).
fn pidfd_of_started_before(pid: Pid, taken_at: u64) -> std::io::Result<OwnedFd> {
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty())?;
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))?;
    match start_ticks(&stat) {
        Some(started) if started <= taken_at && !ended(&pidfd)? => Ok(pidfd),
        _ => Err(gone()),
    }
}

/// Clock ticks since boot, the unit of a process's start time in `/proc/PID/stat`.
fn boot_ticks() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    let hz = rustix::param::clock_ticks_per_second();
    (now.tv_sec as u64) * hz + (now.tv_nsec as u64) * hz / 1_000_000_000
}

/// The start time (field 22) of a `/proc/PID/stat` line; the command name (field 2) may
/// hold spaces and parentheses, so fields are counted after its last `)`.
fn start_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// This process's `/proc` directory.
pub(super) fn own_proc_dir() -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/proc/self",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Reads of one `/proc/PID` directory.
pub(super) struct ProcDir<'a>(pub(super) std::os::fd::BorrowedFd<'a>);

impl ProcDir<'_> {
    pub(super) fn link(&self, name: &str) -> Option<Vec<u8>> {
        rustix::fs::readlinkat(self.0, name, Vec::new())
            .ok()
            .map(|target| target.into_bytes())
    }

    pub(super) fn read(&self, name: &str) -> Option<Vec<u8>> {
        let fd = rustix::fs::openat(
            self.0,
            name,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .ok()?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes).ok()?;
        Some(bytes)
    }

    /// The identity of the file `name` links to (`exe`).
    pub(super) fn stat_target(&self, name: &str) -> Option<rustix::fs::Stat> {
        rustix::fs::statat(self.0, name, rustix::fs::AtFlags::empty()).ok()
    }
}

impl<'a> From<&'a OwnedFd> for ProcDir<'a> {
    fn from(fd: &'a OwnedFd) -> Self {
        ProcDir(fd.as_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "42 (a b) c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 100 18446744073709551615";
        assert_eq!(start_ticks(stat), Some(987654));
        assert_eq!(start_ticks("42 (x"), None);
    }

    #[test]
    fn the_peer_of_a_connection_is_this_process_and_its_proc_dir_is_ours() {
        let (a, _b) = UnixStream::pair().unwrap();
        let peer = PeerProcess::of(&a).unwrap();
        assert_eq!(peer.pid as u32, std::process::id());
        let status = ProcDir::from(&peer.proc_dir).read("status").unwrap();
        let own = std::fs::read("/proc/self/status").unwrap();
        let pid_line = |s: &[u8]| {
            String::from_utf8_lossy(s)
                .lines()
                .find(|l| l.starts_with("Pid:"))
                .map(str::to_owned)
        };
        assert_eq!(pid_line(&status), pid_line(&own));
    }

    #[test]
    fn a_peer_that_exited_is_not_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        // A child connects and exits; its pidfd is then readable and the peer refused.
        let out = tstore_process::Command::new("python3")
            .arg("-c")
            .arg("import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let (stream, _) = listener.accept().unwrap();
        let err = PeerProcess::of(&stream)
            .err()
            .expect("an exited peer is refused");
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    }
}
