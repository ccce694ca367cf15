//! Issue 5: module packages in the store, linked or copied, and `modules.json` as terraform
//! writes it. The fixture is spec/modules.md §1's (a bare git repo made by the test).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use tstore_test_support::{run_fail, run_ok, stderr, stdout, TestEnv};

use crate::common::{json, tstore};

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The package repository of spec §1 at `<base>/repo.git` (tag v1.0.0), with `meta` as its
/// `module-package.meta.hcl` when given.
fn package_repo(base: &Path, meta: Option<&str>) {
    let src = base.join("src");
    for (path, body) in [
        ("main.tf", "variable \"name\" {\n  default = \"pkg-root\"\n}\nmodule \"inner\" {\n  source = \"./modules/inner\"\n  tag    = var.name\n}\noutput \"msg\" {\n  value = \"root:${module.inner.msg}\"\n}\noutput \"path\" {\n  value = path.module\n}\n".to_owned()),
        ("modules/inner/main.tf", "variable \"tag\" {\n  default = \"x\"\n}\noutput \"msg\" {\n  value = \"inner:${var.tag}\"\n}\noutput \"path\" {\n  value = path.module\n}\n".to_owned()),
        ("sub/main.tf", format!("module \"deep\" {{\n  source = \"git::file://{}/repo.git//modules/inner?ref=v1.0.0\"\n  tag    = \"deep\"\n}}\noutput \"msg\" {{\n  value = \"sub:${{module.deep.msg}}\"\n}}\noutput \"path\" {{\n  value = path.module\n}}\n", base.display())),
        ("README.md", "readme\n".to_owned()),
        (".hidden", "hidden\n".to_owned()),
    ] {
        let p = src.join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, body).unwrap();
    }
    if let Some(meta) = meta {
        fs_err::write(src.join("module-package.meta.hcl"), meta).unwrap();
    }
    sh(
        &src,
        "git init -q -b main . && ln -s main.tf link.tf.txt && git add -A && git commit -qm init \
         && git tag v1.0.0 && git clone -q --bare . ../repo.git",
    );
}

fn root_config(base: &Path) -> String {
    let b = base.display();
    format!(
        "module \"local\" {{\n  source = \"./local-mod\"\n}}\n\
         module \"gita\" {{\n  source = \"git::file://{b}/repo.git?ref=v1.0.0\"\n}}\n\
         module \"gitb\" {{\n  source = \"git::file://{b}/repo.git?ref=v1.0.0\"\n}}\n\
         module \"gitsub\" {{\n  source = \"git::file://{b}/repo.git//sub?ref=v1.0.0\"\n}}\n\
         output \"all\" {{\n  value = [module.local.msg, module.gita.msg, module.gitb.msg, module.gitsub.msg]\n}}\n"
    )
}

fn checkout(env: &TestEnv, name: &str, base: &Path, meta: Option<&str>) -> std::path::PathBuf {
    let main = root_config(base);
    let mut files = vec![
        ("main.tf", main.as_str()),
        ("local-mod/main.tf", "module \"nested\" {\n  source = \"../local-mod2\"\n}\noutput \"msg\" {\n  value = \"local:${module.nested.msg}\"\n}\n"),
        ("local-mod2/main.tf", "output \"msg\" {\n  value = \"local2\"\n}\n"),
    ];
    if let Some(m) = meta {
        files.push(("module-package.meta.hcl", m));
    }
    env.checkout(name, &files)
}

