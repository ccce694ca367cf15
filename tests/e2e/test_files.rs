//! Modules of test files: tofu init installs the module of every `run` block of the root
//! module's `*.tftest.hcl`/`*.tofutest.hcl` files (root and `tests/`), keyed
//! `test.[DIR.]STEM.RUN` (OpenTofu's `TestInit_testsWithModule` and its configuration
//! builder); terraform 1.0.3 has no test files and installs none; terraform 1.11.4 installs
//! those of `*.tftest.hcl` files, local and registry sources only.

use std::path::Path;

use tstore_test_support::{module_records, run_fail, run_ok, stderr, TestEnv};

use crate::common::TstoreEnv as _;
use crate::config_loader::module_repo;

fn keys_and_dirs(dir: &Path) -> Vec<(String, String)> {
    module_records(dir)
        .into_iter()
        .map(|r| (r.key, r.dir))
        .collect()
}

#[test]
fn modules_run_by_test_files_are_installed_under_the_tofu_flavor_only() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let remote_tests =
        format!("run \"remote\" {{\n  module {{\n    source = \"{git}\"\n  }}\n}}\n");
    let files = [
        ("main.tf", "output \"x\" {\n  value = 1\n}\n"),
        (
            "main.tftest.hcl",
            "run \"setup\" {\n  module {\n    source = \"./setup\"\n  }\n}\nrun \"check\" {\n  assert {\n    condition     = output.x == 1\n    error_message = \"x\"\n  }\n}\n",
        ),
        ("setup/main.tf", "module \"inner\" {\n  source = \"./inner\"\n}\n"),
        ("setup/inner/main.tf", "output \"y\" {\n  value = 2\n}\n"),
        ("tests/remote.tftest.hcl", remote_tests.as_str()),
        // Hidden by the .tofutest.hcl file of the same stem.
        ("tests/hidden.tftest.hcl", "run \"old\" {\n  module {\n    source = \"./missing\"\n  }\n}\n"),
        ("tests/hidden.tofutest.hcl", "run \"new\" {\n  module {\n    source = \"./setup/inner\"\n  }\n}\n"),
    ];
    let ours = env.checkout("ours", &files);
    env.tstore()
        .env("TSTORE_FLAVOR", "tofu")
        .no_fuse()
        .arg("init")
        .arg(&ours)
        .ok();
    assert_eq!(
        keys_and_dirs(&ours),
        [
            ("".to_owned(), ".".to_owned()),
            ("test.main.setup".to_owned(), "setup".to_owned()),
            ("test.main.setup.inner".to_owned(), "setup/inner".to_owned()),
            (
                "test.tests.hidden.tofutest.hcl.new".to_owned(),
                "setup/inner".to_owned()
            ),
            (
                "test.tests.remote.remote".to_owned(),
                ".terraform/modules/test.tests.remote.remote".to_owned()
            ),
        ]
    );
    assert!(ours
        .join(".terraform/modules/test.tests.remote.remote/main.tf")
        .is_file());

    // -test-directory replaces tests/ (nested parts join the key); root files still count.
    let spec = env.checkout(
        "spec",
        &[
            ("main.tf", "output \"x\" {\n  value = 1\n}\n"),
            ("setup/main.tf", "output \"y\" {\n  value = 2\n}\n"),
            (
                "tests/ignored.tftest.hcl",
                "run \"r\" {\n  module {\n    source = \"./missing\"\n  }\n}\n",
            ),
            (
                "spec/unit/a.tftest.hcl",
                "run \"r\" {\n  module {\n    source = \"./setup\"\n  }\n}\n",
            ),
        ],
    );
    env.tstore()
        .env("TSTORE_FLAVOR", "tofu")
        .no_fuse()
        .args(["init", "-test-directory=spec/unit"])
        .arg(&spec)
        .ok();
    assert_eq!(
        keys_and_dirs(&spec),
        [
            ("".to_owned(), ".".to_owned()),
            ("test.spec.unit.a.r".to_owned(), "setup".to_owned()),
        ]
    );

    // terraform 1.0.3 reads no test files; neither does the terraform flavor.
    let theirs = env.checkout("theirs", &files);
    let terraform_flavor = env.checkout("terraform-flavor", &files);
    run_ok(
        env.terraform(&theirs)
            .args(["init", "-backend=false", "-no-color"]),
    );
    env.tstore()
        .no_fuse()
        .arg("init")
        .arg(&terraform_flavor)
        .ok();
    assert!(!theirs.join(".terraform/modules/modules.json").exists());
    assert!(!terraform_flavor
        .join(".terraform/modules/modules.json")
        .exists());
}

