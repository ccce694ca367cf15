//! Git modules with submodules: the submodules' files are part of the package, as
//! terraform (go-getter) fetches them.

use std::path::Path;

use tstore_test_support::{run_ok, GitRepo, TestEnv};

use crate::common::TstoreEnv as _;

/// Every file under `root`, `.git` entries aside, with its bytes.
fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(root)
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            (rel, fs_err::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_git_module_with_submodules_installs_the_submodules_files() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    // git refuses file:// submodules by default; the test's repositories are local.
    GitRepo::init(
        base.join("inner-src"),
        &[(
            "main.tf",
            "output \"inner\" {\n  value = \"from the submodule\"\n}\n",
        )],
    )
    .allow_file_protocol()
    .commit("inner")
    .clone_bare(base.join("inner.git"));
    let outer = GitRepo::init(
        base.join("outer-src"),
        &[(
            "main.tf",
            "module \"vendored\" {\n  source = \"./vendor/inner\"\n}\noutput \"x\" {\n  value = module.vendored.inner\n}\n",
        )],
    )
    .allow_file_protocol();
    outer.git([
        "submodule",
        "--quiet",
        "add",
        &format!("file://{}/inner.git", base.display()),
        "vendor/inner",
    ]);
    outer
        .commit("outer")
        .tag("v1")
        .clone_bare(base.join("outer.git"));
    let main = format!(
        "module \"m\" {{\n  source = \"git::file://{}/outer.git?ref=v1\"\n}}\noutput \"x\" {{\n  value = module.m.x\n}}\n",
        base.display()
    );
    let theirs = env.checkout("theirs", &[("main.tf", &main)]);
    let ours = env.checkout("ours", &[("main.tf", &main)]);
    let git_env = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "protocol.file.allow"),
        ("GIT_CONFIG_VALUE_0", "always"),
    ];
    run_ok(
        env.terraform(&theirs)
            .envs(git_env)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore()
        .envs(git_env)
        .no_fuse()
        .arg("init")
        .arg(&ours)
        .ok();
    let want = files(&theirs.join(".terraform/modules/m"));
    assert!(
        want.iter().any(|(p, _)| p == "vendor/inner/main.tf"),
        "terraform installed {:?}",
        want.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert_eq!(files(&ours.join(".terraform/modules/m")), want);
    // terraform accepts the install: the submodule's module loads.
    run_ok(env.terraform(&ours).args(["validate", "-no-color"]));
}
