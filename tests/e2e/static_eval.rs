//! OpenTofu's early evaluation of module sources and versions (tofu flavor): variables from
//! `-var`, `-var-file`, `TF_VAR_*` and tfvars files, locals, functions, and a child
//! module's variables set by its `module` block. Expected results follow OpenTofu's init
//! tests (`TestInit_moduleSource`) and its static evaluator tests; terraform 1.0.3 judges
//! the terraform flavor, which refuses the same configuration.

use std::path::Path;

use tstore_test_support::{module_records, run_fail, stderr, TestEnv};

use crate::common::TstoreEnv as _;
use crate::config_loader::module_repo;
use tstore_test_support::Tstore;

/// `(Key, Source, Dir)` of each `modules.json` record, sorted.
fn records(dir: &Path) -> Vec<(String, String, String)> {
    module_records(dir)
        .into_iter()
        .map(|r| (r.key, r.source, r.dir))
        .collect()
}

/// A root whose sources come from a variable without a default (`src`), a variable
/// with a default overridden by `terraform.tfvars` (`ref`), a local and a function; and a
/// child module whose source is its own variable, set by the calling block.
fn checkout(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let base = env.root.path().join(format!("git-{name}"));
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let git_base = git
        .strip_suffix("/mod.git?ref=v1")
        .unwrap()
        .strip_prefix("git::file://")
        .unwrap()
        .to_owned();
    let main = format!(
        r#"variable "src" {{
  type = string
}}
variable "ref" {{
  default = "v0"
}}
locals {{
  repo = "{git_base}"
}}
module "a" {{
  source    = var.src
  child_src = "./${{lower("INNER")}}"
}}
module "g" {{
  source = "git::file://${{local.repo}}/mod.git?ref=${{var.ref}}"
}}
"#
    );
    env.checkout(
        name,
        &[
            ("main.tf", main.as_str()),
            ("terraform.tfvars", "ref = \"v1\"\n"),
            (
                "a/main.tf",
                "variable \"child_src\" {}\nmodule \"inner\" {\n  source = var.child_src\n}\n",
            ),
            ("a/inner/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            ("elsewhere.tfvars", "src = \"./missing\"\n"),
        ],
    )
}

fn tofu(env: &TestEnv) -> Tstore {
    env.tstore().env("TSTORE_FLAVOR", "tofu").no_fuse()
}

#[test]
fn module_sources_are_evaluated_from_variables_locals_and_calling_blocks() {
    let env = TestEnv::new();
    let dir = checkout(&env, "ours");
    tofu(&env)
        .arg("init")
        .arg("-var")
        .arg("src=./a")
        .arg(&dir)
        .ok();
    let git_source =
        |r: &[(String, String, String)]| r.iter().find(|m| m.0 == "g").unwrap().1.clone();
    let got = records(&dir);
    assert_eq!(
        got.iter()
            .map(|(k, _, d)| (k.as_str(), d.as_str()))
            .collect::<Vec<_>>(),
        [
            ("", "."),
            ("a", "a"),
            ("a.inner", "a/inner"),
            ("g", ".terraform/modules/g")
        ],
        "{got:?}"
    );
    assert!(git_source(&got).ends_with("/mod.git?ref=v1"), "{got:?}");
    assert!(dir.join(".terraform/modules/g/main.tf").is_file());

    // TF_VAR_ is read too, and a later -var-file wins over an earlier -var.
    let dir = checkout(&env, "env");
    tofu(&env)
        .env("TF_VAR_src", "./a")
        .arg("init")
        .arg(&dir)
        .ok();
    assert_eq!(records(&dir).len(), 4);
    let dir = checkout(&env, "order");
    let out = tofu(&env)
        .current_dir(&dir)
        .args(["init", "-var", "src=./a", "-var-file=elsewhere.tfvars"])
        .fails();
    assert!(stderr(&out).contains("missing"), "{}", stderr(&out));
    tofu(&env)
        .current_dir(&dir)
        .args(["init", "-var-file=elsewhere.tfvars", "--var=src=./a"])
        .ok();
    assert_eq!(records(&dir).len(), 4);
}

#[test]
fn a_source_that_cannot_be_evaluated_fails_with_its_place_and_changes_nothing() {
    let env = TestEnv::new();
    let dir = checkout(&env, "ours");
    // No value for `src`: tofu with -input=false fails the same way.
    let out = tofu(&env).arg("init").arg(&dir).fails();
    let err = stderr(&out);
    assert!(err.contains("No value for required variable"), "{err}");
    assert!(err.contains("main.tf:11"), "{err}");
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.join(".terraform").exists());

    // Something known only when planning.
    let dir = env.checkout(
        "dynamic",
        &[(
            "main.tf",
            "module \"m\" {\n  source = null_resource.x.id\n}\n",
        )],
    );
    let out = tofu(&env).arg("init").arg(&dir).fails();
    assert!(
        stderr(&out).contains("Unable to compute static value"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join(".terraform").exists());
}

#[test]
fn the_terraform_flavor_refuses_what_terraform_refuses() {
    let env = TestEnv::new();
    let theirs = checkout(&env, "theirs");
    let ours = checkout(&env, "ours");
    let out = run_fail(
        env.terraform(&theirs)
            .args(["init", "-backend=false", "-no-color"]),
    );
    assert!(
        stderr(&out).contains("Variables not allowed"),
        "{}",
        stderr(&out)
    );
    let out = env.tstore().no_fuse().arg("init").arg(&ours).fails();
    assert!(
        stderr(&out).contains("Variables not allowed"),
        "{}",
        stderr(&out)
    );
    assert!(!ours.join(".terraform").exists());
}

