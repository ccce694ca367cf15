//! Which installation method serves a provider, and `-lockfile=readonly`.
//! Synthetic providers from filesystem mirrors; no terraform run is needed here.

use std::path::{Path, PathBuf};

use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::{lock_file, run_ok, snapshot, stderr, stdout, TestEnv};

use crate::common::TstoreEnv as _;

const FAKE: &str = "example.com/test/fake";
const OTHER: &str = "example.com/test/other";

fn publish(mirror_dir: &Path, addr: &str, version: &str, marker: &str) {
    let kind = addr.rsplit('/').next().unwrap();
    let name = format!("terraform-provider-{kind}_v{version}");
    mirror::write_unpacked(
        mirror_dir,
        addr,
        version,
        "linux_amd64",
        &[PkgFile {
            path: &name,
            contents: marker.as_bytes(),
            executable: true,
        }],
    );
}

/// A new [`TestEnv`] with `packages` (address, version, marker: see [`publish`]) in a
/// filesystem mirror at `<root>/mirror`, and a CLI config using only that mirror.
fn env_with_mirror(packages: &[(&str, &str, &str)]) -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    for (addr, version, marker) in packages {
        publish(&mirror_dir, addr, version, marker);
    }
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    (env, cfg)
}

fn config(providers: &[(&str, &str)]) -> String {
    let mut s = String::from("terraform {\n  required_providers {\n");
    for (name, version) in providers {
        s.push_str(&format!(
            "    {name} = {{ source = \"example.com/test/{name}\", version = \"{version}\" }}\n"
        ));
    }
    s.push_str("  }\n}\n");
    s
}

fn linked_marker(dir: &Path, addr: &str, version: &str) -> String {
    let kind = addr.rsplit('/').next().unwrap();
    std::fs::read_to_string(
        dir.join(".terraform/providers")
            .join(addr)
            .join(version)
            .join("linux_amd64")
            .join(format!("terraform-provider-{kind}_v{version}")),
    )
    .unwrap()
}

#[test]
fn lockfile_readonly_refuses_an_update_and_changes_nothing() {
    let (env, cfg) = env_with_mirror(&[(FAKE, "1.0.0", "fake"), (OTHER, "2.0.0", "other")]);
    let dir = env.checkout("stack", &[("main.tf", &config(&[("fake", "1.0.0")]))]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    // Unchanged lock: readonly is fine.
    env.tstore()
        .cli_config(&cfg)
        .args(["init", "-lockfile=readonly"])
        .arg(&dir)
        .ok();

    std::fs::write(
        dir.join("main.tf"),
        config(&[("fake", "1.0.0"), ("other", ">= 1.0")]),
    )
    .unwrap();
    let before = snapshot(&dir);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .args(["init", "-lockfile=readonly"])
        .arg(&dir)
        .fails();
    let err = stderr(&out);
    assert!(
        err.contains("Provider dependency changes detected"),
        "{err}"
    );
    assert!(err.contains("-lockfile=readonly"), "{err}");
    assert_eq!(
        before,
        snapshot(&dir),
        "a refused init changed the directory"
    );

    // Without readonly the same change is recorded.
    let out = stdout(&env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok());
    assert!(out.contains("has made some changes"), "{out}");
    let lock = lock_file(&dir);
    assert!(
        lock.contains("provider \"example.com/test/other\""),
        "{lock}"
    );
}

#[test]
fn include_and_exclude_patterns_choose_the_mirror() {
    let env = TestEnv::new();
    let a = env.root.path().join("mirror-a");
    let b = env.root.path().join("mirror-b");
    publish(&a, FAKE, "1.0.0", "from-a");
    publish(&a, OTHER, "1.0.0", "other-from-a");
    publish(&b, FAKE, "1.0.0", "from-b");
    publish(&b, OTHER, "1.0.0", "other-from-b");
    let cfg = env.root.path().join("patterns.tfrc");
    std::fs::write(
        &cfg,
        format!(
            r#"provider_installation {{
  filesystem_mirror {{
    path    = "{a}"
    exclude = ["example.com/test/fake"]
  }}
  filesystem_mirror {{
    path    = "{b}"
    include = ["example.com/test/fake"]
  }}
}}
"#,
            a = a.display(),
            b = b.display()
        ),
    )
    .unwrap();
    let dir = env.checkout(
        "stack",
        &[("main.tf", &config(&[("fake", "1.0.0"), ("other", "1.0.0")]))],
    );
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    assert_eq!(linked_marker(&dir, FAKE, "1.0.0"), "from-b");
    assert_eq!(linked_marker(&dir, OTHER, "1.0.0"), "other-from-a");
}

