//! The Terragrunt and Atlantis recipes of `docs/recipes/`, run by the suite as written with
//! a stand-in for each tool that does what the tool does around `init` (neither tool is
//! installable on the test machine):
//!
//! - `terragrunt run --all plan`: for each unit (a directory with a `terragrunt.hcl` that
//!   includes the root `root.hcl`), copy its configuration into
//!   `.terragrunt-cache/<hash>/<hash>/`, run the root configuration's `before_hook` for
//!   `init` there, then `terraform init` and `terraform plan` there, the units in parallel
//!   as `run --all` runs them;
//! - Atlantis: for each project of a pull request's clone, run the workflow's steps in
//!   order (`run: CMD` through a shell, `init` and `plan` as terraform's).
//!
//! The hook, the workflow and the shell lines are read from the recipes' code blocks, so a
//! recipe that stops working fails here. The real terraform is the judge.

use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::{mirror, peers, run_ok, stderr, stdout, Layout, TestEnv};

use crate::common::{tstore_bin, NULL_CONFIG};

/// The code blocks of `docs/recipes/NAME` fenced as `lang`, in order.
fn code_blocks(name: &str, lang: &str) -> Vec<String> {
    let text = fs_err::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/recipes")
            .join(name),
    )
    .unwrap();
    let fence = format!("```{lang}\n");
    let mut blocks = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("a closed code block");
        blocks.push(body[..end].to_owned());
        rest = &body[end..];
    }
    blocks
}

/// A machine: a home, `tstore` and the real terraform on `PATH`, no store settings of the
/// test environment (the recipe decides them).
fn machine(env: &TestEnv, name: &str) -> (PathBuf, std::ffi::OsString) {
    let home = env.root.path().join(name).join("home");
    let bin = env.root.path().join(name).join("bin");
    fs_err::create_dir_all(&home).unwrap();
    fs_err::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(tstore_bin(), bin.join("tstore")).unwrap();
    std::os::unix::fs::symlink(&peers().terraform, bin.join("terraform")).unwrap();
    let system = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&system))).unwrap();
    (home, path)
}

fn shell(env: &TestEnv, home: &Path, path: &std::ffi::OsStr, dir: &Path) -> Command {
    let mut cmd = env.command(Path::new("bash"));
    cmd.current_dir(dir)
        .env("HOME", home)
        .env("PATH", path)
        .env("TSTORE_NO_FUSE", "1")
        .env_remove("TSTORE_HOME")
        .env_remove("TSTORE_MOUNT")
        .env_remove("XDG_DATA_HOME");
    cmd
}

/// The provider entry of a working directory: a link into `store`.
fn assert_linked(dir: &Path, store: &Path) {
    let entry = dir.join(format!(
        ".terraform/providers/{}/{}/{}",
        mirror::NULL_ADDR,
        mirror::NULL_VERSION,
        mirror::PLATFORM
    ));
    let target = fs_err::read_link(&entry)
        .unwrap_or_else(|e| panic!("{} is not a link ({e})", entry.display()));
    let resolved = fs_err::canonicalize(&target).unwrap();
    assert!(
        resolved.starts_with(fs_err::canonicalize(store).unwrap()),
        "{} resolves outside the store",
        entry.display()
    );
}

