//! `tstore serve`: an init the server runs ends as the client's own process would end it
//! (output, exit code, files, modes, the client's environment and directory); what it
//! should not run it declines and the client runs itself; confined clients, other builds,
//! junk requests, links and foreign listeners at the socket get nothing from it.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tstore_test_support::{Layout, NullMirror, TestEnv, Tstore};

use crate::common::tstore_bin;
use crate::common::TstoreEnv as _;

/// A running `tstore serve` for a test environment's store; killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    log: PathBuf,
    pub(crate) socket: PathBuf,
}

impl Server {
    /// `tstore serve EXTRA`, serving this test's inits: as root, with
    /// `--privileged-clients` (root's inits hold CAP_SYS_ADMIN).
    pub(crate) fn start(env: &TestEnv, extra: &[&str]) -> Server {
        let mut args = extra.to_vec();
        if rustix::process::geteuid().is_root() {
            args.push("--privileged-clients");
        }
        Server::start_with(env, &args)
    }

    /// `tstore serve ARGS`, as given.
    pub(crate) fn start_with(env: &TestEnv, args: &[&str]) -> Server {
        let log = env.root.path().join(format!("serve-{}.log", args.len()));
        let mut cmd = env.tstore().no_fuse().arg("serve").args(args).command();
        cmd.stdout(Stdio::null())
            .stderr(fs_err::File::create(&log).unwrap().into_parts().0);
        let child = cmd.spawn().unwrap();
        let socket = env.store.join("serve.sock");
        let server = Server { child, log, socket };
        server.wait_for(|s| s.log().contains("serving the inits"));
        server
    }

    pub(crate) fn log(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn count(&self, text: &str) -> usize {
        self.log().matches(text).count()
    }

    #[track_caller]
    pub(crate) fn wait_for(&self, done: impl Fn(&Server) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the server did not get there; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a user compares after an init: exit code, output (paths of the checkout named
/// alike), the lock file and its mode, `modules.json`, the data directory's entries.
#[derive(Debug, PartialEq)]
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    lock: Option<(String, u32)>,
    modules_json: Option<String>,
    data_dir: Vec<String>,
}

fn ended(out: &Output, dir: &Path, data_dir: &str) -> Ended {
    let name = |text: &[u8]| {
        String::from_utf8_lossy(text).replace(&dir.display().to_string(), "<checkout>")
    };
    let lock = dir.join(".terraform.lock.hcl");
    let mut entries: Vec<String> = walkdir::WalkDir::new(dir.join(data_dir))
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| {
            let mode = e.path().symlink_metadata().unwrap().permissions().mode() & 0o7777;
            format!("{} {mode:o}", e.path().strip_prefix(dir).unwrap().display())
        })
        .collect();
    entries.sort();
    Ended {
        code: out.status.code(),
        stdout: name(&out.stdout),
        stderr: name(&out.stderr),
        lock: fs_err::read_to_string(&lock).ok().map(|text| {
            let mode = fs_err::metadata(&lock).unwrap().permissions().mode() & 0o777;
            (text, mode)
        }),
        modules_json: fs_err::read_to_string(dir.join(data_dir).join("modules/modules.json")).ok(),
        data_dir: entries,
    }
}

/// A case: its name, files, umask, arguments, and a variable to set.
type Case<'a> = (
    &'a str,
    &'a [(&'a str, &'a str)],
    &'a str,
    &'a [&'a str],
    Option<(&'a str, &'a str)>,
);

const MODULE_CALL: &str = "module \"m\" {\n  source = \"./mod\"\n}\n";

/// A checkout `name` whose only call is of a local module.
pub(crate) fn module_checkout(env: &TestEnv, name: &str) -> PathBuf {
    env.checkout(name, &[("main.tf", MODULE_CALL), ("mod/main.tf", "")])
}

/// `sh -c 'umask MASK; exec tstore ARGS'` in `dir`, with the test environment (no FUSE, the
/// mirror's CLI configuration). Arguments added to it go to tstore after `ARGS`, environment
/// variables to its environment.
pub(crate) fn init_with_umask(m: &NullMirror, dir: &Path, umask: &str, args: &[&str]) -> Tstore {
    let cmd = m.env.tstore().cli_config(&m.cfg).no_fuse().command();
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
    Tstore::from_command(sh)
}

