//! Providers that no `required_providers` entry and no resource names, but that the tool
//! installs all the same: the provider of a data source inside a `check` block, and of an
//! `import` block whose target the tool will generate (terraform from 1.5:
//! internal/configs/config.go `addProviderRequirements`@v1.11.4; OpenTofu's at v1.12.2
//! also counts an import into a child module).

use std::path::Path;

use tstore_test_support::{mirror, run_ok, TestEnv};

use crate::common::TstoreEnv as _;

/// A fake provider package for `hashicorp/TYPE` 1.0.0 in the unpacked mirror: installing
/// it runs nothing, and both tools hash the same files.
fn fake_provider(mirror_dir: &Path, host: &str, kind: &str) {
    let file = format!("terraform-provider-{kind}_v1.0.0");
    let body = format!("#!/bin/sh\necho {kind}\n");
    mirror::write_unpacked(
        mirror_dir,
        &format!("{host}/hashicorp/{kind}"),
        "1.0.0",
        mirror::PLATFORM,
        &[mirror::PkgFile {
            path: &file,
            contents: body.as_bytes(),
            executable: true,
        }],
    );
}

const CONFIG: &str = r#"resource "null_resource" "kept" {}

# Generated on import: its provider comes from this block alone.
import {
  to = generated_thing.new
  id = "abc"
}

# Declared: the provider comes from the resource (null), not from the block.
import {
  to = null_resource.kept
  id = "def"
}

# Into a child module: terraform takes the provider from the module, tofu adds it here too.
import {
  to = module.child.intomodule_thing.x
  id = "ghi"
}

module "child" {
  source = "./child"
}

check "health" {
  data "checked_status" "now" {}

  assert {
    condition     = data.checked_status.now.ok
    error_message = "unhealthy"
  }
}
"#;

fn providers_in_lock(dir: &Path) -> Vec<String> {
    let lock = fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap();
    lock.lines()
        .filter_map(|l| {
            l.strip_prefix("provider \"registry.terraform.io/")
                .or_else(|| l.strip_prefix("provider \"registry.opentofu.org/"))
        })
        .map(|l| l.trim_end_matches("\" {").to_owned())
        .collect()
}

#[test]
fn import_and_check_blocks_add_the_providers_each_tool_adds() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    for host in ["registry.terraform.io", "registry.opentofu.org"] {
        for kind in ["generated", "checked", "intomodule", "null"] {
            if (host, kind) != ("registry.terraform.io", "null") {
                fake_provider(&mirror_dir, host, kind);
            }
        }
    }
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let files = [("main.tf", CONFIG), ("child/main.tf", "")];
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    let judge = &tstore_test_support::peers().terraform_current;
    run_ok(&mut env.judge_init(judge, &theirs, &cfg));
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .env("TSTORE_TOOL_VERSION", "terraform 1.11.4")
        .arg("init")
        .arg(&ours)
        .ok();
    let want = fs_err::read_to_string(theirs.join(".terraform.lock.hcl")).unwrap();
    assert_eq!(
        providers_in_lock(&theirs),
        ["hashicorp/checked", "hashicorp/generated", "hashicorp/null"],
        "{want}"
    );
    assert_eq!(
        fs_err::read_to_string(ours.join(".terraform.lock.hcl")).unwrap(),
        want
    );
    for kind in ["checked", "generated"] {
        let link = format!(
            ".terraform/providers/registry.terraform.io/hashicorp/{kind}/1.0.0/linux_amd64"
        );
        assert!(ours.join(&link).exists(), "{link}");
    }

    // OpenTofu adds the provider of an import into a child module as well.
    let tofu = env.checkout("tofu", &files);
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .env("TSTORE_FLAVOR", "tofu")
        .arg("init")
        .arg(&tofu)
        .ok();
    assert_eq!(
        providers_in_lock(&tofu),
        [
            "hashicorp/checked",
            "hashicorp/generated",
            "hashicorp/intomodule",
            "hashicorp/null"
        ]
    );
}

