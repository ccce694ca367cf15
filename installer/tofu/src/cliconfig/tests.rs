use super::*;

fn env_from(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

const FULL: &str = r#"
# comment
plugin_cache_dir = "~/cache"
disable_checkpoint = true

provider_installation {
  dev_overrides {
    "hashicorp/null" = "/dev/null-provider"
  }
  filesystem_mirror {
    path    = "/abs/dir"
    include = ["registry.terraform.io/hashicorp/*"]
  }
  network_mirror {
    url              = "https://host/prefix/"
    trust_all_hashes = true
  }
  direct {
    exclude = ["example.com/*/*", "hashicorp/aws"]
  }
}

host "Example.com" {
  services = {
    "providers.v1" = "https://example.com/v1/providers/"
  }
}

credentials "app.terraform.io" {
  token = "secret"
}
"#;

fn parse(src: &str) -> Result<CliConfig, CliConfigError> {
    let env = env_from(&[("HOME", "/home/u".into())]);
    CliConfig::parse_with_env(src, "test.tfrc", &env)
}

#[test]
fn parses_everything() {
    let c = parse(FULL).unwrap();
    assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/home/u/cache")));
    let m = c.provider_installation.as_ref().unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(
        m[0].kind,
        InstallMethodKind::DevOverrides(
            [(
                "hashicorp/null".to_owned(),
                PathBuf::from("/dev/null-provider")
            )]
            .into()
        )
    );
    assert_eq!(
        m[1].kind,
        InstallMethodKind::FilesystemMirror {
            path: "/abs/dir".into()
        }
    );
    assert_eq!(m[1].include, ["registry.terraform.io/hashicorp/*"]);
    assert_eq!(
        m[2].kind,
        InstallMethodKind::NetworkMirror {
            url: "https://host/prefix/".into(),
            trust_all_hashes: true,
        }
    );
    assert_eq!(m[3].kind, InstallMethodKind::Direct);
    assert_eq!(
        c.hosts["example.com"].services["providers.v1"],
        "https://example.com/v1/providers/"
    );
    assert_eq!(c.credentials["app.terraform.io"], "secret");
}

#[test]
fn matching_patterns() {
    let c = parse(FULL).unwrap();
    let methods = c.effective_methods(
        Flavor::Terraform,
        Path::new("/nonexistent"),
        &|_| None,
        &|_| Vec::new(),
    );
    let a = |s: &str| ProviderAddr::parse_normalized(s).unwrap();
    let fs = &methods[1];
    assert!(fs.matches(&a("registry.terraform.io/hashicorp/null")));
    assert!(!fs.matches(&a("registry.opentofu.org/hashicorp/null")));
    let direct = &methods[3];
    assert_eq!(
        direct.exclude,
        ["example.com/*/*", "registry.terraform.io/hashicorp/aws"]
    );
    assert!(!direct.matches(&a("example.com/test/fake")));
    assert!(!direct.matches(&a("registry.terraform.io/hashicorp/aws")));
    assert!(direct.matches(&a("registry.opentofu.org/hashicorp/aws")));
    assert!(direct.matches(&a("registry.terraform.io/hashicorp/null")));
    // Two-part patterns in a raw method use OpenTofu's host.
    let raw = &c.provider_installation.as_ref().unwrap()[3];
    assert!(!raw.matches(&a("registry.opentofu.org/hashicorp/aws")));
}

#[test]
fn errors_carry_file_and_line() {
    let cases = [
        (
            "provider_installation {\n  filesystem_mirror {\n  }\n}\n",
            "test.tfrc:2:",
            "\"path\" argument is required",
        ),
        (
            "provider_installation {\n  direct {}\n  dev_overrides {\n  }\n}\n",
            "test.tfrc:3:",
            "must appear before",
        ),
        (
            "provider_installation {\n  bogus {}\n}\n",
            "test.tfrc:2:",
            "Unknown provider installation method \"bogus\"",
        ),
        (
            "provider_installation {\n  direct {\n    include = [\"*/null\"]\n  }\n}\n",
            "test.tfrc:2:",
            "namespace can be a wildcard only",
        ),
        (
            "provider_installation {}\nprovider_installation {}\n",
            "test.tfrc:2:",
            "No more than one",
        ),
        (
            "provider_installation {\n  network_mirror {\n    url = 1\n  }\n}\n",
            "test.tfrc:3:",
            "must be a string",
        ),
        ("x = {\n", "test.tfrc:", "invalid CLI configuration syntax"),
    ];
    for (src, prefix, needle) in cases {
        let msg = parse(src).unwrap_err().to_string();
        assert!(
            msg.starts_with(prefix) && msg.contains(needle),
            "{src}: {msg}"
        );
    }
}

#[test]
fn load_order_and_env() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs_err::create_dir_all(home.join(".terraform.d")).unwrap();
    fs_err::write(
        home.join(".tofurc"),
        "plugin_cache_dir = \"/from/tofurc\"\n",
    )
    .unwrap();
    fs_err::write(
        home.join(".terraformrc"),
        "plugin_cache_dir = \"/from/terraformrc\"\n",
    )
    .unwrap();
    fs_err::write(
        home.join(".terraform.d/extra.tfrc"),
        "credentials \"x.io\" {\n  token = \"t\"\n}\n",
    )
    .unwrap();
    let h = home.display().to_string();

    let c = CliConfig::load(Flavor::Tofu, &env_from(&[("HOME", h.clone())])).unwrap();
    assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/from/tofurc")));
    assert_eq!(c.credentials["x.io"], "t");
    assert_eq!(c.source_files.len(), 2);

    let c = CliConfig::load(Flavor::Terraform, &env_from(&[("HOME", h.clone())])).unwrap();
    assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/from/terraformrc")));

    let c = CliConfig::load(
        Flavor::Tofu,
        &env_from(&[
            ("HOME", h.clone()),
            ("TF_PLUGIN_CACHE_DIR", "/env/cache".into()),
        ]),
    )
    .unwrap();
    assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/env/cache")));

    // An explicit file replaces everything else; a missing one is an error.
    let explicit = dir.path().join("explicit.tfrc");
    fs_err::write(&explicit, "provider_installation {\n  direct {}\n}\n").unwrap();
    let c = CliConfig::load(
        Flavor::Tofu,
        &env_from(&[
            ("HOME", h.clone()),
            ("TF_CLI_CONFIG_FILE", explicit.display().to_string()),
        ]),
    )
    .unwrap();
    assert_eq!(c.plugin_cache_dir, None);
    assert!(c.credentials.is_empty());
    assert_eq!(
        c.provider_installation.unwrap()[0].kind,
        InstallMethodKind::Direct
    );
    // A named file that does not exist is skipped, as terraform and tofu do; the
    // default files are still not read.
    let c = CliConfig::load(
        Flavor::Tofu,
        &env_from(&[
            ("HOME", h.clone()),
            (
                "TF_CLI_CONFIG_FILE",
                dir.path().join("missing").display().to_string(),
            ),
        ]),
    )
    .unwrap();
    let missing = dir.path().join("missing");
    assert_eq!(
        c.search.named_by,
        Some(("TF_CLI_CONFIG_FILE", missing.clone()))
    );
    assert_eq!(
        c.describe_files(),
        format!(
            "no CLI configuration file (TF_CLI_CONFIG_FILE names {}, which does not exist)",
            missing.display()
        )
    );
    assert_eq!(
        CliConfig {
            search: ConfigSearch::default(),
            ..c
        },
        CliConfig::default()
    );

    // `*.tfrc.json` files of the config directory are read as JSON, in name order with
    // the `*.tfrc` files.
    fs_err::write(
        home.join(".terraform.d/b.tfrc.json"),
        r#"{"credentials": {"json.example.com": {"token": "j"}}}"#,
    )
    .unwrap();
    let c = CliConfig::load(Flavor::Terraform, &env_from(&[("HOME", h.clone())])).unwrap();
    assert!(
        c.source_files.iter().any(|f| f.ends_with("b.tfrc.json")),
        "{:?}",
        c.source_files
    );
    assert!(c.credentials.contains_key("json.example.com"), "{c:?}");

    // No HOME and no override: empty config.
    assert_eq!(
        CliConfig::load(Flavor::Tofu, &|_| None).unwrap(),
        CliConfig::default()
    );
}

