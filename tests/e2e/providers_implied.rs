//! Providers that no `required_providers` entry and no resource names, but that the tool
//! installs all the same: the provider of a data source inside a `check` block, and of an
//! `import` block whose target the tool will generate (terraform from 1.5:
//! internal/configs/config.go `addProviderRequirements`@v1.11.4; OpenTofu's at v1.12.2
//! also counts an import into a child module).

use std::path::Path;

use tstore_test_support::{mirror, run_ok, TestEnv};

use crate::common::tstore;

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
    run_ok(
        tstore(&env, Some(&cfg))
            .env("TSTORE_NO_FUSE", "1")
            .env("TSTORE_TOOL_VERSION", "terraform 1.11.4")
            .arg("init")
            .arg(&ours),
    );
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
    run_ok(
        tstore(&env, Some(&cfg))
            .env("TSTORE_NO_FUSE", "1")
            .env("TSTORE_FLAVOR", "tofu")
            .arg("init")
            .arg(&tofu),
    );
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
    let ours_out = tstore_test_support::run_fail(
        tstore(&env, Some(&cfg))
            .env("TSTORE_NO_FUSE", "1")
            .env("TSTORE_TOOL_VERSION", "terraform 1.11.4")
            .arg("init")
            .arg(&ours),
    );
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
