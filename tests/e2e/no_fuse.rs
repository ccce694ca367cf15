//! Without FUSE (`TSTORE_NO_FUSE`, containers without `/dev/fuse`) the store's views are
//! plain files, read-only by mode bits, which root ignores. What tstore promises there,
//! shown as root (the suite runs as root): a write through one checkout's link is seen by
//! the next init anywhere (every package is checked against its files' stat before it is
//! linked), which re-verifies the package, drops what was damaged, installs it again from
//! its source, and so repairs every checkout that links it; another checkout, and a later
//! one, never run the edited file after an init. Init warns root of this once.

use std::path::Path;

use tstore_test_support::{mirror, stderr};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;
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
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .arg("init")
            .arg(dir)
            .ok()
    };
    let a = env.checkout("a", &files);
    let said = stderr(&init(&a));
    let real = fs_err::read(&tstore_test_support::peers().null_provider).unwrap();
    assert_eq!(fs_err::read(a.join(PROVIDER_FILE)).unwrap(), real);

    let is_root = runs_as_root();
    assert_eq!(
        said.matches("without FUSE root can write into the store's packages")
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
    // TSTORE_NO_FUSE asked for it: the line was said once on this machine, not again.
    let b = env.checkout("b", &files);
    let said = stderr(&init(&b));
    assert!(!said.contains("without FUSE"), "{said}");
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

/// The three cases a user meets, each in the order that broke before: the same checkout's
/// next init after a write through its own link (its lock pins the module by `h1:`),
/// another checkout that already linked the package (it is not initialized again first),
/// and a file added to a linked module. Every checkout works again, and `store verify`
/// finds nothing wrong.
#[test]
fn a_damaged_package_is_repaired_for_every_checkout_that_links_it() {
    if !runs_as_root() {
        // Mode bits stop a non-root user from writing at all: nothing to repair.
        assert!(append(Path::new("/etc/hostname"), b"").is_err());
        return;
    }
    let (env, base) = env_with_git_dir();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let module = one_module_repo(&base, "m", "output \"x\" {\n  value = 1\n}\n", None);
    let main = format!("{NULL_CONFIG}\nmodule \"m\" {{\n  source = \"{module}\"\n}}\n");
    let files = [("main.tf", main.as_str())];
    let tstore_on =
        |args: &[&str], dir: &Path| env.tstore().cli_config(&cfg).no_fuse().args(args).arg(dir);
    let init = |dir: &Path| tstore_on(&["init"], dir).ok();
    let (a, b) = (env.checkout("a", &files), env.checkout("b", &files));
    init(&a);
    init(&b);
    let real = fs_err::read(&tstore_test_support::peers().null_provider).unwrap();
    let module_file = |dir: &Path| dir.join(".terraform/modules/m/main.tf");
    let original = fs_err::read_to_string(module_file(&a)).unwrap();
    let whole = |when: &str| {
        for dir in [&a, &b] {
            let text = fs_err::read_to_string(module_file(dir))
                .unwrap_or_else(|e| panic!("{when}: {}: {e}", dir.display()));
            assert_eq!(text, original, "{when}: {}", dir.display());
            assert_eq!(
                fs_err::read(dir.join(PROVIDER_FILE)).unwrap(),
                real,
                "{when}"
            );
            assert!(
                !dir.join(".terraform/modules/m/evil.tf").exists(),
                "{when}: {}",
                dir.display()
            );
        }
        let out = env.tstore().no_fuse().args(["store", "verify"]).output();
        assert!(out.status.success(), "{when}: {}", stderr(&out));
    };

    // 1. Written in place through a's links; a's own next init (its lock pins the module).
    append(&module_file(&a), b"# tampered\n").unwrap();
    append(&a.join(PROVIDER_FILE), b"tampered").unwrap();
    init(&a);
    whole("a's next init");
    // ...and again: the repair left nothing for a later init to trip on.
    init(&a);
    init(&b);
    whole("the inits after");

    // 2. Written through a; b, which linked the package already, is initialized first.
    append(&module_file(&a), b"# tampered\n").unwrap();
    init(&b);
    whole("b's next init");

    // 3. A new file written into the linked module: noticed, and gone from every checkout.
    let dir = a.join(".terraform/modules/m");
    fs_err::write(dir.join("evil.tf"), "output \"evil\" {\n  value = 2\n}\n").unwrap();
    init(&b);
    whole("after a file was added");
}

/// The record of what was said once on this machine (`said.json` in the state directory) is
/// never read or written through a link: a planted one that says "already said" is not
/// believed, and is replaced by a file of tstore's own, the link's target untouched.
#[test]
fn the_said_once_record_is_never_read_or_written_through_a_link() {
    if !runs_as_root() {
        // The line is said to root only.
        return;
    }
    let (env, _base) = env_with_git_dir();
    let state = env.home.join(".local/state/tstore");
    fs_err::create_dir_all(&state).unwrap();
    let target = env.root.path().join("outside.json");
    let planted = "{\"root without FUSE\": \"1\"}";
    fs_err::write(&target, planted).unwrap();
    std::os::unix::fs::symlink(&target, state.join("said.json")).unwrap();
    let dir = env.checkout("a", &[("main.tf", "output \"x\" {\n  value = 1\n}\n")]);
    let out = env.tstore().no_fuse().arg("init").arg(&dir).ok();
    assert!(
        stderr(&out).contains("without FUSE root can write into the store's packages"),
        "{}",
        stderr(&out)
    );
    assert!(!fs_err::symlink_metadata(state.join("said.json"))
        .unwrap()
        .is_symlink());
    assert_eq!(fs_err::read_to_string(&target).unwrap(), planted);
}
