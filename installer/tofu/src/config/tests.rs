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
