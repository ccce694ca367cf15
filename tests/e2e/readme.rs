//! The README's tutorial, run as written: the shell blocks between `<!-- tutorial -->` and
//! `<!-- /tutorial -->` are extracted from README.md and run in order by one bash, in an
//! environment where `~` is a temp dir and the CLI configuration names a filesystem mirror
//! of the real null provider (the tutorial uses whatever providers the user's configuration
//! reaches). If the README changes, this test runs the new text. The install commands for
//! shell completions and man pages (`<!-- completions -->`) are run the same way, in a home
//! directory that has none of their directories yet.

use std::path::{Path, PathBuf};

use tstore_test_support::{mirror, peers, run_ok, stdout, TestEnv};

use crate::common::{json, tstore_bin};

/// The contents of the ```sh blocks between the tutorial markers of `readme`, in order.
fn tutorial_blocks(readme: &str) -> Vec<String> {
    marked_blocks(readme, "tutorial")
}

/// The contents of the ```sh blocks between `<!-- MARKER -->` and `<!-- /MARKER -->`.
fn marked_blocks(readme: &str, marker: &str) -> Vec<String> {
    let start = readme
        .find(&format!("<!-- {marker} -->"))
        .unwrap_or_else(|| panic!("README.md has a <!-- {marker} --> marker"));
    let end = readme
        .find(&format!("<!-- /{marker} -->"))
        .unwrap_or_else(|| panic!("README.md has a <!-- /{marker} --> marker"));
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme[start..end].lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(
        current.is_none(),
        "an unterminated code block in the tutorial"
    );
    blocks
}

/// A directory holding a `tstore` symlink to the binary under test, for `PATH`, and a
/// `tofu` stub (never run): the tutorial's reader runs OpenTofu, and with `terraform`
/// alone on `PATH` tstore would follow terraform.
fn bin_dir(env: &TestEnv) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.root.path().join("bin");
    fs_err::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(tstore_bin(), dir.join("tstore")).unwrap();
    fs_err::write(dir.join("tofu"), "#!/bin/sh\nexit 99\n").unwrap();
    fs_err::set_permissions(dir.join("tofu"), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn path_with(dirs: &[&Path]) -> std::ffi::OsString {
    let system = std::env::var_os("PATH").unwrap_or_default();
    let mut all: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    all.extend(std::env::split_paths(&system));
    std::env::join_paths(all).unwrap()
}

#[test]
fn the_readme_tutorial_runs_as_written() {
    let readme =
        fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let blocks = tutorial_blocks(&readme);
    assert!(blocks.len() >= 3, "the tutorial has its shell blocks");

    // The tutorial follows the default flavor (tofu): its mirror holds the real null
    // provider under the tofu flavor's default host.
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    let tofu_null = mirror::NULL_ADDR.replacen("registry.terraform.io", "registry.opentofu.org", 1);
    assert_ne!(tofu_null, mirror::NULL_ADDR);
    mirror::write_unpacked(
        &mirror_dir,
        &tofu_null,
        mirror::NULL_VERSION,
        mirror::PLATFORM,
        &mirror::null_files(),
    );
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let bin = bin_dir(&env);

    let script = format!("set -euo pipefail\n{}", blocks.join("\n"));
    let mut bash = env.command(Path::new("bash"));
    bash.arg("-c")
        .arg(&script)
        .env(
            "PATH",
            path_with(&[&bin, peers().terraform.parent().unwrap()]),
        )
        .env("TF_CLI_CONFIG_FILE", &cfg)
        .env_remove("TSTORE_FLAVOR");
    let out = run_ok(&mut bash);
    let said = stdout(&out);

    // app-a stays, app-b was removed by the tutorial; app-a links the mounted store's null.
    let app_a = env.home.join("tstore-tutorial/app-a");
    assert!(!env.home.join("tstore-tutorial/app-b").exists());
    let link = app_a.join(format!(
        ".terraform/providers/{tofu_null}/{}/{}",
        mirror::NULL_VERSION,
        mirror::PLATFORM
    ));
    let target = fs_err::read_link(&link).expect("app-a's provider entry is a link");
    assert!(
        target.starts_with(&env.mount),
        "{} points into the mount path {}",
        target.display(),
        env.mount.display()
    );
    assert!(fs_err::read_to_string(app_a.join(".terraform.lock.hcl"))
        .unwrap()
        .contains(&format!("provider \"{tofu_null}\"")));
    // `store du` counted both links and what private copies would have cost.
    let du_line = said
        .lines()
        .find(|l| l.contains(" on disk, "))
        .unwrap_or_else(|| panic!("no `store du` line in:\n{said}"));
    assert!(
        du_line.contains("MB as private copies (2 links from working directories): 50% saved"),
        "{du_line}"
    );
    // The `ls -l` of app-b showed the link into the mount, and gc's dry run kept null.
    assert!(said.contains(&env.mount.display().to_string()), "{said}");

    // One package in the store, still there after the tutorial's gc dry run.
    let mut ls = env.command(&tstore_bin());
    ls.args(["store", "ls", "--json"]);
    let packages = json(&run_ok(&mut ls));
    let text = packages.to_string();
    assert_eq!(text.matches("\"2.1.2\"").count(), 1, "{text}");

    // The tutorial ends by stopping the daemon init started.
    let mut status = env.command(&tstore_bin());
    status.args(["mount", "--status", "--json"]);
    let status = status.output().unwrap();
    assert_eq!(json(&status)["state"], "not-mounted", "{status:?}");
}

/// The README's commands that install shell completions and the man pages work in a home
/// directory where none of their directories exists yet, and leave a completion script and
/// one man page per command where `bash-completion` and `man` look.
#[test]
fn the_readmes_completion_and_man_page_commands_run_in_a_new_home() {
    let readme =
        fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let blocks = marked_blocks(&readme, "completions");
    assert!(
        !blocks.is_empty(),
        "the completions section has its shell block"
    );
    let env = TestEnv::new();
    let bin = bin_dir(&env);
    let script = format!("set -euo pipefail\n{}", blocks.join("\n"));
    let mut bash = env.command(Path::new("bash"));
    bash.arg("-c").arg(&script).env("PATH", path_with(&[&bin]));
    run_ok(&mut bash);
    let completion = env
        .home
        .join(".local/share/bash-completion/completions/tstore");
    let text = fs_err::read_to_string(&completion).unwrap();
    assert!(text.contains("complete -F _tstore"), "{text}");
    let man1 = env.home.join(".local/share/man/man1");
    for page in ["tstore.1", "tstore-init.1", "tstore-store-verify.1"] {
        assert!(man1.join(page).is_file(), "{page} in {}", man1.display());
    }
}

/// The reference's table of the rules that follow the tool version
/// (docs/reference/flavor-and-tool-version.md) is the one the code has.
#[test]
fn the_tool_version_table_is_the_rules_in_code() {
    let doc = fs_err::read_to_string(
        tstore_test_support::workspace_root().join("docs/reference/flavor-and-tool-version.md"),
    )
    .unwrap();
    let start = doc.find("<!-- tool-version-rules -->\n").unwrap() + 28;
    let end = doc.find("<!-- /tool-version-rules -->").unwrap();
    assert_eq!(
        &doc[start..end],
        tstore_tofu::tool_version::rules_table(),
        "docs/reference/flavor-and-tool-version.md's table differs from tool_version::rules(): \
         paste the rules_table() output"
    );
}
