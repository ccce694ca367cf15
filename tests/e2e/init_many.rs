//! `tstore init DIR...` and `tstore init --recursive`: many roots in one process, each ending
//! as a lone `tstore init` there leaves it; a failing root does not stop the others; what
//! the roots share (a registry's version list) is asked once.

use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{GitRepo, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::{json, sh};

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
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .arg("init")
            .args(args)
    };
    for root in ["stacks/a", "stacks/b", "stacks/c"] {
        init(&[lone.join(root).to_str().unwrap()]).ok();
    }

    // The whole tree: modules/local is called, so it is no root; broken fails alone.
    let before = reg.server.requests().len();
    let out = init(&["--recursive", many.to_str().unwrap(), "-json"]).fails();
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
        &init(&["--recursive", many.to_str().unwrap()])
            .fails()
            .stdout,
    )
    .into_owned();
    assert!(
        text.contains("4 roots, 3 initialised, 1 failed") && text.contains("stacks/broken"),
        "{text}"
    );
    init(&[
        "--recursive",
        many.to_str().unwrap(),
        "--exclude",
        "stacks/bro*",
    ])
    .ok();
}

/// `tstore fetch` fills an empty store from the lock files alone (providers and module
/// packages, verified against their entries) and changes nothing in the checkout; every root
/// then installs with its sources gone. Fetching again asks no source; a lock entry that no
/// package matches fails it.
#[test]
fn fetch_fills_a_store_from_lock_files_then_every_root_installs_offline() {
    use tstore_test_support::{Layout, NullMirror};
    let NullMirror { env, mirror, cfg } = TestEnv::with_null_mirror(Layout::Packed);
    let base = env.root.path().join("git");
    GitRepo::init(
        base.join("pkg"),
        &[("main.tf", "output \"v\" {\n  value = 1\n}\n")],
    )
    .commit("one")
    .tag("v1")
    .clone_bare(base.join("pkg.git"));
    let uses_null =
        "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\" }\n  }\n}\n";
    let calls = format!(
        "module \"m\" {{\n  source = \"git::file://{}/pkg.git?ref=v1\"\n}}\n",
        base.display()
    );
    let tree = [("a/main.tf", uses_null), ("b/main.tf", calls.as_str())];
    let first = env.checkout("first", &tree);
    let run = |store: &Path, args: &[&str]| {
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .env("TSTORE_HOME", store)
            .env("TSTORE_MOUNT", store.with_extension("mount"))
            .args(args)
    };
    let store1 = env.root.path().join("store1");
    run(&store1, &["init", "--recursive", first.to_str().unwrap()]).ok();

    // A new runner: the checkout with its lock files only, an empty store.
    let ci = env.checkout("ci", &[]);
    for root in ["a", "b"] {
        fs_err::create_dir_all(ci.join(root)).unwrap();
        for f in ["main.tf", ".terraform.lock.hcl", ".tstore.lock.hcl"] {
            if first.join(root).join(f).exists() {
                fs_err::copy(first.join(root).join(f), ci.join(root).join(f)).unwrap();
            }
        }
    }
    let locks = |dir: &Path| {
        ["a/.terraform.lock.hcl", "b/.tstore.lock.hcl"]
            .map(|f| fs_err::read_to_string(dir.join(f)).unwrap())
    };
    let store2 = env.root.path().join("store2");
    let report = json(
        &run(
            &store2,
            &["fetch", "--recursive", ci.to_str().unwrap(), "--json"],
        )
        .ok(),
    );
    let roots = report["roots"].as_array().unwrap();
    assert_eq!(roots.len(), 2, "{report}");
    assert_eq!(
        roots[0]["providers"][0]["provider"],
        "registry.terraform.io/hashicorp/null"
    );
    assert_eq!(roots[1]["modules"][0]["verified"], true, "{report}");
    assert_eq!(locks(&ci), locks(&first), "fetch writes no lock file");
    assert!(!ci.join("a/.terraform").exists() && !ci.join("b/.terraform").exists());

    // Again: everything is in the store.
    let again = json(
        &run(
            &store2,
            &["fetch", "--recursive", ci.to_str().unwrap(), "--json"],
        )
        .ok(),
    );
    assert_eq!(
        again["roots"][0]["providers"][0]["obtained"],
        "store_by_lock"
    );

    // The sources gone: every root installs from the store.
    fs_err::rename(&mirror, env.root.path().join("mirror.away")).unwrap();
    fs_err::rename(base.join("pkg.git"), base.join("pkg.away")).unwrap();
    run(&store2, &["init", "--recursive", ci.to_str().unwrap()]).ok();
    assert_eq!(locks(&ci), locks(&first));
    assert!(ci.join("b/.terraform/modules/m/main.tf").is_file());

    // A lock entry no package matches (every hash replaced): refused.
    let lock = ci.join("a/.terraform.lock.hcl");
    let text = fs_err::read_to_string(&lock).unwrap();
    let start = text.find("hashes = [").unwrap();
    let end = start + text[start..].find(']').unwrap() + 1;
    let tampered = format!(
        "{}hashes = [\n    \"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\n  ]{}",
        &text[..start],
        &text[end..]
    );
    fs_err::write(&lock, tampered).unwrap();
    let store3 = env.root.path().join("store3");
    fs_err::rename(env.root.path().join("mirror.away"), &mirror).unwrap();
    let err = tstore_test_support::stderr(
        &run(&store3, &["fetch", ci.join("a").to_str().unwrap()]).fails(),
    );
    assert!(err.contains("checksum"), "{err}");
}