#[test]
fn a_test_file_whose_name_starts_with_a_digit_is_installed_and_locked() {
    // Numbered test files (`001_basic.tftest.hcl`) are common: their call paths start a
    // segment with a digit, and the lock file written for them must read back.
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let remote = format!("run \"remote\" {{\n  module {{\n    source = \"{git}\"\n  }}\n}}\n");
    let ours = env.checkout(
        "ours",
        &[
            ("main.tf", "output \"x\" {\n  value = 1\n}\n"),
            ("tests/001_remote.tftest.hcl", remote.as_str()),
        ],
    );
    let init = || {
        env.tstore()
            .env("TSTORE_FLAVOR", "tofu")
            .no_fuse()
            .arg("init")
            .arg(&ours)
            .ok()
    };
    init();
    let key = "test.tests.001_remote.remote";
    assert!(keys_and_dirs(&ours).contains(&(key.to_owned(), format!(".terraform/modules/{key}"))));
    let lock = fs_err::read_to_string(ours.join(".tstore.lock.hcl")).unwrap();
    assert!(lock.contains(&format!("module \"{key}\" {{")), "{lock}");
    // Read back: the second init verifies against it and changes nothing.
    init();
    assert_eq!(
        fs_err::read_to_string(ours.join(".tstore.lock.hcl")).unwrap(),
        lock
    );
    assert!(ours
        .join(format!(".terraform/modules/{key}/main.tf"))
        .is_file());
}

/// terraform 1.11.4 installs the modules of its test files' `run` blocks too (from 1.6:
/// internal/configs/config_build.go `buildTestModules`), reading `*.tftest.hcl` only: the
/// same `modules.json` records as that terraform in a twin checkout. A remote source in a
/// run block is refused by both, in terraform's words.
#[test]
fn modules_run_by_test_files_are_installed_as_terraform_1_11_installs_them() {
    let env = TestEnv::new();
    let files = [
        ("main.tf", "output \"x\" {\n  value = 1\n}\n"),
        (
            "main.tftest.hcl",
            "run \"setup\" {\n  module {\n    source = \"./setup\"\n  }\n}\n",
        ),
        (
            "setup/main.tf",
            "module \"inner\" {\n  source = \"./inner\"\n}\n",
        ),
        ("setup/inner/main.tf", "output \"y\" {\n  value = 2\n}\n"),
        // terraform reads no .tofutest.hcl file, so nothing hides this one.
        (
            "tests/both.tftest.hcl",
            "run \"tf\" {\n  module {\n    source = \"./setup/inner\"\n  }\n}\n",
        ),
        (
            "tests/both.tofutest.hcl",
            "run \"tofu\" {\n  module {\n    source = \"./missing\"\n  }\n}\n",
        ),
    ];
    let peers = tstore_test_support::peers();
    let judge = |dir: &Path| {
        let mut cmd = env.command(&peers.terraform_current);
        cmd.current_dir(dir)
            .args(["init", "-backend=false", "-input=false", "-no-color"]);
        cmd
    };
    let ours_cmd = |dir: &Path| {
        env.tstore()
            .no_fuse()
            .env("TSTORE_TOOL_VERSION", "terraform 1.11.4")
            .arg("init")
            .arg(dir)
    };
    let theirs = env.checkout("theirs", &files);
    let ours = env.checkout("ours", &files);
    run_ok(&mut judge(&theirs));
    ours_cmd(&ours).ok();
    let want = module_records(&theirs);
    assert!(
        want.iter().any(|r| r.key == "test.tests.both.tf"),
        "the judge installs test modules: {want:?}"
    );
    assert_eq!(module_records(&ours), want);

    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let git = module_repo(&base);
    let remote = format!("run \"remote\" {{\n  module {{\n    source = \"{git}\"\n  }}\n}}\n");
    let remote_files = [files[0], ("tests/remote.tftest.hcl", remote.as_str())];
    let theirs = env.checkout("theirs-remote", &remote_files);
    let ours = env.checkout("ours-remote", &remote_files);
    let detail = "Only local or registry module sources are currently supported from within";
    let their_err = stderr(&run_fail(&mut judge(&theirs)));
    assert!(their_err.contains(detail), "{their_err}");
    let our_err = stderr(&ours_cmd(&ours).fails());
    assert!(
        our_err.contains("Invalid module source address"),
        "{our_err}"
    );
    assert!(our_err.contains(detail), "{our_err}");
    assert!(our_err.contains("remote.tftest.hcl:3"), "{our_err}");
    assert!(!ours.join(".terraform/modules/modules.json").exists());
}
