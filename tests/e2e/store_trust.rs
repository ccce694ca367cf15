//! A store restored from a CI cache is not trusted before its packages are re-hashed: its
//! index may claim a lock file's `h1:` for other files. Each test builds the cache on one
//! "machine" (a [`TestEnv`] with its own HOME, so its own machine key) and restores a copy
//! of that store on another, with `cp -a` as a cache restore does (new files, same bytes).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::mirror::{self, PkgFile};
use tstore_test_support::{
    lock_file, run_ok, stderr, stdout, GitRepo, Layout, NullMirror, TestEnv, Tstore, NULL_H1,
    NULL_PROVIDER_FILE,
};

use crate::common::TstoreEnv as _;
use crate::common::{json, NULL_CONFIG};

const NULL_ADDR: &str = "registry.terraform.io/hashicorp/null";
const EVIL_ADDR: &str = "registry.terraform.io/hashicorp/evil";
const NULL_REL: &str = "providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";
const EVIL_REL: &str = "providers/registry.terraform.io/hashicorp/evil/2.1.2/linux_amd64";
const NULL_LINK: &str =
    ".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64";
const EVIL_BYTES: &[u8] = b"#!/bin/sh\necho pwned\n";

/// `tstore` without FUSE (links go to the views), with `cfg` when given.
fn tstore_nf(env: &TestEnv, cfg: Option<&Path>) -> Tstore {
    env.tstore().maybe_cli_config(cfg).no_fuse()
}

/// Restore `from` (a store) into `to` (an empty store directory) as a cache restore does.
fn restore(from: &Path, to: &Path) {
    run_ok(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", from.display()))
            .arg(to),
    );
}

