//! `tstore serve`: the socket, the loop that takes one request at a time, the server's own
//! log (its stderr as it started: a request's output is its client's), and the stop.

use clap::Args;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::admit::{self, Confinement, Refusal};
use super::peer::PeerProcess;
use super::session::{self, Own, Ran};
use super::wire::{self, Answer};
use crate::Settings;

/// How long a client may take to send its whole request (it sends it at once; a stuck or
/// hostile one does not hold the server): one deadline for the request, not one per read.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How often an idle server checks that its socket is still its own (`store rm`, another
/// server after a stale one).
const CHECK_SOCKET_EVERY: Duration = Duration::from_secs(60);

pub(crate) fn serve(settings: &Settings, args: &ServeArgs) -> Result<ExitCode> {
    // The store is opened as an init opens it: its directory is checked private to its
    // owner before the socket goes there. The handle is kept for the requests.
    let kept = super::KeptStore::default();
    kept.keep(settings, crate::commands::open_store(settings)?);
    let path = super::socket_path(&settings.store);
    let listener = bind(&path)?;
    let socket = Socket::of(&path)?;
    let log = Arc::new(Mutex::new(File::from(
        rustix::io::dup(std::io::stderr().as_fd()).context("cannot keep the server's stderr")?,
    )));
    let own = Own::capture().context("cannot record the server's own state")?;
    let confinement = Confinement::own();
    stop_on_signals(settings, socket.clone(), Arc::clone(&log));
    say(
        &log,
        &format!(
            "tstore: serving the inits of the store at {} on {} (pid {}); stop with Ctrl-C",
            settings.store.display(),
            path.display(),
            std::process::id()
        ),
    );
    if confinement.holds_sys_admin() && !args.privileged_clients {
        say(
            &log,
            "tstore: this server holds CAP_SYS_ADMIN, and so does every client it may serve: \
             it declines them all (each runs its init itself) unless started with \
             --privileged-clients, since a Landlock sandbox may confine such a client unseen",
        );
    }
    // One request at a time, and no client waits behind another: the acceptor hands a
    // connection over only while no request runs, and declines the others (their clients
    // run their inits themselves, in parallel, as without a server). The queue of one
    // covers the moment between a request's end and the loop's next wait, when the next
    // init of a sequential loop arrives.
    let (handoff, connections) = std::sync::mpsc::sync_channel::<UnixStream>(1);
    let busy = Arc::new(AtomicBool::new(false));
    let acceptor = Acceptor {
        handoff,
        busy: Arc::clone(&busy),
        log: Arc::clone(&log),
    };
    std::thread::Builder::new()
        .name("accept".to_owned())
        .spawn(move || acceptor.run(&listener))
        .context("cannot start the server's acceptor")?;
    let mut idle_since = Instant::now();
    loop {
        let wait = match args.idle_timeout {
            Some(limit) => limit.saturating_sub(idle_since.elapsed()),
            None => CHECK_SOCKET_EVERY,
        }
        .min(CHECK_SOCKET_EVERY);
        let stream = match connections.recv_timeout(wait) {
            Ok(stream) => stream,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if !socket.still_ours() {
                    say(&log, "tstore: the socket is gone or replaced; stopped");
                    return Ok(ExitCode::SUCCESS);
                }
                if args
                    .idle_timeout
                    .is_some_and(|limit| idle_since.elapsed() >= limit)
                {
                    socket.remove();
                    say(
                        &log,
                        "tstore: no init came within the idle timeout; stopped",
                    );
                    return Ok(ExitCode::SUCCESS);
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                socket.remove();
                bail!("the server stopped accepting connections");
            }
        };
        busy.store(true, Ordering::SeqCst);
        let outcome = handle(
            stream,
            &Server {
                confinement: &confinement,
                privileged_clients: args.privileged_clients,
                own: &own,
                kept: &kept,
                busy: &busy,
            },
        );
        busy.store(false, Ordering::SeqCst);
        say(&log, &outcome.line);
        idle_since = Instant::now();
    }
}

/// What one connection came to, for the server's log.
struct Outcome {
    line: String,
}

/// What the server holds for every request.
struct Server<'a> {
    confinement: &'a Confinement,
    /// `--privileged-clients`: serve clients that hold CAP_SYS_ADMIN.
    privileged_clients: bool,
    own: &'a Own,
    kept: &'a super::KeptStore,
    /// Whether a request runs (the acceptor declines clients while it does).
    busy: &'a AtomicBool,
}