#[test]
fn a_served_init_ends_as_the_clients_own_process_ends_it() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let files = [
        (
            "main.tf",
            format!("{}{MODULE_CALL}", crate::common::NULL_CONFIG),
        ),
        ("mod/main.tf", "output \"v\" {\n  value = 1\n}\n".to_owned()),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let broken = [("main.tf", "module \"m\" {\n  source = \"./missing\"\n}\n")];
    // The store holds what the cases install before either runs: what an init prints
    // depends on the store's history (a provider found there), not on the process.
    let warm = m.env.checkout("warm", &files);
    assert!(init_with_umask(&m, &warm, "022", &["init"])
        .output()
        .status
        .success());
    let server = Server::start(&m.env, &[]);
    // Each case twice: in its own process (TSTORE_NO_SERVER=1), then served.
    let cases: [Case; 4] = [
        ("plain", &files, "077", &["init"], None),
        ("json", &files, "022", &["init", "-json"], None),
        (
            "data-dir",
            &files,
            "027",
            &["-chdir=sub", "init"],
            Some(("TF_DATA_DIR", "state")),
        ),
        ("broken", &broken, "022", &["init"], None),
    ];
    let mut served = 0;
    for (name, files, umask, args, var) in cases {
        let run = |mode: &str| {
            let top = m.env.checkout(&format!("{name}-{mode}"), &[]);
            let dir = if args.contains(&"-chdir=sub") {
                top.join("sub")
            } else {
                top.clone()
            };
            for (path, text) in files.iter() {
                let path = dir.join(path);
                fs_err::create_dir_all(path.parent().unwrap()).unwrap();
                fs_err::write(path, text).unwrap();
            }
            let mut tstore = init_with_umask(&m, &top, umask, args);
            if mode == "own" {
                tstore = tstore.env("TSTORE_NO_SERVER", "1");
            }
            if let Some((k, v)) = var {
                tstore = tstore.env(k, v);
            }
            let out = tstore.output();
            ended(&out, &dir, var.map_or(".terraform", |(_, v)| v))
        };
        let own = run("own");
        let before = server.count("init exited");
        let theirs = run("served");
        server.wait_for(|s| s.count("init exited") == before + 1);
        served += 1;
        assert_eq!(theirs, own, "{name}");
        assert!(
            !own.stdout.is_empty() || !own.stderr.is_empty(),
            "{name}: no output"
        );
        if name == "plain" {
            // The client's umask: what the init makes is private to it.
            assert!(
                own.data_dir.iter().any(|e| e == ".terraform/modules 700"),
                "{:?}",
                own.data_dir
            );
        }
        if name == "data-dir" {
            assert!(own
                .data_dir
                .iter()
                .any(|e| e.starts_with("state/providers ")));
        }
        if name == "broken" {
            assert_eq!(own.code, Some(1));
        }
    }
    assert_eq!(server.count("init exited 0"), served - 1);
    assert_eq!(server.count("init exited 1"), 1);
    // What the server linked works for the tool.
    m.env
        .assert_terraform_plans_null(&m.env.work.join("plain-served"));
}

#[test]
fn what_the_server_should_not_run_its_client_runs() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let server = Server::start(&m.env, &[]);
    for args in [
        &["init", "--help"][..],
        &["init", "-bogus"],
        &["--version", "init"],
    ] {
        let own = init_with_umask(&m, &dir, "022", args)
            .env("TSTORE_NO_SERVER", "1")
            .output();
        let before = server.count("declined: not an init");
        let client = init_with_umask(&m, &dir, "022", args).output();
        server.wait_for(|s| s.count("declined: not an init") == before + 1);
        assert_eq!(
            (client.status.code(), &client.stdout, &client.stderr),
            (own.status.code(), &own.stdout, &own.stderr),
            "{args:?}"
        );
    }
    // A log filter asks for this process's own log lines: never sent.
    let requests = server.log().lines().count();
    init_with_umask(&m, &dir, "022", &["init"])
        .env("TSTORE_LOG", "debug")
        .ok();
    assert_eq!(server.log().lines().count(), requests);
}

