//! `tstore cli-config`: a plain `terraform init` installs every provider the store holds
//! from the store, offline, and the others as the user's own configuration says; it works on
//! an empty store, keeps the user's methods and other blocks, and a file written with
//! `--out` follows the store as providers enter and leave it.

use std::os::unix::fs::PermissionsExt as _;

use tstore_test_support::{mirror, run_ok, stderr, TestEnv};

use crate::common::TstoreEnv as _;

const NULL_AND_P0: &str = r#"terraform {
  required_providers {
    null = { source = "hashicorp/null" }
    p0   = { source = "example.com/test/p0" }
  }
}
"#;

/// The team's packed mirror of the null provider and their CLI configuration, whose text
/// `config` makes from the mirror's path.
fn team_config(
    env: &TestEnv,
    config: impl FnOnce(&std::path::Path) -> String,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let team_mirror = env.root.path().join("team-mirror");
    mirror::null_packed(&team_mirror);
    let user = env.root.path().join("user.tfrc");
    fs_err::write(&user, config(&team_mirror)).unwrap();
    (team_mirror, user)
}

#[test]
fn cli_config_keeps_the_users_methods_and_follows_the_store() {
    let env = TestEnv::new();
    // The team's own setup: null from their mirror, everything else direct.
    let (team_mirror, user) = team_config(&env, |team_mirror| {
        format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"registry.terraform.io/hashicorp/null\"]\n  }}\n  direct {{\n    exclude = [\"registry.terraform.io/hashicorp/null\"]\n  }}\n}}\ncredentials \"private.example.org\" {{\n  token = \"team-token\"\n}}\n",
            team_mirror.display()
        )
    });
    let generated = env.root.path().join("home/.tstore.tfrc");

    // An empty store (none at all yet): it works, and keeps the team's mirror and blocks.
    assert!(!env.store.join("index.sqlite").exists());
    let out = env
        .tstore()
        .cli_config(&user)
        .no_fuse()
        .args(["cli-config", "--out"])
        .arg(&generated)
        .output();
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
    env.tstore()
        .cli_config(&other_cfg)
        .no_fuse()
        .arg("init")
        .arg(&b)
        .ok();
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
    env.tstore().no_fuse().args(["gc", "--min-age", "0"]).ok();
    let text = fs_err::read_to_string(&generated).unwrap();
    assert!(!text.contains("example.com/test/p0"), "{text}");

    // A file the user took over (first line changed) is theirs: never rewritten.
    let mine = text.replacen("# Generated", "# Mine, once generated", 1);
    fs_err::write(&generated, &mine).unwrap();
    env.tstore().cli_config(&other_cfg)
            .no_fuse()
            .arg("init")
            .arg(env.checkout(
                "d",
                &[(
                    "main.tf",
                    "terraform {\n  required_providers {\n    p0 = { source = \"example.com/test/p0\" }\n  }\n}\n",
                )],
            )).ok();
    assert_eq!(fs_err::read_to_string(&generated).unwrap(), mine);
}

/// The documented flow: `tstore init`, then the tool's own `init` (for the backend) with
/// `tstore cli-config`. Both judges find the provider already installed (the lock file's
/// `h1:` matches the linked package, the store's view lists the version) and keep tstore's
/// link and lock file as they are; read from the installers (upstream:
/// internal/providercache/installer.go@v1.0.3, @v1.11.4, @v1.15.4, and OpenTofu's
/// @v1.12.6), the "already installed" check comes before anything that would replace the
/// link, so terraform ≥ 1.15.4's refusal to unpack into a symlinked directory is not reached.
#[test]
fn the_tools_own_second_init_keeps_tstores_links_and_lock_file() {
    let env = TestEnv::new();
    let (_, user) = team_config(&env, |team_mirror| {
        format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
            team_mirror.display()
        )
    });
    let generated = env.root.path().join("home/.tstore.tfrc");
    env.tstore()
        .cli_config(&user)
        .no_fuse()
        .args(["cli-config", "--out"])
        .arg(&generated)
        .ok();
    let peers = tstore_test_support::peers();
    for (name, judge) in [
        ("1.0.3", &peers.terraform),
        ("1.11.4", &peers.terraform_current),
    ] {
        let dir = env.checkout(
            &format!("w-{name}"),
            &[(
                "main.tf",
                "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\" }\n  }\n}\n",
            )],
        );
        env.tstore()
            .cli_config(&user)
            .no_fuse()
            .arg("init")
            .arg(&dir)
            .ok();
        let link =
            dir.join(".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64");
        let target = fs_err::read_link(&link).unwrap();
        let lock = fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap();
        let out = run_ok(
            env.command(judge)
                .current_dir(&dir)
                .env("TF_CLI_CONFIG_FILE", &generated)
                .args(["init", "-no-color", "-input=false"]),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Using previously-installed hashicorp/null v2.1.2"),
            "{name}: {text}"
        );
        assert_eq!(
            fs_err::read_link(&link).unwrap(),
            target,
            "{name}: the link was replaced"
        );
        assert_eq!(
            fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap(),
            lock,
            "{name}: the lock file changed"
        );
    }
}

