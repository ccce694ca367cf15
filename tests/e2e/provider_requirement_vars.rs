//! terraform ≥ 1.17 evaluates a `required_providers` entry's `source` and `version` from
//! `const = true` variables and locals built from them, in the root and in called modules
//! (whose const variables the calling block sets); any other reference is refused in its
//! words, and earlier releases and OpenTofu take only literal strings there. Twin cases of
//! upstream: internal/command/init2_test.go (`TestInit2_dynamicProviderSourceSuccess`,
//! `TestInit2_dynamicProviderSourceErrors`) and
//! internal/terraform/node_resolve_provider_requirement.go of hashicorp/terraform#39153
//! (1.17.0); terraform 1.11.4 and 1.0.3 judge the refusal in the conformance cases
//! `provider-source-variable*` and `provider-version-*`.

use std::path::{Path, PathBuf};

use tstore_test_support::{mirror, stderr, TestEnv};

use crate::common::TstoreEnv as _;
use tstore_test_support::Tstore;

const TERRAFORM_1_17: &str = "terraform 1.17.2";

fn init(env: &TestEnv, cfg: &Path, tool: &str, dir: &Path, args: &[&str]) -> Tstore {
    env.tstore()
        .cli_config(cfg)
        .no_fuse()
        .env("TSTORE_FLAVOR", "terraform")
        .tool_version(tool)
        .current_dir(dir)
        .arg("init")
        .args(args)
}

/// A test environment whose CLI configuration installs from a filesystem mirror holding
/// the null provider.
fn with_null_mirror() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    (env, cfg)
}

fn lock(dir: &Path) -> String {
    fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap()
}

/// A success case: its name, its files, init's arguments and the constraints locked.
type Case<'a> = (
    &'a str,
    Vec<(&'a str, &'a str)>,
    Vec<&'a str>,
    Option<&'a str>,
);

const CONST_SRC: &str = "variable \"src\" {\n  type  = string\n  const = true\n}\n";
const CONST_VER: &str = "variable \"ver\" {\n  type  = string\n  const = true\n}\n";

fn requirement(source: &str, version: Option<&str>) -> String {
    let version = version
        .map(|v| format!("\n      version = {v}"))
        .unwrap_or_default();
    format!(
        "terraform {{\n  required_providers {{\n    null = {{\n      source = {source}{version}\n    }}\n  }}\n}}\n"
    )
}

#[test]
fn terraform_1_17_evaluates_const_variables_and_locals_in_provider_requirements() {
    let (env, cfg) = with_null_mirror();
    let with_local = format!(
        "{CONST_SRC}locals {{\n  source = var.src\n}}\n{}",
        requirement("local.source", None)
    );
    let with_default = format!(
        "variable \"src\" {{\n  type    = string\n  const   = true\n  default = \"hashicorp/null\"\n}}\n{}",
        requirement("var.src", None)
    );
    let interpolated = format!(
        "variable \"ns\" {{\n  type  = string\n  const = true\n}}\n{}",
        requirement("\"${var.ns}/${lower(\"NULL\")}\"", None)
    );
    let both = format!(
        "{CONST_SRC}{CONST_VER}{}",
        requirement("var.src", Some("var.ver"))
    );
    let via_var = format!("{CONST_SRC}{}", requirement("var.src", None));
    let json = r#"{
  "variable": {"ns": {"type": "string", "const": true}},
  "terraform": {"required_providers": {"null": {"source": "${var.ns}/null"}}}
}"#;
    let child_call =
        format!("{CONST_SRC}module \"child\" {{\n  source = \"./child\"\n  src    = var.src\n}}\n");
    let cases: Vec<Case> = vec![
        (
            "var",
            vec![("main.tf", &via_var)],
            vec!["-var", "src=hashicorp/null"],
            None,
        ),
        (
            "source-and-version",
            vec![("main.tf", &both)],
            vec!["-var", "src=hashicorp/null", "-var", "ver=2.1.2"],
            Some("2.1.2"),
        ),
        ("default", vec![("main.tf", &with_default)], vec![], None),
        (
            "interpolation",
            vec![("main.tf", &interpolated)],
            vec!["-var=ns=hashicorp"],
            None,
        ),
        (
            "local",
            vec![("main.tf", &with_local)],
            vec!["-var", "src=hashicorp/null"],
            None,
        ),
        (
            "var-file",
            vec![
                ("main.tf", &via_var),
                ("test.tfvars", "src = \"hashicorp/null\"\n"),
            ],
            vec!["-var-file", "test.tfvars"],
            None,
        ),
        (
            "json",
            vec![("main.tf.json", json)],
            vec!["-var", "ns=hashicorp"],
            None,
        ),
        (
            "child-module",
            vec![("main.tf", &child_call), ("child/main.tf", &via_var)],
            vec!["-var", "src=hashicorp/null"],
            None,
        ),
    ];
    for (name, files, args, constraints) in cases {
        let dir = env.checkout(name, &files);
        init(&env, &cfg, TERRAFORM_1_17, &dir, &args).ok();
        let lock = lock(&dir);
        assert!(
            lock.contains("provider \"registry.terraform.io/hashicorp/null\""),
            "{name}: {lock}"
        );
        let version = lock.lines().find(|l| l.trim_start().starts_with("version"));
        assert!(
            version.is_some_and(|l| l.ends_with("= \"2.1.2\"")),
            "{name}: {lock}"
        );
        match constraints {
            Some(c) => assert!(
                lock.contains(&format!("constraints = \"{c}\"")),
                "{name}: {lock}"
            ),
            None => assert!(!lock.contains("constraints"), "{name}: {lock}"),
        }
    }
}

