//! `scripts/install-tstore`, the installer shipped in the release tarball: it installs only
//! a tarball whose SHA-256 is the one its `.sha256` file names. The tarball here has the
//! layout `scripts/dist` writes, around the binary under test.

use std::path::Path;
use std::process::Command;

use tstore_test_support::{run_ok, stderr, stdout, TestEnv};

use crate::common::tstore_bin;

fn installer() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-tstore")
}

fn tarball(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let stage = env.root.path().join("stage").join(name);
    fs_err::create_dir_all(stage.join("bin")).unwrap();
    fs_err::copy(tstore_bin(), stage.join("bin/tstore")).unwrap();
    let out = env.root.path().join(format!("{name}.tar.gz"));
    run_ok(
        Command::new("tar")
            .arg("-czf")
            .arg(&out)
            .arg("-C")
            .arg(stage.parent().unwrap())
            .arg(name),
    );
    let sum = run_ok(
        Command::new("sha256sum")
            .arg(&out)
            .current_dir(env.root.path()),
    );
    fs_err::write(format!("{}.sha256", out.display()), stdout(&sum)).unwrap();
    out
}

#[test]
fn install_tstore_installs_only_a_verified_tarball() {
    let env = TestEnv::new();
    let good = tarball(&env, "tstore-0.0.0-x86_64-linux");
    let prefix = env.root.path().join("prefix");
    let out = run_ok(Command::new(installer()).arg(&good).arg(&prefix));
    assert!(stdout(&out).starts_with("tstore "), "{}", stdout(&out));
    assert!(prefix.join("bin/tstore").is_file());

    // One byte changed: refused, nothing installed.
    let bad_prefix = env.root.path().join("bad-prefix");
    let mut bytes = fs_err::read(&good).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs_err::write(&good, bytes).unwrap();
    let out = Command::new(installer())
        .arg(&good)
        .arg(&bad_prefix)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("nothing installed"),
        "{}",
        stderr(&out)
    );
    assert!(!bad_prefix.join("bin/tstore").exists());

    // No checksum file: refused.
    let other = tarball(&env, "tstore-0.0.1-x86_64-linux");
    fs_err::remove_file(format!("{}.sha256", other.display())).unwrap();
    let out = Command::new(installer())
        .arg(&other)
        .arg(&bad_prefix)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("unverified"), "{}", stderr(&out));
    assert!(!bad_prefix.join("bin/tstore").exists());
}

/// The tarball is read once: a FIFO at its path (which gives the checked bytes to the hash
/// and other bytes to the extraction) is refused, and nothing is installed.
#[test]
fn install_tstore_refuses_a_tarball_that_is_not_a_regular_file() {
    let env = TestEnv::new();
    let good = tarball(&env, "tstore-0.0.0-x86_64-linux");
    // Other bytes under the same name: a script in place of the binary.
    let stage = env.root.path().join("evil/tstore-0.0.0-x86_64-linux/bin");
    fs_err::create_dir_all(&stage).unwrap();
    fs_err::write(stage.join("tstore"), "#!/bin/sh\necho tstore evil\n").unwrap();
    let evil = env.root.path().join("evil.tar.gz");
    run_ok(
        Command::new("tar")
            .arg("-czf")
            .arg(&evil)
            .arg("-C")
            .arg(env.root.path().join("evil"))
            .arg("tstore-0.0.0-x86_64-linux"),
    );
    let fifo = env.root.path().join("fifo.tar.gz");
    run_ok(Command::new("mkfifo").arg(&fifo));
    fs_err::copy(
        format!("{}.sha256", good.display()),
        format!("{}.sha256", fifo.display()),
    )
    .unwrap();
    let mut writer = Command::new("sh")
        .arg("-c")
        .arg("cat \"$1\" > \"$3\"; sleep 0.5; cat \"$2\" > \"$3\"")
        .arg("writer")
        .arg(&good)
        .arg(&evil)
        .arg(&fifo)
        .spawn()
        .unwrap();
    let prefix = env.root.path().join("prefix");
    let out = Command::new(installer())
        .arg(&fifo)
        .arg(&prefix)
        .output()
        .unwrap();
    let _ = writer.kill();
    let _ = writer.wait();
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    assert!(!prefix.join("bin/tstore").exists());
}

/// The executable is linked at a fixed address (ELF type `EXEC`, not the `DYN` of a PIE):
/// its start relocates no pointers (docs/decisions.md, "The `tstore` executable is not
/// position-independent").
#[test]
fn the_executable_is_not_position_independent() {
    let bytes = fs_err::read(tstore_bin()).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
    assert_eq!(e_type, 2, "ET_EXEC expected, found e_type {e_type}");
}
