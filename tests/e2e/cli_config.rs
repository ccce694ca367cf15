//! `tstore cli-config`: a plain `terraform init` installs every provider the store holds
//! from the store, offline, and the others as the user's own configuration says; it works on
//! an empty store, keeps the user's methods and other blocks, and a file written with
//! `--out` follows the store as providers enter and leave it.

use std::os::unix::fs::PermissionsExt as _;

use tstore_test_support::{mirror, run_ok, stderr, TestEnv};

use crate::common::tstore;

const NULL_AND_P0: &str = r#"terraform {
  required_providers {
    null = { source = "hashicorp/null" }
    p0   = { source = "example.com/test/p0" }
  }
}
"#;

#[test]
fn cli_config_keeps_the_users_methods_and_follows_the_store() {
    let env = TestEnv::new();
    // The team's own setup: null from their mirror, everything else direct.
    let team_mirror = env.root.path().join("team-mirror");
    mirror::null_packed(&team_mirror);
    let user = env.root.path().join("user.tfrc");
    fs_err::write(
        &user,
        format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"registry.terraform.io/hashicorp/null\"]\n  }}\n  direct {{\n    exclude = [\"registry.terraform.io/hashicorp/null\"]\n  }}\n}}\ncredentials \"private.example.org\" {{\n  token = \"team-token\"\n}}\n",
            team_mirror.display()
        ),
    )
    .unwrap();
    let generated = env.root.path().join("home/.tstore.tfrc");

    // An empty store (none at all yet): it works, and keeps the team's mirror and blocks.
    assert!(!env.store.join("index.sqlite").exists());
    let out = tstore(&env, Some(&user))
        .env("TSTORE_NO_FUSE", "1")
        .args(["cli-config", "--out"])
        .arg(&generated)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = fs_err::read_to_string(&generated).unwrap();
    let view = env.mount.join("providers").display().to_string();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from:\n{text}"))
    };
    assert!(at(&view) < at(&team_mirror.display().to_string()), "{text}");
    assert!(
        at("direct") > at(&team_mirror.display().to_string()),
        "{text}"
    );
    assert!(
        text.contains("credentials \"private.example.org\""),
        "{text}"
    );
    assert_eq!(
        fs_err::metadata(&generated).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // A provider enters the store through another checkout's init.
    let other_mirror = env.root.path().join("other-mirror");
    mirror::write_packed(
        &other_mirror,
        "example.com/test/p0",
        "1.0.0",
        "linux_amd64",
        &[mirror::PkgFile {
            path: "terraform-provider-p0_v1.0.0",
            contents: b"#!/bin/sh\nexit 1\n",
            executable: true,
        }],
    );
    let other_cfg = env.cli_config_fs_mirror(&other_mirror);
    let b = env.checkout(
        "b",
        &[(
            "main.tf",
            "terraform {\n  required_providers {\n    p0 = { source = \"example.com/test/p0\" }\n  }\n}\n",
        )],
    );
    run_ok(
        tstore(&env, Some(&other_cfg))
            .env("TSTORE_NO_FUSE", "1")
            .arg("init")
            .arg(&b),
    );
    let text = fs_err::read_to_string(&generated).unwrap();
    assert!(
        text.contains("\"example.com/test/p0\""),
        "the store's new provider is not excluded from direct:\n{text}"
    );

    // Offline, a plain terraform init with the file: p0 from the store, null from the team's
    // mirror. Both judges.
    for judge in [
        tstore_test_support::peers().terraform.clone(),
        std::path::PathBuf::from("terraform"),
    ] {
        let c = env.checkout(
            &format!("c-{}", judge.display().to_string().len()),
            &[("main.tf", NULL_AND_P0)],
        );
        let out = env
            .command(&judge)
            .current_dir(&c)
            .env("TF_CLI_CONFIG_FILE", &generated)
            .args(["init", "-no-color", "-input=false"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            judge.display(),
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    }

    // The provider leaves the store: the file follows.
    fs_err::remove_dir_all(&b).unwrap();
    run_ok(
        tstore(&env, None)
            .env("TSTORE_NO_FUSE", "1")
            .args(["gc", "--min-age", "0"]),
    );
    let text = fs_err::read_to_string(&generated).unwrap();
    assert!(!text.contains("example.com/test/p0"), "{text}");

    // A file the user took over (first line changed) is theirs: never rewritten.
    let mine = text.replacen("# Generated", "# Mine, once generated", 1);
    fs_err::write(&generated, &mine).unwrap();
    run_ok(
        tstore(&env, Some(&other_cfg))
            .env("TSTORE_NO_FUSE", "1")
            .arg("init")
            .arg(env.checkout(
                "d",
                &[(
                    "main.tf",
                    "terraform {\n  required_providers {\n    p0 = { source = \"example.com/test/p0\" }\n  }\n}\n",
                )],
            )),
    );
    assert_eq!(fs_err::read_to_string(&generated).unwrap(), mine);
}
