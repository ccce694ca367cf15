//! Modules of test files: tofu init installs the module of every `run` block of the root
//! module's `*.tftest.hcl`/`*.tofutest.hcl` files (root and `tests/`), keyed
//! `test.[DIR.]STEM.RUN` (OpenTofu's `TestInit_testsWithModule` and its configuration
//! builder); terraform 1.0.3 has no test files and installs none.

use std::path::Path;

use tstore_test_support::{module_records, run_ok, TestEnv};

use crate::common::tstore;
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
    run_ok(
        tstore(&env, None)
            .env("TSTORE_FLAVOR", "tofu")
            .env("TSTORE_NO_FUSE", "1")
            .arg("init")
            .arg(&ours),
    );
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
    run_ok(
        tstore(&env, None)
            .env("TSTORE_FLAVOR", "tofu")
            .env("TSTORE_NO_FUSE", "1")
            .args(["init", "-test-directory=spec/unit"])
            .arg(&spec),
    );
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
    run_ok(
        tstore(&env, None)
            .env("TSTORE_NO_FUSE", "1")
            .arg("init")
            .arg(&terraform_flavor),
    );
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
        run_ok(
            tstore(&env, None)
                .env("TSTORE_FLAVOR", "tofu")
                .env("TSTORE_NO_FUSE", "1")
                .arg("init")
                .arg(&ours),
        )
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
