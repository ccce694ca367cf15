//! The module reader's unit tests, one per rule of the merge in `mod.rs` (over 700 lines
//! because that merge has that many rules; each test is short and stands alone).

use super::*;

fn module(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<ModuleRequirements, ConfigError>) {
    module_as(files, Flavor::Tofu)
}

fn module_as(
    files: &[(&str, &str)],
    flavor: Flavor,
) -> (tempfile::TempDir, Result<ModuleRequirements, ConfigError>) {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        fs_err::write(dir.path().join(name), content).unwrap();
    }
    let r = load_module_requirements(dir.path(), flavor);
    (dir, r)
}

fn summary(r: &ModuleRequirements) -> Vec<String> {
    r.providers
        .iter()
        .map(|(a, c)| format!("{a} [{}]", c.to_lock_string()))
        .collect()
}

#[test]
fn required_providers_and_implied() {
    let (_d, r) = module(&[
        (
            "main.tf",
            r#"
terraform {
  required_version = ">= 1.0"
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = "~>2.0,   >=2.0.0 , !=2.1.1"
    }
    fake = {
      source = "example.com/test/fake"
    }
    legacy = ">= 1.0"
    awsalt = {
      source = "hashicorp/aws"
    }
  }
}

resource "null_resource" "x" {}
resource "fake_thing" "y" {}
data "http" "z" {}
resource "aws_instance" "w" {
  provider = awsalt.west
}
data "terraform_remote_state" "s" {}
provider "google" {
  version = "< 5"
}
provider "google" {
  alias = "other"
}
module "child" {
  source  = "./child"
}
"#,
        ),
        (
            "versions.tf",
            "provider \"null\" {\n  version = \"<= 2.9\"\n}\n",
        ),
    ]);
    let r = r.unwrap();
    assert_eq!(
        summary(&r),
        [
            "example.com/test/fake []",
            "registry.opentofu.org/hashicorp/aws []",
            "registry.opentofu.org/hashicorp/google [< 5.0.0]",
            "registry.opentofu.org/hashicorp/http []",
            "registry.opentofu.org/hashicorp/legacy [>= 1.0.0]",
            "registry.opentofu.org/hashicorp/null [>= 2.0.0, ~> 2.0, != 2.1.1, <= 2.9.0]",
        ]
    );
    assert_eq!(r.module_calls["child"].source, "./child");
}

#[test]
fn tofu_files_win_and_overrides_replace_entries() {
    let (_d, r) = module(&[
            ("main.tf", "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\", version = \"1.0.0\" }\n  }\n}\n"),
            ("main.tofu", "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\", version = \"2.0.0\" }\n  }\n}\n"),
            ("override.tf", "terraform {\n  required_providers {\n    null = { source = \"example.com/x/null\", version = \"3.0.0\" }\n  }\n}\n"),
            ("res.tf", "resource \"null_resource\" \"r\" {}\n"),
            (".hidden.tf", "this is not parsed {"),
            ("notes.txt", "ignored {"),
        ]);
    assert_eq!(summary(&r.unwrap()), ["example.com/x/null [3.0.0]"]);
}

#[test]
fn json_syntax() {
    let (_d, r) = module(&[
        (
            "main.tf.json",
            r#"{
  "terraform": [{"required_providers": {"null": {"source": "hashicorp/null", "version": "~> 2.1"}}}],
  "resource": {"null_resource": {"x": {}}, "aws_instance": {"y": [{"provider": "myaws.west"}]}},
  "provider": {"google": [{"version": ">= 4"}, {"alias": "b"}]},
  "module": {"m": {"source": "hashicorp/consul/aws", "version": "1.0.0"}}
}"#,
        ),
        ("tf.tofu.json", r#"{"data": {"http": {"d": {}}}}"#),
    ]);
    let r = r.unwrap();
    assert_eq!(
        summary(&r),
        [
            "registry.opentofu.org/hashicorp/google [>= 4.0.0]",
            "registry.opentofu.org/hashicorp/http []",
            "registry.opentofu.org/hashicorp/myaws []",
            "registry.opentofu.org/hashicorp/null [~> 2.1]",
        ]
    );
    assert_eq!(r.module_calls["m"].version.as_deref(), Some("1.0.0"));
}

