//! Without FUSE (`TSTORE_NO_FUSE`, containers without `/dev/fuse`) the store's views are
//! plain files, read-only by mode bits, which root ignores. What tstore promises there,
//! shown as root (the suite runs as root): a write through one checkout's link is seen by
//! the next init anywhere (every package is checked against its files' stat before it is
//! linked), which re-verifies the package, drops what was damaged, installs it again from
//! its source, and so repairs every checkout that links it; another checkout, and a later
//! one, never run the edited file after an init. Init warns root of this once.

use std::path::Path;

use tstore_test_support::{mirror, run_ok, stderr};

use crate::common::{tstore, NULL_CONFIG};
use crate::modules_fixture::{env_with_git_dir, one_module_repo};

const PROVIDER_FILE: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64/terraform-provider-null_v2.1.2_x4";

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    f.write_all(bytes)
}

#[test]
fn a_write_through_one_checkout_never_reaches_another_after_an_init() {
    let (env, base) = env_with_git_dir();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let module = one_module_repo(&base, "m", "output \"x\" {\n  value = 1\n}\n", None);
    let main = format!("{NULL_CONFIG}\nmodule \"m\" {{\n  source = \"{module}\"\n}}\n");
    let files = [("main.tf", main.as_str())];
    let init = |dir: &Path| {
        run_ok(
            tstore(&env, Some(&cfg))
                .env("TSTORE_NO_FUSE", "1")
                .arg("init")
                .arg(dir),
        )
    };
    let a = env.checkout("a", &files);
    let said = stderr(&init(&a));
    let real = fs_err::read(&tstore_test_support::peers().null_provider).unwrap();
    assert_eq!(fs_err::read(a.join(PROVIDER_FILE)).unwrap(), real);

    let is_root = runs_as_root();
    assert_eq!(
        said.matches("without FUSE, root can write into the store's packages")
            .count(),
        usize::from(is_root),
        "{said}"
    );
    // Root writes through checkout a's links: the provider binary and the module's file.
    let module_file = a.join(".terraform/modules/m/main.tf");
    let wrote = append(&a.join(PROVIDER_FILE), b"tampered").is_ok()
        && append(&module_file, b"# tampered\n").is_ok();
    assert_eq!(wrote, is_root, "mode bits stop everyone but root");
    if !wrote {
        return;
    }

    // Another checkout, and then a again: each init links the package as it was verified.
    let b = env.checkout("b", &files);
    init(&b);
    init(&a);
    for dir in [&b, &a] {
        assert_eq!(
            fs_err::read(dir.join(PROVIDER_FILE)).unwrap(),
            real,
            "{}",
            dir.display()
        );
        let text = fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap();
        assert!(!text.contains("tampered"), "{}: {text}", dir.display());
    }
}

/// Whether this process runs as root.
fn runs_as_root() -> bool {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}
