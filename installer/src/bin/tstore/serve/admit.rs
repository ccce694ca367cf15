//! Who the server works for, and whom a client talks to: a process that could do everything
//! the other does by itself. The kernel names the peer of the connection (`SO_PEERCRED`:
//! its pid, user and group; the peer is pinned by a pidfd first, `peer.rs`); its `/proc`
//! entries must then match this process's own, item by item:
//!
//! - the same user and group (the files an init makes are theirs);
//! - every namespace the same (mount, user, pid, network, UTS, IPC, cgroup, time): a path,
//!   a host, a process mean the same to both;
//! - the same root directory (a chrooted client's paths are not the server's);
//! - the same capabilities, supplementary groups and security label, no seccomp filter and
//!   no `no_new_privs`: a confined process gets no unconfined work done by asking;
//! - the same executable (`/proc/PID/exe`'s file): the server runs this build's code, and a
//!   client hands its environment (tokens) and directory only to a server of this build.
//!
//! The same rule holds both ways: the server admits a client by it before reading its
//! request, and a client sends its request only to a server that passes it.
//!
//! What `/proc` cannot show (Landlock domains, resource limits, the cgroup a process is
//! charged to) is listed in docs/threat-model.md. Landlock confines a process without
//! `no_new_privs` only when it holds CAP_SYS_ADMIN: so a client holding it (root's) is
//! served only by a server told to (`tstore serve --privileged-clients`).

use std::fmt;
use std::os::fd::AsFd;

use super::peer::{PeerProcess, ProcDir};

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
    Privileged,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::User => write!(f, "it runs as another user"),
            Refusal::Group => write!(f, "it runs as another group"),
            Refusal::Namespace(ns) => write!(f, "it is in another {ns} namespace"),
            Refusal::Root => write!(f, "it has another root directory"),
            Refusal::Status(field) => write!(f, "its {field} differ from this process's"),
            Refusal::Label => write!(f, "it has another security label"),
            Refusal::Unreadable(what) => write!(f, "its {what} cannot be read"),
            Refusal::OtherBuild => write!(f, "it runs another tstore executable"),
            Refusal::Privileged => write!(
                f,
                "it holds CAP_SYS_ADMIN, so a Landlock sandbox may confine it unseen (start \
                 the server with --privileged-clients to serve such clients)"
            ),
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

/// What confines a process, and what it runs, as its `/proc` entries show it.
pub(super) struct Confinement {
    /// Each namespace's link (`None`: this kernel has no such namespace).
    namespaces: Vec<Option<Vec<u8>>>,
    root: Option<Vec<u8>>,
    status: Option<String>,
    label: Option<Vec<u8>>,
    /// The executable file's device and inode.
    exe: Option<(u64, u64)>,
}

impl Confinement {
    /// Whether the process holds CAP_SYS_ADMIN (bit 21 of `CapEff`): unknown counts as held.
    pub(super) fn holds_sys_admin(&self) -> bool {
        const CAP_SYS_ADMIN: u32 = 21;
        self.status
            .as_deref()
            .and_then(|status| field_of(status, "CapEff"))
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .is_none_or(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
    }

    /// This process's (the server reads it once, when it starts).
    pub(super) fn own() -> Confinement {
        match super::peer::own_proc_dir() {
            Ok(dir) => Confinement::of(ProcDir(dir.as_fd())),
            Err(_) => Confinement::unknown(),
        }
    }

    /// Nothing readable: nobody is admitted against it.
    fn unknown() -> Confinement {
        Confinement {
            namespaces: vec![None; NAMESPACES.len()],
            root: None,
            status: None,
            label: None,
            exe: None,
        }
    }

    fn of(dir: ProcDir<'_>) -> Confinement {
        Confinement {
            namespaces: NAMESPACES
                .iter()
                .map(|ns| dir.link(&format!("ns/{ns}")))
                .collect(),
            root: dir.link("root"),
            status: dir
                .read("status")
                .and_then(|bytes| String::from_utf8(bytes).ok()),
            label: dir.read("attr/current"),
            exe: dir
                .stat_target("exe")
                .map(|stat| (stat.st_dev, stat.st_ino)),
        }
    }
}

/// Admit `peer` to work with this process, confined as `own`, or say why not.
pub(super) fn admit(peer: &PeerProcess, own: &Confinement) -> Result<(), Refusal> {
    if peer.uid != rustix::process::geteuid().as_raw() {
        return Err(Refusal::User);
    }
    if peer.gid != rustix::process::getegid().as_raw() {
        return Err(Refusal::Group);
    }
    let theirs = Confinement::of(ProcDir::from(&peer.proc_dir));
    for (ns, (own, theirs)) in NAMESPACES
        .iter()
        .zip(own.namespaces.iter().zip(&theirs.namespaces))
    {
        match (own, theirs) {
            (own, theirs) if own == theirs => {}
            // Unreadable for the peer while this process has it: refused too.
            (Some(_), None) => return Err(Refusal::Unreadable("namespaces")),
            _ => return Err(Refusal::Namespace(ns)),
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
    match (own.exe, theirs.exe) {
        (Some(own), Some(peer)) if own == peer => Ok(()),
        (Some(_), Some(_)) => Err(Refusal::OtherBuild),
        _ => Err(Refusal::Unreadable("executable")),
    }
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
    fn cap_sys_admin_is_read_from_the_effective_set() {
        let with = |status: &str| Confinement {
            status: Some(status.to_owned()),
            ..Confinement::unknown()
        };
        assert!(!with(OWN).holds_sys_admin());
        assert!(
            with(&OWN.replace("CapEff:\t0000000000000000", "CapEff:\t000001ffffffffff"))
                .holds_sys_admin()
        );
        assert!(
            with(&OWN.replace("CapEff:\t0000000000000000", "CapEff:\t0000000000200000"))
                .holds_sys_admin()
        );
        assert!(Confinement::unknown().holds_sys_admin());
    }

    #[test]
    fn a_server_under_seccomp_admits_nobody() {
        let own = OWN.replace("Seccomp:\t0", "Seccomp:\t2");
        assert!(compare_status(&own, &own).is_err());
    }

    #[test]
    fn this_process_admits_itself_and_not_another_user() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let me = PeerProcess::of(&a).unwrap();
        // Test runners may run under seccomp (containers): then nobody is admitted.
        let confined = field_of(
            &std::fs::read_to_string("/proc/self/status").unwrap(),
            "Seccomp",
        ) != Some("0");
        let own = Confinement::own();
        assert_eq!(admit(&me, &own).is_ok(), !confined);
        let other = PeerProcess {
            uid: me.uid.wrapping_add(1),
            ..PeerProcess::of(&a).unwrap()
        };
        assert_eq!(admit(&other, &own), Err(Refusal::User));
    }
}