#[test]
fn errors_name_file_and_line() {
    let cases: &[(&str, &str, &str)] = &[
            ("main.tf", "terraform {\n  required_providers {\n    null = {\n      source = \"hashicorp/terraform-provider-null\"\n", "main.tf:"),
            ("main.tf", "resource \"x\" {\n  = 1\n}\n", "main.tf:2:"),
            (
                "main.tf",
                "\n\nterraform {\n  required_providers {\n    null = {\n      source = \"a/b/c/d\"\n    }\n  }\n}\n",
                "main.tf:5: Invalid provider source string",
            ),
            (
                "main.tf",
                "terraform {\n  required_providers {\n    null = {\n      version = \"~>> 1\"\n    }\n  }\n}\n",
                "main.tf:4: Invalid version constraint",
            ),
            (
                "main.tf",
                "terraform {\n  required_providers {\n    null = { bogus = \"x\" }\n  }\n}\n",
                "main.tf:3: Invalid required_providers object",
            ),
            ("main.tf.json", "{\n  \"terraform\": \n}", "main.tf.json:3:"),
        ];
    for (name, src, needle) in cases {
        let (d, r) = module(&[(name, src)]);
        let msg = r.unwrap_err().to_string();
        let rel = msg.replace(&format!("{}/", d.path().display()), "");
        assert!(rel.starts_with(needle), "{src}\n=> {rel}");
    }
    // Two required_providers blocks in primary files.
    let (_d, r) = module(&[
        ("a.tf", "terraform {\n  required_providers {}\n}\n"),
        ("b.tf", "terraform {\n  required_providers {}\n}\n"),
    ]);
    assert!(r
        .unwrap_err()
        .to_string()
        .contains("Duplicate required providers configuration"));
    let missing =
        load_module_requirements(Path::new("/nonexistent/dir"), Flavor::Tofu).unwrap_err();
    assert!(matches!(missing, ConfigError::ReadDir { .. }));
}

#[test]
fn terraform_flavor_default_host_and_builtin_skipped() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("main.tf"),
        "resource \"null_resource\" \"x\" {}\nprovider \"terraform\" {}\n",
    )
    .unwrap();
    let r = load_module_requirements(dir.path(), Flavor::Terraform).unwrap();
    assert_eq!(summary(&r), ["registry.terraform.io/hashicorp/null []"]);
}

fn module_tf(files: &[(&str, &str)]) -> Result<ModuleRequirements, ConfigError> {
    module(files).1
}

/// Override files merge into the primary `module` block argument by argument, as tofu
/// does; an override needs a base, and a primary block needs its `source`.
#[test]
fn module_blocks_merge_with_overrides() {
    let main = "module \"m\" {\n  source  = \"acme/m/null\"\n  version = \"1.0.0\"\n}\n";
    let r = module_tf(&[
        ("main.tf", main),
        ("override.tf", "module \"m\" {\n  version = \"2.0.0\"\n}\n"),
    ])
    .unwrap();
    assert_eq!(r.module_calls["m"].source, "acme/m/null");
    assert_eq!(r.module_calls["m"].version.as_deref(), Some("2.0.0"));

    let r = module_tf(&[
        ("main.tf", main),
        (
            "a_override.tf",
            "module \"m\" {\n  source = \"./local\"\n}\n",
        ),
        (
            "b_override.tf.json",
            r#"{"module": {"m": {"version": "3.0.0"}}}"#,
        ),
    ])
    .unwrap();
    assert_eq!(r.module_calls["m"].source, "./local");
    assert_eq!(r.module_calls["m"].version.as_deref(), Some("3.0.0"));

    let cases = [
        (
            vec![
                ("main.tf", main),
                ("override.tf", "module \"x\" {\n  version = \"1\"\n}\n"),
            ],
            "Missing module call to override",
            "override.tf:1",
        ),
        (
            vec![("main.tf", main), ("other.tf", main)],
            "Duplicate module call",
            "other.tf:1",
        ),
        (
            vec![("main.tf", "module \"m\" {\n  version = \"1.0.0\"\n}\n")],
            "Missing required argument",
            "main.tf:1",
        ),
        (
            vec![
                ("main.tf", "provider \"null\" {\n  alias = \"a\"\n}\n"),
                (
                    "override.tf",
                    "provider \"null\" {\n  alias   = \"b\"\n  version = \"1.0\"\n}\n",
                ),
            ],
            "Missing base provider configuration for override",
            "override.tf:1",
        ),
    ];
    for (files, summary, at) in cases {
        let err = module_tf(&files).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, ConfigError::Invalid { summary: s, .. } if *s == summary),
            "{files:?}: {text}"
        );
        assert!(text.contains(at), "{files:?}: {text} does not name {at}");
    }

    // A default provider configuration may be created by an override.
    let r = module_tf(&[
        ("main.tf", "resource \"null_resource\" \"x\" {}\n"),
        (
            "override.tf",
            "provider \"null\" {\n  version = \"~> 2.1\"\n}\n",
        ),
    ])
    .unwrap();
    assert_eq!(
        summary(&r),
        ["registry.opentofu.org/hashicorp/null [~> 2.1]"]
    );
}