/// A `provider` argument on an import block whose target is declared without one is refused
/// by terraform 1.11.4 at init, in its words; tstore refuses it too and writes nothing.
#[test]
fn an_import_provider_the_declared_target_does_not_use_is_refused_at_init() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let config = "resource \"null_resource\" \"x\" {}\n\nimport {\n  to       = null_resource.x\n  id       = \"a\"\n  provider = null.other\n}\n\nprovider \"null\" {\n  alias = \"other\"\n}\n";
    let files = [("main.tf", config)];
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    let judge = &tstore_test_support::peers().terraform_current;
    let mut cmd = env.judge_init(judge, &theirs, &cfg);
    let words_of = |out: &std::process::Output| {
        let err = tstore_test_support::stderr(out);
        err.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let their_err = words_of(&tstore_test_support::run_fail(&mut cmd));
    let ours_out = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .env("TSTORE_TOOL_VERSION", "terraform 1.11.4")
        .arg("init")
        .arg(&ours)
        .fails();
    let our_err = words_of(&ours_out);
    for words in [
        "Invalid import provider argument",
        "The provider argument can only be specified in import blocks that will generate configuration.",
    ] {
        assert!(their_err.contains(words), "terraform: {words}\n{their_err}");
        assert!(our_err.contains(words), "tstore: {words}\n{our_err}");
    }
    assert!(their_err.contains("on main.tf line 6"), "{their_err}");
    assert!(our_err.contains("main.tf:6: "), "{our_err}");
    assert!(!ours.join(".terraform.lock.hcl").exists());
}

/// A resource deleted from the configuration while still in the local state keeps its
/// provider locked and linked, as `terraform init` keeps it (init.go `getProviders` merges
/// the state's providers): the plan that destroys the resource then runs. Judged by
/// terraform 1.0.3 and 1.11.4 on twin checkouts, which must end with the same lock file.
#[test]
fn a_provider_only_the_state_needs_stays_locked_and_linked() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let peers = tstore_test_support::peers();
    let before = "resource \"null_resource\" \"gone\" {}\n";
    let after = "output \"kept\" {\n  value = 1\n}\n";
    for (judge, tool) in peers.judges() {
        let name = tool.replace(' ', "-");
        let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", before)]);
        let ours = env.checkout(&format!("ours-{name}"), &[("main.tf", before)]);
        let judge_run = |dir: &Path, args: &[&str]| {
            let mut cmd = env.command(judge);
            cmd.current_dir(dir)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .args(args)
                .args(["-input=false", "-no-color"]);
            cmd
        };
        let our_init = |dir: &Path| {
            env.tstore()
                .cli_config(&cfg)
                .no_fuse()
                .tool_version(tool)
                .args(["init", "--explain"])
                .arg(dir)
                .ok()
        };
        run_ok(&mut env.judge_init(judge, &theirs, &cfg));
        our_init(&ours);
        for dir in [&theirs, &ours] {
            run_ok(&mut judge_run(dir, &["apply", "-auto-approve"]));
            fs_err::write(dir.join("main.tf"), after).unwrap();
        }
        run_ok(&mut env.judge_init(judge, &theirs, &cfg));
        let said = tstore_test_support::stdout(&our_init(&ours));
        assert!(
            said.contains("State: read terraform.tfstate (workspace default)")
                && said.contains("registry.terraform.io/hashicorp/null: needed by the state only"),
            "{tool}: {said}"
        );
        let lock_of = |dir: &Path| fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap();
        assert!(lock_of(&theirs).contains("hashicorp/null"), "{tool}");
        assert_eq!(lock_of(&ours), lock_of(&theirs), "{tool}");
        let plan = run_ok(&mut judge_run(&ours, &["plan"]));
        let plan = tstore_test_support::stdout(&plan);
        assert!(
            plan.contains("0 to add, 0 to change, 1 to destroy"),
            "{tool}: {plan}"
        );
    }
}

