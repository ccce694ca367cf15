//! Credentials for an OCI registry: a login from a docker-style config, a credential helper,
//! the CLI configuration's `oci_credentials` and `oci_default_credentials` blocks; the
//! bearer flow of a registry that trusts a token service.

use std::path::Path;

use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{lock_file, run_ok, stderr, TestEnv, NULL_H1};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};
use crate::oci_fixture::{null_zips, oci_cli_config};

/// A registry behind htpasswd: the login comes from a docker-style config.json (as `docker
/// login` writes it); without it, init fails naming the registry, and nothing is written.
#[test]
fn a_registry_login_comes_from_the_docker_config() {
    use base64::Engine as _;

    let env = TestEnv::new();
    let registry = OciRegistry::start_with_login("ci", "s3cret");
    registry.push_provider("mirror/hashicorp/null", "2.1.2", &null_zips()[..1]);
    let ca = registry.write_ca(&env.root.path().join("ca.pem"));
    let cfg = oci_cli_config(&env, &registry.host());
    let init = |dir: &Path| {
        env.tstore()
            .cli_config(&cfg)
            .env("SSL_CERT_FILE", &ca)
            .arg("init")
            .arg(dir)
    };

    // A file found by searching that is not valid is skipped with a warning: it belongs to
    // other programs too.
    let xdg_auth = env.root.path().join("xdg/config/containers/auth.json");
    fs_err::create_dir_all(xdg_auth.parent().unwrap()).unwrap();
    fs_err::write(&xdg_auth, "{not json").unwrap();
    let without = env.checkout("without", &[("main.tf", NULL_CONFIG)]);
    let err = stderr(&init(&without).fails());
    assert!(err.contains("requires authentication"), "{err}");
    assert!(
        err.contains("skipping registry credentials") && err.contains("auth.json"),
        "{err}"
    );
    assert!(err.contains(&registry.host()), "{err}");
    assert!(!without.join(".terraform.lock.hcl").exists());

    let auth = base64::engine::general_purpose::STANDARD.encode("ci:s3cret");
    fs_err::create_dir_all(env.home.join(".docker")).unwrap();
    fs_err::write(
        env.home.join(".docker/config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let with = env.checkout("with", &[("main.tf", NULL_CONFIG)]);
    init(&with).ok();
    assert!(lock_file(&with).contains(NULL_H1));

    // A credential helper named for the registry (`credHelpers`), run from PATH with
    // `https://REGISTRY` on stdin, as OpenTofu runs it.
    let bin = env.root.path().join("helper-bin");
    fs_err::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-tstoretest");
    fs_err::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread host\n[ \"$host\" = \"https://{}\" ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\necho '{{\"ServerURL\":\"'$host'\",\"Username\":\"ci\",\"Secret\":\"s3cret\"}}'\n",
            registry.host()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    fs_err::write(
        env.home.join(".docker/config.json"),
        format!(
            r#"{{"credHelpers":{{"{}":"tstoretest"}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let by_helper = env.checkout("helper", &[("main.tf", NULL_CONFIG)]);
    init(&by_helper).env("PATH", &path).ok();
    assert!(lock_file(&by_helper).contains(NULL_H1));

    // The CLI configuration's oci_credentials block wins over the files: here the files
    // name a helper that is not on PATH, which would fail if it were asked.
    let with_block = env.root.path().join("oci-login.tfrc");
    fs_err::write(
        &with_block,
        format!(
            "{}\noci_credentials \"{}/mirror\" {{\n  username = \"ci\"\n  password = \"s3cret\"\n}}\n",
            fs_err::read_to_string(&cfg).unwrap(),
            registry.host()
        ),
    )
    .unwrap();
    let by_block = env.checkout("block", &[("main.tf", NULL_CONFIG)]);
    env.tstore()
        .cli_config(&with_block)
        .env("SSL_CERT_FILE", &ca)
        .arg("init")
        .arg(&by_block)
        .ok();
    assert!(lock_file(&by_block).contains(NULL_H1));

    // The oci_default_credentials block, as OpenTofu reads it. Each case is a CLI config
    // next to `ci-auth.json` (a login), with ~/.docker/config.json still naming the helper.
    fs_err::write(
        env.root.path().join("ci-auth.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let with_defaults = |name: &str, block: &str| {
        let file = env.root.path().join(format!("{name}.tfrc"));
        fs_err::write(
            &file,
            format!(
                "{}\noci_default_credentials {{\n{block}\n}}\n",
                fs_err::read_to_string(&cfg).unwrap()
            ),
        )
        .unwrap();
        let dir = env.checkout(name, &[("main.tf", NULL_CONFIG)]);
        env.tstore()
            .cli_config(&file)
            .env("SSL_CERT_FILE", &ca)
            .env("PATH", &path)
            .arg("init")
            .arg(&dir)
    };
    // Discovery off: not even the helper the docker config names is asked.
    let err = stderr(&with_defaults("off", "  discover_ambient_credentials = false").fails());
    assert!(err.contains("requires authentication"), "{err}");
    // Named files replace the default search (a relative name is beside the CLI config).
    with_defaults("named", "  docker_style_config_files = [\"ci-auth.json\"]").ok();
    let err = stderr(
        &with_defaults(
            "missing",
            "  docker_style_config_files = [\"nowhere.json\"]",
        )
        .fails(),
    );
    assert!(err.contains("nowhere.json"), "{err}");
    // A helper for every registry, with no file read at all.
    with_defaults(
        "global",
        "  docker_style_config_files = []\n  docker_credentials_helper = \"tstoretest\"",
    )
    .ok();
}

/// The bearer flow against a real registry that trusts only a token service: runner A, with
/// a docker-style login, gets push tokens and publishes its store; runner B, anonymous, gets
/// pull tokens and installs, and its own push is refused with the registry's answer.
#[test]
fn the_bearer_flow_pushes_with_a_login_and_pulls_anonymously() {
    use base64::Engine as _;
    use tstore_test_support::oci_token::TokenService;
    use tstore_test_support::registry::TestRegistry;

    let tokens = TokenService::start("ci", "s3cret");
    let oci = OciRegistry::start_with_token_service(&tokens);
    // One trust file for both HTTPS servers.
    let trust = |env: &TestEnv| {
        let registry_ca = oci.write_ca(&env.root.path().join("registry-ca.pem"));
        let tokens_ca = env.root.path().join("tokens-ca.pem");
        tokens.write_https_ca(&tokens_ca);
        let both = env.root.path().join("ca.pem");
        let pem = fs_err::read_to_string(registry_ca).unwrap()
            + &fs_err::read_to_string(tokens_ca).unwrap();
        fs_err::write(&both, pem).unwrap();
        both
    };

    let runner_a = TestEnv::new();
    let ca_a = trust(&runner_a);
    let origin = TestRegistry::start();
    origin.publish_null();
    let origin_cfg = origin.write_cli_config(
        &runner_a.root.path().join("cli-config/origin.tfrc"),
        &["registry.terraform.io"],
        "  direct {}",
    );
    let dir_a = runner_a.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    runner_a
        .tstore()
        .cli_config(&origin_cfg)
        .arg("init")
        .arg(&dir_a)
        .ok();
    fs_err::create_dir_all(runner_a.home.join(".docker")).unwrap();
    fs_err::write(
        runner_a.home.join(".docker/config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
            oci.host(),
            base64::engine::general_purpose::STANDARD.encode("ci:s3cret")
        ),
    )
    .unwrap();
    let target = format!("oci://{}/mirror/${{namespace}}/${{type}}", oci.host());
    let pushed = json(
        &runner_a
            .tstore()
            .cli_config(&origin_cfg)
            .env("SSL_CERT_FILE", &ca_a)
            .args(["push", "--json", "--provider", "hashicorp/null"])
            .arg(&target)
            .ok(),
    );
    assert_eq!(pushed["pushed"][0]["blobs_uploaded"], 2, "{pushed}");
    let pushes: Vec<_> = tokens.requests();
    assert!(
        pushes.iter().any(|(anonymous, scope)| !anonymous
            && scope == "repository:mirror/hashicorp/null:pull,push"),
        "{pushes:?}"
    );
    drop(origin);

    let runner_b = TestEnv::new();
    let ca_b = trust(&runner_b);
    let cfg_b = oci_cli_config(&runner_b, &oci.host());
    let dir_b = runner_b.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    let init_b = runner_b
        .tstore()
        .cli_config(&cfg_b)
        .env("SSL_CERT_FILE", &ca_b)
        .arg("init")
        .arg(&dir_b);
    init_b.ok();
    assert!(lock_file(&dir_b).contains(NULL_H1));
    let pulls = tokens.requests()[pushes.len()..].to_vec();
    assert!(
        !pulls.is_empty() && pulls.iter().all(|(anonymous, _)| *anonymous),
        "{pulls:?}"
    );
    let mut plan = runner_b.terraform(&dir_b);
    plan.args(["plan", "-input=false", "-no-color"]);
    run_ok(&mut plan);

    // An anonymous token carries no push: the registry refuses, and tstore says so.
    let push_b = runner_b
        .tstore()
        .cli_config(&cfg_b)
        .env("SSL_CERT_FILE", &ca_b)
        .args(["push", "--provider", "hashicorp/null"])
        .arg(&target);
    let err = stderr(&push_b.fails());
    assert!(err.contains(&oci.host()), "{err}");
    assert!(
        err.contains("anonymous access does not allow this"),
        "{err}"
    );
}