/// A module's `source` and `version` that are not literals: terraform refuses them with
/// its diagnostics; tofu evaluates them early from variables, locals and functions.
#[test]
fn non_literal_module_sources_follow_the_flavor() {
    let cases = [
        (
            "variable \"v\" {\n  default = \"1.0.0\"\n}\nmodule \"m\" {\n  source  = \"acme/m/null\"\n  version = var.v\n}\n",
            "Variables not allowed",
            "main.tf:6",
            Ok(("acme/m/null", Some("1.0.0"))),
        ),
        (
            "variable \"s\" {\n  default = \"./x\"\n}\nmodule \"m\" {\n  source = format(\"%s\", var.s)\n}\n",
            "Function calls not allowed",
            "main.tf:5",
            Ok(("./x", None)),
        ),
        (
            "locals {\n  base = \"./mods\"\n}\nmodule \"m\" {\n  source = \"${local.base}/x\"\n}\n",
            "Variables not allowed",
            "main.tf:5",
            Ok(("./mods/x", None)),
        ),
        (
            "module \"m\" {\n  source = \"${var.s}/x\"\n}\n",
            "Variables not allowed",
            "main.tf:2",
            Err("Unable to compute static value"),
        ),
        (
            "variable \"s\" {}\nmodule \"m\" {\n  source = var.s\n}\n",
            "Variables not allowed",
            "main.tf:3",
            Err("No value for required variable"),
        ),
        (
            "module \"m\" {\n  source = aws_s3_bucket.b.id\n}\n",
            "Variables not allowed",
            "main.tf:2",
            Err("Unable to compute static value"),
        ),
    ];
    for (main, terraform_summary, at, tofu) in cases {
        let files = [("main.tf", main)];
        let err = module_as(&files, Flavor::Terraform).1.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, ConfigError::Invalid { summary: s, .. } if *s == terraform_summary),
            "{main}: {text}"
        );
        assert!(text.contains(at), "{main}: {text} does not name {at}");
        match (module_as(&files, Flavor::Tofu).1, tofu) {
            (Ok(r), Ok((source, version))) => {
                let call = &r.module_calls["m"];
                assert_eq!(call.source, source, "{main}");
                assert_eq!(call.version.as_deref(), version, "{main}");
            }
            (Err(e), Err(summary)) => {
                let text = e.to_string();
                assert!(
                    matches!(&e, ConfigError::Invalid { summary: s, .. } if *s == summary),
                    "{main}: {text}"
                );
                assert!(text.contains(at), "{main}: {text} does not name {at}");
            }
            (got, want) => panic!("{main}: got {got:?}, want {want:?}"),
        }
    }
}

/// The error of loading `files` under `flavor`, as `FILE:LINE: SUMMARY: DETAIL` with the
/// temporary directory left out; panics when the module loads.
fn error_as(files: &[(&str, &str)], flavor: Flavor) -> String {
    let (d, r) = module_as(files, flavor);
    match r {
        Ok(_) => panic!("{files:?} loads under {flavor}"),
        Err(e) => e
            .to_string()
            .replace(&format!("{}/", d.path().display()), ""),
    }
}

