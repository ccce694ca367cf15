//! What makes a provider package installable: terraform refuses a package without a
//! `terraform-provider-TYPE` executable, and so does tstore, before linking anything.

use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::{run_fail, snapshot, stderr, TestEnv};

use crate::common::TstoreEnv as _;

const CONFIG: &str = "terraform {\n  required_providers {\n    package = {\n      source  = \"acme/package\"\n      version = \"1.0.0\"\n    }\n  }\n}\n";

#[test]
fn a_package_without_its_executable_is_refused() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    for packed in [false, true] {
        let files = [PkgFile {
            path: "terraform-package",
            contents: b"#!/bin/sh\n",
            executable: true,
        }];
        let addr = "registry.terraform.io/acme/package";
        if packed {
            mirror::write_packed(&mirror_dir, addr, "1.0.0", "linux_amd64", &files);
        } else {
            mirror::write_unpacked(&mirror_dir, addr, "1.0.0", "linux_amd64", &files);
        }
        let cfg = env.cli_config_fs_mirror(&mirror_dir);
        let name = if packed { "packed" } else { "unpacked" };
        let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", CONFIG)]);
        let out = run_fail(
            env.terraform(&theirs)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .args(["init", "-backend=false", "-no-color"]),
        );
        let want = "could not find executable file starting with terraform-provider-package";
        // terraform wraps its messages: compare words.
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words(&stderr(&out)).contains(want),
            "terraform: {}",
            stderr(&out)
        );

        let ours = env.checkout(&format!("ours-{name}"), &[("main.tf", CONFIG)]);
        let before = snapshot(&ours);
        let out = env.tstore().cli_config(&cfg).arg("init").arg(&ours).fails();
        let err = stderr(&out);
        assert!(err.contains("Failed to install provider"), "{err}");
        assert!(words(&err).contains(want), "{err}");
        assert_eq!(
            snapshot(&ours),
            before,
            "{name}: the working directory changed"
        );
        fs_err::remove_dir_all(&mirror_dir).unwrap();
    }
}
