//! What many end-to-end tests start from or end with: a [`TestEnv`] with a filesystem mirror
//! of the real null provider ([`TestEnv::with_null_mirror`]), the `ours`/`theirs` checkouts
//! tstore and terraform are compared in, `terraform init` with a CLI config, the lock file
//! they write ([`lock_file`]), and terraform planning what was installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{mirror, run_ok, stdout, TestEnv};

/// The two layouts of a filesystem mirror (see [`mirror`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `MIRROR/HOST/NS/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip`
    Packed,
    /// `MIRROR/HOST/NS/TYPE/VERSION/OS_ARCH/<files>`
    Unpacked,
}

/// A [`TestEnv`] whose filesystem mirror holds the real null provider 2.1.2 linux_amd64, and a
/// CLI config using only that mirror. Made by [`TestEnv::with_null_mirror`]; tests take it
/// apart: `let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);`.
#[derive(Debug)]
pub struct NullMirror {
    /// The environment; the mirror and the CLI config are inside its root.
    pub env: TestEnv,
    /// The mirror root, `<root>/mirror`.
    pub mirror: PathBuf,
    /// A CLI config (for `TF_CLI_CONFIG_FILE`) whose only installation method is the mirror:
    /// [`TestEnv::cli_config_fs_mirror`].
    pub cfg: PathBuf,
}

impl TestEnv {
    /// A new environment with the real null provider in a filesystem mirror at
    /// `<root>/mirror`, in `layout` ([`mirror::null_packed`] or [`mirror::null_unpacked`]),
    /// and a CLI config pointing at it.
    pub fn with_null_mirror(layout: Layout) -> NullMirror {
        let env = TestEnv::new();
        let mirror = env.root.path().join("mirror");
        match layout {
            Layout::Packed => mirror::null_packed(&mirror),
            Layout::Unpacked => mirror::null_unpacked(&mirror),
        };
        let cfg = env.cli_config_fs_mirror(&mirror);
        NullMirror { env, mirror, cfg }
    }

    /// The checkouts `ours` (for tstore) and `theirs` (for terraform), both holding `files`
    /// (see [`TestEnv::checkout`]).
    pub fn ours_and_theirs(&self, files: &[(&str, &str)]) -> (PathBuf, PathBuf) {
        (self.checkout("ours", files), self.checkout("theirs", files))
    }

    /// `terraform init -no-color -input=false` in `dir` with `TF_CLI_CONFIG_FILE=cli_config`
    /// (see [`TestEnv::terraform`]); add arguments or variables before running it.
    pub fn terraform_init(&self, dir: &Path, cli_config: &Path) -> Command {
        let mut cmd = self.terraform(dir);
        cmd.env("TF_CLI_CONFIG_FILE", cli_config)
            .args(["init", "-no-color", "-input=false"]);
        cmd
    }

    /// `terraform plan -no-color -input=false` in `dir` succeeds and will create
    /// `null_resource.x` (the resource of the null configurations); panics otherwise.
    #[track_caller]
    pub fn assert_terraform_plans_null(&self, dir: &Path) {
        let plan = run_ok(
            self.terraform(dir)
                .args(["plan", "-no-color", "-input=false"]),
        );
        assert!(
            stdout(&plan).contains("null_resource.x will be created"),
            "{}",
            stdout(&plan)
        );
    }

    /// `terraform validate -no-color` in `dir` succeeds, then
    /// [`TestEnv::assert_terraform_plans_null`].
    #[track_caller]
    pub fn assert_terraform_validates_and_plans_null(&self, dir: &Path) {
        run_ok(self.terraform(dir).args(["validate", "-no-color"]));
        self.assert_terraform_plans_null(dir);
    }
}

/// The lock file of the working directory `dir` (`dir/.terraform.lock.hcl`); panics when it
/// cannot be read.
#[track_caller]
pub fn lock_file(dir: &Path) -> String {
    fs_err::read_to_string(dir.join(".terraform.lock.hcl")).expect("read the lock file")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{command_line, NULL_PROVIDER_FILE};

    #[test]
    fn null_mirror_in_each_layout_with_its_cli_config() {
        for layout in [Layout::Packed, Layout::Unpacked] {
            let NullMirror { env, mirror, cfg } = TestEnv::with_null_mirror(layout);
            assert_eq!(mirror, env.root.path().join("mirror"));
            let addr = mirror.join(mirror::NULL_ADDR);
            let zip = addr.join(mirror::packed_name(
                mirror::NULL_ADDR,
                mirror::NULL_VERSION,
                mirror::PLATFORM,
            ));
            assert_eq!(zip.is_file(), layout == Layout::Packed, "{layout:?}");
            let binary = addr
                .join(mirror::NULL_VERSION)
                .join(mirror::PLATFORM)
                .join(NULL_PROVIDER_FILE);
            assert_eq!(binary.is_file(), layout == Layout::Unpacked, "{layout:?}");
            let config = fs_err::read_to_string(&cfg).unwrap();
            assert!(
                config.contains(&format!("path = \"{}\"", mirror.display())),
                "{config}"
            );
        }
    }

    #[test]
    fn ours_and_theirs_terraform_init_and_lock_file() {
        let env = TestEnv::new();
        let (ours, theirs) = env.ours_and_theirs(&[("main.tf", "x")]);
        assert_eq!(ours, env.work.join("ours"));
        assert_eq!(theirs, env.work.join("theirs"));
        assert_eq!(fs_err::read_to_string(theirs.join("main.tf")).unwrap(), "x");

        let line = command_line(&env.terraform_init(&theirs, Path::new("/c.tfrc")));
        assert!(
            line.starts_with(&format!("cd {} && ", theirs.display())),
            "{line}"
        );
        assert!(line.contains("TF_CLI_CONFIG_FILE=/c.tfrc "), "{line}");
        assert!(line.ends_with(" init -no-color -input=false"), "{line}");

        fs_err::write(ours.join(".terraform.lock.hcl"), "lock\n").unwrap();
        assert_eq!(lock_file(&ours), "lock\n");
    }
}