/// A block header must have the labels its type takes, at the top level and in the nested
/// blocks the configuration decoder reads itself; the words are HCL's, the line is the
/// first extraneous label's (or the block's, when one is missing).
/// upstream: hclsyntax/structure.go@v2.10.1 (hashicorp/hcl), internal/configs/*.go@v1.0.3
#[test]
fn block_labels_are_counted_as_hcl_counts_them() {
    let cases = [
        (
            "resource \"null_resource\" \"x\" \"y\" {}\n",
            "main.tf:1: Extraneous label for resource: Only 2 labels (type, name) are expected for resource blocks.",
        ),
        (
            "locals \"x\" {}\n",
            "main.tf:1: Extraneous label for locals: No labels are expected for locals blocks.",
        ),
        (
            "resource {}\n",
            "main.tf:1: Missing type for resource: All resource blocks must have 2 labels (type, name).",
        ),
        (
            "data \"null_data_source\" {}\n",
            "main.tf:1: Missing name for data: All data blocks must have 2 labels (type, name).",
        ),
        (
            "terraform {\n  backend \"local\" \"x\" {}\n}\n",
            "main.tf:2: Extraneous label for backend: Only 1 labels (type) are expected for backend blocks.",
        ),
        (
            "terraform {\n  required_providers \"x\" {}\n}\n",
            "main.tf:2: Extraneous label for required_providers: No labels are expected for required_providers blocks.",
        ),
        (
            "terraform {\n  backend {}\n}\n",
            "main.tf:2: Missing type for backend: All backend blocks must have 1 labels (type).",
        ),
        (
            "resource \"null_resource\" \"x\" {\n  provisioner \"local-exec\" \"y\" {}\n}\n",
            "main.tf:2: Extraneous label for provisioner: Only 1 labels (type) are expected for provisioner blocks.",
        ),
        (
            "resource \"null_resource\" \"x\" {\n  lifecycle \"y\" {}\n}\n",
            "main.tf:2: Extraneous label for lifecycle: No labels are expected for lifecycle blocks.",
        ),
        (
            "variable \"v\" {\n  validation \"x\" {\n    condition     = true\n    error_message = \"The v.\"\n  }\n}\n",
            "main.tf:2: Extraneous label for validation: No labels are expected for validation blocks.",
        ),
        (
            "module \"m\" {\n  source = \"./m\"\n  provider {}\n}\n",
            "main.tf:3: Missing type for provider: All provider blocks must have 1 labels (type).",
        ),
        (
            "check \"c\" {\n  data \"http\" {}\n}\n",
            "main.tf:2: Missing name for data: All data blocks must have 2 labels (type, name).",
        ),
        (
            "output \"o\" {\n  value = 1\n  precondition \"p\" {}\n}\n",
            "main.tf:3: Extraneous label for precondition: No labels are expected for precondition blocks.",
        ),
        // The header of a block the decoder leaves to the provider's schema is not read
        // at init (the body of a dynamic block, a provider's own nested blocks).
    ];
    for (src, want) in cases {
        for flavor in [Flavor::Tofu, Flavor::Terraform] {
            assert_eq!(
                error_as(&[("main.tf", src)], flavor),
                want,
                "{flavor}: {src}"
            );
        }
    }
    let (_d, r) = module(&[(
        "main.tf",
        "resource \"null_resource\" \"x\" {\n  dynamic \"d\" {\n    for_each = []\n    content {}\n  }\n  setting \"free\" {}\n}\n",
    )]);
    r.unwrap();
}

