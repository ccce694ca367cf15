//! The bake recipe (docs/recipes/bake.md) with two runners: runner A fills an empty store
//! from a checkout's lock file alone (`tstore fetch`, nothing written in the checkout) and
//! pushes it to an OCI registry; runner B, whose only provider source is that registry,
//! installs the checkout and terraform plans it.

use tstore_test_support::{lock_file, run_ok, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;
use crate::oci_fixture::{RunnerA, RunnerB};

#[test]
fn a_store_fetched_from_lock_files_is_pushed_and_installs_a_runner_from_oci_alone() {
    let RunnerA {
        oci,
        runner_a,
        ca,
        origin: _origin,
        origin_cfg,
    } = RunnerA::start();
    // The lock file, written on a developer's machine.
    let dev = TestEnv::new();
    let dev_dir = dev.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    dev.tstore()
        .cli_config(&origin_cfg)
        .arg("init")
        .arg(&dev_dir)
        .ok();
    let lock = lock_file(&dev_dir);

    // Runner A: the checkout with its lock file, an empty store, fetch then push.
    let dir_a = runner_a.checkout(
        "stack",
        &[
            ("main.tf", NULL_CONFIG),
            (".terraform.lock.hcl", lock.as_str()),
        ],
    );
    assert!(!runner_a.store.join("index.sqlite").exists());
    runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .arg("fetch")
        .arg(&dir_a)
        .ok();
    assert!(!dir_a.join(".terraform").exists(), "fetch links nothing");
    assert_eq!(lock_file(&dir_a), lock, "fetch writes no lock file");
    let push = runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .env("SSL_CERT_FILE", &ca)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(format!(
            "oci://{}/mirror/${{namespace}}/${{type}}",
            oci.host()
        ));
    push.ok();

    // Runner B: the OCI registry is its only source.
    let RunnerB {
        runner_b, dir_b, ..
    } = RunnerB::install_with_lock_of(&oci, &dir_a);
    assert_eq!(lock_file(&dir_b), lock);
    let mut plan = runner_b.terraform(&dir_b);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);
}