#[test]
fn confined_clients_and_other_builds_get_nothing_from_the_server() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let server = Server::start(&m.env, &[]);
    let mode = fs_err::metadata(&server.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let copy = m.env.root.path().join("other-tstore");
    fs_err::copy(tstore_bin(), &copy).unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["unshare", "--user", "--map-root-user"],
            "another user namespace",
        ),
        (&["setpriv", "--no-new-privs"], "no_new_privs"),
        (&[], "another tstore executable"),
    ];
    for (wrapper, refusal) in cases {
        // The tstore client, confined (or another build): it does not hand its init to a
        // server unlike itself, and runs it itself.
        let mut inner = init_with_umask(&m, &dir, "022", &["init"]).command();
        let mut cmd = if wrapper.is_empty() {
            // The same command, with a copy of the executable.
            let args: Vec<_> = inner.get_args().map(|a| a.to_owned()).collect();
            let mut cmd = Command::new("sh");
            cmd.args(&args[..2]).arg(&copy).args(&args[3..]);
            cmd
        } else {
            let mut cmd = Command::new(wrapper[0]);
            cmd.args(&wrapper[1..]).arg("sh").args(inner.get_args());
            cmd
        };
        cmd.current_dir(&dir)
            .env_clear()
            .envs(inner.get_envs().filter_map(|(k, v)| Some((k, v?))));
        let _ = &mut inner;
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{refusal}: {stderr}");
        if !wrapper.is_empty() {
            assert!(
                stderr.contains("is not a server this init may use"),
                "{refusal}: {stderr}"
            );
        }

        // A client that is not tstore's, confined alike, asks anyway: declined before a
        // byte of a request is read (it sends none and still gets its answer).
        let before = server.count(refusal);
        let mut raw = Command::new(if wrapper.is_empty() {
            "python3"
        } else {
            wrapper[0]
        });
        if !wrapper.is_empty() {
            raw.args(&wrapper[1..]).arg("python3");
        }
        let raw = raw
            .arg("-c")
            .arg(
                "import socket, sys\n\
                 s = socket.socket(socket.AF_UNIX)\n\
                 s.connect(sys.argv[1])\n\
                 sys.stdout.write(s.recv(64).hex())",
            )
            .arg(&server.socket)
            .output()
            .unwrap();
        assert!(
            raw.status.success(),
            "{}",
            String::from_utf8_lossy(&raw.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&raw.stdout),
            format!("{}0100", hex(b"tstore=2")),
            "{refusal}"
        );
        server.wait_for(|s| s.count(refusal) == before + 1);
    }
    assert_eq!(server.count("init exited"), 0, "{}", server.log());

    // Junk on the socket from a process that is not tstore: declined without a byte of it
    // read (or, while one is declined, the next as busy), and the next init is served.
    // (Junk from tstore's own executable: the wire's unit tests.)
    let other = "another tstore executable";
    let before = server.count(other);
    let said = |s: &Server| s.count(other) - before + s.count("declined: busy");
    for (n, junk) in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"tstore/2\xff\xff\xff\xff",
        b"",
    ]
    .into_iter()
    .enumerate()
    {
        let mut stream = UnixStream::connect(&server.socket).unwrap();
        let _ = stream.write_all(junk);
        drop(stream);
        server.wait_for(|s| said(s) == n + 1);
    }
    assert_eq!(server.count("unreadable request"), 0, "{}", server.log());
    let out = init_with_umask(&m, &dir, "022", &["init"]).output();
    assert!(out.status.success());
    server.wait_for(|s| s.count("init exited 0") == 1);
}