/// A top-level block type, or a block type inside `terraform`, that the flavor's tool does
/// not know is refused with HCL's words (and its suggestion of a close name). Block types
/// newer than terraform 1.0 stay accepted where the flavor's current release knows them.
/// upstream: internal/configs/parser_config.go@v1.0.3, @HEAD (hashicorp/terraform),
/// internal/configs/parser_config.go@v1.12.6 (opentofu/opentofu), json/structure.go@v2.10.1
#[test]
fn unknown_block_types_follow_the_flavor() {
    let both = [Flavor::Tofu, Flavor::Terraform];
    let refused: &[(&str, &str, &[Flavor], &str)] = &[
        ("main.tf", "foo {}\n", &both, "main.tf:1: Unsupported block type: Blocks of type \"foo\" are not expected here."),
        ("main.tf", "varyable \"x\" {}\n", &both, "main.tf:1: Unsupported block type: Blocks of type \"varyable\" are not expected here. Did you mean \"variable\"?"),
        ("main.tf", "terraform {\n  foo {}\n}\n", &both, "main.tf:2: Unsupported block type: Blocks of type \"foo\" are not expected here."),
        ("main.tf", "action \"aws_lambda_invoke\" \"x\" {}\n", &[Flavor::Tofu], "main.tf:1: Unsupported block type: Blocks of type \"action\" are not expected here."),
        ("main.tf", "language {}\n", &[Flavor::Terraform], "main.tf:1: Unsupported block type: Blocks of type \"language\" are not expected here."),
        ("main.tf", "terraform {\n  encryption {}\n}\n", &[Flavor::Terraform], "main.tf:2: Unsupported block type: Blocks of type \"encryption\" are not expected here."),
        ("main.tf", "terraform {\n  state_store \"s3\" {}\n}\n", &[Flavor::Tofu], "main.tf:2: Unsupported block type: Blocks of type \"state_store\" are not expected here."),
        ("main.tf.json", "{\"foo\": {}}", &both, "main.tf.json: Extraneous JSON object property: No argument or block type is named \"foo\"."),
        ("main.tf.json", "{\"variabel\": {}}", &both, "main.tf.json: Extraneous JSON object property: No argument or block type is named \"variabel\". Did you mean \"variable\"?"),
        ("main.tf.json", "{\"action\": {}}", &[Flavor::Tofu], "main.tf.json: Extraneous JSON object property: No argument or block type is named \"action\"."),
        ("main.tf.json", "{\"language\": {}}", &[Flavor::Terraform], "main.tf.json: Extraneous JSON object property: No argument or block type is named \"language\"."),
    ];
    for (name, src, flavors, want) in refused {
        for flavor in *flavors {
            assert_eq!(&error_as(&[(name, src)], *flavor), want, "{flavor}: {src}");
        }
    }
    let accepted: &[(&str, &[Flavor])] = &[
        ("moved {\n  from = a.b\n  to   = a.c\n}\nimport {\n  to = a.b\n  id = \"x\"\n}\nremoved {\n  from = a.d\n}\ncheck \"c\" {\n  assert {\n    condition     = true\n    error_message = \"c\"\n  }\n}\nephemeral \"random_password\" \"p\" {}\n", &both),
        ("terraform {\n  backend \"local\" {}\n  cloud {}\n  provider_meta \"null\" {}\n}\n", &both),
        ("action \"aws_lambda_invoke\" \"x\" {}\n", &[Flavor::Terraform]),
        ("terraform {\n  state_store \"s3\" {}\n}\n", &[Flavor::Terraform]),
        ("language {}\n", &[Flavor::Tofu]),
        ("terraform {\n  encryption {}\n}\n", &[Flavor::Tofu]),
    ];
    for (src, flavors) in accepted {
        for flavor in *flavors {
            module_as(&[("main.tf", src)], *flavor)
                .1
                .unwrap_or_else(|e| panic!("{flavor}: {src}: {e}"));
        }
    }
    // terraform's action blocks imply their provider, as resources do.
    let r = module_as(
        &[(
            "main.tf",
            "action \"aws_lambda_invoke\" \"x\" {}\naction \"other_thing\" \"y\" {\n  provider = google.west\n}\n",
        )],
        Flavor::Terraform,
    )
    .1
    .unwrap();
    assert_eq!(
        summary(&r),
        [
            "registry.terraform.io/hashicorp/aws []",
            "registry.terraform.io/hashicorp/google []"
        ]
    );
}

