//! `tstore init` as a drop-in for `tofu init` in CI scripts: tofu's global `-chdir` and
//! its harmless init flags are accepted.

use tstore_test_support::{mirror, run_fail, run_ok, stderr, TestEnv};

use crate::common::{tstore, NULL_CONFIG};

#[test]
fn tofu_init_flags_and_chdir_work_as_in_ci_scripts() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    run_ok(
        tstore(&env, Some(&cfg))
            .current_dir(&env.work)
            .arg("-chdir=stack")
            .args([
                "init",
                "-input=false",
                "-no-color",
                "-backend=false",
                "-backend-config=bucket=x",
                "-reconfigure",
                "-get=true",
                "-lock=false",
            ]),
    );
    assert!(dir.join(".terraform.lock.hcl").is_file());
    assert!(dir
        .join(".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
        .is_symlink());
    // terraform accepts what was installed.
    run_ok(env.terraform(&dir).args(["validate", "-no-color"]));

    let out = run_fail(
        tstore(&env, Some(&cfg))
            .current_dir(&env.work)
            .args(["-chdir=nowhere", "init"]),
    );
    let err = stderr(&out);
    assert!(err.contains("-chdir") && err.contains("nowhere"), "{err}");
}
