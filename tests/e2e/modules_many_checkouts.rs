//! Ten checkouts of the full fixture ([`full_fixture`]): one store package per remote
//! package, each install linked read-only or copied as its package's meta file says, local
//! modules read in place, nothing downloaded twice, and `--explain` naming each decision.

use std::collections::BTreeSet;

use tstore_test_support::{run_ok, stdout, ModuleRecord};

use crate::common::json;
use crate::common::TstoreEnv as _;
use crate::modules_fixture::{
    checkout, env_with_git_dir, full_fixture, json_str, module_packages, one_module_repo, records,
};

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
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: each check reads the store and checkouts the steps before it built"
)]
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
        let report = json(
            &env.tstore()
                .cli_config(&cfg)
                .arg("init")
                .arg("--json")
                .arg(&dir)
                .ok(),
        );
        let calls = report["modules"].as_array().unwrap();
        let listed = |what: &str| -> BTreeSet<String> {
            module_packages(&report, what).into_iter().collect()
        };
        for id in listed("fetched") {
            *fetches.entry(id).or_default() += 1;
        }
        if i == 0 {
            // Seven from their origins; the copy without dot entries is made from one of
            // them in the store (reused, not fetched).
            assert_eq!(listed("fetched").len(), 7, "c0: {report}");
            assert_eq!(listed("reused").len(), 1, "c0: {report}");
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
            ModuleRecord::new("local", "./local-mod", None, "local-mod"),
            ModuleRecord::new("local.nested", "../local-mod2", None, "local-mod2"),
        ] {
            assert!(recs.contains(&r), "{recs:?}");
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
    let ls = json_str(&stdout(&env.tstore().args(["store", "ls", "--json"]).ok()));
    let stored: BTreeSet<String> = ls["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "module")
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(stored, ids, "one store package per remote package");
    // Each was fetched once (by the first checkout's init) and found in the store
    // afterwards; the copy without dot entries was made in the store, never fetched.
    assert_eq!(
        fetches,
        ids.iter()
            .filter(|id| !id.ends_with("-nodot"))
            .map(|id| (id.clone(), 1))
            .collect(),
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
    let text = stdout(
        &env.tstore()
            .cli_config(&cfg)
            .arg("init")
            .arg("--explain")
            .arg(&dir)
            .ok(),
    );
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
    env.tstore().args(["store", "verify"]).ok();
}