/// Take one request, admit it or decline it, run it, answer. The log line names the client
/// by pid and says how it ended: never its arguments or environment (they may hold
/// secrets).
fn handle(mut stream: UnixStream, server: &Server<'_>) -> Outcome {
    let started = Instant::now();
    let line = |text: String| Outcome { line: text };
    let deadline = started + REQUEST_TIMEOUT;
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    // The client is pinned and admitted before a byte of its request is read: its
    // environment is never read by a server that would not serve it.
    let peer = match PeerProcess::of(&stream) {
        Ok(peer) => peer,
        Err(e) => {
            return line(format!(
                "tstore: a connection whose peer cannot be checked: {e}"
            ))
        }
    };
    let admitted = admit::admit(&peer, server.confinement).and_then(|()| {
        // The client's capabilities are the server's (admitted above).
        if server.confinement.holds_sys_admin() && !server.privileged_clients {
            Err(Refusal::Privileged)
        } else {
            Ok(())
        }
    });
    if let Err(refusal) = admitted {
        let _ = wire::send_answer(&mut stream, Answer::Declined);
        return line(format!("tstore: pid {}: declined: {refusal}", peer.pid));
    }
    let request = match wire::receive_request(&mut stream, deadline) {
        Ok(request) => request,
        Err(e) => return line(format!("tstore: pid {}: unreadable request: {e}", peer.pid)),
    };
    let (answer, text) = match session::run(request, server.own, server.kept) {
        Ran::Declined(why) => (Answer::Declined, format!("declined: {why}")),
        Ran::Exited(code) => (Answer::Served(code), format!("init exited {code}")),
        Ran::Panicked => (Answer::Served(101), "init panicked".to_owned()),
    };
    // Free before the answer: the client's next init (a loop over roots) may connect the
    // moment it has it, and is then handed to the loop, not declined because this thread
    // had not yet come back to it (on a loaded machine, milliseconds).
    server.busy.store(false, Ordering::SeqCst);
    let answered = match wire::send_answer(&mut stream, answer) {
        Ok(()) => String::new(),
        Err(e) => format!(" (the client did not take the answer: {e})"),
    };
    Outcome {
        line: format!(
            "tstore: pid {}: {text} in {:.1} ms{answered}",
            peer.pid,
            started.elapsed().as_secs_f64() * 1000.0
        ),
    }
}

/// Listen on `path`, private to this user. A socket a stopped server left is replaced;
/// one that answers belongs to a running server; anything else there is not touched.
fn bind(path: &Path) -> Result<UnixListener> {
    match std::fs::symlink_metadata(path) {
        Ok(meta)
            if meta.file_type().is_socket()
                && meta.uid() == rustix::process::geteuid().as_raw() =>
        {
            if UnixStream::connect(path).is_ok() {
                bail!(
                    "another tstore server serves this store: its socket {} answers; stop it \
                     first (Ctrl-C, or kill the pid its log names)",
                    path.display()
                );
            }
            std::fs::remove_file(path)
                .with_context(|| format!("cannot remove the stale socket {}", path.display()))?;
        }
        Ok(_) => bail!(
            "{} exists and is not a socket this user made; tstore serve makes it there: move \
             it away",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    let listener = UnixListener::bind(path).with_context(|| {
        format!(
            "cannot listen on {} (a Unix socket path has at most 107 bytes: a shorter \
             TSTORE_HOME helps when it is longer)",
            path.display()
        )
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))?;
    Ok(listener)
}

/// The socket this server made, known by its inode: removed only while it is still that
/// one.
#[derive(Clone)]
struct Socket {
    path: PathBuf,
    id: (u64, u64),
}

impl Socket {
    fn of(path: &Path) -> Result<Socket> {
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Socket {
            path: path.to_owned(),
            id: (meta.dev(), meta.ino()),
        })
    }

    fn still_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|meta| (meta.dev(), meta.ino()) == self.id)
    }

    fn remove(&self) {
        if self.still_ours() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The thread that accepts every connection.
struct Acceptor {
    handoff: SyncSender<UnixStream>,
    /// A request runs.
    busy: Arc<AtomicBool>,
    log: Arc<Mutex<File>>,
}

impl Acceptor {
    /// Hand each connection to the loop while no request runs, else decline it at once
    /// (reading nothing of it). This thread reads no environment variable: the loop
    /// replaces the process environment for each request.
    fn run(self, listener: &UnixListener) {
        for stream in listener.incoming() {
            let Ok(stream) = stream else {
                continue;
            };
            let declined = if self.busy.load(Ordering::SeqCst) {
                Some(stream)
            } else {
                match self.handoff.try_send(stream) {
                    Ok(()) => None,
                    Err(TrySendError::Full(stream)) => Some(stream),
                    Err(TrySendError::Disconnected(_)) => return,
                }
            };
            if let Some(mut stream) = declined {
                let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
                let pid = rustix::net::sockopt::socket_peercred(&stream)
                    .map(|cred| cred.pid.as_raw_nonzero().get())
                    .unwrap_or(0);
                let _ = wire::send_answer(&mut stream, Answer::Declined);
                say(
                    &self.log,
                    &format!("tstore: pid {pid}: declined: busy with another init"),
                );
            }
        }
    }
}

/// Ctrl-C or SIGTERM: let a change in progress finish, remove this process's temporary
/// files from the store and the socket, and exit 0.
fn stop_on_signals(settings: &Settings, socket: Socket, log: Arc<Mutex<File>>) {
    let store = settings.store.clone();
    let installed = ctrlc::set_handler(move || {
        tstore_installer::interrupt::wait_for_writes(Duration::from_secs(60));
        let _ = tstore_store::remove_own_temps(&store);
        socket.remove();
        say(&log, "tstore: stopped");
        std::process::exit(0);
    });
    if let Err(e) = installed {
        tracing::warn!("cannot handle Ctrl-C: {e}");
    }
}

fn say(log: &Mutex<File>, line: &str) {
    if let Ok(mut log) = log.lock() {
        let _ = writeln!(log, "{line}");
    }
}

// Arguments of `tstore serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Stop once no init came for this long (`30s`, `15m`, `1h`; default: never).
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::values::parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// Serve clients that hold CAP_SYS_ADMIN (root's inits). Such a client can be confined
    /// by Landlock without a trace in /proc, so a server does not serve it unless told to:
    /// pass this only where no root job runs in such a sandbox.
    #[arg(long)]
    pub privileged_clients: bool,
}