/// The state of the selected workspace is read: `TF_WORKSPACE`, else the data directory's
/// `environment` file; a state that is not a regular file is not read (and init does not
/// wait on it); a remote backend's state is not seen, and when the lock loses a provider
/// tstore says it could not check the state.
#[test]
fn the_selected_workspace_state_is_read_and_an_unseen_one_is_said() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let state = r#"{"version": 4, "serial": 1, "lineage": "x", "outputs": {"pw": {"value": "s3cr3t", "type": "string"}}, "resources": [{"mode": "managed", "type": "null_resource", "name": "a", "provider": "provider[\"registry.terraform.io/hashicorp/null\"]", "instances": []}]}"#;
    let init = |dir: &Path, workspace: Option<&str>| {
        let mut tstore = env.tstore().cli_config(&cfg).no_fuse();
        if let Some(w) = workspace {
            tstore = tstore.env("TF_WORKSPACE", w);
        }
        crate::common::json(&tstore.args(["init", "--json"]).arg(dir).ok())
    };
    let main = ("main.tf", "output \"o\" {\n  value = 1\n}\n");
    let staged = ("terraform.tfstate.d/staging/terraform.tfstate", state);

    let by_env = env.checkout("by-env", &[main, staged]);
    let report = init(&by_env, Some("staging"));
    assert_eq!(report["state"]["workspace"], "staging", "{report}");
    assert_eq!(
        report["state"]["only_in_state"][0], "registry.terraform.io/hashicorp/null",
        "{report}"
    );
    // The default workspace has no state: nothing needed.
    let report = init(&by_env, None);
    assert_eq!(report["state"]["seen"]["kind"], "absent", "{report}");
    assert!(
        report["providers"].as_array().unwrap().is_empty(),
        "{report}"
    );

    let by_file = env.checkout(
        "by-file",
        &[main, staged, (".terraform/environment", "staging\n")],
    );
    let report = init(&by_file, None);
    assert_eq!(
        report["providers"][0]["provider"],
        "registry.terraform.io/hashicorp/null"
    );
    assert!(!report.to_string().contains("s3cr3t"));

    // OpenTofu from 1.13 reads no state under -backend=false (#4077); 1.12 and terraform do.
    let tofu_state = env.checkout(
        "tofu-backend-off",
        &[
            main,
            (
                "terraform.tfstate",
                &state.replace("registry.terraform.io", "registry.opentofu.org"),
            ),
        ],
    );
    let tofu_mirror = env.root.path().join("tofu-mirror");
    mirror::write_unpacked(
        &tofu_mirror,
        "registry.opentofu.org/hashicorp/null",
        mirror::NULL_VERSION,
        mirror::PLATFORM,
        &mirror::null_files(),
    );
    let tofu_cfg = env.cli_config_fs_mirror(&tofu_mirror);
    for (tool, reads) in [("tofu 1.13.0", false), ("tofu 1.12.2", true)] {
        let out = env
            .tstore()
            .cli_config(&tofu_cfg)
            .no_fuse()
            .env("TSTORE_FLAVOR", "tofu")
            .tool_version(tool)
            .args(["init", "-backend=false", "--json"])
            .arg(&tofu_state)
            .ok();
        let report = crate::common::json(&out);
        let kind = &report["state"]["seen"]["kind"];
        assert_eq!(kind == "read", reads, "{tool}: {report}");
        assert_eq!(
            report["providers"].as_array().unwrap().len(),
            usize::from(reads),
            "{tool}"
        );
    }

    // A FIFO where the state would be: refused, not waited on.
    let fifo = env.checkout("fifo", &[main]);
    let path = fifo.join("terraform.tfstate");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let report = init(&fifo, None);
    assert_eq!(report["state"]["seen"]["kind"], "unread", "{report}");
    assert_eq!(
        report["state"]["seen"]["reason"], "it is not a regular file",
        "{report}"
    );

    // A remote backend: the state is not seen; the dropped entry is said once.
    let remote = env.checkout(
        "remote",
        &[(
            "main.tf",
            "terraform {\n  backend \"s3\" {}\n}\nresource \"null_resource\" \"a\" {}\n",
        )],
    );
    init(&remote, None);
    fs_err::write(
        remote.join("main.tf"),
        "terraform {\n  backend \"s3\" {}\n}\n",
    )
    .unwrap();
    // terraform before 1.1.2 keeps unused entries; a release that drops them is told.
    let out = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .env("TSTORE_TOOL_VERSION", "terraform 1.11.4")
        .args(["init", "--explain"])
        .arg(&remote)
        .ok();
    let err = tstore_test_support::stderr(&out);
    assert_eq!(
        err.matches("Providers of the state not checked").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("no longer records registry.terraform.io/hashicorp/null")
            && err.contains("the state of the \"s3\" backend")
            && err.contains("run \"terraform init\""),
        "{err}"
    );
    assert!(
        tstore_test_support::stdout(&out).contains("State: kept by the \"s3\" backend"),
        "{}",
        tstore_test_support::stdout(&out)
    );
}