/// `terraform.workspace` in a module source is `TF_WORKSPACE` of the init's environment
/// (`default` when unset or empty, as tofu reads it), in the root and in a child module.
#[test]
fn terraform_workspace_comes_from_tf_workspace() {
    let env = TestEnv::new();
    let dir = env.checkout(
        "ws",
        &[
            (
                "main.tf",
                "module \"env\" {\n  source = \"./envs/${terraform.workspace}\"\n}\n",
            ),
            (
                "envs/blue/main.tf",
                "module \"inner\" {\n  source = \"../${terraform.workspace}-inner\"\n}\n",
            ),
            (
                "envs/blue-inner/main.tf",
                "output \"x\" {\n  value = 1\n}\n",
            ),
            ("envs/default/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    );
    let init = |workspace: Option<&str>| {
        let mut tstore = env.tstore().env("TSTORE_FLAVOR", "tofu").no_fuse();
        if let Some(w) = workspace {
            tstore = tstore.env("TF_WORKSPACE", w);
        }
        tstore.arg("init").arg(&dir).ok();
        records(&dir)
            .into_iter()
            .map(|(key, _, dir)| format!("{key}={dir}"))
            .collect::<Vec<_>>()
    };
    let blue = init(Some("blue"));
    assert!(blue.contains(&"env=envs/blue".to_owned()), "{blue:?}");
    assert!(
        blue.contains(&"env.inner=envs/blue-inner".to_owned()),
        "{blue:?}"
    );
    for unset in [None, Some("")] {
        let default = init(unset);
        assert!(
            default.contains(&"env=envs/default".to_owned()),
            "{unset:?}: {default:?}"
        );
    }
}

/// Terraform ≥ 1.15 evaluates `const = true` variables, and locals built from them, in a
/// module call's `source` and `version`, in the root and in called modules (whose const
/// variables the calling block sets); anything else is refused in its words. Twin cases of
/// upstream: internal/command/init2_test.go@v1.15.9 (`TestInit2_dynamicSourceSuccess`,
/// `TestInit2_dynamicSourceErrors`) and internal/terraform/context_init_test.go@v1.15.9.
#[test]
fn terraform_1_15_evaluates_const_variables_in_module_sources() {
    let env = TestEnv::new();
    let child = "variable \"inner_src\" {\n  type  = string\n  const = true\n}\nmodule \"inner\" {\n  source = var.inner_src\n}\n";
    let leaf = "output \"v\" {\n  value = 1\n}\n";
    let checkout = |name: &str, main: &str| {
        env.checkout(
            name,
            &[
                ("main.tf", main),
                ("mod/main.tf", child),
                ("mod/inner/main.tf", leaf),
            ],
        )
    };
    let init = |dir: &Path, tool: &str| {
        env.tstore()
            .no_fuse()
            .tool_version(tool)
            .arg("init")
            .arg(dir)
    };
    let main = r#"variable "name" {
  type  = string
  const = true
}
locals {
  dir = "./${var.name}"
}
module "direct" {
  source    = "./${var.name}"
  inner_src = "./inner"
}
module "via_local" {
  source    = local.dir
  inner_src = "./${lower("INNER")}"
}
"#;
    let dir = checkout("ok", main);
    // The value from terraform.tfvars, as terraform's init reads it.
    fs_err::write(dir.join("terraform.tfvars"), "name = \"mod\"\n").unwrap();
    init(&dir, "terraform 1.15.4").ok();
    assert_eq!(
        records(&dir),
        [
            ("".into(), "".into(), ".".into()),
            ("direct".into(), "./mod".into(), "mod".into()),
            ("direct.inner".into(), "./inner".into(), "mod/inner".into()),
            ("via_local".into(), "./mod".into(), "mod".into()),
            (
                "via_local.inner".into(),
                "./inner".into(),
                "mod/inner".into()
            ),
        ]
    );

    // Terraform before 1.15 refuses the variable, as terraform 1.0.3 does.
    let old = checkout("old", main);
    fs_err::write(old.join("terraform.tfvars"), "name = \"mod\"\n").unwrap();
    let err = stderr(&init(&old, "terraform 1.14.9").fails());
    assert!(err.contains("Variables not allowed"), "{err}");

    // What terraform 1.15 refuses, with nothing written.
    for (name, main, says) in [
        (
            "non-const",
            "variable \"name\" {\n  default = \"./mod\"\n}\nmodule \"m\" {\n  source = var.name\n}\n",
            "Unknown module source",
        ),
        (
            "non-const-local",
            "variable \"name\" {\n  default = \"mod\"\n}\nlocals {\n  d = \"./${var.name}\"\n}\nmodule \"m\" {\n  source = local.d\n}\n",
            "Only literal values and const variables can be evaluated during init",
        ),
        (
            "resource",
            "resource \"null_resource\" \"x\" {}\nmodule \"m\" {\n  source = null_resource.x.id\n}\n",
            "Invalid module source",
        ),
        (
            "workspace",
            "module \"m\" {\n  source = \"./${terraform.workspace}\"\n}\n",
            "The module source can only reference constant input variables and local values",
        ),
        (
            "unset",
            "variable \"name\" {\n  type  = string\n  const = true\n}\nmodule \"m\" {\n  source = var.name\n}\n",
            "No value for required variable",
        ),
    ] {
        let dir = checkout(name, main);
        let err = stderr(&init(&dir, "terraform 1.15.4").fails());
        assert!(err.contains(says), "{name}: {err}");
        assert!(!dir.join(".terraform").exists(), "{name}: nothing written");
    }
}