#[test]
fn the_socket_is_the_servers_own_and_nothing_else() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = module_checkout(&m.env, "w");
    let init = || init_with_umask(&m, &dir, "022", &["init"]).output();

    // A link at the socket's name (a restored cache, another store's server): not followed
    // by the client, not replaced by a server.
    let other = TestEnv::new();
    let elsewhere = Server::start(&other, &[]);
    std::os::unix::fs::symlink(&elsewhere.socket, m.env.store.join("serve.sock")).unwrap();
    assert!(init().status.success());
    assert_eq!(elsewhere.log().lines().count(), 1, "{}", elsewhere.log());
    let refused = m.env.tstore().arg("serve").output();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not a socket this user made"));
    assert!(fs_err::symlink_metadata(m.env.store.join("serve.sock"))
        .unwrap()
        .is_symlink());
    fs_err::remove_file(m.env.store.join("serve.sock")).unwrap();

    // A listener that is not tstore (another executable of this user): it gets nothing of
    // the init, not even its header, and the client runs the init itself.
    let foreign = UnixListener::bind(m.env.store.join("serve.sock")).unwrap();
    let answering = std::thread::spawn(move || {
        let (mut stream, _) = foreign.accept().unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut stream, &mut got).unwrap();
        got
    });
    let out = init();
    assert!(answering.join().unwrap().is_empty());
    assert!(out.status.success());
    fs_err::remove_file(m.env.store.join("serve.sock")).unwrap();

    // A socket a killed server left: the client runs alone; a new server replaces it.
    let mut first = Server::start(&m.env, &[]);
    let second = m.env.tstore().arg("serve").output();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("another tstore server serves"));
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(first.socket.exists());
    assert!(init().status.success());
    let idle = Server::start(&m.env, &["--idle-timeout", "1s"]);
    assert!(init().status.success());
    idle.wait_for(|s| s.count("init exited 0") == 1);
    // The idle timeout: it stops by itself and takes its socket along.
    idle.wait_for(|s| s.log().contains("idle timeout"));
    let mut idle = idle;
    assert!(idle.child.wait().unwrap().success());
    assert!(!idle.socket.exists());
}

/// The store handle the server keeps between requests is checked again before each: an
/// index replaced under a running server (a CI cache extracted over the store) is opened
/// again, and what the init records goes into the new index, not the one replaced.
#[test]
fn an_index_replaced_under_the_server_is_opened_again() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    // A root with a provider: recorded, with its link into the store.
    let files = [("main.tf", crate::common::NULL_CONFIG)];
    let first = m.env.checkout("first", &files);
    let second = m.env.checkout("second", &files);
    let server = Server::start(&m.env, &[]);
    let init = |dir: &Path| init_with_umask(&m, dir, "022", &["init"]).output();
    assert!(init(&first).status.success());
    server.wait_for(|s| s.count("init exited 0") == 1);
    // The index as a cache would hold it, extracted over the store: new files, same bytes.
    for suffix in ["", "-wal", "-shm"] {
        let file = m.env.store.join(format!("index.sqlite{suffix}"));
        if let Ok(bytes) = fs_err::read(&file) {
            fs_err::remove_file(&file).unwrap();
            fs_err::write(&file, bytes).unwrap();
            fs_err::set_permissions(&file, PermissionsExt::from_mode(0o600)).unwrap();
        }
    }
    let out = init(&second);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.wait_for(|s| s.count("init exited 0") == 2);
    let out = m.env.tstore().args(["roots", "ls", "--json"]).output();
    let roots = String::from_utf8_lossy(&out.stdout).into_owned();
    for dir in [first, second] {
        let dir = dir.canonicalize().unwrap().display().to_string();
        assert!(roots.contains(&dir), "{dir}: {roots}");
    }
}

/// One request at a time, and no client waits behind another: while an init is served
/// (here, stuck on a download), another client is declined at once and runs its init
/// itself.
#[test]
fn a_busy_server_declines_and_the_client_runs_its_own_init() {
    use std::io::Read as _;
    use std::sync::mpsc;
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (arrived, wait_arrived) = mpsc::channel();
    let (release, wait_release) = mpsc::channel::<()>();
    let stalling = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let _ = stream.read(&mut [0u8; 4096]);
        arrived.send(()).unwrap();
        // Holds the download open, answering nothing, until the test lets go.
        let _ = wait_release.recv();
    });
    let stuck = m.env.checkout(
        "stuck",
        &[(
            "main.tf",
            &format!("module \"m\" {{\n  source = \"http://{addr}/m.zip\"\n}}\n"),
        )],
    );
    let other = module_checkout(&m.env, "other");
    let server = Server::start(&m.env, &[]);
    let first = init_with_umask(&m, &stuck, "022", &["init"])
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_arrived.recv().unwrap();
    init_with_umask(&m, &other, "022", &["init"]).ok();
    server.wait_for(|s| s.count("declined: busy with another init") == 1);
    release.send(()).unwrap();
    stalling.join().unwrap();
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(1));
    server.wait_for(|s| s.count("init exited 1") == 1);
    assert_eq!(server.count("init exited"), 1, "{}", server.log());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
