//! What init says of registry providers as each terraform says it: the signing footer of a
//! developer-signed provider, `--explain`'s account of what vouches for each hash, and the
//! selection of pre-releases.

use tstore_test_support::mirror::{self};
use tstore_test_support::registry::TestRegistry;
use tstore_test_support::{run_ok, stderr, stdout, TestEnv};

use crate::common::TstoreEnv as _;

use crate::registry::{registry_with_providers, CONFIG, FAKE_CONFIG, FAKE_FILES};

/// A provider signed by its developer (not HashiCorp) is followed by the footer on provider
/// signing, in each release's words (terraform 1.0.3's init.go; 1.11.4's views/init.go links
/// to developer.hashicorp.com), once, after the install lines; an init that installs
/// nothing prints none. Judged by terraform 1.0.3 and 1.11.4 on twin checkouts.
#[test]
fn a_developer_signed_provider_is_followed_by_each_terraforms_signing_footer() {
    let (env, _reg, cfg) = registry_with_providers();
    let peers = tstore_test_support::peers();
    let words = |out: &std::process::Output| {
        let all = format!("{}{}", stdout(out), stderr(out));
        all.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let footer = "Partner and community providers are signed by their developers. If you'd like to know more about provider signing, you can read about it here:";
    for (judge, tool, url) in [
        (
            &peers.terraform,
            "terraform 1.0.3",
            "https://www.terraform.io/docs/cli/plugins/signing.html",
        ),
        (
            &peers.terraform_current,
            "terraform 1.11.4",
            "https://developer.hashicorp.com/terraform/cli/plugins/signing",
        ),
    ] {
        let name = tool.replace(' ', "-");
        let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", CONFIG)]);
        let ours = env.checkout(&format!("ours-{name}"), &[("main.tf", CONFIG)]);
        for round in ["first", "second"] {
            let their_out = run_ok(&mut env.judge_init(judge, &theirs, &cfg));
            let our_out = env
                .tstore()
                .cli_config(&cfg)
                .no_fuse()
                .tool_version(tool)
                .arg("init")
                .arg(&ours)
                .ok();
            for (who, out) in [("terraform", &their_out), ("tstore", &our_out)] {
                let said = words(out);
                let want = format!("{footer} {url}");
                assert_eq!(
                    said.matches(&want).count(),
                    usize::from(round == "first"),
                    "{who} under {tool}, {round} init:\n{said}"
                );
            }
        }
    }
}

/// `--explain` says per provider where the package came from and per hash what vouches for
/// it; the install line keeps terraform's words, with what tstore adds after them. Judged
/// against the signed registry: the installed archive's `zh:` is verified here and signed,
/// another platform's is signed but not checked here, the `h1:` is computed here from that
/// archive; from an unpacked mirror the `h1:` is trusted on first use.
#[test]
fn explain_says_what_vouches_for_each_hash() {
    let (env, reg, cfg) = registry_with_providers();
    let dir = env.checkout("w", &[("main.tf", CONFIG)]);
    let out = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .args(["init", "--explain"])
        .arg(&dir)
        .ok();
    let said = stdout(&out);
    let key = &reg.key.key_id;
    assert!(
        said.contains(&format!(
            "- Installed hashicorp/null v2.1.2 (self-signed, key ID {key})"
        )),
        "{said}"
    );
    let null = said
        .split("Provider registry.terraform.io/hashicorp/null 2.1.2 (linux_amd64): registry:")
        .nth(1)
        .unwrap_or_else(|| panic!("{said}"));
    let block: Vec<&str> = null
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    let line_of = |prefix: &str, words: &str| {
        assert!(
            block
                .iter()
                .any(|l| l.trim_start().starts_with(prefix) && l.contains(words)),
            "{prefix} … {words} missing from:\n{}",
            block.join("\n")
        );
    };
    line_of(
        "zh:",
        &format!("computed here from the installed package; in checksums signed by key ID {key}"),
    );
    line_of(
        "zh:",
        &format!(
            "in checksums signed by key ID {key}; another platform's package, not checked here"
        ),
    );
    line_of(
        "h1:",
        "of the archive whose signed checksum was verified here",
    );

    // From an unpacked mirror into a store that never saw the package signed: nothing but
    // this install vouches for the h1:. (A store that holds it from the registry says what it
    // knows of the package, whichever source this init read.)
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let mirror_cfg = env.cli_config_fs_mirror(&mirror_dir);
    let plain = env.checkout(
        "plain",
        &[("main.tf", "resource \"null_resource\" \"x\" {}\n")],
    );
    let said = stdout(
        &env.tstore()
            .cli_config(&mirror_cfg)
            .no_fuse()
            .args(["init", "--explain"])
            .arg(&plain)
            .ok(),
    );
    assert!(
        said.contains("- Installed hashicorp/null v2.1.2 (unauthenticated"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "  {}: computed here from the installed package; nothing else vouches for it: trusted on first use",
            tstore_test_support::NULL_H1
        )),
        "{said}"
    );
}