/// A provider local name is written normalized wherever the configuration names one: a
/// `provider` block, a `provider` argument, a module's `providers` map (both sides), a
/// `provider_meta` block, a `required_providers` entry.
/// upstream: internal/configs/provider.go@v1.0.3, internal/configs/resource.go@v1.0.3,
/// internal/configs/module_call.go@v1.0.3, internal/configs/provider_meta.go@v1.0.3
#[test]
fn provider_local_names_are_normalized_everywhere() {
    let refused = [
        ("main.tf", "provider \"TEST\" {}\n", "main.tf:1"),
        ("main.tf", "provider \"foo_bar\" {}\n", "main.tf:1"),
        (
            "main.tf",
            "resource \"test_x\" \"y\" {\n  provider = TEST\n}\n",
            "main.tf:2",
        ),
        (
            "main.tf",
            "data \"test_x\" \"y\" {\n  provider = TEST.west\n}\n",
            "main.tf:2",
        ),
        (
            "main.tf",
            "module \"m\" {\n  source = \"./m\"\n  providers = {\n    TEST = test\n  }\n}\n",
            "main.tf:4",
        ),
        (
            "main.tf",
            "module \"m\" {\n  source = \"./m\"\n  providers = {\n    test = TEST.x\n  }\n}\n",
            "main.tf:4",
        ),
        (
            "main.tf",
            "terraform {\n  provider_meta \"TEST\" {}\n}\n",
            "main.tf:2",
        ),
        (
            "main.tf.json",
            "{\"provider\": {\"TEST\": {}}}",
            "main.tf.json",
        ),
        (
            "main.tf.json",
            "{\"resource\": {\"test_x\": {\"y\": {\"provider\": \"TEST\"}}}}",
            "main.tf.json",
        ),
        (
            "main.tf.json",
            "{\"module\": {\"m\": {\"source\": \"./m\", \"providers\": {\"TEST\": \"test\"}}}}",
            "main.tf.json",
        ),
    ];
    for (name, src, at) in refused {
        for flavor in [Flavor::Tofu, Flavor::Terraform] {
            let err = error_as(&[(name, src)], flavor);
            assert!(
                err.starts_with(&format!("{at}: Invalid provider local name: ")),
                "{flavor}: {src}: {err}"
            );
        }
    }
    assert_eq!(
        error_as(&[("main.tf", "provider \"TEST\" {}\n")], Flavor::Terraform),
        "main.tf:1: Invalid provider local name: \"TEST\" is an invalid provider local name: must be lower case; try \"test\"."
    );
    // Normalized names, aliases, and the legacy string form of required_providers (which
    // terraform 1.0.3 does not check) load.
    let r = module(&[(
        "main.tf",
        "terraform {\n  required_providers {\n    LEGACY = \"1.0\"\n  }\n}\nprovider \"test\" {\n  alias = \"west\"\n}\nresource \"test_x\" \"y\" {\n  provider = test.west\n}\nmodule \"m\" {\n  source = \"./m\"\n  providers = {\n    test = test.west\n  }\n}\n",
    )])
    .1;
    r.unwrap();
}

/// `for_each` is reserved in a provider block by terraform (every release); tofu (1.9 and
/// later) takes it.
/// upstream: internal/configs/provider.go@v1.0.3 (hashicorp/terraform),
/// internal/configs/provider.go@v1.12.6 (opentofu/opentofu)
#[test]
fn provider_for_each_follows_the_flavor() {
    let src = "provider \"null\" {\n  alias    = \"each\"\n  for_each = toset([\"a\"])\n}\n";
    assert_eq!(
        error_as(&[("main.tf", src)], Flavor::Terraform),
        "main.tf:3: Reserved argument name in provider block: The provider argument name \"for_each\" is reserved for use by Terraform in a future version."
    );
    module_as(&[("main.tf", src)], Flavor::Tofu).1.unwrap();
}

