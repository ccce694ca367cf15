//! `tstore init` as a drop-in for `tofu init` in CI scripts: tofu's global `-chdir` and
//! its harmless init flags are accepted (boolean ones with `=true`/`=false`), a flag it does
//! not take is answered in tofu's words, `-json` errors are tofu's JSON diagnostics, and
//! `tstore version` answers as `tofu version`.

use tstore_test_support::{mirror, run_ok, stderr, stdout, Layout, NullMirror, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

#[test]
fn tofu_init_flags_and_chdir_work_as_in_ci_scripts() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    env.tstore()
        .cli_config(&cfg)
        .current_dir(&env.work)
        .arg("-chdir=stack")
        .args([
            "init",
            "-input=false",
            "-no-color",
            "-backend=false",
            "-backend-config=bucket=x",
            "-reconfigure",
            "-get=true",
            "-lock=false",
        ])
        .ok();
    assert!(dir.join(".terraform.lock.hcl").is_file());
    assert!(dir
        .join(".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
        .is_symlink());
    // terraform accepts what was installed.
    run_ok(env.terraform(&dir).args(["validate", "-no-color"]));

    let out = env
        .tstore()
        .cli_config(&cfg)
        .current_dir(&env.work)
        .args(["-chdir=nowhere", "init"])
        .fails();
    let err = stderr(&out);
    assert!(err.contains("-chdir") && err.contains("nowhere"), "{err}");
}

/// An init that finds the store locked by gc says so once on stderr, waits, and succeeds
/// when the lock is released.
#[test]
fn an_init_blocked_by_gc_says_it_is_waiting() {
    use std::io::Read;

    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    // A first init creates the store (and its lock file).
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();

    // Hold the store lock exclusively, as gc does while it sweeps.
    let lock = fs_err::File::open(env.store.join(".lock")).unwrap();
    lock.file().lock().unwrap();
    let mut child = env
        .tstore()
        .cli_config(&cfg)
        .arg("init")
        .arg(&dir)
        .command()
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("waiting for the store lock") {
        let n = stderr.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "init ended without saying it waits: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "init did not wait for the lock"
    );
    lock.file().unlock().unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{}{rest}", String::from_utf8_lossy(&seen));
    let all = format!("{}{rest}", String::from_utf8_lossy(&seen));
    assert_eq!(
        all.matches("waiting for the store lock").count(),
        1,
        "{all}"
    );
}

/// A mirror laid out for terraform's registry host, used with the default tofu flavor: the
/// error says where the provider is and which flavor finds it, and nothing is written.
#[test]
fn a_provider_under_the_other_flavors_host_gets_a_hint() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let main = "terraform {\n  required_providers {\n    null = {\n      source = \"hashicorp/null\"\n    }\n  }\n}\n";
    let dir = env.checkout("stack", &[("main.tf", main)]);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .env("TSTORE_FLAVOR", "tofu")
        .arg("init")
        .arg(&dir)
        .fails();
    let err = stderr(&out);
    assert!(
        err.contains("registry.terraform.io/hashicorp/null") && err.contains("--flavor terraform"),
        "{err}"
    );
    assert!(!dir.join(".terraform.lock.hcl").exists());
    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
}

/// A directory without configuration: terraform's message, exit 0, nothing written.
#[test]
fn an_empty_directory_is_initialized_with_nothing_to_install() {
    let env = TestEnv::new();
    let theirs = env.checkout("theirs", &[("README.md", "no configuration\n")]);
    let ours = env.checkout("ours", &[("README.md", "no configuration\n")]);
    let want =
        String::from_utf8_lossy(&run_ok(env.terraform(&theirs).args(["init", "-no-color"])).stdout)
            .into_owned();
    let got =
        String::from_utf8_lossy(&env.tstore().arg("init").arg(&ours).ok().stdout).into_owned();
    assert!(
        want.contains("Terraform initialized in an empty directory!"),
        "{want}"
    );
    assert_eq!(
        got.split_whitespace().collect::<Vec<_>>(),
        want.split_whitespace().collect::<Vec<_>>()
    );
    let entries: Vec<_> = fs_err::read_dir(&ours).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1, "only README.md: {entries:?}");
    let out = env
        .tstore()
        .env("TSTORE_FLAVOR", "tofu")
        .args(["init", "--json"])
        .arg(&ours)
        .ok();
    let report = crate::common::json(&out);
    assert_eq!(report["empty_directory"], true, "{report}");
}

