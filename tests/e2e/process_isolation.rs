//! A checkout cannot make tstore run code: every git process runs in a private empty
//! directory with repository discovery cut off, so the files of a bare repository committed
//! into a root (`HEAD`, `objects/`, `refs/`, a `config` naming programs) are never read,
//! whether tstore runs in that root or reaches it with `-chdir`; and a relative `PATH` entry
//! (`bin`, `.`) never makes the tool-version probe run a file of the checkout.

use std::path::Path;

use tstore_test_support::TestEnv;

use crate::common::tstore;

/// Plant a bare repository's files in `dir`: a `config` whose `core.sshCommand` (and
/// `core.fsmonitor`, and a credential helper) would create `marker`.
fn plant_bare_repository(dir: &Path, marker: &Path) {
    fs_err::create_dir_all(dir.join("objects")).unwrap();
    fs_err::create_dir_all(dir.join("refs/heads")).unwrap();
    fs_err::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let run = format!("sh -c 'touch {}' x", marker.display());
    fs_err::write(
        dir.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tsshCommand = {run}\n\
             \tfsmonitor = {run}\n[credential]\n\thelper = !{run}\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_bare_repository_committed_into_a_root_runs_nothing() {
    let env = TestEnv::new();
    let marker = env.root.path().join("pwned");
    // An ssh source: `git ls-remote` would start `core.sshCommand` to reach it.
    let root = env.checkout(
        "stack",
        &[(
            "main.tf",
            "module \"m\" {\n  source = \"git::ssh://git@127.0.0.1:1/nothing.git?ref=v1\"\n}\n",
        )],
    );
    plant_bare_repository(&root, &marker);

    // tstore run in the root itself.
    let out = tstore(&env, None)
        .current_dir(&root)
        .arg("init")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the source is unreachable: {out:?}");
    assert!(
        !marker.exists(),
        "git ran the checkout's core.sshCommand:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // tstore reaching the root with -chdir.
    let out = tstore(&env, None)
        .current_dir(env.root.path())
        .arg(format!("-chdir={}", root.display()))
        .arg("init")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert!(
        !marker.exists(),
        "git ran the checkout's core.sshCommand after -chdir:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The failure is git's own (the unreachable host), not a refusal of the directory.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("127.0.0.1"), "{stderr}");
}

#[test]
fn a_relative_path_entry_never_runs_a_file_of_the_checkout() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new();
    let marker = env.root.path().join("pwned");
    let root = env.checkout("stack", &[("main.tf", "")]);
    for name in ["terraform", "tofu"] {
        let fake = root.join("bin").join(name);
        fs_err::create_dir_all(fake.parent().unwrap()).unwrap();
        fs_err::write(
            &fake,
            format!(
                "#!/bin/sh\ntouch {}\necho '{{\"terraform_version\":\"1.99.0\"}}'\n",
                marker.display()
            ),
        )
        .unwrap();
        fs_err::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut path = std::ffi::OsString::from("bin:.:");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    for flavor in ["terraform", "tofu"] {
        let out = tstore(&env, None)
            .current_dir(&root)
            .env("PATH", &path)
            .env("TSTORE_FLAVOR", flavor)
            .args(["init", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(!marker.exists(), "{flavor}: tstore ran ./bin/{flavor}");
        let report = crate::common::json(&out);
        assert_ne!(
            report["tool_version"]["name"].as_str(),
            Some(format!("{flavor} 1.99.0").as_str()),
            "{report}"
        );
    }
}