/// With no `provider_installation` block, `terraform.d/plugins` in the current directory
/// is an implied filesystem mirror, consulted before `direct` (as tofu's
/// `implicitProviderSource` in
/// <https://github.com/opentofu/opentofu/blob/main/cmd/tofu/provider_source.go>).
#[test]
fn implied_local_plugin_directory_is_used_without_a_provider_installation_block() {
    let env = TestEnv::new();
    let dir = env.checkout("stack", &[("main.tf", &config(&[("fake", "~> 1.0")]))]);
    publish(&dir.join("terraform.d/plugins"), FAKE, "1.2.0", "implied");
    let empty_cfg = env.root.path().join("empty.tfrc");
    std::fs::write(&empty_cfg, "").unwrap();
    let out = env
        .tstore()
        .cli_config(&empty_cfg)
        .arg("init")
        .current_dir(&dir)
        .ok();
    assert!(
        stdout(&out).contains("- Installed example.com/test/fake v1.2.0"),
        "{}",
        stdout(&out)
    );
    assert_eq!(linked_marker(&dir, FAKE, "1.2.0"), "implied");
}

/// An override file's `required_providers` entry replaces the base file's entry for that
/// provider whole (as in tofu's `NewModule`,
/// <https://github.com/opentofu/opentofu/blob/main/internal/configs/module.go>): the pinned
/// version no longer matches (an error, nothing changes), and `-upgrade` selects the newest
/// version the override allows. terraform judges the lock.
#[test]
fn override_file_constraint_change_takes_effect_like_terraform() {
    let (env, cfg) = env_with_mirror(&[
        (FAKE, "1.0.0", "one"),
        (FAKE, "1.5.0", "one-five"),
        (FAKE, "2.0.0", "two"),
    ]);
    let main = config(&[("fake", ">= 1.0.0")]);
    let (ours, theirs) = env.ours_and_theirs(&[("main.tf", &main)]);
    env.tstore().cli_config(&cfg).arg("init").arg(&ours).ok();
    assert_eq!(linked_marker(&ours, FAKE, "2.0.0"), "two");
    let tf_init = |upgrade: bool| {
        let mut cmd = env.terraform_init(&theirs, &cfg);
        if upgrade {
            cmd.arg("-upgrade");
        }
        run_ok(&mut cmd);
    };
    tf_init(false);

    let over = "terraform {\n  required_providers {\n    fake = {\n      source  = \"example.com/test/fake\"\n      version = \"~> 1.0\"\n    }\n  }\n}\n";
    for dir in [&ours, &theirs] {
        std::fs::write(dir.join("override.tf"), over).unwrap();
    }
    let before = snapshot(&ours);
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&ours).fails();
    let err = stderr(&out);
    assert!(
        err.contains(
            "locked provider example.com/test/fake 2.0.0 does not match configured version constraint ~> 1.0"
        ),
        "{err}"
    );
    assert_eq!(
        before,
        snapshot(&ours),
        "a refused init changed the directory"
    );

    let out = stdout(
        &env.tstore()
            .cli_config(&cfg)
            .args(["init", "-upgrade"])
            .arg(&ours)
            .ok(),
    );
    assert!(
        out.contains("- Installed example.com/test/fake v1.5.0"),
        "{out}"
    );
    assert!(out.contains("has made some changes"), "{out}");
    assert_eq!(linked_marker(&ours, FAKE, "1.5.0"), "one-five");
    tf_init(true);
    let ours_lock = lock_file(&ours);
    let theirs_lock = lock_file(&theirs);
    assert_eq!(ours_lock, theirs_lock, "lock files differ");
    assert!(
        ours_lock.contains("constraints = \"~> 1.0\""),
        "{ours_lock}"
    );
}

/// An invalid constraint string (here in an override file) is a configuration error naming
/// the file and line and the provider; exit 1, the checkout and its lock untouched.
#[test]
fn invalid_constraint_string_is_a_clear_error_and_nothing_changes() {
    let (env, cfg) = env_with_mirror(&[(FAKE, "1.0.0", "one")]);
    let dir = env.checkout("stack", &[("main.tf", &config(&[("fake", "1.0.0")]))]);
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    std::fs::write(
        dir.join("main_override.tf"),
        "terraform {\n  required_providers {\n    fake = {\n      source  = \"example.com/test/fake\"\n      version = \"~> banana\"\n    }\n  }\n}\n",
    )
    .unwrap();
    let before = snapshot(&dir);
    let out = env.tstore().cli_config(&cfg).arg("init").arg(&dir).fails();
    let err = stderr(&out);
    eprintln!("ERR: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    for expect in [
        "main_override.tf:5: Invalid version constraint",
        "provider \"fake\" (example.com/test/fake): \"~> banana\"",
    ] {
        assert!(err.contains(expect), "expected {expect:?} in:\n{err}");
    }
    assert_eq!(
        before,
        snapshot(&dir),
        "a failed init changed the directory"
    );
}