#[test]
fn the_terragrunt_recipe_runs_with_a_stand_in_and_every_unit_links_one_copy() {
    let null = TestEnv::with_null_mirror(Layout::Packed);
    let env = &null.env;
    let (home, path) = machine(env, "tg");
    // The recipe's root configuration: its before_hook for init.
    let hcl = code_blocks("terragrunt.md", "hcl");
    let root_config = hcl.first().expect("the root.hcl block");
    let body: hcl::Body = hcl::from_str(root_config).unwrap();
    let hook = body
        .blocks()
        .filter(|b| b.identifier() == "terraform")
        .flat_map(|b| b.body().blocks())
        .find(|b| b.identifier() == "before_hook")
        .expect("a before_hook");
    let execute: Vec<String> = hook
        .body()
        .attributes()
        .find(|a| a.key() == "execute")
        .and_then(|a| match a.expr() {
            hcl::Expression::Array(items) => Some(
                items
                    .iter()
                    .map(|i| match i {
                        hcl::Expression::String(s) => s.clone(),
                        other => panic!("execute item {other:?}"),
                    })
                    .collect(),
            ),
            _ => None,
        })
        .expect("execute = [...]");
    // The repository: a root configuration and two units.
    let live = env.root.path().join("tg/live");
    fs_err::create_dir_all(&live).unwrap();
    fs_err::write(live.join("root.hcl"), root_config).unwrap();
    for unit in ["app", "net"] {
        let dir = live.join(unit);
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(
            dir.join("terragrunt.hcl"),
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n",
        )
        .unwrap();
        fs_err::write(dir.join("main.tf"), NULL_CONFIG).unwrap();
    }
    // The stand-in.
    let hook_line = execute
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let stand_in = format!(
        r#"#!/usr/bin/env bash
# terragrunt run --all plan, as far as init goes: copy each unit into its cache directory,
# run the init before_hook there, then terraform init and plan there; units in parallel.
set -eo pipefail
[[ "$1 $2 $3" == "run --all plan" ]] || {{ echo "stand-in: only run --all plan" >&2; exit 2; }}
[[ "$TG_TF_PATH" == terraform ]] || {{ echo "stand-in: TG_TF_PATH is not terraform" >&2; exit 2; }}
pids=()
for unit in */terragrunt.hcl; do
  unit=$(dirname "$unit")
  cache="$unit/.terragrunt-cache/$(echo "$PWD/$unit" | sha1sum | cut -c1-12)/w"
  mkdir -p "$cache"
  cp "$unit"/*.tf "$cache"/
  [[ -e "$unit/.terraform.lock.hcl" ]] && cp "$unit/.terraform.lock.hcl" "$cache"/
  (cd "$cache" && {hook_line} && terraform init -input=false -no-color && terraform plan -input=false -no-color) &
  pids+=($!)
done
for pid in "${{pids[@]}}"; do wait "$pid"; done
"#
    );
    let bin = env.root.path().join("tg/bin/terragrunt");
    fs_err::write(&bin, stand_in).unwrap();
    run_ok(Command::new("chmod").arg("755").arg(&bin));
    // The recipe's shell lines, as written, from the live directory; the team's own CLI
    // configuration (the null mirror) is what `tstore cli-config` builds on.
    let sh = code_blocks("terragrunt.md", "sh");
    let script = sh.first().expect("the recipe's shell block");
    let out = run_ok(
        shell(env, &home, &path, &live)
            .env("TF_CLI_CONFIG_FILE", &null.cfg)
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script]),
    );
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        all.matches("Plan: 1 to add").count(),
        2,
        "both units plan:\n{all}"
    );
    assert!(
        all.contains("Using previously-installed hashicorp/null"),
        "terraform's init did not reuse tstore's links:\n{all}"
    );
    let store = home.join(".local/share/tstore");
    for unit in ["app", "net"] {
        let cache = fs_err::read_dir(live.join(unit).join(".terragrunt-cache"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("w");
        assert_linked(&cache, &store);
    }
}

#[test]
fn the_atlantis_recipe_runs_its_workflow_in_every_project_with_a_stand_in() {
    let null = TestEnv::with_null_mirror(Layout::Packed);
    let env = &null.env;
    let (home, path) = machine(env, "atlantis");
    let yaml = code_blocks("atlantis.md", "yaml");
    let repos: serde_yaml::Value = serde_yaml::from_str(yaml.first().unwrap()).unwrap();
    let steps = repos["workflows"]["tstore"]["plan"]["steps"]
        .as_sequence()
        .expect("the tstore workflow's plan steps")
        .clone();
    // The server's environment, with the recipe's volume (`/atlantis`) replaced by this
    // machine's.
    let volume = env.root.path().join("atlantis-volume");
    fs_err::create_dir_all(&volume).unwrap();
    let sh = code_blocks("atlantis.md", "sh");
    let mut vars = Vec::new();
    for line in sh.first().unwrap().lines() {
        let line = line.split(" #").next().unwrap().trim();
        if let Some((k, v)) = line.split_once('=') {
            vars.push((
                k.to_owned(),
                v.replace("/atlantis", &volume.display().to_string()),
            ));
        }
    }
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the recipe sets {name}"))
    };
    assert_eq!(var("ATLANTIS_USE_TF_PLUGIN_CACHE"), "false");
    let store = PathBuf::from(var("TSTORE_HOME"));
    let cfg = vars
        .iter()
        .find(|(k, _)| k == "TF_CLI_CONFIG_FILE")
        .map(|(_, v)| PathBuf::from(v))
        .expect("the recipe sets TF_CLI_CONFIG_FILE");
    // Made once, as the recipe says, from the server's own configuration (the mirror).
    let mut made = shell(env, &home, &path, env.root.path());
    for (k, v) in &vars {
        made.env(k, v);
    }
    run_ok(made.env("TF_CLI_CONFIG_FILE", &null.cfg).args([
        "-c",
        &format!("tstore cli-config --out '{}'", cfg.display()),
    ]));
    // A pull request's clone with two projects; each project runs the workflow.
    let clone = env
        .root
        .path()
        .join("atlantis/data/repos/org/repo/1/default");
    for project in ["app", "net"] {
        let dir = clone.join(project);
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(dir.join("main.tf"), NULL_CONFIG).unwrap();
        for step in &steps {
            let mut cmd = shell(env, &home, &path, &dir);
            for (k, v) in &vars {
                cmd.env(k, v);
            }
            match step {
                serde_yaml::Value::String(s) if s == "init" => {
                    cmd.args(["-c", "terraform init -input=false -no-color"]);
                }
                serde_yaml::Value::String(s) if s == "plan" => {
                    cmd.args([
                        "-c",
                        "terraform plan -input=false -no-color -out=plan.tfplan",
                    ]);
                }
                other => {
                    let run = other["run"].as_str().expect("a run step");
                    cmd.args(["-c", run]);
                }
            }
            let out = run_ok(&mut cmd);
            if step.as_str() == Some("plan") {
                assert!(stdout(&out).contains("Plan: 1 to add"), "{}", stdout(&out));
            }
        }
        assert!(dir.join("plan.tfplan").is_file());
        assert_linked(&dir, &store);
    }
}