/// Provider constraints and pre-releases, as each terraform selects (apparentlymart
/// go-versions through internal/getproviders): a pre-release is selected only when a
/// constraint names it exactly; a range never selects one. Judged by terraform 1.0.3 and
/// 1.11.4 on twin checkouts against a registry listing 1.0.0, 1.1.0-beta1 and 2.0.0-rc1.
#[test]
fn provider_pre_releases_select_as_each_terraform_selects() {
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    for version in ["1.0.0", "1.1.0-beta1", "2.0.0-rc1"] {
        reg.publish(
            "test/fake",
            version,
            &[("linux_amd64", mirror::zip_bytes(&FAKE_FILES))],
        );
    }
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["tstore.test"],
        "  direct {}",
    );
    let peers = tstore_test_support::peers();
    let selected = |dir: &std::path::Path| -> Option<String> {
        let lock = std::fs::read_to_string(dir.join(".terraform.lock.hcl")).ok()?;
        lock.lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("version     = \"")
                    .or_else(|| l.trim().strip_prefix("version = \""))
            })
            .map(|v| v.trim_end_matches('"').to_owned())
    };
    for (i, constraint) in [
        "1.1.0-beta1",
        "= 2.0.0-rc1",
        ">= 1.0.0",
        "~> 1.1.0-beta1",
        ">= 1.1.0-beta1, < 2.0.0",
    ]
    .into_iter()
    .enumerate()
    {
        let main = FAKE_CONFIG.replace(
            "source = \"tstore.test/test/fake\"",
            &format!("source  = \"tstore.test/test/fake\"\n      version = \"{constraint}\""),
        );
        for (judge, tool) in peers.judges() {
            let name = format!("{i}-{}", tool.replace(' ', "-"));
            let theirs = env.checkout(&format!("theirs-{name}"), &[("main.tf", main.as_str())]);
            let ours = env.checkout(&format!("ours-{name}"), &[("main.tf", main.as_str())]);
            let their_ok = env
                .judge_init(judge, &theirs, &cfg)
                .output()
                .unwrap()
                .status
                .success();
            let our_ok = env
                .tstore()
                .cli_config(&cfg)
                .no_fuse()
                .tool_version(tool)
                .arg("init")
                .arg(&ours)
                .output()
                .status
                .success();
            assert_eq!(our_ok, their_ok, "{constraint:?} under {tool}");
            assert_eq!(
                selected(&ours),
                selected(&theirs),
                "{constraint:?} under {tool}"
            );
            let expected = match constraint {
                "1.1.0-beta1" => Some("1.1.0-beta1"),
                "= 2.0.0-rc1" => Some("2.0.0-rc1"),
                ">= 1.0.0" => Some("1.0.0"),
                _ => None,
            };
            if let Some(v) = expected {
                assert_eq!(
                    selected(&theirs).as_deref(),
                    Some(v),
                    "{constraint:?} under {tool}"
                );
            }
        }
    }
}