/// What was looked at and read is recorded: the main file and the config directory,
/// the files read, and the other tool's main file that exists but is not read.
#[test]
fn the_search_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fs_err::create_dir_all(&home).unwrap();
    let h = home.display().to_string();
    let env = env_from(&[("HOME", h.clone())]);

    let c = CliConfig::load(Flavor::Terraform, &env).unwrap();
    assert_eq!(
        c.search.candidates,
        vec![home.join(".terraformrc"), home.join(".terraform.d/*.tfrc")]
    );
    assert_eq!(
        c.describe_files(),
        format!(
            "no CLI configuration file (looked at {}, {})",
            home.join(".terraformrc").display(),
            home.join(".terraform.d/*.tfrc").display()
        )
    );
    assert!(c.search.other_tool_files.is_empty());

    // A ~/.tofurc is not read by terraform: said, not read.
    fs_err::write(home.join(".tofurc"), "plugin_cache_dir = \"/tofu\"\n").unwrap();
    let c = CliConfig::load(Flavor::Terraform, &env).unwrap();
    assert_eq!(c.plugin_cache_dir, None);
    assert_eq!(c.search.other_tool_files, vec![home.join(".tofurc")]);

    // Under tofu, ~/.tofurc hides ~/.terraformrc.
    fs_err::write(home.join(".terraformrc"), "plugin_cache_dir = \"/tf\"\n").unwrap();
    let c = CliConfig::load(Flavor::Tofu, &env).unwrap();
    assert_eq!(c.source_files, vec![home.join(".tofurc")]);
    assert_eq!(c.search.other_tool_files, vec![home.join(".terraformrc")]);
    assert_eq!(
        c.describe_files(),
        format!(
            "the CLI configuration file {}",
            home.join(".tofurc").display()
        )
    );
    let c = CliConfig::load(Flavor::Terraform, &env).unwrap();
    assert_eq!(c.source_files, vec![home.join(".terraformrc")]);
    assert_eq!(c.search.other_tool_files, vec![home.join(".tofurc")]);
}