/// A CLI configuration that also serves tofu users (an `oci_mirror`, `trust_all_hashes`,
/// OCI credentials): the file generated under the terraform flavor holds only what
/// terraform reads, names what it left out in a comment and a warning, and both terraforms
/// read it without "Unknown provider installation method" and install from the team's
/// mirror; under the tofu flavor everything is kept.
#[test]
fn a_configuration_for_both_tools_generates_what_each_tool_reads() {
    let env = TestEnv::new();
    let (team_mirror, user) = team_config(&env, |team_mirror| {
        format!(
            "provider_installation {{\n  oci_mirror {{\n    repository_template = \"oci.example/${{namespace}}/${{type}}\"\n    include = [\"example.com/*/*\"]\n  }}\n  network_mirror {{\n    url = \"https://mirror.example/\"\n    trust_all_hashes = true\n    include = [\"example.com/*/*\"]\n  }}\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\noci_default_credentials {{\n  docker_style_config_files = []\n}}\n",
            team_mirror.display()
        )
    });
    let generate = |flavor: &str| {
        let out = env
            .tstore()
            .cli_config(&user)
            .no_fuse()
            .env("TSTORE_FLAVOR", flavor)
            .arg("cli-config")
            .output();
        assert!(out.status.success(), "{}", stderr(&out));
        (tstore_test_support::stdout(&out), stderr(&out))
    };
    let (text, warned) = generate("terraform");
    assert!(
        !text.contains("  oci_mirror {") && !text.contains("trust_all_hashes ="),
        "{text}"
    );
    assert!(!text.contains("oci_default_credentials {"), "{text}");
    for what in ["oci_mirror", "trust_all_hashes", "oci_default_credentials"] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with("# Left out: ") && l.contains(what)),
            "{what}:\n{text}"
        );
        assert!(warned.contains(what), "{what}: {warned}");
    }
    // The store's view, empty here (no store, no mount).
    fs_err::create_dir_all(env.mount.join("providers")).unwrap();
    let file = env.root.path().join("generated.tfrc");
    fs_err::write(&file, &text).unwrap();
    let dir = env.checkout("w", &[("main.tf", crate::common::NULL_CONFIG)]);
    for judge in [
        &tstore_test_support::peers().terraform,
        &tstore_test_support::peers().terraform_current,
    ] {
        let _ = fs_err::remove_dir_all(dir.join(".terraform"));
        let out = run_ok(&mut env.judge_init(judge, &dir, &file));
        let all = format!("{}{}", tstore_test_support::stdout(&out), stderr(&out));
        assert!(
            !all.contains("Unknown provider installation method"),
            "{all}"
        );
        assert!(
            !all.contains("problems with the CLI configuration"),
            "{all}"
        );
        assert!(all.contains("Installed hashicorp/null v2.1.2"), "{all}");
    }
    assert!(team_mirror.is_dir());

    let (text, warned) = generate("tofu");
    assert!(
        text.contains("  oci_mirror {") && text.contains("trust_all_hashes = true"),
        "{text}"
    );
    assert!(text.contains("oci_default_credentials {"), "{text}");
    assert!(
        !warned.contains("Left out") && !warned.contains("left out"),
        "{warned}"
    );
}
