//! Linked or copied: a read-only package is linked into the store for many checkouts; a
//! package declared `self = false` gets a private copy that `terraform apply` writes into;
//! the default policy (`auto`) copies what writes into its own directory and links the rest.

use std::collections::BTreeSet;
use std::path::Path;

use tstore_test_support::{mirror, run_fail, run_ok, stderr, stdout};

use crate::common::json;
use crate::common::TstoreEnv as _;
use crate::modules_fixture::{checkout, env_with_git_dir, json_str, one_module_repo, package_repo};

/// With a meta file every remote call links to one store package; ten checkouts share it;
/// the second init fetches nothing; a link is read-only.
#[test]
fn read_only_packages_are_linked_once_for_many_checkouts() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, Some("# every module of this package is read-only\n"));

    let mut ids = BTreeSet::new();
    for i in 0..10 {
        let dir = checkout(&env, &format!("c{i}"), &base, None);
        let out = env.tstore().arg("init").arg("--json").arg(&dir).ok();
        let report = json(&out);
        for call in report["modules"].as_array().unwrap() {
            if call["kind"] == "git" {
                assert_eq!(call["action"], "link", "{call}");
                ids.insert(call["package"].as_str().unwrap().to_owned());
            }
        }
        let link = fs_err::read_link(dir.join(".terraform/modules/gitb")).unwrap();
        assert!(link.starts_with(&env.mount), "{}", link.display());
        if i == 0 {
            run_ok(env.terraform(&dir).arg("plan").arg("-no-color"));
        }
    }
    // gita gets the package, gitb (a later call of the same address) its variant without
    // dot entries; both shared by all ten checkouts.
    assert_eq!(ids.len(), 2, "{ids:?}");
    let ls = stdout(&env.tstore().args(["store", "ls", "--json"]).ok());
    let modules = json_str(&ls)["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "module")
        .count();
    assert_eq!(modules, 2);
    let linked = env.work.join("c0/.terraform/modules/gita");
    // Served by FUSE (read-only even for root) unless this machine has no FUSE.
    if !fs_err::symlink_metadata(&env.mount)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        let err = fs_err::write(linked.join("scratch"), "x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ReadOnlyFilesystem, "{err}");
    }
    env.tstore().args(["store", "verify"]).ok();
}

/// A module whose apply writes `written.txt` into its own directory (null provider,
/// local-exec).
const SELF_WRITING_MAIN: &str =
    "resource \"null_resource\" \"w\" {\n  provisioner \"local-exec\" {\n    \
     command = \"echo written > ${path.module}/written.txt\"\n  }\n}\n\
     output \"path\" {\n  value = path.module\n}\n";

/// A bare repo `<base>/<name>.git` (tag v1) whose root module writes into its own
/// directory at apply time (`local-exec` into `path.module`), with `meta` as its
/// `module-package.meta.hcl`.
fn self_modifying_repo(base: &Path, name: &str, meta: &str) -> String {
    one_module_repo(base, name, SELF_WRITING_MAIN, Some(meta))
}