#[test]
fn what_terraform_1_17_cannot_evaluate_is_refused_in_its_words_with_nothing_written() {
    let (env, cfg) = with_null_mirror();
    let non_const = format!(
        "variable \"src\" {{\n  default = \"hashicorp/null\"\n}}\n{}",
        requirement("var.src", None)
    );
    let non_const_version = format!(
        "variable \"ver\" {{\n  default = \"2.1.2\"\n}}\n{}",
        requirement("\"hashicorp/null\"", Some("var.ver"))
    );
    let non_const_local = format!(
        "variable \"ns\" {{\n  default = \"hashicorp\"\n}}\nlocals {{\n  s = \"${{var.ns}}/null\"\n}}\n{}",
        requirement("local.s", None)
    );
    let resource = format!(
        "resource \"null_resource\" \"x\" {{}}\n{}",
        requirement("\"hashicorp/${null_resource.x.id}\"", None)
    );
    // Unlike a module call's `source`, `path.*` is not one of the references allowed.
    let path = requirement("\"hashicorp/${basename(path.module)}\"", None);
    let unset = format!("{CONST_SRC}{}", requirement("var.src", None));
    let invalid = format!("{CONST_SRC}{}", requirement("var.src", None));
    let bad_version = format!(
        "{CONST_VER}{}",
        requirement("\"hashicorp/null\"", Some("var.ver"))
    );
    let list = format!(
        "locals {{\n  s = [\"hashicorp/null\"]\n}}\n{}",
        requirement("local.s", None)
    );
    let cases: &[(&str, &str, &[&str], &str)] = &[
        ("non-const", &non_const, &[], "Unknown provider source"),
        (
            "non-const-version",
            &non_const_version,
            &[],
            "Unknown provider version",
        ),
        (
            "non-const-local",
            &non_const_local,
            &[],
            "Only literal values and const variables can be evaluated during init.",
        ),
        ("resource", &resource, &[], "Unknown provider source"),
        ("path", &path, &[], "Unknown provider source"),
        ("unset", &unset, &[], "No value for required variable"),
        (
            "invalid",
            &invalid,
            &["-var", "src=!!!invalid"],
            "Invalid provider",
        ),
        (
            "bad-version",
            &bad_version,
            &["-var", "ver=~>> 2"],
            "Invalid version constraint",
        ),
        ("list", &list, &[], "Incorrect value type"),
    ];
    for (name, main, args, says) in cases {
        let dir = env.checkout(name, &[("main.tf", main)]);
        let err = stderr(&init(&env, &cfg, TERRAFORM_1_17, &dir, args).fails());
        assert!(err.contains(says), "{name}: {err}");
        assert!(!dir.join(".terraform").exists(), "{name}: nothing written");
        assert!(!dir.join(".terraform.lock.hcl").exists(), "{name}: no lock");
    }
}

