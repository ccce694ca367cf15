//! The tool version (`--tool-version`, `TSTORE_TOOL_VERSION`, else `version -json` of the
//! flavor's tool on `PATH`, else the newest release tstore knows): `required_version` is
//! checked against it, in the tool's words and with nothing written on refusal; the binary
//! is asked once per identity.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tstore_test_support::{peers, stderr, TestEnv, Tstore};

use crate::common::{json, TstoreEnv};

/// `tstore init --json DIR` with no flavor or tool version set, `PATH` = `path` (plus the
/// system directories, which hold neither tool), no FUSE.
fn init(env: &TestEnv, path: &Path, dir: &Path, args: &[&str]) -> Tstore {
    let path = format!("{}:/usr/bin:/bin", path.display());
    env.tstore_plain()
        .env("PATH", path)
        .no_fuse()
        .init(dir)
        .args(args)
}

fn required(env: &TestEnv, name: &str, constraint: &str) -> PathBuf {
    let main = format!("terraform {{\n  required_version = \"{constraint}\"\n}}\n");
    env.checkout(name, &[("main.tf", main.as_str())])
}

#[test]
fn required_version_is_checked_against_the_tool_version_given() {
    let env = TestEnv::new();
    let empty = env.root.path().join("empty-path");
    fs_err::create_dir_all(&empty).unwrap();
    let dir = required(&env, "w", ">= 1.5");

    let out = init(&env, &empty, &dir, &["--tool-version", "terraform 1.0.3"]).fails();
    let err = stderr(&out);
    assert!(
        err.contains("Unsupported Terraform Core version")
            && err.contains("Terraform version 1.0.3")
            && err.contains("\">= 1.5\"")
            && err.contains("main.tf:2"),
        "{err}"
    );
    assert!(!dir.join(".terraform").exists(), "nothing written");
    assert!(!dir.join(".terraform.lock.hcl").exists());

    // The tool named sets the flavor; a release that meets the constraint installs.
    let ok = init(&env, &empty, &dir, &["--json"]);
    let report = json(&ok.env("TSTORE_TOOL_VERSION", "terraform 1.11.4").ok());
    assert_eq!(report["flavor"]["name"], "terraform");
    assert_eq!(report["flavor"]["decided_by"], "tool version");
    assert_eq!(report["tool_version"]["name"], "terraform 1.11.4");
    assert_eq!(report["tool_version"]["decided_by"], "TSTORE_TOOL_VERSION");

    // tofu's words under tofu.
    let tofu = required(&env, "t", ">= 2.0");
    let err = stderr(&init(&env, &empty, &tofu, &["-tool-version=tofu 1.12.2"]).fails());
    assert!(
        err.contains("Unsupported OpenTofu Core version")
            && err.contains("OpenTofu version 1.12.2"),
        "{err}"
    );

    // A tool version that is not the flavor's tool, and one that does not parse.
    let err = stderr(
        &init(
            &env,
            &empty,
            &dir,
            &["--flavor", "tofu", "--tool-version", "terraform 1.0.3"],
        )
        .fails(),
    );
    assert!(
        err.contains("is not tofu's") && err.contains("--flavor"),
        "{err}"
    );
    let err = stderr(&init(&env, &empty, &dir, &["--tool-version", "terraform latest"]).fails());
    assert!(err.contains("invalid tool version"), "{err}");

    // Neither given nor on PATH: the newest release tstore knows, which the constraint
    // allows.
    let report = json(&init(&env, &empty, &dir, &["--flavor", "terraform", "--json"]).ok());
    assert_eq!(report["tool_version"]["decided_by"], "newest");
    assert!(report["tool_version"]["name"]
        .as_str()
        .unwrap()
        .starts_with("terraform "));
}

#[test]
fn the_tool_on_path_is_asked_once_per_binary() {
    let env = TestEnv::new();
    // A wrapper named terraform that counts its runs and runs the real terraform 1.0.3.
    let bin = env.root.path().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let count = env.root.path().join("runs");
    let wrapper = bin.join("terraform");
    fs_err::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho run >>'{}'\nexec '{}' \"$@\"\n",
            count.display(),
            peers().terraform.display()
        ),
    )
    .unwrap();
    fs_err::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runs = || {
        fs_err::read_to_string(&count)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let dir = required(&env, "w", "~> 1.0.0");

    for _ in 0..2 {
        let report = json(&init(&env, &bin, &dir, &["--flavor", "terraform", "--json"]).ok());
        assert_eq!(report["tool_version"]["name"], "terraform 1.0.3");
        assert_eq!(report["tool_version"]["decided_by"], "PATH");
        assert_eq!(
            report["tool_version"]["binary"],
            wrapper.display().to_string()
        );
    }
    assert_eq!(runs(), 1, "the second init read the cache");

    // Another binary at the same path (rewritten: a new size) is asked again.
    let text = fs_err::read_to_string(&wrapper).unwrap();
    fs_err::write(&wrapper, format!("{text}\n")).unwrap();
    init(&env, &bin, &dir, &["--flavor", "terraform"]).ok();
    assert_eq!(runs(), 2);

    // The version the binary reports is the one checked.
    let newer = required(&env, "n", ">= 1.1");
    let err = stderr(&init(&env, &bin, &newer, &["--flavor", "terraform"]).fails());
    assert!(err.contains("Terraform version 1.0.3"), "{err}");
    assert_eq!(runs(), 2);
}

/// A release newer than any tstore knows is followed as the newest known one, and said
/// once per process, however many roots one run initialises; a known release is not.
#[test]
fn a_release_newer_than_known_is_said_once_and_followed_as_the_newest() {
    let env = TestEnv::new();
    let a = required(&env, "a", ">= 1.5");
    let b = required(&env, "b", ">= 1.5");
    let said = "newer than any release tstore knows";
    for (tool, times) in [("terraform 1.99.0", 1), ("terraform 1.11.4", 0)] {
        let out = env
            .tstore()
            .no_fuse()
            .tool_version(tool)
            .args(["init", "--json"])
            .arg(&a)
            .arg(&b)
            .ok();
        let err = stderr(&out);
        assert_eq!(err.matches(said).count(), times, "{tool}: {err}");
        let report = json(&out);
        for root in report["roots"].as_array().unwrap() {
            assert_eq!(root["ok"], true, "{tool}: {report}");
            assert_eq!(root["report"]["tool_version"]["name"], tool, "{report}");
        }
    }
}