/// Commands that only read the store refuse a store that does not exist (a mistyped
/// `TSTORE_HOME`) instead of creating an empty one.
#[test]
fn read_only_commands_name_a_missing_store_and_create_nothing() {
    let env = TestEnv::new();
    let typo = env.root.path().join("no-such-store");
    for args in [
        &["store", "ls"][..],
        &["store", "du", "--json"],
        &["store", "verify"],
        &["roots", "ls"],
    ] {
        let out = env.tstore().env("TSTORE_HOME", &typo).args(args).fails();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("there is no store at") && err.contains("no-such-store"),
            "{args:?}: {err}"
        );
        assert!(!typo.exists(), "{args:?} created the store");
    }
    // `cli-config` prints a configuration for an empty store (the view lists nothing yet)
    // and creates nothing either.
    let out = env
        .tstore()
        .env("TSTORE_HOME", &typo)
        .arg("cli-config")
        .ok();
    assert!(
        stdout(&out).contains("filesystem_mirror"),
        "{}",
        stdout(&out)
    );
    assert!(!typo.exists(), "cli-config created the store");
}

/// Every `--json` document starts with `"format_version": 1`, so scripts can check what
/// they read.
#[test]
fn every_json_document_carries_its_format_version() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let dir = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let init = env
        .tstore()
        .cli_config(&cfg)
        .args(["init", "--json"])
        .arg(&dir)
        .ok();
    let mut documents = vec![("init", init)];
    for args in [
        &["store", "ls", "--json"][..],
        &["store", "du", "--json"],
        &["store", "verify", "--json"],
        &["roots", "ls", "--json"],
        &["gc", "--dry-run", "--json"],
        &["mount", "--status", "--json"],
    ] {
        let out = env.tstore().cli_config(&cfg).args(args).output();
        documents.push((args[0], out));
    }
    for (what, out) in documents {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.trim_start().starts_with("{\n  \"format_version\": 1,"),
            "{what}: {text}"
        );
    }
}

/// tofu's boolean init flags take a value as tofu reads it (`-upgrade=true`,
/// `--get=false`, `-json=1`), with one dash or two.
#[test]
fn boolean_init_flags_take_true_or_false() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .arg("init")
        .args([
            "-upgrade=false",
            "--get=true",
            "-input=false",
            "-backend=false",
            "-cloud=false",
            "-reconfigure=true",
            "--migrate-state=false",
            "-force-copy=false",
            "-lock=false",
            "-ignore-remote-version=true",
            "-json=1",
        ])
        .arg(&dir)
        .ok();
    assert_eq!(crate::common::json(&out)["lock_file"], "created");
    // `-upgrade=true` is `-upgrade`: refused beside a read-only lock file, as tofu refuses
    // it; `=false` is no upgrade at all.
    let out = env
        .tstore()
        .cli_config(&cfg)
        .args(["init", "-lockfile=readonly", "-upgrade=true"])
        .arg(&dir)
        .fails();
    assert!(stderr(&out).contains("Invalid flags"), "{}", stderr(&out));
    env.tstore()
        .cli_config(&cfg)
        .args([
            "init",
            "-lockfile=readonly",
            "--upgrade=false",
            "-json=false",
        ])
        .arg(&dir)
        .ok();
    let out = env
        .tstore()
        .cli_config(&cfg)
        .args(["init", "-upgrade=maybe"])
        .arg(&dir)
        .fails();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"maybe\" is not a boolean"),
        "{}",
        stderr(&out)
    );
}