#[test]
fn before_terraform_1_17_and_in_tofu_a_provider_requirement_is_a_literal_string() {
    let (env, cfg) = with_null_mirror();
    let main = format!(
        "variable \"src\" {{\n  default = \"hashicorp/null\"\n}}\nlocals {{\n  v = \"2.1.2\"\n}}\n{}",
        requirement("var.src", None)
    );
    let version = format!(
        "locals {{\n  v = \"2.1.2\"\n}}\n{}",
        requirement("\"hashicorp/null\"", Some("local.v"))
    );
    for (tool, flavor) in [
        ("terraform 1.16.1", "terraform"),
        ("terraform 1.11.4", "terraform"),
        ("tofu 1.11.0", "tofu"),
    ] {
        let dir = env.checkout(
            &format!("{flavor}-{}", tool.replace(' ', "-")),
            &[("main.tf", &main)],
        );
        let cmd = init(&env, &cfg, tool, &dir, &[]).env("TSTORE_FLAVOR", flavor);
        let err = stderr(&cmd.fails());
        assert!(
            err.contains("Invalid source") && err.contains("Source must be specified as a string."),
            "{tool}: {err}"
        );
        assert_eq!(
            err.contains("terraform ≥ 1.17 evaluates"),
            flavor == "terraform",
            "{tool}: the hint names the release that evaluates it: {err}"
        );
        assert!(!dir.join(".terraform").exists(), "{tool}: nothing written");

        let dir = env.checkout(
            &format!("v-{flavor}-{}", tool.replace(' ', "-")),
            &[("main.tf", &version)],
        );
        let cmd = init(&env, &cfg, tool, &dir, &[]).env("TSTORE_FLAVOR", flavor);
        let err = stderr(&cmd.fails());
        assert!(
            err.contains("Invalid version constraint")
                && err.contains("Version must be specified as a string."),
            "{tool}: {err}"
        );
    }
    // A const variable's default installs once the release evaluates it.
    let main = main.replace("default =", "const   = true\n  default =");
    let dir = env.checkout("new", &[("main.tf", &main)]);
    init(&env, &cfg, TERRAFORM_1_17, &dir, &[]).ok();
    assert!(lock(&dir).contains("registry.terraform.io/hashicorp/null"));
}

/// A variable that names another provider asks for a new lock entry: a read-only lock file
/// refuses it, and an error quotes only the address terraform quotes.
#[test]
fn a_provider_source_from_a_variable_cannot_pass_a_read_only_lock() {
    let (env, cfg) = with_null_mirror();
    let main = format!("{CONST_SRC}{}", requirement("var.src", None));
    // The mirror has the other provider too: only the lock stops it.
    mirror::write_unpacked(
        &env.root.path().join("mirror"),
        "registry.terraform.io/attacker/null",
        "2.1.2",
        "linux_amd64",
        &mirror::null_files(),
    );
    let dir = env.checkout("locked", &[("main.tf", &main)]);
    init(
        &env,
        &cfg,
        TERRAFORM_1_17,
        &dir,
        &["-var", "src=hashicorp/null"],
    )
    .ok();
    let before = lock(&dir);
    let out = init(
        &env,
        &cfg,
        TERRAFORM_1_17,
        &dir,
        &["-lockfile=readonly", "-var", "src=attacker/null"],
    )
    .fails();
    let err = stderr(&out);
    assert!(
        err.contains("attacker/null") && err.contains("-lockfile=readonly"),
        "{err}"
    );
    assert_eq!(lock(&dir), before, "the lock file is unchanged");
    assert!(!dir
        .join(".terraform/providers/registry.terraform.io/attacker")
        .exists());
}
