//! The client's side: hand an init to the store's server, or say that this process runs
//! the command itself. Nothing is printed and nothing changes on disk before the server
//! answers that it ran the init.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use super::admit::{self, Confinement, Refusal};
use super::peer::PeerProcess;
use super::wire::{self, Answer, Sent};
use crate::settings::Environment;

/// Run `args` in the store's init server and return its exit code, or `None`: this process
/// runs the command (no server, a server that declines or fails, `TSTORE_NO_SERVER`).
pub(crate) fn forward(env: &Environment, args: &[OsString]) -> Option<ExitCode> {
    if !may_forward(env, args) {
        return None;
    }
    let socket = super::socket_path(&store_dir(env)?);
    // A socket tstore made: not a link a restored cache or a checkout could have put there.
    let meta = std::fs::symlink_metadata(&socket).ok()?;
    if !meta.file_type().is_socket() {
        return None;
    }
    let mut stream = UnixStream::connect(&socket).ok()?;
    // The listener gets nothing of this init (its environment's tokens, its directory)
    // before it is known to be a server this process could be: the same user, namespaces,
    // root, privileges, confinement and executable (as the server admits its clients).
    let server = PeerProcess::of(&stream).ok()?;
    match admit::admit(&server, &Confinement::own()) {
        Ok(()) => {}
        // A server of another build (one started before an upgrade): its own business.
        Err(Refusal::OtherBuild) => return None,
        Err(refusal) => {
            errln!(
                "tstore: the process listening at {} (pid {}) is not a server this init may \
                 use: {refusal}; running the init here",
                socket.display(),
                server.pid
            );
            return None;
        }
    }
    let cwd = rustix::fs::open(
        ".",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    // A closed standard stream stays closed for the command: only its own process has that.
    for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
        rustix::io::fcntl_getfd(fd).ok()?;
    }
    let sent = Sent {
        umask: current_umask(),
        args,
        env: env.vars(),
        fds: [stdin.as_fd(), stdout.as_fd(), stderr.as_fd(), cwd.as_fd()],
    };
    wire::send_request(&mut stream, &sent).ok()?;
    handle_interrupts();
    match wire::receive_answer(&mut stream) {
        Ok(Answer::Served(code)) => {
            if INTERRUPTED.load(Ordering::SeqCst) {
                errln!("\nInterrupted");
                return Some(ExitCode::from(130));
            }
            Some(ExitCode::from(code))
        }
        Ok(Answer::Declined) => None,
        Err(_) => {
            // It may have run part of the init: this process runs all of it.
            errln!(
                "tstore: the init server at {} did not answer as a tstore server; running \
                 the init here",
                socket.display()
            );
            None
        }
    }
}

/// Whether the command line may be an init a server runs: it names `init`, the server is
/// not turned off, and no log filter asks for this process's own log lines.
fn may_forward(env: &Environment, args: &[OsString]) -> bool {
    let off = |name: &str| {
        env.var_os(name)
            .is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
    };
    !off("TSTORE_NO_SERVER")
        && env.log_filter().is_none()
        && args.iter().skip(1).any(|a| a == "init")
        // `--store DIR` names another store than the environment's: its own process.
        && !args.iter().skip(1).any(|a| {
            let a = a.as_encoded_bytes();
            a.starts_with(b"-store") || a.starts_with(b"--store")
        })
}

/// The store's directory as [`crate::Settings::resolve`] finds it without `--store`, when
/// it is an absolute path (a relative one would look for the socket in the checkout).
fn store_dir(env: &Environment) -> Option<PathBuf> {
    let dir = match env.var_os("TSTORE_HOME") {
        Some(home) => PathBuf::from(home),
        None => env.default_store_dir()?,
    };
    dir.is_absolute().then_some(dir)
}

/// The umask, read as `umask(2)` returns it (this process has no other thread yet).
fn current_umask() -> u32 {
    let mask = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o022));
    rustix::process::umask(mask);
    mask.bits()
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ctrl-C while the server runs the init: the change it makes finishes there (as a process
/// of its own lets its change finish), then this process says `Interrupted` and exits 130.
fn handle_interrupts() {
    let _ = ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        // The answer normally comes within milliseconds; a server that waits for a lock
        // (another init of the directory, gc) is not waited for longer than a change is.
        std::thread::sleep(std::time::Duration::from_secs(60));
        errln!("\nInterrupted");
        std::process::exit(130);
    });
}
