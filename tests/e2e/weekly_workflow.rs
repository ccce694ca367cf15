//! A team's week, side by side with each real terraform: apply, delete a resource, loosen
//! a constraint, add a test file, add a platform with `providers lock`, init again. After
//! every step the judge plans in tstore's checkout, and the lock file and `modules.json`
//! are byte for byte what the judge wrote in its twin checkout (providers from a signed
//! registry on loopback, standing in for the default host).

use std::path::Path;

use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{module_records, run_ok, stdout, TestEnv};

use crate::common::TstoreEnv as _;

const MAIN: &str = r#"terraform {
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = ">= 2.0.0, ~> 2.1"
    }
  }
}

resource "null_resource" "kept" {}

resource "null_resource" "deleted" {}

module "m" {
  source = "./m"
}
"#;

const TEST_FILE: &str = "run \"setup\" {\n  module {\n    source = \"./fixtures\"\n  }\n}\n";

#[test]
fn a_week_of_changes_writes_what_each_terraform_writes() {
    let env = TestEnv::new();
    // The registry, on loopback, standing in for the default host: the real null provider
    // for linux_amd64 and a teammate's darwin_amd64 package, SHA256SUMS signed.
    let reg = TestRegistry::start();
    reg.publish_null();
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["registry.terraform.io"],
        "  direct {}",
    );
    let peers = tstore_test_support::peers();
    let files = [
        ("main.tf", MAIN),
        ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ("fixtures/main.tf", "output \"y\" {\n  value = 2\n}\n"),
    ];
    for (judge, tool) in peers.judges() {
        let name = tool.replace(' ', "-");
        let theirs = env.checkout(&format!("theirs-{name}"), &files);
        let ours = env.checkout(&format!("ours-{name}"), &files);
        let judge_cmd = |dir: &Path, args: &[&str]| {
            let mut cmd = env.command(judge);
            cmd.current_dir(dir)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .args(args)
                .arg("-no-color");
            run_ok(&mut cmd)
        };
        let ours_cmd = |args: &[&str]| {
            env.tstore()
                .cli_config(&cfg)
                .current_dir(&ours)
                .no_fuse()
                .tool_version(tool)
                .args(args)
                .ok()
        };
        let init_both = || {
            run_ok(&mut env.judge_init(judge, &theirs, &cfg));
            ours_cmd(&["init"]);
        };
        let same_files = |step: &str| {
            let read = |dir: &Path, file| std::fs::read_to_string(dir.join(file)).ok();
            let lock = ".terraform.lock.hcl";
            assert_eq!(read(&ours, lock), read(&theirs, lock), "{tool}, {step}");
            // Before 1.4, terraform writes modules.json's records in Go's map order, which
            // differs run to run (modsdir.Manifest.WriteSnapshot@v1.0.3): the records are
            // compared; from 1.4 they are sorted by key, and the bytes are compared.
            if tool == "terraform 1.0.3" {
                assert_eq!(
                    module_records(&ours),
                    module_records(&theirs),
                    "{tool}, {step}"
                );
            } else {
                let manifest = ".terraform/modules/modules.json";
                assert_eq!(
                    read(&ours, manifest),
                    read(&theirs, manifest),
                    "{tool}, {step}"
                );
            }
        };
        let plan_says = |step: &str, want: &str| {
            let plan = stdout(&judge_cmd(&ours, &["plan", "-input=false"]));
            assert!(
                plan.contains(want),
                "{tool}, {step}: {want:?} missing from\n{plan}"
            );
        };

        // Monday: the first init and apply.
        init_both();
        same_files("first init");
        for dir in [&theirs, &ours] {
            judge_cmd(dir, &["apply", "-auto-approve", "-input=false"]);
        }
        plan_says("applied", "No changes.");

        // Tuesday: a resource is deleted; its provider is still needed to destroy it.
        let edit = |from: &str, to: &str| {
            for dir in [&theirs, &ours] {
                let text = fs_err::read_to_string(dir.join("main.tf")).unwrap();
                assert!(text.contains(from), "{from}");
                fs_err::write(dir.join("main.tf"), text.replace(from, to)).unwrap();
            }
        };
        edit("resource \"null_resource\" \"deleted\" {}\n", "");
        init_both();
        same_files("resource deleted");
        plan_says("resource deleted", "1 to destroy");

        // Wednesday: the constraint is loosened; the locked version still meets it.
        edit(">= 2.0.0, ~> 2.1", ">= 2.0.0, < 3.0.0");
        init_both();
        same_files("constraint loosened");
        plan_says("constraint loosened", "1 to destroy");

        // Thursday: a test file calls a fixture module.
        for dir in [&theirs, &ours] {
            fs_err::create_dir_all(dir.join("tests")).unwrap();
            fs_err::write(dir.join("tests/setup.tftest.hcl"), TEST_FILE).unwrap();
        }
        init_both();
        same_files("test file added");
        plan_says("test file added", "1 to destroy");

        // Friday: a teammate's platform is added to the lock, then everyone inits again.
        let platforms = ["-platform=linux_amd64", "-platform=darwin_amd64"];
        judge_cmd(
            &theirs,
            &[&["providers", "lock"][..], &platforms[..]].concat(),
        );
        ours_cmd(&[&["providers", "lock"][..], &platforms[..]].concat());
        same_files("platform added");
        let lock = fs_err::read_to_string(ours.join(".terraform.lock.hcl")).unwrap();
        assert_eq!(
            lock.matches("\"h1:").count(),
            2,
            "{tool}: one h1: per platform\n{lock}"
        );
        init_both();
        same_files("init after providers lock");
        plan_says("init after providers lock", "1 to destroy");
    }
}
