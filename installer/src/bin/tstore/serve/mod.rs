//! The init server: `tstore serve` keeps one process for a store, and each `tstore init`
//! of that store hands it its work instead of doing it in a process of its own. A process
//! per root pays for starting, its heap and the store's open every time; the server pays
//! once (docs/reference/serve.md).
//!
//! Rules:
//!
//! 1. **A served init is the client's init.** The client sends its arguments, its whole
//!    environment and umask, and its standard streams and current directory as open file
//!    descriptors. The server puts them in place for the request (the process environment
//!    included, so that what an init starts inherits the client's), runs the same code a
//!    process of its own runs, writes straight to the client's streams, and answers with the
//!    exit code. One request at a time, so the process-wide state is one client's.
//! 2. **Only what the server could do anyway.** A request is admitted only from a process of
//!    the server's own user and group, in every one of its namespaces and under the same
//!    root, with the same capabilities, supplementary groups, security label, no seccomp
//!    filter and no `no_new_privs` (`admit.rs`): so no process gains anything by asking. The
//!    socket is in the store's directory, private to its owner, with mode 0600; the client,
//!    for its part, talks only to a server of its own user.
//! 3. **The same build.** A client whose executable is not the server's (another build, an
//!    upgrade installed since the server started) is declined.
//! 4. **Nothing a request finds is believed by the next.** The one thing kept between
//!    requests is the store's handle (its index connection), checked again before each
//!    request as a new open would check it (`kept_store.rs`).
//! 5. **When in doubt, the client does the init itself.** No server, a server that declines
//!    (not an `init`, help or a usage error, `TSTORE_LOG` set, a refusal above), or one that
//!    dies before it answers: the client runs the command in its own process, as without a
//!    server. `TSTORE_NO_SERVER=1` skips the server.

pub(crate) mod client;

mod admit;
mod kept_store;
mod peer;
mod relay;
mod server;
mod session;
mod wire;

use std::path::{Path, PathBuf};

pub(crate) use kept_store::KeptStore;
pub(crate) use server::{serve, ServeArgs};

/// The server's socket, in the store's directory.
pub(crate) fn socket_path(store: &Path) -> PathBuf {
    store.join("serve.sock")
}
