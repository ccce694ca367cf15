//! Servers that fight back: a module archive whose body never ends, and a server that
//! trickles a byte now and then. Neither may fill the disk or hold an init forever.

use tstore_test_support::{stderr, TestEnv};

use crate::common::TstoreEnv as _;

/// A loopback HTTP server that answers every request with `head` and then writes `body`
/// (chunk by chunk, `pause` between chunks, `rounds` times) until the client goes away.
/// Returns its address.
fn hostile_http(
    head: &'static str,
    chunk: &'static [u8],
    pause: std::time::Duration,
    rounds: usize,
) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for _ in 0..rounds {
                    if stream.write_all(chunk).is_err() {
                        return;
                    }
                    std::thread::sleep(pause);
                }
            });
        }
    });
    addr
}

/// A module archive whose body never ends is cut off at `TSTORE_MAX_ARCHIVE_BYTES` while
/// it downloads (it used to fill the disk first), and one that announces more is refused
/// before its body is read.
#[test]
fn an_endless_module_archive_stops_at_the_archive_cap() {
    let env = TestEnv::new();
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    let endless = hostile_http(
        "HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\nConnection: close\r\n\r\n",
        &ZEROS,
        std::time::Duration::ZERO,
        usize::MAX,
    );
    let announced = hostile_http(
        "HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\nContent-Length: 999999999999\r\n\r\n",
        &ZEROS,
        std::time::Duration::ZERO,
        usize::MAX,
    );
    for addr in [endless, announced] {
        let dir = env.checkout(
            &format!("endless-{}", addr.port()),
            &[(
                "main.tf",
                &format!("module \"m\" {{\n  source = \"http://{addr}/m.zip\"\n}}\n"),
            )],
        );
        let out = env
            .tstore()
            .no_fuse()
            .env("TSTORE_MAX_ARCHIVE_BYTES", "4000000")
            .arg("init")
            .arg(&dir)
            .output();
        assert!(!out.status.success(), "init succeeded");
        assert!(
            stderr(&out).contains("TSTORE_MAX_ARCHIVE_BYTES"),
            "{}",
            stderr(&out)
        );
        let on_disk: u64 = walkdir::WalkDir::new(env.root.path())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        assert!(
            on_disk < 64 << 20,
            "{on_disk} bytes on disk after the refusal"
        );
        assert!(!dir.join(".terraform").exists());
    }
}

/// A server that trickles a byte now and then never trips a read timeout: a document
/// (here a page asked for its `X-Terraform-Get`) must arrive whole within
/// `TF_REGISTRY_CLIENT_TIMEOUT`, and a download that brings almost nothing for 30 s fails
/// as stalled, and so does a git remote over HTTP. None holds init forever.
#[test]
fn a_trickling_server_does_not_hold_init_forever() {
    let env = TestEnv::new();
    let trickle = hostile_http(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n",
        b"<",
        std::time::Duration::from_millis(500),
        usize::MAX,
    );
    let cases = [
        (format!("http://{trickle}/module-page"), "timed out"),
        (format!("http://{trickle}/m.zip"), "stalled"),
        // git's own HTTP transport, under the same rule (under 1 KiB in 30 s).
        (format!("git::http://{trickle}/r.git?ref=v1"), "too slow"),
    ];
    for (source, expect) in cases {
        let dir = env.checkout(
            &format!("trickle-{}", expect.replace(' ', "-")),
            &[(
                "main.tf",
                &format!("module \"m\" {{\n  source = \"{source}\"\n}}\n"),
            )],
        );
        let started = std::time::Instant::now();
        let out = env
            .tstore()
            .no_fuse()
            .env("TF_REGISTRY_CLIENT_TIMEOUT", "2")
            .arg("init")
            .arg(&dir)
            .output();
        assert!(!out.status.success(), "{source}: init succeeded");
        assert!(
            stderr(&out).to_lowercase().contains(expect),
            "{source}: {}",
            stderr(&out)
        );
        // Not a timing assertion on tstore's speed: a bound far above either rule, below
        // "forever".
        assert!(
            started.elapsed() < std::time::Duration::from_secs(90),
            "{source}"
        );
    }
}
