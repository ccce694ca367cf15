//! Configurations terraform's init rejects are rejected by tstore too, with terraform's
//! summary, and leave the working directory as it was. terraform 1.0.3 judges every case
//! first, so a case that it accepts fails the test instead of passing silently.

use tstore_test_support::{run_fail, snapshot, stderr, TestEnv};

use crate::common::tstore;

/// A checkout's files: (path, content).
type Files = &'static [(&'static str, &'static str)];

/// (case, files, terraform's error summary)
const CASES: &[(&str, Files, &str)] = &[
    ("unknown top-level block", &[("main.tf", "foo {}\n")], "Unsupported block type"),
    ("top-level argument", &[("main.tf", "x = 1\n")], "Unsupported argument"),
    (
        "invalid module name",
        &[("main.tf", "module \"1bad\" {\n  source = \"./x\"\n}\n")],
        "Invalid module instance name",
    ),
    (
        "resource with one label",
        &[("main.tf", "resource \"null_resource\" {}\n")],
        "Missing name for resource",
    ),
    (
        "data source with one label",
        &[("main.tf", "data \"null_data_source\" {}\n")],
        "Missing name for data",
    ),
    (
        "top-level required_providers",
        &[("main.tf", "required_providers {}\n")],
        "Invalid required_providers block",
    ),
    (
        "provider local name in capitals",
        &[("main.tf", "terraform {\n  required_providers {\n    Null = {\n      source = \"hashicorp/null\"\n    }\n  }\n}\n")],
        "Invalid provider local name",
    ),
    (
        "reserved argument source in a provider block",
        &[("main.tf", "provider \"null\" {\n  source = \"x\"\n}\n")],
        "Reserved argument name in provider block",
    ),
    (
        "reserved argument count in a provider block",
        &[("main.tf", "provider \"null\" {\n  count = 1\n}\n")],
        "Reserved argument name in provider block",
    ),
    (
        "reserved block in a provider block",
        &[("main.tf", "provider \"null\" {\n  lifecycle {}\n}\n")],
        "Reserved block type name in provider block",
    ),
    (
        "unknown built-in provider",
        &[("main.tf", "terraform {\n  required_providers {\n    foo = {\n      source = \"terraform.io/builtin/foo\"\n    }\n  }\n}\n")],
        "Invalid dependency on built-in provider",
    ),
    (
        "version on the built-in terraform provider",
        &[("main.tf", "terraform {\n  required_providers {\n    terraform = {\n      source  = \"terraform.io/builtin/terraform\"\n      version = \"1.0\"\n    }\n  }\n}\n")],
        "Invalid dependency on built-in provider",
    ),
    (
        "module version from a variable",
        &[("main.tf", "variable \"v\" {\n  default = \"1.0.0\"\n}\nmodule \"m\" {\n  source  = \"acme/m/null\"\n  version = var.v\n}\n")],
        "Variables not allowed",
    ),
    (
        "module source from a function",
        &[("main.tf", "module \"m\" {\n  source = format(\"./%s\", \"m\")\n}\n")],
        "Function calls not allowed",
    ),
    (
        "module without source",
        &[("main.tf", "module \"m\" {\n  version = \"1.0.0\"\n}\n")],
        "Missing required argument",
    ),
    (
        "duplicate module call",
        &[("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"), ("other.tf", "module \"m\" {\n  source = \"./m\"\n}\n"), ("m/main.tf", "")],
        "Duplicate module call",
    ),
    (
        "override without a base module call",
        &[("main.tf", "locals {}\n"), ("override.tf", "module \"m\" {\n  version = \"1.0.0\"\n}\n")],
        "Missing module call to override",
    ),
    (
        "override of an undefined aliased provider",
        &[("main.tf", "provider \"null\" {\n  alias = \"a\"\n}\n"), ("override.tf", "provider \"null\" {\n  alias = \"b\"\n}\n")],
        "Missing base provider configuration for override",
    ),
];

#[test]
fn configurations_terraform_rejects_are_rejected() {
    let env = TestEnv::new();
    // Words, not lines: terraform wraps its messages.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut mismatches = Vec::new();
    for (i, (case, files, summary)) in CASES.iter().enumerate() {
        let theirs = env.checkout(&format!("theirs-{i}"), files);
        let out = run_fail(
            env.terraform(&theirs)
                .args(["init", "-backend=false", "-no-color"]),
        );
        let tf = words(&stderr(&out));
        assert!(
            tf.contains(&format!("Error: {summary}")),
            "{case}: terraform says: {tf}"
        );
        let ours = env.checkout(&format!("ours-{i}"), files);
        let before = snapshot(&ours);
        let out = tstore(&env, None)
            .env("TSTORE_NO_FUSE", "1")
            .arg("init")
            .arg(&ours)
            .output()
            .expect("run tstore");
        let err = words(&stderr(&out));
        if out.status.success() || !err.contains(summary) {
            mismatches.push(format!("{case}: exit {:?}: {err}", out.status.code()));
        }
        if snapshot(&ours) != before {
            mismatches.push(format!("{case}: the working directory changed"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