/// A module declared `self = false` gets a private copy: `terraform apply` (real null
/// provider, offline through a filesystem mirror) writes into it, in that checkout only. The
/// same module wrongly declared read-only is linked to the store: the same write fails
/// (read-only file system) and the store is unchanged.
#[test]
fn self_modifying_module_applies_in_its_copy_and_fails_when_linked() {
    let (env, base) = env_with_git_dir();
    let honest = self_modifying_repo(
        &base,
        "honest",
        "module \"main\" {\n  path = \".\"\n  read-only = {\n    self = false\n  }\n}\n",
    );
    let liar = self_modifying_repo(&base, "liar", "# every module is read-only\n");
    let mirror = mirror::null_unpacked(&env.root.path().join("mirror"));
    let cfg = env.cli_config_fs_mirror(&mirror);
    let checkout_of = |name: &str, source: &str| {
        env.checkout(
            name,
            &[(
                "main.tf",
                &format!("module \"w\" {{\n  source = \"{source}\"\n}}\n"),
            )],
        )
    };
    let init = |dir: &Path, action: &str| {
        let report = json(
            &env.tstore()
                .cli_config(&cfg)
                .arg("init")
                .arg("--json")
                .arg(dir)
                .ok(),
        );
        let call = &report["modules"][0];
        assert_eq!(call["action"], action, "{report}");
    };
    let apply = |dir: &Path| {
        let mut cmd = env.terraform(dir);
        cmd.env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["apply", "-auto-approve", "-no-color"]);
        cmd
    };

    // Declared self-modifying: a private copy; apply writes into it.
    let a = checkout_of("a", &honest);
    let b = checkout_of("b", &honest);
    init(&a, "copy");
    init(&b, "copy");
    let out = run_ok(&mut apply(&a));
    assert!(stdout(&out).contains("Apply complete!"), "{}", stdout(&out));
    assert_eq!(
        fs_err::read_to_string(a.join(".terraform/modules/w/written.txt")).unwrap(),
        "written\n"
    );
    assert!(!b.join(".terraform/modules/w/written.txt").exists());
    // A re-init keeps the modified private copy (only -upgrade replaces it).
    init(&a, "copy");
    assert!(a.join(".terraform/modules/w/written.txt").exists());

    // Wrongly declared read-only: linked into the store; the write fails.
    let c = checkout_of("c", &liar);
    init(&c, "link");
    let link = fs_err::read_link(c.join(".terraform/modules/w")).unwrap();
    assert!(link.starts_with(&env.mount), "{}", link.display());
    let fuse = !fs_err::symlink_metadata(&env.mount)
        .unwrap()
        .file_type()
        .is_symlink();
    // The suite runs with FUSE (scripts/test installs fuse3): without it, views are 0555
    // files on disk that root could still write, and this check would prove nothing.
    assert!(
        fuse,
        "the store is not FUSE-mounted at {}: install fuse3 (scripts/test does)",
        env.mount.display()
    );
    let out = run_fail(&mut apply(&c));
    let err = stderr(&out);
    assert!(err.contains("Read-only file system"), "{err}");
    assert!(!c.join(".terraform/modules/w/written.txt").exists());
    env.tstore().args(["store", "verify"]).ok();
}

/// With no statement anywhere, the default policy (`auto`) finds the write into the
/// module's own directory and copies the package: `terraform apply` (real null provider)
/// succeeds. The same package linked (`--assume-read-only`) fails to apply, so the
/// detection is what made the difference; a package that only reads is linked.
#[test]
fn auto_copies_what_writes_into_itself_and_links_the_rest() {
    let (env, base) = env_with_git_dir();
    let writer = one_module_repo(&base, "writer", SELF_WRITING_MAIN, None);
    let reader = one_module_repo(
        &base,
        "reader",
        "locals {\n  t = fileexists(\"${path.module}/x\")\n}\noutput \"t\" {\n  value = local.t\n}\n",
        None,
    );
    let mirror = mirror::null_unpacked(&env.root.path().join("mirror"));
    let cfg = env.cli_config_fs_mirror(&mirror);
    let main = format!(
        "module \"w\" {{\n  source = \"{writer}\"\n}}\nmodule \"r\" {{\n  source = \"{reader}\"\n}}\n"
    );
    let init = |dir: &Path, extra: &[&str]| -> serde_json::Value {
        json(
            &env.tstore()
                .cli_config(&cfg)
                .arg("init")
                .arg("--json")
                .args(extra)
                .arg(dir)
                .ok(),
        )
    };
    let action = |report: &serde_json::Value, key: &str| {
        let call = report["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == key)
            .unwrap()
            .clone();
        (
            call["action"].as_str().unwrap().to_owned(),
            call["reason"].to_string(),
        )
    };
    let apply = |dir: &Path| {
        let mut cmd = env.terraform(dir);
        cmd.env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["apply", "-auto-approve", "-no-color"]);
        cmd
    };

    let a = env.checkout("a", &[("main.tf", main.as_str())]);
    let report = init(&a, &[]);
    let (w, why) = action(&report, "w");
    assert_eq!(w, "copy", "{why}");
    assert!(
        why.contains("local-exec") && why.contains("path.module"),
        "{why}"
    );
    assert_eq!(action(&report, "r").0, "link", "{report}");
    let out = run_ok(&mut apply(&a));
    assert!(stdout(&out).contains("Apply complete!"), "{}", stdout(&out));
    assert!(a.join(".terraform/modules/w/written.txt").is_file());

    let b = env.checkout("b", &[("main.tf", main.as_str())]);
    let report = init(&b, &["--assume-read-only"]);
    assert_eq!(action(&report, "w").0, "link", "{report}");
    let out = run_fail(&mut apply(&b));
    assert!(
        stderr(&out).contains("Read-only file system"),
        "{}",
        stderr(&out)
    );
}

