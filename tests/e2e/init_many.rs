//! `tstore init DIR...` and `tstore init --recursive`: many roots in one process, each ending
//! as a lone `tstore init` there leaves it; a failing root does not stop the others; what
//! the roots share (a registry's version list) is asked once.

use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{run_fail, run_ok, TestEnv};

use crate::common::{json, sh, tstore};

/// Everything a lone init leaves in `dir` that a user would compare.
fn outcome(dir: &Path) -> (String, String, Vec<String>) {
    let read = |p: &str| fs_err::read_to_string(dir.join(p)).unwrap_or_default();
    let mut files: Vec<String> = walkdir::WalkDir::new(dir.join(".terraform/modules"))
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != ".tstore-installs.json")
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect();
    files.sort();
    (
        read(".tstore.lock.hcl"),
        read(".terraform/modules/modules.json"),
        files,
    )
}

#[test]
fn many_roots_in_one_process_end_as_lone_inits_and_share_what_they_ask() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let src = env.root.path().join("src");
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("main.tf"), "output \"v\" {\n  value = 1\n}\n").unwrap();
    sh(&src, "tar czf ../m.tar.gz main.tf");
    let location = reg.archive(
        "m.tar.gz",
        fs_err::read(env.root.path().join("m.tar.gz")).unwrap(),
    );
    reg.publish("acme/mod/null", "1.0.0", &location);
    let cfg = reg.write_cli_config(&env.root.path().join("cli.tfrc"), "");
    let call = format!(
        "module \"m\" {{\n  source  = \"{}/acme/mod/null\"\n  version = \"~> 1.0\"\n}}\n",
        reg.host()
    );
    let tree = [
        ("stacks/a/main.tf", call.as_str()),
        ("stacks/b/main.tf", call.as_str()),
        (
            "stacks/c/main.tf",
            "module \"x\" {\n  source = \"../../modules/local\"\n}\n",
        ),
        ("modules/local/main.tf", "output \"v\" {\n  value = 2\n}\n"),
        (
            "stacks/broken/main.tf",
            "module \"m\" {\n  source = \"./missing\"\n}\n",
        ),
    ];
    let lone = env.checkout("lone", &tree);
    let many = env.checkout("many", &tree);
    let init = |args: &[&str]| {
        let mut cmd = tstore(&env, Some(&cfg));
        cmd.env("TSTORE_NO_FUSE", "1").arg("init").args(args);
        cmd
    };
    for root in ["stacks/a", "stacks/b", "stacks/c"] {
        run_ok(&mut init(&[lone.join(root).to_str().unwrap()]));
    }

    // The whole tree: modules/local is called, so it is no root; broken fails alone.
    let before = reg.server.requests().len();
    let out = run_fail(&mut init(&["--recursive", many.to_str().unwrap(), "-json"]));
    let report = json(&out);
    let dirs: Vec<(String, bool)> = report["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let dir = r["dir"].as_str().unwrap();
            let rel = Path::new(dir)
                .strip_prefix(&many)
                .unwrap()
                .display()
                .to_string();
            (rel, r["ok"].as_bool().unwrap())
        })
        .collect();
    assert_eq!(
        dirs,
        [
            ("stacks/a".into(), true),
            ("stacks/b".into(), true),
            ("stacks/broken".into(), false),
            ("stacks/c".into(), true),
        ]
    );
    assert_eq!(report["failed"], 1);
    let broken = &report["roots"][2]["error"]["summary"];
    assert!(broken.as_str().unwrap().contains("\"m\""), "{broken}");
    for root in ["stacks/a", "stacks/b", "stacks/c"] {
        let (lock_a, records_a, files_a) = outcome(&lone.join(root));
        let (lock_b, records_b, files_b) = outcome(&many.join(root));
        assert_eq!(lock_a, lock_b, "{root}: lock file");
        assert_eq!(
            records_a,
            records_b.replace("/many/", "/lone/"),
            "{root}: modules.json"
        );
        assert_eq!(files_a, files_b, "{root}: installed files");
    }
    // One version list for the two roots calling the module.
    let lists = reg.server.requests()[before..]
        .iter()
        .filter(|r| r.path.ends_with("/acme/mod/null/versions"))
        .count();
    assert_eq!(lists, 1, "the version list is asked once per run");

    // Human output: a summary naming the failure; --exclude leaves it out.
    let text = String::from_utf8_lossy(
        &run_fail(&mut init(&["--recursive", many.to_str().unwrap()])).stdout,
    )
    .into_owned();
    assert!(
        text.contains("4 roots, 3 initialised, 1 failed") && text.contains("stacks/broken"),
        "{text}"
    );
    run_ok(&mut init(&[
        "--recursive",
        many.to_str().unwrap(),
        "--exclude",
        "stacks/bro*",
    ]));
}
