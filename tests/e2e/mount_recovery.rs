//! After a reboot, or when the mount daemon dies, terraform only says that no package is
//! installed; README's troubleshooting section starts from that message, and the recovery it
//! documents works. `tstore mount --enable` writes the systemd user unit that prevents it.

use std::path::Path;

use tstore_test_support::{stderr, stdout, Layout, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

fn readme_troubleshooting() -> String {
    let readme =
        fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let start = readme
        .find("## Troubleshooting")
        .expect("a troubleshooting section");
    let rest = &readme[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

#[test]
fn a_dead_mount_is_recognised_from_terraforms_message_and_recovered_as_documented() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let dir = m.env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    m.env.tstore().cli_config(&m.cfg).arg("init").arg(&dir).ok();
    let section = readme_troubleshooting();
    // The daemon dies (a reboot leaves the same: links into a mount nothing serves).
    let pid = fs_err::read_to_string(m.env.store.join("mount.pid")).unwrap();
    assert!(std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap()
        .success());
    // Its exit (all threads, then the FUSE connection) takes a moment.
    let started = std::time::Instant::now();
    loop {
        let st = m.env.tstore().args(["mount", "--status"]).output();
        if st.status.code() == Some(32) {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the mount still serves after its daemon was killed: {}",
            stdout(&st)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for judge in [
        tstore_test_support::peers().terraform.clone(),
        std::path::PathBuf::from("terraform"),
    ] {
        let plan = m
            .env
            .command(&judge)
            .current_dir(&dir)
            .args(["plan", "-no-color", "-input=false"])
            .output()
            .unwrap();
        assert!(
            !plan.status.success(),
            "{}: plan succeeded",
            judge.display()
        );
        let all = format!("{}{}", stdout(&plan), stderr(&plan));
        let error = all
            .lines()
            .find(|l| l.trim_start().starts_with("Error: "))
            .unwrap_or_else(|| panic!("{}: no error line in {all}", judge.display()))
            .trim();
        assert!(
            section.contains(&format!("`{error}`")),
            "README's troubleshooting does not start from {error:?}"
        );
    }
    // The documented recovery.
    let status = m.env.tstore().args(["mount", "--status"]).output();
    assert_eq!(status.status.code(), Some(32), "{}", stdout(&status));
    assert!(stdout(&status).contains("stale"), "{}", stdout(&status));
    m.env.tstore().arg("mount").ok();
    m.env.assert_terraform_plans_null(&dir);
    m.env.tstore().arg("umount").ok();
}

#[test]
fn mount_enable_writes_the_user_unit_and_says_what_to_do_without_systemd() {
    let env = TestEnv::new();
    let unit = env
        .root
        .path()
        .join("xdg/config/systemd/user/tstore-mount.service");
    let out = env.tstore().args(["mount", "--enable"]).ok();
    let text = fs_err::read_to_string(&unit).unwrap();
    let bin = crate::common::tstore_bin().display().to_string();
    assert!(
        text.contains(&format!("ExecStart=\"{bin}\" mount --foreground")),
        "{text}"
    );
    assert!(
        text.contains(&format!("TSTORE_HOME={}", env.store.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("TSTORE_MOUNT={}", env.mount.display())),
        "{text}"
    );
    assert!(text.contains("Restart=on-failure"), "{text}");
    // No systemd user manager runs in the test environment: it says what to do instead.
    assert!(
        stdout(&out).contains("tstore mount` at login"),
        "{}",
        stdout(&out)
    );
    // Again: the same file.
    env.tstore().args(["mount", "--enable"]).ok();
    assert_eq!(fs_err::read_to_string(&unit).unwrap(), text);
    env.tstore().args(["mount", "--disable"]).ok();
    assert!(!unit.exists());
    // A unit of the user's own is never overwritten.
    fs_err::write(&unit, "[Service]\nExecStart=/bin/true\n").unwrap();
    let out = env.tstore().args(["mount", "--enable"]).output();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("was not written by tstore"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fs_err::read_to_string(&unit).unwrap(),
        "[Service]\nExecStart=/bin/true\n"
    );
}

/// An init right after the daemon was killed (the kernel still caching the mount root's
/// attributes) finds the mount dead and mounts it again: what it links is
/// served, and terraform plans with it.
#[test]
fn an_init_right_after_the_daemon_died_mounts_the_store_again() {
    let m = TestEnv::with_null_mirror(Layout::Packed);
    let first = m.env.checkout("first", &[("main.tf", NULL_CONFIG)]);
    m.env
        .tstore()
        .cli_config(&m.cfg)
        .arg("init")
        .arg(&first)
        .ok();
    let pid = fs_err::read_to_string(m.env.store.join("mount.pid")).unwrap();
    let pid = pid.trim().to_owned();
    assert!(std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap()
        .success());
    // At once: its threads may still be exiting, the kernel caching the root's attributes.
    let second = m.env.checkout("second", &[("main.tf", NULL_CONFIG)]);
    m.env
        .tstore()
        .cli_config(&m.cfg)
        .arg("init")
        .arg(&second)
        .ok();
    m.env.assert_terraform_plans_null(&second);
    m.env.tstore().arg("umount").ok();
}

#[test]
fn a_mount_path_with_a_newline_writes_no_directive_into_the_unit() {
    let env = TestEnv::new();
    let unit = env
        .root
        .path()
        .join("xdg/config/systemd/user/tstore-mount.service");
    let marker = env.root.path().join("pwned");
    let hostile = format!(
        "{}/m\nExecStartPre=/bin/touch {}\n",
        env.root.path().display(),
        marker.display()
    );
    let out = env
        .tstore()
        .env("TSTORE_MOUNT", &hostile)
        .args(["mount", "--enable"])
        .output();
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("control character"),
        "{}",
        stderr(&out)
    );
    assert!(!unit.exists(), "a unit was written");
    // Specifiers and a trailing backslash in the store path stay inside their quotes.
    let store = env.root.path().join("st%h\\");
    let out = env
        .tstore()
        .env("TSTORE_HOME", &store)
        .args(["mount", "--enable"])
        .output();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = fs_err::read_to_string(&unit).unwrap();
    let description = text
        .lines()
        .find(|l| l.starts_with("Description="))
        .unwrap();
    assert!(description.ends_with("st%%h\\\\\""), "{description}");
    assert!(!text.contains("st%h"), "{text}");
}