/// A `terraform.tfstate` that is a symbolic link to a state outside the checkout (or a
/// link at `terraform.tfstate.d`, or at `.terraform/environment`) is not followed, where
/// terraform follows it: init succeeds, installs and locks none of that state's providers,
/// reports the state unread as a link and warns, naming the file. The same state as a
/// regular file is read.
#[test]
fn a_symlinked_state_outside_the_checkout_is_not_followed() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let state = r#"{"version": 4, "serial": 1, "lineage": "x", "outputs": {}, "resources": [{"mode": "managed", "type": "null_resource", "name": "a", "provider": "provider[\"registry.terraform.io/hashicorp/null\"]", "instances": []}]}"#;
    let outside = env.root.path().join("outside");
    fs_err::create_dir_all(outside.join("staging")).unwrap();
    fs_err::write(outside.join("terraform.tfstate"), state).unwrap();
    fs_err::write(outside.join("staging/terraform.tfstate"), state).unwrap();
    fs_err::write(outside.join("secret"), "s3cr3t-token\n").unwrap();
    let main = ("main.tf", "output \"o\" {\n  value = 1\n}\n");
    let init = |dir: &Path, workspace: Option<&str>| {
        let mut tstore = env.tstore().cli_config(&cfg).no_fuse();
        if let Some(w) = workspace {
            tstore = tstore.env("TF_WORKSPACE", w);
        }
        tstore.args(["init", "--json"]).arg(dir).ok()
    };
    let null_installed = |dir: &Path| {
        let lock = dir.join(".terraform.lock.hcl");
        dir.join(".terraform/providers/registry.terraform.io/hashicorp/null")
            .symlink_metadata()
            .is_ok()
            || fs_err::read_to_string(&lock).is_ok_and(|l| l.contains("hashicorp/null"))
    };

    // The state file itself a link.
    let linked = env.checkout("linked", &[main]);
    std::os::unix::fs::symlink(
        outside.join("terraform.tfstate"),
        linked.join("terraform.tfstate"),
    )
    .unwrap();
    let out = init(&linked, None);
    let report = crate::common::json(&out);
    assert_eq!(report["state"]["seen"]["kind"], "unread", "{report}");
    assert_eq!(
        report["state"]["seen"]["file"], "terraform.tfstate",
        "{report}"
    );
    let reason = report["state"]["seen"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("it is a symbolic link, which tstore does not follow"),
        "{reason}"
    );
    assert!(
        report["providers"].as_array().unwrap().is_empty(),
        "{report}"
    );
    assert!(!null_installed(&linked));
    let err = tstore_test_support::stderr(&out);
    let named = format!(
        "{}: not read: it is a symbolic link",
        linked.join("terraform.tfstate").display()
    );
    assert_eq!(err.matches(&named).count(), 1, "{err}");

    // A workspace's state below a linked `terraform.tfstate.d`.
    let linked_dir = env.checkout("linked-dir", &[main]);
    std::os::unix::fs::symlink(&outside, linked_dir.join("terraform.tfstate.d")).unwrap();
    let report = crate::common::json(&init(&linked_dir, Some("staging")));
    assert_eq!(
        report["state"]["seen"]["reason"].as_str().unwrap(),
        "terraform.tfstate.d is a symbolic link, which tstore does not follow (only files \
         inside the working directory are read)",
        "{report}"
    );
    assert!(!null_installed(&linked_dir));

    // The workspace's name from a linked `.terraform/environment`: neither read nor shown.
    let linked_env = env.checkout("linked-env", &[main, ("terraform.tfstate", state)]);
    fs_err::create_dir_all(linked_env.join(".terraform")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("secret"),
        linked_env.join(".terraform/environment"),
    )
    .unwrap();
    let out = init(&linked_env, None);
    let report = crate::common::json(&out);
    assert_eq!(
        report["state"]["seen"]["file"], ".terraform/environment",
        "{report}"
    );
    assert_eq!(report["state"]["seen"]["kind"], "unread", "{report}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("s3cr3t"));
    assert!(!tstore_test_support::stderr(&out).contains("s3cr3t"));

    // The same state as a regular file in the checkout: read, its provider installed.
    let copied = env.checkout("copied", &[main, ("terraform.tfstate", state)]);
    let report = crate::common::json(&init(&copied, None));
    assert_eq!(report["state"]["seen"]["kind"], "read", "{report}");
    assert!(null_installed(&copied));
}
