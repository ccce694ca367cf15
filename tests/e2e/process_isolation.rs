//! A checkout cannot make tstore run code: every git process runs in a private empty
//! directory with repository discovery cut off, so the files of a bare repository committed
//! into a root (`HEAD`, `objects/`, `refs/`, a `config` naming programs) are never read,
//! whether tstore runs in that root or reaches it with `-chdir`; and a relative `PATH` entry
//! (`bin`, `.`) never makes the tool-version probe run a file of the checkout; and root
//! runs no `git` or `terraform` from a `PATH` directory another user owns.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use tstore_test_support::{GitRepo, TestEnv};

use crate::common::TstoreEnv as _;

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
    let out = env.tstore().current_dir(&root).arg("init").output();
    assert!(!out.status.success(), "the source is unreachable: {out:?}");
    assert!(
        !marker.exists(),
        "git ran the checkout's core.sshCommand:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // tstore reaching the root with -chdir.
    let out = env
        .tstore()
        .current_dir(env.root.path())
        .arg(format!("-chdir={}", root.display()))
        .arg("init")
        .output();
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
        let out = env
            .tstore()
            .current_dir(&root)
            .env("PATH", &path)
            .env("TSTORE_FLAVOR", flavor)
            .args(["init", "--json"])
            .output();
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

/// Root's `PATH` starts with a directory of another user (uid 65534) holding a `git` and a
/// `terraform` that would create a marker: `tstore init` of a git module runs neither, says
/// once that it skipped the directory, and installs the module with the real git.
#[test]
fn root_runs_no_program_from_another_users_path_directory() {
    const OTHER_UID: u32 = 65534;
    assert!(
        rustix::process::geteuid().is_root(),
        "root's PATH rule needs the tests to run as root (to chown a directory to another \
         user); run the suite as root, as CI does"
    );
    let env = TestEnv::new();
    let marker = env.root.path().join("pwned");
    let theirs = env.root.path().join("other-user-bin");
    fs_err::create_dir(&theirs).unwrap();
    for name in ["git", "terraform"] {
        let fake = theirs.join(name);
        fs_err::write(
            &fake,
            format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
        )
        .unwrap();
        fs_err::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&fake, Some(OTHER_UID), None).unwrap();
    }
    std::os::unix::fs::chown(&theirs, Some(OTHER_UID), None).unwrap();

    let base = env.root.path().join("git");
    let repo = GitRepo::init(
        base.join("mod-src"),
        &[("main.tf", "output \"x\" {\n  value = 1\n}\n")],
    );
    let bare = repo
        .commit("init")
        .tag("v1")
        .clone_bare(base.join("mod.git"));
    let root = env.checkout(
        "stack",
        &[(
            "main.tf",
            &format!(
                "module \"m\" {{\n  source = \"{}\"\n}}\n",
                bare.source("v1")
            ),
        )],
    );

    let tstore = env.tstore();
    let inherited = tstore
        .get_env("PATH")
        .map(OsStr::to_owned)
        .unwrap_or_default();
    let mut path = OsString::from(&theirs);
    path.push(":");
    path.push(inherited);
    let out = tstore
        .env("PATH", path)
        .no_fuse()
        .current_dir(&root)
        .arg("init")
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !marker.exists(),
        "root ran a program from {}:\n{stderr}",
        theirs.display()
    );
    assert!(out.status.success(), "{out:?}");
    // The real git cloned the module.
    let installed = root.join(".terraform/modules/m/main.tf");
    assert!(installed.exists(), "{stderr}");
    let manifest = fs_err::read_to_string(root.join(".terraform/modules/modules.json")).unwrap();
    assert!(manifest.contains("\"Key\":\"m\""), "{manifest}");
    // Said once, naming the directory, though git ran several times.
    let skipped = format!("PATH directory {} is skipped", theirs.display());
    assert_eq!(stderr.matches(&skipped).count(), 1, "{stderr}");
    assert!(stderr.contains("owned by uid 65534"), "{stderr}");
}
