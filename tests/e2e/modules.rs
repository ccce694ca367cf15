//! Module packages in the store, linked or copied, and `modules.json` as terraform writes it.
//! The fixture is a bare git repository made by the test ([`package_repo`]) and a root
//! calling it ([`root_config`]).
//!
//! Longer than most files on purpose: every test here shares that fixture and the full
//! registry/git/archive fixture built on it ([`full_fixture`]); split, they would be
//! spread over files that all import each other's helpers.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{mirror, run_fail, run_ok, stderr, stdout, TestEnv};

use crate::common::{json, sh, tstore};

/// The package repository at `<base>/repo.git` (tag v1.0.0): a root module calling
/// `./modules/inner`, `sub` calling `modules/inner` of the same repository remotely, a
/// dotfile and a symlink; with `meta` as its `module-package.meta.hcl` when given.
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

/// Each `modules.json` record as JSON with its keys sorted, so records compare whatever
/// order the writer used.
fn records(dir: &Path) -> BTreeSet<String> {
    let text = fs_err::read_to_string(dir.join(".terraform/modules/modules.json")).unwrap();
    assert!(!text.ends_with('\n'), "one line, no trailing newline");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["Modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let sorted: std::collections::BTreeMap<_, _> = r.as_object().unwrap().iter().collect();
            serde_json::to_string(&sorted).unwrap()
        })
        .collect()
}

/// A new [`TestEnv`] and its dir `<root>/git` (created), where a test's repositories live.
fn env_with_git_dir() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    (env, base)
}

/// The package ids a `tstore init --json` report lists under `module_packages.<what>`
/// (`fetched`, `reused`), in its order.
fn module_packages(report: &serde_json::Value, what: &str) -> Vec<String> {
    report["module_packages"][what]
        .as_array()
        .unwrap_or_else(|| panic!("no module_packages.{what}: {report}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn no_fuse(mut cmd: Command) -> Command {
    cmd.env("TSTORE_NO_FUSE", "1");
    cmd
}

/// The same records as `terraform init`, then `validate`/`plan` offline, and
/// a later plain `terraform init` trusts the install (nothing re-fetched).
#[test]
fn modules_json_has_terraforms_records_and_terraform_trusts_it() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);

    let theirs = checkout(&env, "theirs", &base, None);
    run_ok(env.terraform(&theirs).arg("init").arg("-no-color"));
    let ours = checkout(&env, "ours", &base, None);
    // The compatible setting: every package nobody made a statement about is copied.
    fs_err::write(
        ours.join(".tstore.hcl"),
        "modules {\n  default = \"copy\"\n}\n",
    )
    .unwrap();
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
    // No meta file and default = "copy": private, writable copies.
    let gita = ours.join(".terraform/modules/gita");
    assert!(fs_err::symlink_metadata(&gita).unwrap().is_dir());
    fs_err::write(gita.join("scratch"), "x").unwrap();

    let again = stdout(&run_ok(env.terraform(&ours).arg("init").arg("-no-color")));
    assert!(!again.contains("Downloading"), "{again}");
}

/// With a meta file every remote call links to one store package; ten checkouts share it;
/// the second init fetches nothing; a link is read-only.
#[test]
fn read_only_packages_are_linked_once_for_many_checkouts() {
    let (env, base) = env_with_git_dir();
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
    // gita gets the package, gitb (a later call of the same address) its variant without
    // dot entries; both shared by all ten checkouts.
    assert_eq!(ids.len(), 2, "{ids:?}");
    let ls = stdout(&run_ok(tstore(&env, None).args(["store", "ls", "--json"])));
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
    run_ok(tstore(&env, None).args(["store", "verify"]));
}

