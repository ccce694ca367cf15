//! Who the server works for: a process that could do everything a served init does by
//! itself. The kernel names the peer of the connection (`SO_PEERCRED`: its pid, user and
//! group); its `/proc` entries must then match the server's own, item by item:
//!
//! - the same user and group (the files an init makes are theirs);
//! - every namespace the same (mount, user, pid, network, UTS, IPC, cgroup, time): a path,
//!   a host, a process mean the same to both;
//! - the same root directory (a chrooted client's paths are not the server's);
//! - the same capabilities, supplementary groups and security label, no seccomp filter and
//!   no `no_new_privs`: a confined process gets no unconfined work done by asking.
//!
//! What `/proc` cannot show (Landlock domains, resource limits, the cgroup a process is
//! charged to) is listed in docs/threat-model.md.

use std::fmt;
use std::path::PathBuf;

/// The peer of a connection, as the kernel names it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Peer {
    pub(super) pid: i32,
    pub(super) uid: u32,
    pub(super) gid: u32,
}

/// Why a request was declined.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    User,
    Group,
    Namespace(&'static str),
    Root,
    Status(&'static str),
    Label,
    Unreadable(&'static str),
    OtherBuild,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::User => write!(f, "the client runs as another user"),
            Refusal::Group => write!(f, "the client runs as another group"),
            Refusal::Namespace(ns) => write!(f, "the client is in another {ns} namespace"),
            Refusal::Root => write!(f, "the client has another root directory"),
            Refusal::Status(field) => write!(f, "the client's {field} differ from the server's"),
            Refusal::Label => write!(f, "the client has another security label"),
            Refusal::Unreadable(what) => write!(f, "the client's {what} cannot be read"),
            Refusal::OtherBuild => write!(f, "the client runs another tstore executable"),
        }
    }
}

const NAMESPACES: &[&str] = &["mnt", "user", "pid", "net", "uts", "ipc", "cgroup", "time"];

/// The lines of `/proc/PID/status` that must be equal (`Seccomp` and `NoNewPrivs` must
/// also be 0).
const STATUS_FIELDS: &[&str] = &[
    "Groups",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
    "NoNewPrivs",
    "Seccomp",
];

/// What confines a process, as its `/proc` entries show it.
pub(super) struct Confinement {
    /// Each namespace's link (`None`: this kernel has no such namespace).
    namespaces: Vec<Option<PathBuf>>,
    root: Option<PathBuf>,
    status: Option<String>,
    label: Option<Vec<u8>>,
}

impl Confinement {
    /// This process's: read once, when the server starts.
    pub(super) fn own() -> Confinement {
        Confinement::of("/proc/self")
    }

    fn of(proc_dir: &str) -> Confinement {
        Confinement {
            namespaces: NAMESPACES
                .iter()
                .map(|ns| std::fs::read_link(format!("{proc_dir}/ns/{ns}")).ok())
                .collect(),
            root: std::fs::read_link(format!("{proc_dir}/root")).ok(),
            status: std::fs::read_to_string(format!("{proc_dir}/status")).ok(),
            label: std::fs::read(format!("{proc_dir}/attr/current")).ok(),
        }
    }
}

/// Admit `peer` to a server confined as `own`, or say why not.
pub(super) fn admit(peer: &Peer, own: &Confinement) -> Result<(), Refusal> {
    if peer.uid != rustix::process::geteuid().as_raw() {
        return Err(Refusal::User);
    }
    if peer.gid != rustix::process::getegid().as_raw() {
        return Err(Refusal::Group);
    }
    let theirs = Confinement::of(&format!("/proc/{}", peer.pid));
    for (ns, (own, theirs)) in NAMESPACES
        .iter()
        .zip(own.namespaces.iter().zip(&theirs.namespaces))
    {
        // Unreadable for the peer while the server has it: refused too.
        if own != theirs {
            return Err(Refusal::Namespace(ns));
        }
    }
    match (&own.root, &theirs.root) {
        (Some(own), Some(peer)) if own == peer => {}
        (Some(_), Some(_)) => return Err(Refusal::Root),
        _ => return Err(Refusal::Unreadable("root directory")),
    }
    match (&own.status, &theirs.status) {
        (Some(own), Some(peer)) => compare_status(own, peer)?,
        _ => return Err(Refusal::Unreadable("status")),
    }
    if own.label != theirs.label {
        return Err(Refusal::Label);
    }
    Ok(())
}

/// Compare the confinement lines of two `/proc/PID/status` texts.
fn compare_status(own: &str, peer: &str) -> Result<(), Refusal> {
    for field in STATUS_FIELDS {
        let value = field_of(peer, field);
        if value != field_of(own, field) {
            return Err(Refusal::Status(describe(field)));
        }
        if matches!(*field, "NoNewPrivs" | "Seccomp") && value.is_some_and(|v| v != "0") {
            return Err(Refusal::Status(describe(field)));
        }
    }
    Ok(())
}

fn describe(field: &str) -> &'static str {
    match field {
        "Groups" => "supplementary groups",
        "NoNewPrivs" => "no_new_privs",
        "Seccomp" => "seccomp filters",
        _ => "capabilities",
    }
}

fn field_of<'a>(status: &'a str, field: &str) -> Option<&'a str> {
    status.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name == field).then(|| value.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = "Name:\ttstore\nUmask:\t0022\nGroups:\t4 24 27 \nNoNewPrivs:\t0\n\
        Seccomp:\t0\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n\
        CapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n";

    #[test]
    fn an_equal_process_is_admitted_whatever_else_differs() {
        let peer = OWN
            .replace("Name:\ttstore", "Name:\tbash")
            .replace("0022", "0077");
        assert_eq!(compare_status(OWN, &peer), Ok(()));
    }

    #[test]
    fn a_confined_or_differently_privileged_process_is_refused() {
        for (from, to, refusal) in [
            ("Seccomp:\t0", "Seccomp:\t2", "seccomp filters"),
            ("NoNewPrivs:\t0", "NoNewPrivs:\t1", "no_new_privs"),
            (
                "Groups:\t4 24 27 ",
                "Groups:\t4 24 ",
                "supplementary groups",
            ),
            (
                "CapBnd:\t000001ffffffffff",
                "CapBnd:\t0000000000000000",
                "capabilities",
            ),
            (
                "CapEff:\t0000000000000000",
                "CapEff:\t0000000000200000",
                "capabilities",
            ),
        ] {
            let peer = OWN.replace(from, to);
            assert_eq!(
                compare_status(OWN, &peer),
                Err(Refusal::Status(refusal)),
                "{to}"
            );
        }
    }

    #[test]
    fn a_server_under_seccomp_admits_nobody() {
        let own = OWN.replace("Seccomp:\t0", "Seccomp:\t2");
        assert!(compare_status(&own, &own).is_err());
    }

    #[test]
    fn this_process_admits_itself_and_not_another_user() {
        let me = Peer {
            pid: std::process::id() as i32,
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
        };
        // Test runners may run under seccomp (containers): then nobody is admitted.
        let confined = field_of(
            &std::fs::read_to_string("/proc/self/status").unwrap(),
            "Seccomp",
        ) != Some("0");
        let own = Confinement::own();
        assert_eq!(admit(&me, &own).is_ok(), !confined);
        let other = Peer {
            uid: me.uid.wrapping_add(1),
            ..me
        };
        assert_eq!(admit(&other, &own), Err(Refusal::User));
    }
}