/// A flag a command does not take is named as tofu names it, with where the flags are
/// listed, and exits 1 as tofu does; clap's advice about `--` is not given.
#[test]
fn an_unknown_flag_is_named_with_the_commands_help() {
    let env = TestEnv::new();
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    for (args, flag, help) in [
        (&["init", "-foo"][..], "-foo", "tstore init --help"),
        (
            &["init", "-from-module=x"],
            "-from-module",
            "tstore init --help",
        ),
        (&["init", "--bogus"], "--bogus", "tstore init --help"),
        (
            &["store", "verify", "-fix"],
            "-fix",
            "tstore store verify --help",
        ),
        (&["gc", "--now"], "--now", "tstore gc --help"),
    ] {
        let out = env.tstore().current_dir(&dir).args(args).fails();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("Error: Failed to parse command-line flags")
                && err.contains(&format!("flag provided but not defined: {flag}\n"))
                && err.contains(help),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("tip:") && !err.contains("Usage:"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!dir.join(".terraform").exists());
}

/// With `-json`, an error of init is printed on stdout as `tofu init -json` prints its
/// diagnostics: one JSON object per line; stderr says nothing of it; the exit status is 1.
#[test]
fn init_json_errors_are_json_diagnostics_on_stdout() {
    let env = TestEnv::new();
    let empty = env.root.path().join("empty-mirror");
    fs_err::create_dir_all(&empty).unwrap();
    let cfg = env.cli_config_fs_mirror(&empty);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["init", "-json"],
            "Failed to query available provider packages",
            "registry.terraform.io/hashicorp/null",
        ),
        (
            &["init", "--json", "-foo"],
            "Failed to parse command-line flags",
            "flag provided but not defined: -foo",
        ),
        (
            &["-chdir=nowhere", "init", "-json"],
            "cannot switch to the directory nowhere given by -chdir",
            "caused by:",
        ),
    ];
    for (args, summary, detail) in cases {
        let out = env
            .tstore()
            .cli_config(&cfg)
            .current_dir(&dir)
            .args(args)
            .fails();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(!err.contains("Error"), "{args:?}: stderr: {err}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), 1, "{args:?}: {text}");
        let line = &lines[0];
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "@level",
                "@message",
                "@module",
                "@timestamp",
                "diagnostic",
                "type"
            ],
            "{line}"
        );
        assert_eq!(line["@level"], "error", "{line}");
        assert_eq!(line["@message"], format!("Error: {summary}"), "{line}");
        assert_eq!(line["type"], "diagnostic", "{line}");
        let stamp = line["@timestamp"].as_str().unwrap();
        assert!(
            stamp.len() == 27 && stamp.ends_with('Z') && stamp.contains('T'),
            "{stamp}"
        );
        let diagnostic = &line["diagnostic"];
        assert_eq!(diagnostic["severity"], "error", "{line}");
        assert_eq!(diagnostic["summary"], summary, "{line}");
        assert!(
            diagnostic["detail"].as_str().unwrap().contains(detail),
            "{args:?}: {line}"
        );
    }
    assert!(!dir.join(".terraform.lock.hcl").exists());
}

/// `tstore version` as `tofu version`: the version with its commit (as `--version`), the
/// platform, and the providers the lock file here selects; `-json` as one document.
#[test]
fn version_names_the_build_the_platform_and_the_locked_providers() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Unpacked);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let long = crate::common::stdout_of(env.tstore().arg("--version"));
    let long = long.trim().strip_prefix("tstore ").unwrap().to_owned();

    let out = crate::common::stdout_of(env.tstore().arg("version"));
    assert_eq!(out, format!("tstore v{long}\non linux_amd64\n"));

    env.tstore().cli_config(&cfg).arg("init").arg(&dir).ok();
    let out = crate::common::stdout_of(env.tstore().args(["-chdir=work/stack", "version"]));
    assert_eq!(
        out,
        format!(
            "tstore v{long}\non linux_amd64\n+ provider registry.terraform.io/hashicorp/null v2.1.2\n"
        )
    );

    let report = crate::common::json(
        &env.tstore()
            .current_dir(&dir)
            .args(["version", "-json"])
            .ok(),
    );
    assert_eq!(report["format_version"], 1, "{report}");
    assert_eq!(report["platform"], "linux_amd64", "{report}");
    let version = report["tstore_version"].as_str().unwrap();
    assert!(long.starts_with(version), "{long} / {report}");
    if let Some(commit) = report["commit"].as_str() {
        assert!(long.contains(commit), "{long} / {report}");
    }
    assert_eq!(
        report["provider_selections"],
        serde_json::json!({ "registry.terraform.io/hashicorp/null": "2.1.2" })
    );
}
