//! `tstore serve` tried as an attacker would: a listener of the same user confined
//! elsewhere at the socket gets neither the client's environment nor its directory; a
//! confined client whose pid goes to an unconfined process is not served as that process;
//! a client whose reader went away, or whose pipe is full, neither stops nor holds the server.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tstore_test_support::{Layout, TestEnv};

use crate::serve::{init_with_umask, module_checkout, Server};

/// A token a served init must never hand to a listener that is not the user's server.
const SECRET: &str = "s3cret-token-for-the-registry";

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A prefix that runs a command of this user in a mount namespace of its own, with
/// `no_new_privs` (a sandbox sharing the store's directory): as root, the mount namespace
/// alone; otherwise in a user namespace too (which the unprivileged need for it).
fn confined_elsewhere() -> Vec<&'static str> {
    if is_root() {
        vec!["setpriv", "--no-new-privs", "unshare", "--mount"]
    } else {
        vec![
            "setpriv",
            "--no-new-privs",
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
        ]
    }
}

/// A listener at `SOCKET` that takes one connection and keeps what it is sent: the body
/// to `OUT`, and a file `pwned` made in the directory it is handed; then it answers
/// "served, exit 0" in the protocol the client spoke.
const FAKE_SERVER: &str = r#"
import array, os, socket, sys
path, out = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(1)
open(out + ".ready", "w").close()
c, _ = srv.accept()
fds = array.array("i")
try:
    msg, anc, _, _ = c.recvmsg(12, socket.CMSG_SPACE(4 * fds.itemsize))
except OSError:
    msg, anc = b"", []
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
body = b""
if len(msg) == 12:
    n = int.from_bytes(msg[8:], "little")
    while len(body) < n:
        chunk = c.recv(n - len(body))
        if not chunk:
            break
        body += chunk
with open(out, "wb") as f:
    f.write(body)
if len(fds) == 4:
    os.close(os.open("pwned", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fds[3]))
if msg[:7] == b"tstore/":
    c.sendall(b"tstore=" + msg[7:8] + bytes([0, 0]))
c.close()
"#;

#[track_caller]
fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never came",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_listener_confined_elsewhere_gets_no_secret_and_no_directory() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let socket = m.env.store.join("serve.sock");
    let got = m.env.root.path().join("got");
    let wrapper = confined_elsewhere();
    let listener = Command::new(wrapper[0])
        .args(&wrapper[1..])
        .args(["python3", "-c", FAKE_SERVER])
        .arg(&socket)
        .arg(&got)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&got.with_extension("ready"));

    let out = init_with_umask(&m, &dir, "022", &["init"])
        .env("TF_TOKEN_registry_example_test", SECRET)
        .output();
    let listened = listener.wait_with_output().unwrap();
    assert!(
        listened.status.success(),
        "{}",
        String::from_utf8_lossy(&listened.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let received = fs_err::read(&got).unwrap();
    assert!(
        !String::from_utf8_lossy(&received).contains(SECRET),
        "the listener received the client's environment"
    );
    assert!(received.is_empty(), "the listener received a request");
    assert!(
        !dir.join("pwned").exists(),
        "the listener wrote into the checkout"
    );
    // The client did its init itself, and said why.
    assert!(
        dir.join(".terraform/modules/modules.json").exists(),
        "{stderr}"
    );
    assert!(
        stderr.contains("is not a server this init may use"),
        "{stderr}"
    );
}

/// A client that connects, hands the connection to a child and exits; the child sends the
/// request once the test has given the client's pid to an unconfined process.
const PID_REUSER: &str = r#"
import os, socket, sys, time
path, go, out, body = sys.argv[1], sys.argv[2], sys.argv[3], bytes.fromhex(sys.argv[4])
c = socket.socket(socket.AF_UNIX)
c.connect(path)
if os.fork() == 0:
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    while not os.path.exists(go):
        time.sleep(0.01)
    fds = [0, 1, 2, os.open(".", os.O_PATH | os.O_DIRECTORY)]
    header = b"tstore/2" + len(body).to_bytes(4, "little")
    answer = b""
    try:
        c.sendmsg([header], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(
            b"".join(fd.to_bytes(4, "little") for fd in fds)))])
        c.sendall(body)
        answer = c.recv(64)
    except OSError:
        pass
    with open(out, "wb") as f:
        f.write(answer)
    os._exit(0)
print(os.getpid(), flush=True)
os._exit(0)
"#;

/// A request body of the wire protocol: the umask, the arguments, the environment.
fn request_body(args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 0o022u32.to_le_bytes().to_vec();
    let put = |bytes: &[u8], body: &mut Vec<u8>| {
        body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        body.extend_from_slice(bytes);
    };
    body.extend_from_slice(&(args.len() as u32).to_le_bytes());
    for arg in args {
        put(arg.as_bytes(), &mut body);
    }
    body.extend_from_slice(&(env.len() as u32).to_le_bytes());
    for (name, value) in env {
        put(name.as_bytes(), &mut body);
        put(value.as_bytes(), &mut body);
    }
    body
}

