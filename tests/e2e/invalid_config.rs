//! Configurations terraform's init rejects are rejected by tstore too, with terraform's
//! summary, and leave the working directory as it was. terraform 1.0.3 judges every case
//! first, so a case that it accepts fails the test instead of passing silently.

use tstore_test_support::{run_fail, snapshot, stderr, TestEnv};

use crate::common::TstoreEnv as _;

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
    (
        "depends_on in a resource override",
        &[("main.tf", "resource \"null_resource\" \"a\" {}\nresource \"null_resource\" \"b\" {}\n"), ("override.tf", "resource \"null_resource\" \"a\" {\n  depends_on = [null_resource.b]\n}\n")],
        "Unsupported override",
    ),
    (
        "depends_on in an output override",
        &[("main.tf", "output \"o\" {\n  value = 1\n}\n"), ("x_override.tf", "output \"o\" {\n  depends_on = [local.l]\n}\nlocals {\n}\n")],
        "Unsupported override",
    ),
    (
        "override of an undeclared variable",
        &[("main.tf", "locals {}\n"), ("override.tf", "variable \"v\" {\n  default = 1\n}\n")],
        "Missing base variable declaration to override",
    ),
    (
        "override of an undefined local value",
        &[("main.tf", "locals {\n  a = 1\n}\n"), ("override.tf", "locals {\n  b = 2\n}\n")],
        "Missing base local value definition to override",
    ),
    (
        "override of an undefined output",
        &[("main.tf", "locals {}\n"), ("override.tf", "output \"o\" {\n  value = 1\n}\n")],
        "Missing base output definition to override",
    ),
    (
        "override of an undeclared resource",
        &[("main.tf", "locals {}\n"), ("override.tf", "resource \"null_resource\" \"a\" {}\n")],
        "Missing resource to override",
    ),
    (
        "override of an undeclared data source",
        &[("main.tf", "locals {}\n"), ("override.tf", "data \"null_data_source\" \"a\" {}\n")],
        "Missing data resource to override",
    ),
    (
        "an overridden type its default does not fit",
        &[("main.tf", "variable \"v\" {\n  type    = string\n  default = \"abc\"\n}\n"), ("override.tf", "variable \"v\" {\n  type = number\n}\n")],
        "Invalid default value for variable",
    ),
    (
        "an overridden default its type does not take",
        &[("main.tf", "variable \"v\" {\n  type    = bool\n  default = true\n}\n"), ("override.tf", "variable \"v\" {\n  default = [1]\n}\n")],
        "Invalid default value for variable",
    ),
    (
        "a default its own type does not take",
        &[("main.tf", "variable \"v\" {\n  type    = list(string)\n  default = \"x\"\n}\n")],
        "Invalid default value for variable",
    ),
    (
        "override of an undeclared data source in JSON",
        &[("main.tf", "locals {}\n"), ("override.tf.json", "{\"data\": {\"null_data_source\": {\"a\": {}}}}\n")],
        "Missing data resource to override",
    ),
];

/// Refused by terraform 1.11.4 (blocks and arguments terraform 1.0.3 does not know).
const CASES_NEWER_THAN_1_0: &[(&str, Files, &str)] = &[
    (
        "an overridden null default where nullable is false",
        &[("main.tf", "variable \"v\" {\n  type     = string\n  nullable = false\n  default  = \"a\"\n}\n"), ("override.tf", "variable \"v\" {\n  default = null\n}\n")],
        "Invalid default value for variable",
    ),
    (
        "a moved block in an override file",
        &[
            ("main.tf", "resource \"null_resource\" \"a\" {}\n"),
            (
                "override.tf",
                "moved {\n  from = null_resource.b\n  to   = null_resource.a\n}\n",
            ),
        ],
        "Cannot override 'moved' blocks",
    ),
    (
        "an import block in an override file",
        &[
            ("main.tf", "resource \"null_resource\" \"a\" {}\n"),
            (
                "override.tf",
                "import {\n  to = null_resource.a\n  id = \"x\"\n}\n",
            ),
        ],
        "Cannot override 'import' blocks",
    ),
];

#[test]
fn configurations_terraform_rejects_are_rejected() {
    let peers = tstore_test_support::peers();
    let mut cases_1_11: Vec<_> = CASES.to_vec();
    cases_1_11.extend_from_slice(CASES_NEWER_THAN_1_0);
    judge_cases(&peers.terraform, "terraform 1.0.3", CASES);
    judge_cases(&peers.terraform_current, "terraform 1.11.4", &cases_1_11);
}

/// Each case refused by `judge` with `summary`, then by tstore told the judge's release.
fn judge_cases(judge: &std::path::Path, tool: &str, cases: &[(&str, Files, &str)]) {
    let env = TestEnv::new();
    // Words, not lines: terraform wraps its messages.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut mismatches = Vec::new();
    for (i, (case, files, summary)) in cases.iter().enumerate() {
        let theirs = env.checkout(&format!("theirs-{i}"), files);
        let out = run_fail(env.command(judge).current_dir(&theirs).args([
            "init",
            "-backend=false",
            "-no-color",
        ]));
        let tf = words(&stderr(&out));
        assert!(
            tf.contains(&format!("Error: {summary}")),
            "{case}: {tool} says: {tf}"
        );
        let ours = env.checkout(&format!("ours-{i}"), files);
        let before = snapshot(&ours);
        let out = env
            .tstore()
            .no_fuse()
            .tool_version(tool)
            .arg("init")
            .arg(&ours)
            .output();
        let err = words(&stderr(&out));
        if out.status.success() || !err.contains(summary) {
            mismatches.push(format!(
                "{tool}, {case}: exit {:?}: {err}",
                out.status.code()
            ));
        }
        if snapshot(&ours) != before {
            mismatches.push(format!("{case}: the working directory changed"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