#[test]
fn implied_methods() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    let home = dir.path().join("home");
    let local = cwd.join("terraform.d/plugins/example.com/test/fake/1.0.0/linux_amd64");
    fs_err::create_dir_all(&local).unwrap();
    fs_err::create_dir_all(home.join(".terraform.d/plugins")).unwrap();
    let env = env_from(&[
        ("HOME", home.display().to_string()),
        (
            "XDG_DATA_DIRS",
            dir.path().join("nope").display().to_string(),
        ),
    ]);
    // The local directory holds one provider; the home one none.
    let providers_in = |dir: &Path| {
        if dir.starts_with(&cwd) {
            vec![ProviderAddr::parse_source("example.com/test/fake", "x").unwrap()]
        } else {
            Vec::new()
        }
    };
    let methods = CliConfig::default().effective_methods(Flavor::Tofu, &cwd, &env, &providers_in);
    assert_eq!(methods.len(), 3);
    assert_eq!(
        methods[0].kind,
        InstallMethodKind::FilesystemMirror {
            path: cwd.join("terraform.d/plugins")
        }
    );
    assert_eq!(
        methods[1].kind,
        InstallMethodKind::FilesystemMirror {
            path: home.join(".terraform.d/plugins")
        }
    );
    assert_eq!(methods[2].kind, InstallMethodKind::Direct);
    assert_eq!(methods[2].exclude, ["example.com/test/fake"]);

    let dirs = implied_plugin_dirs(
        Flavor::Tofu,
        &cwd,
        &env_from(&[("HOME", "/h".into()), ("XDG_DATA_HOME", "/x".into())]),
    );
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    assert_eq!(
        dirs[1..],
        [
            "/h/.terraform.d/plugins",
            "/x/opentofu/plugins",
            "/x/terraform/plugins",
            "/usr/local/share/terraform/plugins",
            "/usr/share/terraform/plugins",
        ]
    );
}