/// A module that writes into its own directory, called with `count` (or inside a module
/// called with `for_each`): every instance shares the one directory installed for the call,
/// as with terraform, and tstore says so once per module (their writes would collide); the
/// same module called once is not warned of.
#[test]
fn a_self_modifying_module_under_count_or_for_each_is_warned_of() {
    let (env, base) = env_with_git_dir();
    let writer = self_modifying_repo(
        &base,
        "writer",
        "module \"main\" {\n  path = \".\"\n  read-only = {\n    self = false\n  }\n}\n",
    );
    let wrapper = one_module_repo(
        &base,
        "wrapper",
        &format!("module \"inner\" {{\n  source = \"{writer}\"\n}}\n"),
        None,
    );
    let mirror = mirror::null_unpacked(&env.root.path().join("mirror"));
    let cfg = env.cli_config_fs_mirror(&mirror);
    let run = |name: &str, main: String| {
        let dir = env.checkout(name, &[("main.tf", main.as_str())]);
        let out = env
            .tstore()
            .cli_config(&cfg)
            .no_fuse()
            .arg("init")
            .arg(&dir)
            .ok();
        stderr(&out)
    };
    let counted = run(
        "counted",
        format!("module \"w\" {{\n  count  = 2\n  source = \"{writer}\"\n}}\n"),
    );
    assert_eq!(
        counted.matches("writes into its own directory").count(),
        1,
        "{counted}"
    );
    assert!(
        counted.contains("module \"w\" writes into its own directory, and it is called with count: every instance shares .terraform/modules/w"),
        "{counted}"
    );
    let nested = run(
        "nested",
        format!("module \"outer\" {{\n  for_each = toset([\"a\", \"b\"])\n  source   = \"{wrapper}\"\n}}\n"),
    );
    assert!(
        nested.contains("module \"outer.inner\" writes into its own directory, and module \"outer\" around it is called with for_each: every instance shares .terraform/modules/outer.inner"),
        "{nested}"
    );
    let once = run(
        "once",
        format!("module \"w\" {{\n  source = \"{writer}\"\n}}\n"),
    );
    assert!(!once.contains("writes into its own directory"), "{once}");
}