/// `--exclude` globs are matched in linear time: twelve `*` pieces against a long directory
/// name that never matches took exponential time (still matching after 20 s).
#[test]
fn a_pathological_exclude_glob_does_not_hold_the_search() {
    let env = TestEnv::new();
    let long = "a".repeat(200);
    let top = env.checkout(
        "mono",
        &[(&format!("{long}/main.tf"), ""), ("b/main.tf", "")],
    );
    let out = env
        .tstore()
        .no_fuse()
        .args([
            "init",
            "--recursive",
            "--json",
            "--exclude",
            "*a*a*a*a*a*a*a*a*a*a*a*a*b",
            "--exclude",
            "b",
        ])
        .arg(&top)
        .ok();
    let report = json(&out);
    let roots: Vec<String> = report["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dir"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(roots.len(), 1, "{report}");
    assert!(roots[0].ends_with(&long), "{report}");
}

/// A directory named with a newline and terminal escape codes cannot forge the summary of
/// `init --recursive` in a CI log: every name that came from the checkout is printed with
/// its control characters escaped, on its own line.
#[test]
fn a_root_named_with_control_characters_cannot_forge_the_summary() {
    let env = TestEnv::new();
    let forged = "x\n\ntstore init: 2 roots, 2 initialised, 0 failed\u{1b}[8m";
    let top = env.checkout(
        "mono",
        &[
            (
                &format!("{forged}/main.tf"),
                "module \"m\" {\n  source = \"./missing\"\n}\n",
            ),
            ("ok/main.tf", ""),
        ],
    );
    let out = env
        .tstore()
        .no_fuse()
        .args(["init", "--recursive"])
        .arg(&top)
        .output();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains('\u{1b}'),
        "an escape code reached the log:\n{all}"
    );
    let summaries: Vec<&str> = all
        .lines()
        .filter(|l| l.starts_with("tstore init:"))
        .collect();
    assert_eq!(
        summaries,
        ["tstore init: 2 roots, 1 initialised, 1 failed"],
        "{all}"
    );
    assert!(all.contains("x\\n\\ntstore init: 2 roots"), "{all}");
}

/// `init --recursive` never looks hung: the fetch phase over the new roots says when it
/// starts and ends (a bar on a terminal; off one, a line each on stderr), each root's header
/// counts the failures so far; with `--json` stdout is one document and stderr says none of it.
#[test]
fn a_recursive_init_shows_its_fetch_phase_and_failures_so_far() {
    let env = TestEnv::new();
    let repo = GitRepo::tagged_module(
        &env.root.path().join("git"),
        "m",
        &[("main.tf", "output \"v\" {\n  value = 1\n}\n")],
    );
    let call = format!(
        "module \"m\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
        repo.display()
    );
    let files = [
        ("a/main.tf", call.as_str()),
        (
            "b/main.tf",
            "module \"broken\" {\n  source = \"./missing\"\n}\n",
        ),
        ("c/main.tf", call.as_str()),
    ];
    let top = env.checkout("top", &files);
    let out = env
        .tstore()
        .no_fuse()
        .args(["init", "--recursive"])
        .arg(&top)
        .fails();
    let err = tstore_test_support::stderr(&out);
    assert!(
        err.contains("tstore: fetching the module packages of 3 roots..."),
        "{err}"
    );
    assert!(
        err.contains("tstore: fetched the module packages of 3 roots in"),
        "{err}"
    );
    let said = tstore_test_support::stdout(&out);
    assert!(
        said.contains(&format!(
            "[3/3] {} (1 failed so far)",
            top.join("c").display()
        )),
        "{said}"
    );

    let other = env.checkout("other", &files);
    let out = env
        .tstore()
        .no_fuse()
        .args(["init", "--recursive", "--json"])
        .arg(&other)
        .fails();
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON document");
    assert!(!tstore_test_support::stderr(&out).contains("fetching the module packages"));
}