/// Make every directory under `dir` writable (views are 0555), so a test can swap views.
pub(crate) fn writable(dir: &Path) {
    for entry in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.file_type().is_dir() {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

fn index(store: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(store.join("index.sqlite")).unwrap()
}

/// What the cache writer does to a copy of its store: package `name` now resolves to the
/// tree of package `donor` (whose view takes its place). With `consistent`, every hash the
/// index records says what the new files have; without, the tree's `h1:` memo and the
/// package's recorded hashes still claim the original files.
pub(crate) fn swap_package(
    store: &Path,
    name: &str,
    donor: &str,
    (view, donor_view): (&str, &str),
    consistent: bool,
) {
    let conn = index(store);
    let tree_of = |n: &str| -> String {
        conn.query_row("SELECT tree FROM packages WHERE name = ?1", [n], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let (own, donated) = (tree_of(name), tree_of(donor));
    let memo: String = conn
        .query_row("SELECT h1 FROM trees WHERE id = ?1", [&own], |r| r.get(0))
        .unwrap();
    let donated_h1: String = conn
        .query_row("SELECT h1 FROM trees WHERE id = ?1", [&donated], |r| {
            r.get(0)
        })
        .unwrap();
    let lie = if consistent {
        format!(
            "UPDATE package_hashes SET hash = '{donated_h1}' WHERE hash = '{memo}'
             AND package = (SELECT id FROM packages WHERE name = '{name}');"
        )
    } else {
        format!("UPDATE trees SET h1 = '{memo}' WHERE id = '{donated}';")
    };
    conn.execute_batch(&format!(
        "{lie}
         DELETE FROM packages WHERE name = '{donor}';
         UPDATE packages SET tree = '{donated}' WHERE name = '{name}';"
    ))
    .unwrap();
    drop(conn);
    let views = store.join("views");
    writable(&views);
    std::fs::remove_dir_all(views.join(view)).unwrap();
    std::fs::rename(views.join(donor_view), views.join(view)).unwrap();
}

/// The writer's machine: null 2.1.2 installed from the packed mirror (its lock file
/// returned), and a package of other bytes imported under another name.
fn writer_with_an_evil_package(fixture: &NullMirror) -> String {
    let env = &fixture.env;
    let dir = env.checkout("stack", &[("main.tf", NULL_CONFIG)]);
    tstore_nf(env, Some(&fixture.cfg))
        .arg("init")
        .arg(&dir)
        .ok();
    let evil = env.root.path().join("evil-mirror");
    mirror::write_unpacked(
        &evil,
        EVIL_ADDR,
        "2.1.2",
        "linux_amd64",
        &[PkgFile {
            path: NULL_PROVIDER_FILE,
            contents: EVIL_BYTES,
            executable: true,
        }],
    );
    env.tstore().args(["store", "import"]).arg(&evil).ok();
    lock_file(&dir)
}

/// Before: `store verify` called this store sound and `tstore init` linked the swapped
/// files "from the store", since the index said they had the lock's `h1:`. Now `verify`
/// recomputes the `h1:` and names the lie, and the first init on the restoring machine
/// re-hashes every package, quarantines the lying one and installs the real package from
/// the mirror; the next init takes it from the store, re-hashing nothing.
#[test]
fn a_poisoned_provider_in_a_restored_store_is_quarantined_not_linked() {
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let lock = writer_with_an_evil_package(&fixture);
    let victim = TestEnv::new();
    restore(&fixture.env.store, &victim.store);
    swap_package(
        &victim.store,
        NULL_ADDR,
        EVIL_ADDR,
        (NULL_REL, EVIL_REL),
        false,
    );

    let out = victim.tstore().args(["store", "verify"]).fails();
    let text = stdout(&out);
    assert!(text.contains("false record: tree "), "{text}");
    assert!(text.contains(&format!("it records {NULL_H1}")), "{text}");
    assert!(
        text.contains("damaged: provider registry.terraform.io/hashicorp/null 2.1.2"),
        "{text}"
    );
    assert!(text.contains("not vouched for"), "{text}");

    let dir = victim.checkout(
        "stack",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let out = tstore_nf(&victim, Some(&fixture.cfg))
        .args(["init", "--json"])
        .arg(&dir)
        .ok();
    let report = json(&out);
    assert_eq!(report["providers"][0]["obtained"], "ingested", "{report}");
    let err = stderr(&out);
    assert!(err.contains("was not written on this machine"), "{err}");
    assert!(
        err.contains("quarantined, its files contradict its index: provider registry.terraform.io/hashicorp/null 2.1.2"),
        "{err}"
    );
    let linked = std::fs::read(dir.join(NULL_LINK).join(NULL_PROVIDER_FILE)).unwrap();
    assert!(
        linked == mirror::null_provider_bytes(),
        "the link serves other bytes"
    );
    assert_eq!(lock_file(&dir), lock);

    let again = victim.checkout(
        "again",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let report = json(
        &tstore_nf(&victim, Some(&fixture.cfg))
            .args(["init", "--json"])
            .arg(&again)
            .ok(),
    );
    assert_eq!(
        report["providers"][0]["obtained"], "store_by_lock",
        "{report}"
    );
    assert_eq!(report["bytes_hashed"], 0, "{report}");
    victim.tstore().args(["store", "verify"]).ok();
}

/// An honest cache: the first init re-hashes the package once and then uses it from the
/// store, downloading nothing (the mirror is gone); the machine key lives outside the
/// store, in the restoring machine's state directory; the next init re-hashes nothing.
#[test]
fn an_honest_restored_store_is_rehashed_once_then_used_from_the_store() {
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let lock = writer_with_an_evil_package(&fixture);
    let victim = TestEnv::new();
    restore(&fixture.env.store, &victim.store);
    std::fs::remove_dir_all(&fixture.mirror).unwrap();

    let dir = victim.checkout(
        "stack",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let out = tstore_nf(&victim, Some(&fixture.cfg))
        .args(["init", "--json"])
        .arg(&dir)
        .ok();
    let report = json(&out);
    assert_eq!(
        report["providers"][0]["obtained"], "store_by_lock",
        "{report}"
    );
    assert!(
        report["bytes_hashed"].as_u64().unwrap() > 20_000_000,
        "{report}"
    );
    assert!(
        stderr(&out).contains("re-hashed 2 packages"),
        "{}",
        stderr(&out)
    );
    assert!(victim
        .home
        .join(".local/state/tstore/machine-key")
        .is_file());
    let linked = std::fs::read(dir.join(NULL_LINK).join(NULL_PROVIDER_FILE)).unwrap();
    assert!(linked == mirror::null_provider_bytes());

    let again = victim.checkout(
        "again",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let out = tstore_nf(&victim, Some(&fixture.cfg))
        .args(["init", "--json"])
        .arg(&again)
        .ok();
    assert_eq!(json(&out)["bytes_hashed"], 0, "{}", stdout(&out));
    assert!(!stderr(&out).contains("re-hashed"), "{}", stderr(&out));
    let verify = json(&victim.tstore().args(["store", "verify", "--json"]).ok());
    assert_eq!(verify["trusted"], true, "{verify}");
}

/// A bare git repository `<base>/<name>.git` (tag v1.0.0) of one module whose output says
/// `who`.
fn module_repo(base: &Path, name: &str, who: &str) -> PathBuf {
    GitRepo::init(
        base.join(format!("{name}-src")),
        &[(
            "main.tf",
            &format!("output \"who\" {{\n  value = \"{who}\"\n}}\n"),
        )],
    )
    .commit("init")
    .tag("v1.0.0")
    .clone_bare(base.join(format!("{name}.git")))
    .path()
    .to_owned()
}

fn module_call(repo: &Path) -> String {
    format!(
        "module \"m\" {{\n  source = \"git::file://{}?ref=v1.0.0\"\n}}\n",
        repo.display()
    )
}

/// The module id of the package whose view's `main.tf` contains `who`.
fn module_id(store: &Path, who: &str) -> String {
    std::fs::read_dir(store.join("views/modules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p.join("main.tf"))
                .is_ok_and(|t| t.contains(&format!("\"{who}\"")))
        })
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| panic!("no module package saying {who}"))
}

/// The module path gets the same decision: a module package swapped in a restored cache
/// (its name, the repository and commit, now resolving to other files) is forgotten, not
/// linked; the module is cloned again and the checkout links the real files.
#[test]
fn a_poisoned_module_in_a_restored_store_is_fetched_again_not_linked() {
    let writer = TestEnv::new();
    let base = writer.root.path().join("repos");
    std::fs::create_dir_all(&base).unwrap();
    let good = module_repo(&base, "good", "good");
    let evil = module_repo(&base, "evil", "evil");
    for (name, repo) in [("a", &good), ("b", &evil)] {
        let dir = writer.checkout(name, &[("main.tf", &module_call(repo))]);
        tstore_nf(&writer, None).arg("init").arg(&dir).ok();
    }
    let (good_id, evil_id) = (
        module_id(&writer.store, "good"),
        module_id(&writer.store, "evil"),
    );

    let victim = TestEnv::new();
    restore(&writer.store, &victim.store);
    // Every hash the index records is consistent with the new files: only the package's
    // name (the good repository at its commit) lies, which no hash of its files can show.
    swap_package(
        &victim.store,
        &good_id,
        &evil_id,
        (&format!("modules/{good_id}"), &format!("modules/{evil_id}")),
        true,
    );
    // No hash of the store contradicts its index.
    victim.tstore().args(["store", "verify"]).ok();
    let dir = victim.checkout("a", &[("main.tf", &module_call(&good))]);
    let out = tstore_nf(&victim, None).arg("init").arg(&dir).ok();
    let main = std::fs::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap();
    assert!(main.contains("\"good\""), "{main}");
    assert!(
        stderr(&out).contains("module packages' names forgotten"),
        "{}",
        stderr(&out)
    );
    let verify = json(&victim.tstore().args(["store", "verify", "--json"]).ok());
    assert_eq!(verify["claims_bad"], serde_json::json!([]), "{verify}");
    assert_eq!(verify["trusted"], true, "{verify}");
}

/// A provider swapped with every hash consistent: the adoption finds nothing false, and the
/// package no longer matches the lock, so init fetches the real one from the mirror; the
/// package only a restored cache vouched for gives way to it instead of failing the init
/// with a package conflict.
#[test]
fn a_consistently_swapped_provider_gives_way_to_the_verified_package() {
    let fixture = TestEnv::with_null_mirror(Layout::Packed);
    let lock = writer_with_an_evil_package(&fixture);
    let victim = TestEnv::new();
    restore(&fixture.env.store, &victim.store);
    swap_package(
        &victim.store,
        NULL_ADDR,
        EVIL_ADDR,
        (NULL_REL, EVIL_REL),
        true,
    );
    victim.tstore().args(["store", "verify"]).ok();

    let dir = victim.checkout(
        "stack",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let report = json(
        &tstore_nf(&victim, Some(&fixture.cfg))
            .args(["init", "--json"])
            .arg(&dir)
            .ok(),
    );
    assert_eq!(report["providers"][0]["obtained"], "ingested", "{report}");
    let linked = std::fs::read(dir.join(NULL_LINK).join(NULL_PROVIDER_FILE)).unwrap();
    assert!(
        linked == mirror::null_provider_bytes(),
        "the link serves other bytes"
    );
    assert_eq!(lock_file(&dir), lock);
    victim.tstore().args(["store", "verify"]).ok();
}

/// A restored cache with every origin gone: a call its lock file pins installs from the
/// store's files found by the lock's `h1:` (its copy without dot entries made there too),
/// and the report says so: nothing fetched, every package from the store, no word of an
/// origin or of fetching again.
#[test]
fn a_restored_cache_with_every_origin_gone_reports_what_the_run_did() {
    let writer = TestEnv::new();
    let base = writer.root.path().join("repos");
    let repo = GitRepo::init(
        base.join("m-src"),
        &[
            ("main.tf", "output \"who\" {\n  value = \"m\"\n}\n"),
            (".hidden", "a dot entry, left out of the linked copy\n"),
        ],
    )
    .commit("init")
    .tag("v1.0.0")
    .clone_bare(base.join("m.git"))
    .path()
    .to_owned();
    // Two calls of one source: the second installs a copy without dot entries (as
    // terraform copies an installed module), made from the first in the store.
    let calls = format!(
        "{}{}",
        module_call(&repo),
        module_call(&repo).replace("module \"m\"", "module \"n\"")
    );
    let dir = writer.checkout("a", &[("main.tf", &calls)]);
    tstore_nf(&writer, None).arg("init").arg(&dir).ok();
    let lock = std::fs::read_to_string(dir.join(".tstore.lock.hcl")).unwrap();

    let runner = TestEnv::new();
    restore(&writer.store, &runner.store);
    std::fs::rename(&base, writer.root.path().join("gone")).unwrap();
    let dir = runner.checkout("a", &[("main.tf", &calls), (".tstore.lock.hcl", &lock)]);
    let out = tstore_nf(&runner, None)
        .env("TSTORE_TRUST_LOCK", "1")
        .args(["init", "--json"])
        .arg(&dir)
        .ok();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["module_packages"]["fetched"],
        serde_json::json!([]),
        "{report}"
    );
    for key in ["m", "n"] {
        let call = report["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["key"] == key)
            .unwrap_or_else(|| panic!("no call {key}: {report}"));
        assert_eq!(call["obtained"], "store", "{report}");
    }
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("fetched again"), "{said}");
    assert!(!dir.join(".terraform/modules/n/.hidden").exists());
    assert!(dir.join(".terraform/modules/n/main.tf").exists());
}