fn records(dir: &Path) -> BTreeSet<String> {
    let text = fs_err::read_to_string(dir.join(".terraform/modules/modules.json")).unwrap();
    assert!(!text.ends_with('\n'), "one line, no trailing newline");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["Modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.to_string())
        .collect()
}

fn no_fuse(mut cmd: Command) -> Command {
    cmd.env("TSTORE_NO_FUSE", "1");
    cmd
}

/// See: issue 5. The same records as `terraform init`, then `validate`/`plan` offline, and
/// a later plain `terraform init` trusts the install (nothing re-fetched).
#[test]
fn modules_json_has_terraforms_records_and_terraform_trusts_it() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    package_repo(&base, None);

    let theirs = checkout(&env, "theirs", &base, None);
    run_ok(env.terraform(&theirs).arg("init").arg("-no-color"));
    let ours = checkout(&env, "ours", &base, None);
    let out = run_ok(
        no_fuse(tstore(&env, None))
            .arg("init")
            .arg("--explain")
            .arg(&ours),
    );
    let text = stdout(&out);
    assert!(
        text.contains("- gitsub in .terraform/modules/gitsub/sub"),
        "{text}"
    );
    assert!(text.contains("private copy"), "{text}");
    assert_eq!(records(&ours), records(&theirs));

    run_ok(env.terraform(&ours).arg("validate").arg("-no-color"));
    let plan = stdout(&run_ok(env.terraform(&ours).arg("plan").arg("-no-color")));
    assert!(plan.contains("\"sub:inner:deep\""), "{plan}");
    // No meta file: private, writable copies.
    let gita = ours.join(".terraform/modules/gita");
    assert!(fs_err::symlink_metadata(&gita).unwrap().is_dir());
    fs_err::write(gita.join("scratch"), "x").unwrap();

    let again = stdout(&run_ok(env.terraform(&ours).arg("init").arg("-no-color")));
    assert!(!again.contains("Downloading"), "{again}");
}

/// See: issue 5. With a meta file every remote call links to one store package; ten checkouts
/// share it; the second init fetches nothing; a link is read-only.
#[test]
fn read_only_packages_are_linked_once_for_many_checkouts() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    package_repo(&base, Some("# every module of this package is read-only\n"));

    let mut ids = BTreeSet::new();
    for i in 0..10 {
        let dir = checkout(&env, &format!("c{i}"), &base, None);
        let out = run_ok(tstore(&env, None).arg("init").arg("--json").arg(&dir));
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
    assert_eq!(ids.len(), 1, "{ids:?}");
    let ls = stdout(&run_ok(tstore(&env, None).args(["store", "ls", "--json"])));
    let modules = json_str(&ls)["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "module")
        .count();
    assert_eq!(modules, 1);
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
    run_ok(tstore(&env, None).args(["store", "verify"]));
}

fn json_str(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

/// See: issue 5. Bad inputs name the call and file:line, and leave `.terraform/modules` alone.
#[test]
fn bad_module_sources_fail_clearly_and_write_nothing() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    package_repo(&base, None);
    let b = base.display().to_string();
    for (source, expect) in [
        (
            "s3::https://s3.example/b/x.zip",
            "s3:: getter is not supported",
        ),
        (
            &format!("git::file://{b}/repo.git?ref=v9.9.9") as &str,
            "no branch or tag",
        ),
        (
            &format!("git::file://{b}/missing.git?ref=v1.0.0"),
            "ls-remote",
        ),
    ] {
        let dir = env.checkout(
            &format!("bad{}", source.len()),
            &[(
                "main.tf",
                &format!("\n\nmodule \"m\" {{\n  source = \"{source}\"\n}}\n"),
            )],
        );
        let out = run_fail(no_fuse(tstore(&env, None)).arg("init").arg(&dir));
        let err = stderr(&out);
        assert!(err.contains("main.tf:3"), "{err}");
        assert!(err.contains("module \"m\""), "{err}");
        assert!(err.contains(expect), "{source}: {err}");
        assert!(!dir.join(".terraform/modules").exists());
    }
    let dir = checkout(&env, "badmeta", &base, Some("module \"x\" {\n"));
    let err = stderr(&run_fail(no_fuse(tstore(&env, None)).arg("init").arg(&dir)));
    assert!(err.contains("module-package.meta.hcl"), "{err}");
}