#[test]
fn env_expansion() {
    let env = env_from(&[("A", "x".into())]);
    assert_eq!(expand_vars("/p/$A/${A}/$B/$", &env), "/p/x/x//$");
}

#[test]
fn oci_mirror_templates_keep_their_placeholders_and_must_name_each_provider() {
    let ok = [
        (r#"r.test/${hostname}/${namespace}/${type}"#, ""),
        (
            r#"r.test/mirror/${namespace}-${type}"#,
            r#"include = ["example.net/*/*"]"#,
        ),
        (
            r#"r.test/ns/${type}"#,
            r#"include = ["registry.opentofu.org/opentofu/*"]"#,
        ),
        (
            r#"r.test/fixed"#,
            r#"include = ["registry.opentofu.org/opentofu/foo"]"#,
        ),
        (
            r#"r.test/mirror/${type}"#,
            r#"include = ["example.net/hashicorp/*", "example.net/hashicorp/null"]"#,
        ),
    ];
    for (template, include) in ok {
        let src = format!(
            "provider_installation {{\n  oci_mirror {{\n    repository_template = \"{template}\"\n    {include}\n  }}\n}}\n"
        );
        let c = parse(&src).unwrap_or_else(|e| panic!("{template}: {e}"));
        assert_eq!(
            c.provider_installation.unwrap()[0].kind,
            InstallMethodKind::OciMirror {
                repository_template: template.to_owned()
            }
        );
    }
    let bad = [
        (r#"r.test/${namespace}/${type}"#, "", "must use ${hostname}"),
        (r#"r.test/${hostname}/${type}"#, "", "must use ${namespace}"),
        (
            r#"r.test/mirror/${type}"#,
            r#"include = ["example.net/*/*"]"#,
            "must use ${namespace}",
        ),
        (
            r#"r.test/${hostname}/${namespace}/${kind}"#,
            "",
            "unknown placeholder",
        ),
        // Each pattern fixes the namespace, but not to the same one: hashicorp/null and
        // other/null would share a repository.
        (
            r#"r.test/mirror/${type}"#,
            r#"include = ["example.net/hashicorp/*", "example.net/other/*"]"#,
            "must use ${namespace}",
        ),
        (
            r#"r.test/fixed"#,
            r#"include = ["example.net/a/x", "example.net/a/y"]"#,
            "must use ${type}",
        ),
        ("", "", "\"repository_template\" argument is required"),
    ];
    for (template, include, needle) in bad {
        let src = format!(
            "provider_installation {{\n  oci_mirror {{\n    repository_template = \"{template}\"\n    {include}\n  }}\n}}\n"
        );
        let msg = parse(&src).unwrap_err().to_string();
        assert!(msg.contains(needle), "{template}: {msg}");
    }
}

#[test]
fn oci_default_credentials_block() {
    let env = env_from(&[("HOME", "/home/u".into())]);
    let c = CliConfig::parse_with_env(
        "oci_default_credentials {\n  docker_style_config_files = [\"auth.json\", \"/etc/ci/docker.json\"]\n  docker_credentials_helper = \"ecr-login\"\n}\n",
        "/etc/tofu/ci.tfrc",
        &env,
    )
    .unwrap();
    assert_eq!(
        c.oci_default_credentials,
        Some(OciDefaultCredentials {
            discover_ambient_credentials: true,
            // A relative name is taken from the directory of the file that names it.
            docker_style_config_files: Some(vec![
                "/etc/tofu/auth.json".into(),
                "/etc/ci/docker.json".into()
            ]),
            docker_credentials_helper: Some("ecr-login".into()),
        })
    );
    let off = parse("oci_default_credentials {\n  discover_ambient_credentials = false\n}\n")
        .unwrap()
        .oci_default_credentials
        .unwrap();
    assert!(!off.discover_ambient_credentials);
    assert_eq!(off.docker_style_config_files, None);
    assert_eq!(parse("").unwrap().oci_default_credentials, None);
}

#[test]
fn oci_credentials_blocks() {
    let c = parse(
        "oci_credentials \"Registry.Example.com/team/\" {\n  username = \"ci\"\n  password = \"s3cret\"\n}\noci_credentials \"other.example.com\" {\n  docker_credentials_helper = \"ecr-login\"\n}\n",
    )
    .unwrap();
    assert_eq!(
        c.oci_credentials["registry.example.com/team"],
        OciCredentialsBlock::Login {
            username: "ci".into(),
            password: "s3cret".into()
        }
    );
    assert_eq!(
        c.oci_credentials["other.example.com"],
        OciCredentialsBlock::Helper("ecr-login".into())
    );
    assert!(!format!("{:?}", c.oci_credentials).contains("s3cret"));
    for (src, needle) in [
        (
            "oci_credentials \"r.test\" {\n  username = \"a\"\n  password = \"b\"\n}\noci_credentials \"R.test\" {\n  username = \"a\"\n  password = \"b\"\n}\n",
            "Duplicate oci_credentials block for \"r.test\"",
        ),
        (
            "oci_credentials \"r.test\" {\n  username = \"a\"\n}\n",
            "username and password together",
        ),
        (
            "oci_credentials \"r.test\" {\n  access_token = \"a\"\n}\n",
            "does not support the argument \"access_token\"",
        ),
        ("oci_credentials {\n}\n", "needs one label"),
        (
            "oci_default_credentials {\n  discover_ambient_credentials = false\n  docker_style_config_files = []\n}\n",
            "relevant only when that discovery is enabled",
        ),
        (
            "oci_default_credentials {\n  docker_credentials_helper = \"../evil\"\n}\n",
            "is invalid",
        ),
        (
            "oci_default_credentials {\n  discover_ambient_credentials = \"no\"\n}\n",
            "must be true or false",
        ),
        ("oci_default_credentials \"x\" {\n}\n", "takes no labels"),
        (
            "oci_default_credentials {\n}\noci_default_credentials {\n}\n",
            "No more than one oci_default_credentials block",
        ),
    ] {
        let msg = parse(src).unwrap_err().to_string();
        assert!(msg.contains(needle), "{src}: {msg}");
    }
}

#[test]
fn plugin_dirs_are_the_only_methods() {
    let cwd = Path::new("/w");
    let methods = CliConfig::plugin_dir_methods(cwd, &["mirror", "/abs/other"]);
    let kinds: Vec<_> = methods.iter().map(|m| m.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            InstallMethodKind::FilesystemMirror {
                path: PathBuf::from("/w/mirror")
            },
            InstallMethodKind::FilesystemMirror {
                path: PathBuf::from("/abs/other")
            },
        ]
    );
    assert!(methods
        .iter()
        .all(|m| m.include.is_empty() && m.exclude.is_empty()));
}

/// A provider pattern whose host has a character across its fourth byte (the input the
/// fuzz target `cli_config` found, minimized): an error, not a panic.
#[test]
fn pattern_host_with_a_character_across_the_fourth_byte() {
    let src = b"peYkpoint = tbue\n\nprovider_installation {\n esystemmi_ {\n   h    = \"~rror\"\n    include = [\"re>\xcd\x96?\x7f\x03\x00\x00pentofrg/(asp/*\"]\n  }\n  netwo= \"secret\"\n}\n";
    let src = std::str::from_utf8(src).unwrap();
    assert!(CliConfig::parse_with_env(src, "fuzz.tfrc", &|_| None).is_err());
    let src =
        "provider_installation {\n  direct {\n    include = [\"abc\u{e9}.example/*/*\"]\n  }\n}\n";
    assert!(CliConfig::parse_with_env(src, "fuzz.tfrc", &|_| None).is_ok());
}