/// Start `sleep` as the process with pid `pid` (root sets the pid namespace's last pid).
fn unconfined_process_with_pid(pid: u32) -> std::process::Child {
    for _ in 0..50 {
        fs_err::write("/proc/sys/kernel/ns_last_pid", format!("{}", pid - 1)).unwrap();
        let child = Command::new("sleep").arg("30").spawn().unwrap();
        if child.id() == pid {
            return child;
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("pid {pid} could not be given to another process");
}

#[test]
fn a_confined_clients_pid_taken_by_an_unconfined_process_is_not_served() {
    assert!(
        is_root(),
        "this attack needs root to hand a pid to another process (ns_last_pid); run the \
         suite as root, as CI does"
    );
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let server = Server::start(&m.env, &[]);
    let go = m.env.root.path().join("go");
    let answer = m.env.root.path().join("answer");
    let env: Vec<(String, String)> = init_with_umask(&m, &dir, "022", &[])
        .command()
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
        .collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let body = request_body(&["tstore", "init"], &env);
    let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
    let client = Command::new("setpriv")
        .args(["--no-new-privs", "python3", "-c", PID_REUSER])
        .arg(&server.socket)
        .arg(&go)
        .arg(&answer)
        .arg(hex)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        client.status.success(),
        "{}",
        String::from_utf8_lossy(&client.stderr)
    );
    let pid: u32 = String::from_utf8_lossy(&client.stdout)
        .trim()
        .parse()
        .unwrap();
    let mut impostor = unconfined_process_with_pid(pid);
    fs_err::File::create(&go).unwrap().flush().unwrap();
    wait_for_file(&answer);
    let _ = impostor.kill();
    let _ = impostor.wait();
    server.wait_for(|s| s.log().lines().count() >= 2);
    assert_eq!(server.count("init exited"), 0, "{}", server.log());
    assert!(!dir.join(".terraform").exists(), "{}", server.log());
    let answered = fs_err::read(&answer).unwrap();
    assert!(
        answered.is_empty() || answered == b"tstore=2\x01\x00",
        "{answered:?}"
    );
}

#[test]
fn a_client_whose_reader_went_away_neither_panics_nor_stops_the_server() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let server = Server::start(&m.env, &[]);
    // stdout and stderr: a pipe whose reader is gone (`tstore init 2>&1 | head -c0`).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = init_with_umask(&m, &dir, "022", &["init"])
        .command()
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .status()
        .unwrap();
    server.wait_for(|s| s.log().lines().count() >= 2);
    assert_eq!(server.count("panicked"), 0, "{}", server.log());
    assert_eq!(server.count("init exited 0"), 1, "{}", server.log());
    assert!(out.success());
    assert!(dir.join(".terraform/modules/modules.json").exists());
    // The server still serves.
    let next = module_checkout(&m.env, "next");
    let out = init_with_umask(&m, &next, "022", &["init"]).output();
    assert!(out.status.success());
    server.wait_for(|s| s.count("init exited 0") == 2);
}

#[test]
fn a_client_whose_pipe_is_full_does_not_hold_the_server() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let server = Server::start(&m.env, &[]);
    // stdout: a pipe nobody reads, already full (`tstore init | sleep 600` after output).
    let (reader, mut writer) = std::io::pipe().unwrap();
    rustix::fs::fcntl_setfl(&writer, rustix::fs::OFlags::NONBLOCK).unwrap();
    while writer.write(&[b'x'; 4096]).is_ok() {}
    rustix::fs::fcntl_setfl(&writer, rustix::fs::OFlags::empty()).unwrap();
    let mut client = init_with_umask(&m, &dir, "022", &["init"])
        .command()
        .stdout(writer)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The request ends while its client's pipe is still full and unread.
    server.wait_for(|s| s.count("init exited 0") == 1);
    assert!(client.wait().unwrap().success());
    assert!(dir.join(".terraform/modules/modules.json").exists());
    let next = module_checkout(&m.env, "next");
    let out = init_with_umask(&m, &next, "022", &["init"]).output();
    assert!(out.status.success());
    server.wait_for(|s| s.count("init exited 0") == 2);
    drop(reader);
}

/// Landlock confines a process without `no_new_privs` only when it holds CAP_SYS_ADMIN, and
/// leaves no trace in `/proc`: a server serves such clients only when told to.
#[test]
fn clients_holding_cap_sys_admin_are_served_only_when_the_server_is_told_to() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    assert!(
        is_root(),
        "this test needs root (a client holding CAP_SYS_ADMIN); run the suite as root, as CI does"
    );
    let server = Server::start_with(&m.env, &[]);
    assert!(
        server.log().contains("declines them all"),
        "{}",
        server.log()
    );
    let out = init_with_umask(&m, &dir, "022", &["init"]).output();
    assert!(out.status.success());
    server.wait_for(|s| s.count("CAP_SYS_ADMIN, so a Landlock sandbox") == 1);
    assert_eq!(server.count("init exited"), 0, "{}", server.log());
    // The client ran it itself.
    assert!(dir.join(".terraform/modules/modules.json").exists());
    drop(server);

    let told = Server::start_with(&m.env, &["--privileged-clients"]);
    let out = init_with_umask(&m, &dir, "022", &["init"]).output();
    assert!(out.status.success());
    told.wait_for(|s| s.count("init exited 0") == 1);
}