fn json_str(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

/// Bad inputs name the call and file:line, and leave `.terraform/modules` alone.
#[test]
fn bad_module_sources_fail_clearly_and_write_nothing() {
    let (env, base) = env_with_git_dir();
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

/// `git archive --format=FORMAT v1.0.0` of `<base>/repo.git` (`tar.xz`/`tar.bz2`: the tar
/// piped through `xz`/`bzip2`).
fn git_archive(base: &Path, format: &str) -> Vec<u8> {
    let out_file = base.join(format!("pkg.{format}"));
    let (fmt, filter) = match format {
        "tar.xz" => ("tar", " | xz -c"),
        "tar.bz2" => ("tar", " | bzip2 -c"),
        f => (f, ""),
    };
    sh(
        base,
        &format!(
            "git -C repo.git archive --format={fmt} v1.0.0{filter} > {}",
            out_file.display()
        ),
    );
    fs_err::read(out_file).unwrap()
}

/// The full fixture: the root of [`root_config`] (a local module calling `../`, the same git
/// module at one tag twice, a git `//subdir` whose module calls a remote one, and the
/// package root calling `./modules/inner`), plus registry modules with version constraints
/// (git location; relative archive location) and http archives (zip with `//subdir`,
/// tar.gz forced by `?archive=`, a page answering `X-Terraform-Get`, tar.xz with `//subdir`,
/// tar.bz2 forced by `?archive=`).
/// `meta` is the package repository's `module-package.meta.hcl` (and so every archive's, and
/// the registry modules'), when given.
fn full_fixture(
    env: &TestEnv,
    base: &Path,
    meta: Option<&str>,
) -> (ModuleRegistry, std::path::PathBuf, String) {
    package_repo(base, meta);
    let reg = ModuleRegistry::start();
    let git = format!("git::file://{}/repo.git?ref=v1.0.0", base.display());
    for v in ["1.0.0", "1.1.0", "1.2.0-beta", "2.0.0"] {
        reg.publish("acme/gitpkg/null", v, &git);
        // From /v1/modules/acme/tarpkg/null/V/download up to the server root.
        reg.publish(
            "acme/tarpkg/null",
            v,
            "../../../../../../archives/pkg.tar.gz",
        );
    }
    let zip = reg.archive("pkg.zip", git_archive(base, "zip"));
    reg.archive("pkg.tar.gz", git_archive(base, "tar.gz"));
    reg.archive("pkg-noext", git_archive(base, "tar.gz"));
    reg.archive("pkg.tar.xz", git_archive(base, "tar.xz"));
    reg.archive("pkg-bz", git_archive(base, "tar.bz2"));
    let url = reg.server.url();
    reg.server.route_with_headers(
        "/page/pkg",
        200,
        &[("Content-Type", "text/html"), ("X-Terraform-Get", &zip)],
        "<html></html>",
    );
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let extra = format!(
        "module \"reg\" {{\n  source  = \"{host}/acme/gitpkg/null\"\n  version = \"~> 1.0\"\n}}\n\
         module \"regsub\" {{\n  source  = \"{host}/acme/gitpkg/null//sub\"\n  version = \"1.0.0\"\n}}\n\
         module \"tarreg\" {{\n  source  = \"{host}/acme/tarpkg/null\"\n  version = \">= 1.0.0, < 2.0.0\"\n}}\n\
         module \"zip\" {{\n  source = \"{url}/archives/pkg.zip//modules/inner\"\n}}\n\
         module \"tgz\" {{\n  source = \"{url}/archives/pkg-noext?archive=tar.gz\"\n}}\n\
         module \"page\" {{\n  source = \"{url}/page/pkg\"\n}}\n\
         module \"txz\" {{\n  source = \"{url}/archives/pkg.tar.xz//sub\"\n}}\n\
         module \"tbz\" {{\n  source = \"{url}/archives/pkg-bz?archive=tar.bz2\"\n}}\n\
         output \"remote\" {{\n  value = [module.reg.msg, module.regsub.msg, module.tarreg.msg, module.zip.msg, module.tgz.msg, module.page.msg, module.txz.msg, module.tbz.msg]\n}}\n"
    );
    (reg, cfg, extra)
}

/// Registry modules with version constraints (`modules.v1` through a CLI-config `host`
/// block, `204` + `X-Terraform-Get`, git and relative archive locations) and http archives
/// (zip, tar.gz, tar.xz, tar.bz2, `?archive=`, a page's `X-Terraform-Get`): the same
/// modules.json records as `terraform init`, then `validate` and `plan` offline, and a later
/// `terraform init` trusts the install.
#[test]
fn full_fixture_with_registry_and_archives_matches_terraform() {
    let (env, base) = env_with_git_dir();
    let (reg, cfg, extra) = full_fixture(&env, &base, None);

    let theirs = checkout(&env, "theirs", &base, None);
    fs_err::write(theirs.join("remote.tf"), &extra).unwrap();
    run_ok(
        env.terraform(&theirs)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .arg("init")
            .arg("-no-color"),
    );
    let ours = checkout(&env, "ours", &base, None);
    fs_err::write(ours.join("remote.tf"), &extra).unwrap();
    let before = reg.server.requests().len();
    let out = run_ok(
        no_fuse(tstore(&env, Some(&cfg)))
            .arg("init")
            .arg("--json")
            .arg(&ours),
    );
    let report = json(&out);
    let theirs_records = records(&theirs);
    assert_eq!(records(&ours), theirs_records);
    assert!(
        theirs_records.contains(&format!(
            r#"{{"Dir":".terraform/modules/reg","Key":"reg","Source":"{}/acme/gitpkg/null","Version":"1.1.0"}}"#,
            reg.host()
        )),
        "{theirs_records:?}"
    );
    // tstore fetched each package once: the git repo (reg, regsub, gita, ... share it), two
    // tar.gz (tarreg and tgz have the same bytes, but their URLs differ), one zip (zip and
    // page resolve to the same URL), one tar.xz, one tar.bz2.
    let downloads: Vec<String> = reg.server.requests()[before..]
        .iter()
        .filter(|r| r.path.starts_with("/archives/"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(downloads.len(), 5, "{downloads:?}");
    // `store ls` names module packages by the addresses they were installed for.
    let listed = stdout(&run_ok(
        no_fuse(tstore(&env, Some(&cfg))).args(["store", "ls"]),
    ));
    assert!(
        listed.contains(&format!("{}/acme/tarpkg/null 1.1.0", reg.host())),
        "{listed}"
    );
    assert!(listed.contains("/archives/pkg.tar.xz"), "{listed}");
    assert!(
        listed.contains(&format!(
            "git::file://{}/repo.git?ref=v1.0.0 (",
            base.display()
        )),
        "{listed}"
    );
    let fetched = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["package"].as_str())
        .collect::<BTreeSet<_>>();
    assert_eq!(
        fetched.len(),
        7,
        "git (and its variant without dot entries), zip, tar.gz twice, xz, bz2: {fetched:?}"
    );
    // The first call of the git repo has its dot entries, later ones do not, as terraform
    // installs them.
    for key in ["gita", "gitb", "reg"] {
        let hidden = |d: &Path| {
            d.join(".terraform/modules")
                .join(key)
                .join(".hidden")
                .exists()
        };
        assert_eq!(hidden(&ours), hidden(&theirs), "{key}");
    }
    assert!(ours.join(".terraform/modules/gita/.hidden").exists());
    assert!(!ours.join(".terraform/modules/gitb/.hidden").exists());

    for dir in [&ours, &theirs] {
        run_ok(env.terraform(dir).arg("validate").arg("-no-color"));
    }
    let plan = |dir: &Path| {
        let text = stdout(&run_ok(
            env.terraform(dir)
                .env("TF_CLI_CONFIG_FILE", &cfg)
                .arg("plan")
                .arg("-no-color"),
        ));
        text.lines()
            .filter(|l| l.contains('"'))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let ours_plan = plan(&ours);
    assert_eq!(ours_plan, plan(&theirs));
    assert!(
        ours_plan.iter().any(|l| l.contains("\"sub:inner:deep\"")),
        "{ours_plan:?}"
    );
    // A later plain `terraform init` trusts every record: nothing is downloaded.
    let before = reg.server.requests().len();
    let again = stdout(&run_ok(
        env.terraform(&ours)
            .env("TF_CLI_CONFIG_FILE", &cfg)
            .arg("init")
            .arg("-no-color"),
    ));
    assert!(!again.contains("Downloading"), "{again}");
    assert!(
        reg.server.requests()[before..]
            .iter()
            .all(|r| !r.path.starts_with("/archives/")),
        "{:?}",
        reg.server.requests()
    );
}

/// `tstore init --explain` output: module key → (the `- KEY in DIR[ (VERSION)]` line, the
/// decision line `    ACTION: REASON` under it).
fn explained(text: &str) -> std::collections::BTreeMap<String, (String, String)> {
    let mut calls = std::collections::BTreeMap::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("- ") else {
            continue;
        };
        let Some((key, _)) = rest.split_once(" in ") else {
            continue;
        };
        let decision = lines
            .next_if(|l| l.starts_with("    "))
            .unwrap_or_else(|| panic!("no decision line under {line:?}:\n{text}"));
        calls.insert(
            key.to_owned(),
            (line.to_owned(), decision.trim_start().to_owned()),
        );
    }
    calls
}

/// Ten checkouts of the full fixture, whose packages carry `module-package.meta.hcl` files:
/// every package but one says its modules are read-only; one more git package says
/// `self = false`. Each remote package is in the store once and each archive is ingested
/// once; in every checkout the read-only installs are links into `$TSTORE_MOUNT/modules/…`
/// that resolve, the `self = false` one is a private writable copy, and local modules are read in place. `--explain` names each call, its
/// decision and the reason; `terraform validate` passes offline.
#[test]
fn ten_checkouts_of_the_full_fixture_share_one_store_package_per_remote_package() {
    let (env, base) = env_with_git_dir();
    let (reg, cfg, extra) = full_fixture(&env, &base, Some("# every module is read-only\n"));
    let rw = one_module_repo(
        &base,
        "rw",
        "output \"msg\" {\n  value = \"rw\"\n}\n",
        Some("module \"main\" {\n  path = \".\"\n  read-only = {\n    self = false\n  }\n}\n"),
    );
    let rw_tf = format!("module \"rw\" {{\n  source = \"{rw}\"\n}}\n");
    // Remote installs (one `.terraform/modules/KEY` each) and the package each one names:
    // the git repo (gita, gitb, gitsub, the registry's reg and regsub, and the `deep` calls of
    // `sub`), the zip
    // (zip, and page through X-Terraform-Get), two tar.gz URLs, tar.xz, tar.bz2, and rw.
    let linked = [
        ("gita", "repo"),
        ("gitb", "repo"),
        ("gitsub", "repo"),
        ("gitsub.deep", "repo"),
        ("reg", "repo"),
        ("regsub", "repo"),
        ("regsub.deep", "repo"),
        ("txz.deep", "repo"),
        ("zip", "zip"),
        ("page", "zip"),
        ("tarreg", "tar.gz"),
        ("tgz", "noext"),
        ("txz", "tar.xz"),
        ("tbz", "tar.bz2"),
    ];
    // Modules read where they are: local calls, and calls inside a remote install.
    let in_place = [
        "gita.inner",
        "gitb.inner",
        "local",
        "local.nested",
        "page.inner",
        "reg.inner",
        "tarreg.inner",
        "tbz.inner",
        "tgz.inner",
    ];
    // Archive URLs named by module calls (pkg.zip also through page's X-Terraform-Get).
    let plain_archives = [
        "/archives/pkg.zip",
        "/archives/pkg-noext",
        "/archives/pkg.tar.xz",
        "/archives/pkg-bz",
    ];
    // Registry module versions: their download endpoints, and the archive tarpkg names.
    let registry_downloads = [
        "/v1/modules/acme/gitpkg/null/1.1.0/download",
        "/v1/modules/acme/gitpkg/null/1.0.0/download",
        "/v1/modules/acme/tarpkg/null/1.1.0/download",
        "/archives/pkg.tar.gz",
    ];

    let before = reg.server.requests().len();
    let mut packages: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    let mut first_records = None;
    // Package id → how many inits fetched (cloned, or downloaded and ingested) it.
    let mut fetches: std::collections::BTreeMap<String, usize> = Default::default();
    for i in 0..10 {
        let dir = checkout(&env, &format!("c{i}"), &base, None);
        fs_err::write(dir.join("remote.tf"), &extra).unwrap();
        fs_err::write(dir.join("rw.tf"), &rw_tf).unwrap();
        let report = json(&run_ok(
            tstore(&env, Some(&cfg)).arg("init").arg("--json").arg(&dir),
        ));
        let calls = report["modules"].as_array().unwrap();
        let listed = |what: &str| -> BTreeSet<String> {
            module_packages(&report, what).into_iter().collect()
        };
        for id in listed("fetched") {
            *fetches.entry(id).or_default() += 1;
        }
        if i == 0 {
            assert_eq!(listed("fetched").len(), 8, "c0: {report}");
        } else {
            assert!(listed("fetched").is_empty(), "c{i}: {report}");
            assert_eq!(listed("reused").len(), 8, "c{i}: {report}");
        }
        let call = |key: &str| {
            calls
                .iter()
                .find(|c| c["key"] == key)
                .unwrap_or_else(|| panic!("no call {key}: {report}"))
        };
        let modules = dir.join(".terraform/modules");
        for (key, group) in linked {
            let c = call(key);
            assert_eq!(c["action"], "link", "{c}");
            assert_eq!(c["read_only"], "read_only", "{c}");
            let id = c["package"].as_str().unwrap();
            packages.entry(group.into()).or_default().insert(id.into());
            let link = fs_err::read_link(modules.join(key)).unwrap();
            assert_eq!(link, env.mount.join("modules").join(id), "{key}");
            // It resolves: the package root, with its meta file.
            assert!(
                modules.join(key).join("module-package.meta.hcl").is_file(),
                "{key} -> {}",
                link.display()
            );
            assert!(modules.join(key).join(".git").symlink_metadata().is_err());
        }
        let c = call("rw");
        assert_eq!(c["action"], "copy", "{c}");
        assert_eq!(c["read_only"], "self_modifying", "{c}");
        packages
            .entry("rw".into())
            .or_default()
            .insert(c["package"].as_str().unwrap().into());
        let copy = modules.join("rw");
        let meta = fs_err::symlink_metadata(&copy).unwrap();
        assert!(meta.is_dir(), "a real directory, not a link: {meta:?}");
        assert!(copy.join("main.tf").is_file());
        fs_err::write(copy.join("scratch"), "private").unwrap();
        for key in in_place {
            let c = call(key);
            assert_eq!(c["action"], "in_place", "{c}");
            assert!(modules.join(key).symlink_metadata().is_err(), "{key}");
        }
        // Local modules are not copied: their records point at the source directories.
        assert_eq!(call("local")["dir"], "local-mod");
        assert_eq!(call("local.nested")["dir"], "local-mod2");
        assert_eq!(
            call("gita.inner")["dir"],
            ".terraform/modules/gita/modules/inner"
        );
        let recs = records(&dir);
        for r in [
            r#"{"Dir":"local-mod","Key":"local","Source":"./local-mod"}"#,
            r#"{"Dir":"local-mod2","Key":"local.nested","Source":"../local-mod2"}"#,
        ] {
            assert!(recs.contains(r), "{recs:?}");
        }
        assert_eq!(
            recs.len(),
            linked.len() + in_place.len() + 2,
            "root, rw and every call: {recs:?}"
        );
        assert_eq!(calls.len(), recs.len() - 1);
        // Every checkout has the same records (relative Dirs; nothing checkout-specific).
        match &first_records {
            None => first_records = Some(recs),
            Some(first) => assert_eq!(&recs, first, "c{i}"),
        }
        if i == 0 {
            run_ok(env.terraform(&dir).arg("validate").arg("-no-color"));
        }
    }
    // The scratch files stayed in their own checkouts' copies, not in the store.
    for i in 0..10 {
        let copy = env.work.join(format!("c{i}/.terraform/modules/rw"));
        assert_eq!(
            fs_err::read_to_string(copy.join("scratch")).unwrap(),
            "private"
        );
    }

    // One package per group, the same in every checkout; the git repo's later calls get
    // its variant without dot entries (as terraform copies the first install): eight
    // distinct packages.
    for (group, ids) in &packages {
        let want = if group == "repo" { 2 } else { 1 };
        assert_eq!(ids.len(), want, "{group}: {ids:?}");
    }
    let repo: Vec<&String> = packages["repo"].iter().collect();
    assert_eq!(format!("{}-nodot", repo[0]), *repo[1], "{repo:?}");
    let ids: BTreeSet<String> = packages.values().flatten().cloned().collect();
    assert_eq!(ids.len(), 8, "{packages:?}");
    let ls = json_str(&stdout(&run_ok(
        tstore(&env, None).args(["store", "ls", "--json"]),
    )));
    let stored: BTreeSet<String> = ls["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "module")
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(stored, ids, "one store package per remote package");
    // Each was fetched once (by the first checkout's init) and found in the store afterwards.
    assert_eq!(
        fetches,
        ids.iter().map(|id| (id.clone(), 1)).collect(),
        "{packages:?}"
    );
    let count = fs_err::read_dir(env.mount.join("modules")).unwrap().count();
    assert_eq!(count, ids.len(), "the mount's modules/ lists them once");

    // Nothing is downloaded twice (docs/decisions.md, "Module packages").
    let log = reg.server.requests();
    let answers = |path: &str| -> Vec<u16> {
        log[before..]
            .iter()
            .filter(|r| r.method == "GET" && r.path.split('?').next() == Some(path))
            .map(|r| r.status)
            .collect()
    };
    // A registry module version is immutable: once its package is in the store, only the
    // version listing is read (every init, to select the version; not at all for a version
    // pinned exactly), not its download endpoint nor the location that names.
    for path in registry_downloads {
        let once: u16 = if path.ends_with("/download") {
            204
        } else {
            200
        };
        assert_eq!(answers(path), [once], "{path}");
    }
    assert_eq!(
        answers("/v1/modules/acme/gitpkg/null/versions").len(),
        10,
        "reg (~> 1.0) lists versions in every init; regsub (1.0.0, exact), of the same \
         module, shares the first init's listing (a listing is asked once per process)"
    );
    // A plain archive URL is asked once per init, however many calls name it (zip and
    // page's X-Terraform-Get both name pkg.zip), conditionally after the first: the server
    // answers 304 and the stored package is reused.
    for path in plain_archives {
        let mut want = vec![304_u16; 10];
        want[0] = 200;
        assert_eq!(answers(path), want, "{path}");
        let conditional = log[before..]
            .iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .skip(1)
            .all(|r| r.if_none_match.is_some());
        assert!(conditional, "{path}: {log:?}");
    }

    // `--explain` (a re-init of c0): each call, its decision and the reason.
    let dir = env.work.join("c0");
    let text = stdout(&run_ok(
        tstore(&env, Some(&cfg))
            .arg("init")
            .arg("--explain")
            .arg(&dir),
    ));
    let explain = explained(&text);
    let keys: BTreeSet<&str> = explain.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = linked
        .iter()
        .map(|(k, _)| *k)
        .chain(in_place)
        .chain(["rw"])
        .collect();
    assert_eq!(keys, want, "{text}");
    for (key, _) in linked {
        let (head, decision) = &explain[key];
        let install = format!("- {key} in .terraform/modules/{key}");
        // The called module's path in its package: "." or the `//subdir`.
        let path = match head.strip_prefix(&install) {
            Some("" | " (1.1.0)" | " (1.0.0)") => ".".to_owned(),
            Some(rest) => rest
                .trim_start_matches('/')
                .split(' ')
                .next()
                .unwrap()
                .to_owned(),
            None => panic!("{head}"),
        };
        assert_eq!(
            decision,
            &format!(
                "linked read-only to the store: every module in the package instance is \
                 read-only: its package's module-package.meta.hcl covers path {path:?} \
                 (read-only by default)"
            ),
            "{key}: {text}"
        );
    }
    assert!(
        explain["reg"].0.ends_with(" (1.1.0)"),
        "{}",
        explain["reg"].0
    );
    let rw = &explain["rw"].1;
    assert!(
        rw.starts_with("private copy (")
            && rw.ends_with("): module-package.meta.hcl says self = false for path \".\""),
        "{text}"
    );
    assert_eq!(
        explain["local"],
        (
            "- local in local-mod".to_owned(),
            "read in place: local path, read in place; no module-package.meta.hcl makes a \
             statement"
                .to_owned()
        )
    );
    assert!(
        explain["gita.inner"]
            .1
            .starts_with("read in place: inside the install of module \"gita\"; "),
        "{text}"
    );
    // The re-init kept the private copy (and what the checkout wrote into it).
    assert!(dir.join(".terraform/modules/rw/scratch").is_file());
    run_ok(tstore(&env, None).args(["store", "verify"]));
}

/// A plain archive URL is revalidated, not trusted (docs/decisions.md, "Module packages"):
/// after the first download each init sends a conditional GET (`If-None-Match`); `304`
/// reuses the stored package, and new bytes at the same URL (a new `ETag`, `200`) are
/// downloaded and ingested as a new package, which the call then uses.
#[test]
fn a_changed_archive_at_the_same_url_is_fetched_and_ingested_again() {
    let env = TestEnv::new();
    let reg = ModuleRegistry::start();
    let src = env.root.path().join("archive-src");
    let tarball = |value: &str| -> Vec<u8> {
        let _ = fs_err::remove_dir_all(&src);
        fs_err::create_dir_all(&src).unwrap();
        fs_err::write(
            src.join("main.tf"),
            format!("output \"v\" {{\n  value = \"{value}\"\n}}\n"),
        )
        .unwrap();
        sh(&src, "tar czf ../m.tar.gz main.tf");
        fs_err::read(env.root.path().join("m.tar.gz")).unwrap()
    };
    let one = tarball("one");
    let etag_one = tstore_test_support::server::etag_of(&one);
    let url = reg.archive("m.tar.gz", one);
    let dir = env.checkout(
        "w",
        &[(
            "main.tf",
            format!("module \"m\" {{\n  source = \"{url}\"\n}}\n").as_str(),
        )],
    );
    // -upgrade: the call is not pinned by the module lock file (which would install the
    // stored package without asking), so every init revalidates the URL.
    let init = || -> (Vec<String>, Vec<String>, String) {
        let report = json(&run_ok(
            no_fuse(tstore(&env, None))
                .arg("init")
                .arg("--json")
                .arg("-upgrade")
                .arg(&dir),
        ));
        let main = fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap();
        (
            module_packages(&report, "fetched"),
            module_packages(&report, "reused"),
            main,
        )
    };
    let (fetched, reused, main) = init();
    assert_eq!(
        (fetched.len(), reused.len()),
        (1, 0),
        "{fetched:?} {reused:?}"
    );
    assert!(main.contains("\"one\""), "{main}");
    let first = fetched[0].clone();
    let (fetched, reused, _) = init();
    assert_eq!(
        (fetched, reused),
        (vec![], vec![first.clone()]),
        "304: reused"
    );

    // New bytes at the same URL: a new ETag, so the conditional GET gets them.
    reg.archive("m.tar.gz", tarball("two"));
    let (fetched, reused, main) = init();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert!(reused.is_empty(), "{reused:?}");
    assert_ne!(fetched[0], first, "new bytes, new package");
    assert!(
        main.contains("\"two\""),
        "the call uses the new package: {main}"
    );
    let second = fetched[0].clone();
    let (fetched, reused, _) = init();
    assert_eq!((fetched, reused), (vec![], vec![second]), "304 again");

    let log: Vec<_> = reg
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/archives/m.tar.gz")
        .collect();
    let statuses: Vec<u16> = log.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 304, 200, 304], "{log:?}");
    assert_eq!(log[0].if_none_match, None, "the first GET is plain");
    assert_eq!(log[2].if_none_match.as_deref(), Some(etag_one.as_str()));
    run_ok(tstore(&env, None).args(["store", "verify"]));
}

/// A registry version that does not exist, a 404 archive and a corrupt archive name the
/// call and file:line, and leave `.terraform/modules` alone.
#[test]
fn bad_registry_and_archive_sources_fail_clearly_and_write_nothing() {
    let (env, base) = env_with_git_dir();
    let (reg, cfg, _) = full_fixture(&env, &base, None);
    let url = reg.server.url();
    reg.archive("corrupt.tar.gz", b"\x1f\x8bnot really gzip".to_vec());
    reg.archive("corrupt.zip", b"PK\x03\x04 truncated".to_vec());
    let host = reg.host();
    for (i, (source, version, expect)) in [
        (
            format!("{host}/acme/gitpkg/null"),
            Some("9.9.9"),
            "no available version",
        ),
        (format!("{host}/acme/nope/null"), None, "Module not found"),
        (format!("{url}/archives/missing.zip"), None, "404"),
        (format!("{url}/archives/corrupt.tar.gz"), None, "corrupt"),
        (format!("{url}/archives/corrupt.zip"), None, "zip"),
    ]
    .into_iter()
    .enumerate()
    {
        let version = version.map_or(String::new(), |v| format!("  version = \"{v}\"\n"));
        let dir = env.checkout(
            &format!("bad{i}"),
            &[(
                "main.tf",
                &format!("\n\nmodule \"m\" {{\n  source = \"{source}\"\n{version}}}\n"),
            )],
        );
        let out = run_fail(no_fuse(tstore(&env, Some(&cfg))).arg("init").arg(&dir));
        let err = stderr(&out);
        assert!(err.contains("main.tf:3"), "{err}");
        assert!(err.contains("module \"m\""), "{err}");
        assert!(err.contains(expect), "{source}: {err}");
        assert!(!dir.join(".terraform/modules").exists());
    }
}

/// A bare repo `<base>/<name>.git` (tag v1) whose root module writes into its own
/// directory at apply time (`local-exec` into `path.module`), with `meta` as its
/// `module-package.meta.hcl`.
/// A module whose apply writes `written.txt` into its own directory (null provider,
/// local-exec).
const SELF_WRITING_MAIN: &str =
    "resource \"null_resource\" \"w\" {\n  provisioner \"local-exec\" {\n    \
     command = \"echo written > ${path.module}/written.txt\"\n  }\n}\n\
     output \"path\" {\n  value = path.module\n}\n";

fn self_modifying_repo(base: &Path, name: &str, meta: &str) -> String {
    one_module_repo(base, name, SELF_WRITING_MAIN, Some(meta))
}

/// A bare repo `<base>/<name>.git` (tag v1) holding `main_tf` and `meta` as its
/// `module-package.meta.hcl`; returns its `git::` source.
fn one_module_repo(base: &Path, name: &str, main_tf: &str, meta: Option<&str>) -> String {
    let src = base.join(format!("{name}-src"));
    fs_err::create_dir_all(&src).unwrap();
    fs_err::write(src.join("main.tf"), main_tf).unwrap();
    if let Some(meta) = meta {
        fs_err::write(src.join("module-package.meta.hcl"), meta).unwrap();
    }
    sh(
        &src,
        &format!(
            "git init -q -b main . && git add -A && git commit -qm init && git tag v1 \
             && git clone -q --bare . ../{name}.git"
        ),
    );
    format!("git::file://{}/{name}.git?ref=v1", base.display())
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
        let report = json(&run_ok(
            tstore(&env, Some(&cfg)).arg("init").arg("--json").arg(dir),
        ));
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
    run_ok(tstore(&env, None).args(["store", "verify"]));
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
        json(&run_ok(
            tstore(&env, Some(&cfg))
                .arg("init")
                .arg("--json")
                .args(extra)
                .arg(dir),
        ))
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

/// A dangling `.terraform/modules/KEY` link makes a plain `terraform init` fail (terraform
/// 1.0.3's `git clone` finds the link in its way), so `tstore init` must not leave one. The
/// store unmounted, or its view of the package removed: `tstore init` makes the link resolve
/// again (mount, or re-materialize the package).
#[test]
fn dangling_module_links_are_repaired_by_tstore_init() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, Some("# read-only\n"));
    let dir = checkout(&env, "c", &base, None);
    let init = |mut cmd: Command| {
        let report = json(&run_ok(cmd.arg("init").arg("--json").arg(&dir)));
        report["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == "gita")
            .unwrap()["package"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let gita = dir.join(".terraform/modules/gita");

    // 1. The FUSE mount goes away (if this machine has FUSE).
    let id = init(tstore(&env, None));
    if !fs_err::symlink_metadata(&env.mount)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        run_ok(tstore(&env, None).arg("umount"));
        assert!(!gita.join("main.tf").exists(), "dangling after umount");
        let err = stderr(&run_fail(env.terraform(&dir).arg("init").arg("-no-color")));
        assert!(err.contains("gita"), "{err}");
        assert_eq!(init(tstore(&env, None)), id);
        assert!(gita.join("main.tf").is_file());
        run_ok(env.terraform(&dir).arg("validate").arg("-no-color"));
        run_ok(tstore(&env, None).arg("umount"));
    }

    // 2. Without FUSE: the package's view in the store is removed.
    assert_eq!(init(no_fuse(tstore(&env, None))), id);
    assert!(gita.join("main.tf").is_file());
    let view = env.store.join("views/modules").join(&id);
    sh(
        env.root.path(),
        // Directories only: the files are hardlinks of the blobs and share their mode.
        &format!(
            "find {0} -type d -exec chmod u+w {{}} + && rm -rf {0}",
            view.display()
        ),
    );
    assert!(!gita.join("main.tf").exists(), "dangling without its view");
    assert_eq!(init(no_fuse(tstore(&env, None))), id);
    assert!(gita.join("main.tf").is_file(), "re-materialized");
    run_ok(env.terraform(&dir).arg("validate").arg("-no-color"));
    run_ok(no_fuse(tstore(&env, None)).args(["store", "verify"]));
}

/// A syntax error inside a module package names the file as the user sees it, under
/// `.terraform/modules/KEY/`, with terraform's line, and never the store's copy; the working
/// directory is left as it was.
#[test]
fn syntax_errors_in_module_packages_name_the_path_the_user_sees() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let src = base.join("pkg-src");
    fs_err::create_dir_all(src.join("modules/inner")).unwrap();
    fs_err::write(
        src.join("main.tf"),
        "module \"inner\" {\n  source = \"./modules/inner\"\n}\n",
    )
    .unwrap();
    fs_err::write(
        src.join("modules/inner/main.tf"),
        "locals {\n  x = true ? 1 :\n  2\n}\n",
    )
    .unwrap();
    sh(
        &src,
        "git init -q -b main . && git add -A && git commit -qm init && git tag v1 \
         && git clone -q --bare . ../pkg.git",
    );
    let source = format!("git::file://{}/pkg.git?ref=v1", base.display());
    let dir = env.checkout(
        "syntax",
        &[(
            "main.tf",
            &format!("module \"net\" {{\n  source = \"{source}\"\n}}\n"),
        )],
    );
    let before = tstore_test_support::snapshot(&dir);
    let out = run_fail(no_fuse(tstore(&env, None)).arg("init").arg(&dir));
    let err = stderr(&out);
    let shown = dir.join(".terraform/modules/net/modules/inner/main.tf:2");
    assert!(
        err.contains(&shown.display().to_string()),
        "stderr does not name {}:\n{err}",
        shown.display()
    );
    assert!(
        !err.contains(&env.store.display().to_string()),
        "stderr names the store:\n{err}"
    );
    assert_eq!(tstore_test_support::snapshot(&dir), before);
}

/// A registry module pinned to one exact version whose package the store holds installs in
/// a new checkout without asking the registry anything; a range still reads the version
/// list. The installed files and modules.json are the same either way.
#[test]
fn an_exactly_pinned_registry_module_in_the_store_needs_no_registry() {
    let (env, base) = env_with_git_dir();
    package_repo(&base, None);
    let reg = ModuleRegistry::start();
    let git = format!("git::file://{}/repo.git?ref=v1.0.0", base.display());
    for v in ["1.0.0", "1.1.0"] {
        reg.publish("acme/gitpkg/null", v, &git);
    }
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let root = |version: &str| {
        format!(
            "module \"reg\" {{\n  source  = \"{host}/acme/gitpkg/null\"\n  version = \"{version}\"\n}}\n"
        )
    };
    let first = env.checkout("first", &[("main.tf", &root("1.0.0"))]);
    run_ok(no_fuse(tstore(&env, Some(&cfg))).arg("init").arg(&first));
    let asked = reg.server.requests().len();

    let second = env.checkout("second", &[("main.tf", &root("1.0.0"))]);
    run_ok(no_fuse(tstore(&env, Some(&cfg))).arg("init").arg(&second));
    assert_eq!(
        reg.server.requests().len(),
        asked,
        "the registry was asked: {:?}",
        &reg.server.requests()[asked..]
    );
    assert_eq!(records(&second), records(&first));

    let ranged = env.checkout("ranged", &[("main.tf", &root(">= 1.0.0, < 1.1.0"))]);
    run_ok(no_fuse(tstore(&env, Some(&cfg))).arg("init").arg(&ranged));
    assert!(
        reg.server.requests()[asked..]
            .iter()
            .any(|r| r.path.ends_with("/versions")),
        "a range reads the version list"
    );
}