/// A module package a checkout got a private copy of links nothing into the store; init
/// stamps it used, so `gc --min-age 1h` after the job (the CI recipes' step) keeps it for
/// the next job's cache, where `--min-age 0` drops it.
#[test]
fn a_copied_module_package_is_kept_by_gc_within_the_grace_period() {
    let (env, base) = env_with_git_dir();
    let writer = self_modifying_repo(
        &base,
        "writer",
        "module \"main\" {\n  path = \".\"\n  read-only = {\n    self = false\n  }\n}\n",
    );
    let mirror = mirror::null_unpacked(&env.root.path().join("mirror"));
    let cfg = env.cli_config_fs_mirror(&mirror);
    let dir = env.checkout(
        "w",
        &[(
            "main.tf",
            &format!("module \"w\" {{\n  source = \"{writer}\"\n}}\n"),
        )],
    );
    let report = json(
        &env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .args(["init", "--json"])
            .arg(&dir)
            .ok(),
    );
    assert_eq!(report["modules"][0]["action"], "copy", "{report}");
    let modules = || {
        let ls = json(&env.tstore().args(["store", "ls", "--json"]).ok());
        ls["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "module")
            .count()
    };
    assert_eq!(modules(), 1);
    // A package from an earlier job: made and last used long ago.
    let index = rusqlite::Connection::open(env.store.join("index.sqlite")).unwrap();
    index
        .execute("UPDATE packages SET created_at = 0, used_at = 0", [])
        .unwrap();
    drop(index);
    let again = env.checkout(
        "again",
        &[(
            "main.tf",
            &format!("module \"w\" {{\n  source = \"{writer}\"\n}}\n"),
        )],
    );
    env.tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&again)
        .ok();
    env.tstore().args(["gc", "--min-age", "1h"]).ok();
    assert_eq!(modules(), 1, "kept within the grace period");
    env.tstore().args(["gc", "--min-age", "0"]).ok();
    assert_eq!(modules(), 0, "no link keeps it past the grace period");
}

/// tstore writes `.terraform`'s own state (`modules.json`, its install record) by renaming
/// a new file into place without syncing it, as tofu writes it; after a power loss either
/// may be empty. The next init reads an empty record as no record and writes both again:
/// the same bytes, links and private copies as before, and terraform plans.
#[test]
fn state_files_emptied_by_a_power_loss_are_written_again() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);
    let writer = self_modifying_repo(
        &base,
        "writer",
        "module \"main\" {\n  path = \".\"\n  read-only = {\n    self = false\n  }\n}\n",
    );
    let dir = checkout(&env, "c", &base, None);
    let main = fs_err::read_to_string(dir.join("main.tf")).unwrap();
    fs_err::write(
        dir.join("main.tf"),
        format!("{main}module \"w\" {{\n  source = \"{writer}\"\n}}\n"),
    )
    .unwrap();
    let mirror = mirror::null_unpacked(&env.root.path().join("mirror"));
    let cfg = env.cli_config_fs_mirror(&mirror);
    let modules = dir.join(".terraform/modules");
    let state_files = ["modules.json", ".tstore-installs.json"];
    let init = || {
        json(
            &env.tstore()
                .cli_config(&cfg)
                .arg("init")
                .arg("--json")
                .arg(&dir)
                .ok(),
        )
    };
    let actions = |report: &serde_json::Value| -> Vec<(String, String)> {
        report["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["key"].to_string(), c["action"].to_string()))
            .collect()
    };
    let first = init();
    let first_actions = actions(&first);
    assert!(
        first_actions.iter().any(|(_, a)| a == "\"copy\""),
        "{first}"
    );
    assert!(
        first_actions.iter().any(|(_, a)| a == "\"link\""),
        "{first}"
    );
    let before: Vec<Vec<u8>> = state_files
        .iter()
        .map(|f| fs_err::read(modules.join(f)).unwrap())
        .collect();
    let gita = fs_err::read_link(modules.join("gita")).unwrap();

    for f in state_files {
        fs_err::write(modules.join(f), "").unwrap();
    }
    let second = init();
    assert_eq!(actions(&second), first_actions, "{second}");
    for (f, old) in state_files.iter().zip(&before) {
        assert_eq!(&fs_err::read(modules.join(f)).unwrap(), old, "{f}");
    }
    assert_eq!(fs_err::read_link(modules.join("gita")).unwrap(), gita);
    assert!(modules.join("w/main.tf").is_file());
    // Nothing set aside as someone else's copy: the private copy was tstore's.
    let kept: Vec<_> = fs_err::read_dir(&modules)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".kept"))
        .collect();
    assert!(kept.is_empty(), "{kept:?}");
    let out = run_ok(
        env.terraform(&dir)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .args(["plan", "-no-color"]),
    );
    assert!(stdout(&out).contains("Plan:"), "{}", stdout(&out));
}