#[test]
fn required_version_and_newer_blocks_are_checked_against_the_release() {
    use crate::tool_version::ToolVersion;
    let tool = |v: &str| ToolVersion::parse(v, Flavor::Terraform).unwrap();
    let (_d, r) = module_as(
        &[
            (
                "main.tf",
                "terraform {\n  required_version = \">= 1.5\"\n}\nmoved {\n  from = a.b\n  to = a.c\n}\n",
            ),
            ("b.tf.json", r#"{"terraform": {"required_version": "< 2.0"}}"#),
        ],
        Flavor::Terraform,
    );
    let r = r.unwrap();
    assert_eq!(r.required_versions.len(), 2);
    assert_eq!(r.newer_blocks[0].0, "moved");
    assert!(check_tool_version(&r, &tool("1.11.4")).is_ok());
    let old = check_tool_version(&r, &tool("1.0.3"))
        .unwrap_err()
        .to_string();
    assert!(
        old.contains("main.tf:4") && old.contains("Unsupported block type"),
        "{old}"
    );
    let between = check_tool_version(&r, &tool("1.4.0"))
        .unwrap_err()
        .to_string();
    assert!(
        between.contains("Unsupported Terraform Core version")
            && between.contains("main.tf:2")
            && between.contains("version 1.4.0"),
        "{between}"
    );
    let (_d, bad) = module_as(
        &[(
            "main.tf",
            "terraform {\n  required_version = \"nonsense\"\n}\n",
        )],
        Flavor::Terraform,
    );
    let err = check_tool_version(&bad.unwrap(), &tool("1.4.0"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("Invalid required_version constraint"), "{err}");

    // An override file's constraint replaces the primary files'.
    let (_d, r) = module_as(
        &[
            (
                "main.tf",
                "terraform {\n  required_version = \"< 1.0\"\n}\n",
            ),
            (
                "x_override.tf",
                "terraform {\n  required_version = \">= 1.0\"\n}\n",
            ),
        ],
        Flavor::Terraform,
    );
    assert!(check_tool_version(&r.unwrap(), &tool("1.4.0")).is_ok());
}

#[test]
fn symbol_libraries_are_refused_with_what_to_run() {
    use crate::tool_version::ToolVersion;
    let src = "symbols \"lib\" {\n  source = \"./lib\"\n}\n";
    let (_d, r) = module_as(&[("main.tf", src)], Flavor::Tofu);
    let r = r.unwrap();
    let tofu = |v: &str| ToolVersion::parse(v, Flavor::Tofu).unwrap();
    let new = check_tool_version(&r, &tofu("1.13.0"))
        .unwrap_err()
        .to_string();
    assert!(
        new.contains("run `tofu init`") && new.contains("main.tf:1"),
        "{new}"
    );
    let old = check_tool_version(&r, &tofu("1.12.2"))
        .unwrap_err()
        .to_string();
    assert!(old.contains("Unsupported block type"), "{old}");
    // Terraform has no such block.
    let (_d, tf) = module_as(&[("main.tf", src)], Flavor::Terraform);
    assert!(tf
        .unwrap_err()
        .to_string()
        .contains("Unsupported block type"));
}

/// Found by fuzzing: unclosed objects after chained binary operators made the parser retry
/// each nesting level (2^N steps; a 548-byte file took 10 s under the fuzzer, 60 levels
/// never finished). The parse is linear now and fails with a syntax error naming the file.
#[test]
fn unclosed_objects_after_chained_operators_fail_at_once() {
    let mut text = String::from("locals {\n  x = a == 1 - {\n");
    for _ in 0..60 {
        text.push_str("    o = a == \"a\" - {\n");
    }
    let (_dir, r) = module(&[("main.tf", text.as_str())]);
    let e = r.unwrap_err();
    assert!(e.to_string().contains("main.tf"), "{e}");
}

/// `import` blocks add the provider of a target the tool will generate, and a `check`
/// block's data source its provider; a `provider` argument the declared target does not
/// share is refused (terraform's and OpenTofu's `addProviderRequirements`).
#[test]
fn import_and_check_blocks_name_providers() {
    let hcl = "import {\n  to = generated_thing.x[\"k\"]\n  id = \"a\"\n}\ncheck \"c\" {\n  data \"checked_status\" \"s\" {}\n  assert {\n    condition     = data.checked_status.s.ok\n    error_message = \"x\"\n  }\n}\n";
    let json = r#"{"import": [{"to": "generated_thing.x[\"k\"]", "id": "a"}], "check": {"c": {"data": {"checked_status": {"s": {}}}, "assert": [{"condition": "${data.checked_status.s.ok}", "error_message": "x"}]}}}"#;
    for files in [[("main.tf", hcl)], [("main.tf.json", json)]] {
        let (_dir, r) = module_as(&files, Flavor::Terraform);
        assert_eq!(
            summary(&r.unwrap()),
            [
                "registry.terraform.io/hashicorp/checked []",
                "registry.terraform.io/hashicorp/generated []"
            ]
        );
    }
    let refused = "resource \"null_resource\" \"x\" {}\nimport {\n  to       = null_resource.x\n  id       = \"a\"\n  provider = null.other\n}\n";
    let (_dir, r) = module_as(&[("main.tf", refused)], Flavor::Terraform);
    let err = r.unwrap_err().to_string();
    assert!(
        err.contains("main.tf:5: Invalid import provider argument"),
        "{err}"
    );
}
