//! A module mirror's layers are downloaded once per content: two calls whose lock entries pin
//! the same tree under two addresses (an archive and its copy at another URL) get it with one
//! layer download, and both install it, each under its own address, vouched for by the mirror; a
//! later init of a third address with that content downloads no layer (the mirror's answer
//! names a tree the store holds). The origins are gone for runner B (the git remote moved,
//! the archive host answering 503; `TSTORE_TRUST_LOCK=1`), so the mirror alone serves them.

use std::path::Path;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{GitRepo, TestEnv, Tstore};

use crate::common::{json, TstoreEnv as _};

const LOCK: &str = ".tstore.lock.hcl";

fn call(name: &str, source: &str) -> String {
    format!("module \"{name}\" {{\n  source = \"{source}\"\n}}\n")
}

fn tstore(env: &TestEnv, cfg: &Path, ca: &Path) -> Tstore {
    env.tstore()
        .cli_config(cfg)
        .env("SSL_CERT_FILE", ca)
        .no_fuse()
}

/// The GET requests for blobs the registry has logged since `from`.
fn blob_gets(oci: &OciRegistry, from: usize) -> Vec<String> {
    oci.requests()[from..]
        .iter()
        .filter(|r| r.starts_with("GET") && r.contains("/blobs/sha256:"))
        .cloned()
        .collect()
}

#[test]
fn one_content_under_several_addresses_is_downloaded_from_the_mirror_once() {
    let oci = OciRegistry::start();
    let mirror = format!("oci://{}/team/modules", oci.host());
    let a = TestEnv::new();
    let ca = oci.write_ca(&a.root.path().join("ca.pem"));
    let archives = ModuleRegistry::start();
    let cfg = archives.write_cli_config(&a.root.path().join("cli.tfrc"), "");
    let tarball = {
        let src = a.root.path().join("twin-src");
        fs_err::create_dir_all(&src).unwrap();
        fs_err::write(
            src.join("main.tf"),
            "output \"v\" {\n  value = \"twin\"\n}\n",
        )
        .unwrap();
        fs_err::write(src.join("README.md"), "one tree at three URLs\n").unwrap();
        crate::common::sh(&src, "tar czf ../twin.tar.gz main.tf README.md");
        fs_err::read(a.root.path().join("twin.tar.gz")).unwrap()
    };
    let twin = archives.archive("twin.tar.gz", tarball.clone());
    let copy = archives.archive("copy.tar.gz", tarball.clone());
    let third = archives.archive("third.tar.gz", tarball);
    let base = a.root.path().join("git");
    let other = GitRepo::tagged_module(
        &base,
        "other",
        &[("main.tf", "output \"v\" {\n  value = \"other\"\n}\n")],
    );
    let other = format!("git::file://{}?ref=v1", other.display());
    let main = format!(
        "{}{}{}",
        call("twin", &twin),
        call("copy", &copy),
        call("other", &other)
    );

    // Runner A locks and pushes: two packages (the twins share one tag, their h1:).
    let dir_a = a.checkout("w", &[("main.tf", main.as_str())]);
    tstore(&a, &cfg, &ca).arg("init").arg(&dir_a).ok();
    let pushed = json(
        &tstore(&a, &cfg, &ca)
            .args(["push", "--json", "--modules", &mirror])
            .ok(),
    );
    assert_eq!(
        pushed["pushed_modules"]["packages"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{pushed}"
    );
    let lock = fs_err::read_to_string(dir_a.join(LOCK)).unwrap();
    let h1_of = |key: &str| {
        lock.split(&format!("module \"{key}\""))
            .nth(1)
            .and_then(|rest| rest.split("\"h1:").nth(1))
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no h1: for {key} in {lock}"))
            .to_owned()
    };
    assert_eq!(h1_of("twin"), h1_of("copy"), "one tree: {lock}");
    assert_ne!(h1_of("twin"), h1_of("other"));
    let installed = |dir: &Path, key: &str| {
        fs_err::read_to_string(dir.join(".terraform/modules").join(key).join("main.tf")).unwrap()
    };
    fs_err::rename(&base, base.with_extension("moved")).unwrap();
    archives.server.fail_all(503);

    // Runner B: an empty store, the origins gone, only the mirror.
    let b = TestEnv::new();
    let dir_b = b.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let init_from_mirror = |dir: &Path| {
        json(
            &tstore(&b, &cfg, &ca)
                .env("TSTORE_MODULE_MIRROR", &mirror)
                .env("TSTORE_TRUST_LOCK", "1")
                .args(["init", "--json"])
                .arg(dir)
                .ok(),
        )
    };
    let before = oci.requests().len();
    let report = init_from_mirror(&dir_b);
    let gets = blob_gets(&oci, before);
    assert_eq!(gets.len(), 2, "one layer per content: {gets:?}");
    // The walk asks for the twins in order (copy, twin): the second is the content the
    // first brought, vouched for by the mirror's answer and read from the store.
    let obtained: Vec<(&str, &str, &str)> = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap(),
                c["obtained"].as_str().unwrap(),
                c["vouched_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        obtained,
        [
            ("copy", "mirror", "mirror"),
            ("other", "mirror", "mirror"),
            ("twin", "store", "mirror")
        ],
        "{report}"
    );
    for key in ["twin", "copy"] {
        assert!(installed(&dir_b, key).contains("twin"));
    }
    assert!(installed(&dir_b, "other").contains("other"));
    assert_eq!(fs_err::read_to_string(dir_b.join(LOCK)).unwrap(), lock);

    // A third URL of the same content, in another checkout on B's store: the mirror is
    // asked (its tag answers for the content) and no layer is downloaded.
    let lock3 = lock.replace(&twin, &third);
    let main3 = main.replace(&twin, &third);
    let dir_b3 = b.checkout("w3", &[("main.tf", main3.as_str()), (LOCK, lock3.as_str())]);
    let before = oci.requests().len();
    let report = init_from_mirror(&dir_b3);
    assert_eq!(blob_gets(&oci, before), Vec::<String>::new());
    assert!(
        oci.requests()[before..]
            .iter()
            .any(|r| r.contains(&format!("/manifests/{}", tag_of(&h1_of("twin"))))),
        "{:?}",
        &oci.requests()[before..]
    );
    assert_eq!(report["modules"][2]["key"], "twin", "{report}");
    assert_eq!(report["modules"][2]["obtained"], "store", "{report}");
    assert_eq!(report["modules"][2]["vouched_by"], "mirror", "{report}");
    assert!(installed(&dir_b3, "twin").contains("twin"));
}

/// `h1-<hex>`: the mirror's tag of an `h1:`'s base64.
fn tag_of(h1: &str) -> String {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(h1)
        .unwrap();
    format!("h1-{}", hex::encode(raw))
}

/// The central directory's entry for `name` in `zip`, renamed to `to` (as long): the local
/// header still says `name`.
fn rename_in_central_directory(zip: &[u8], name: &str, to: &str) -> Vec<u8> {
    assert_eq!(name.len(), to.len());
    let mut out = zip.to_vec();
    let at = (0..zip.len() - 46)
        .find(|&i| {
            zip[i..i + 4] == [0x50, 0x4b, 0x01, 0x02] && zip[i + 46..].starts_with(name.as_bytes())
        })
        .expect("a central-directory record of the name");
    out[at + 46..at + 46 + to.len()].copy_from_slice(to.as_bytes());
    out
}

/// A mirror layer is unpacked as it downloads, from its local headers; a layer whose central
/// directory names other entries (what a reader of the central directory would unpack) is
/// refused under its own digest and with the tag's `h1:` matching its local headers, and
/// nothing is linked; the honest layer then installs.
#[test]
fn a_layer_whose_central_directory_tells_another_story_is_refused() {
    let oci = OciRegistry::start();
    let repository = "team/modules";
    let mirror = format!("oci://{}/{repository}", oci.host());
    let a = TestEnv::new();
    let ca = oci.write_ca(&a.root.path().join("ca.pem"));
    let archives = ModuleRegistry::start();
    let cfg = archives.write_cli_config(&a.root.path().join("cli.tfrc"), "");
    let base = a.root.path().join("git");
    let net = GitRepo::tagged_module(
        &base,
        "net",
        &[
            ("main.tf", "output \"v\" {\n  value = \"net\"\n}\n"),
            ("vars.tf", "variable \"x\" {\n  default = 1\n}\n"),
        ],
    );
    let main = call("net", &format!("git::file://{}?ref=v1", net.display()));
    let dir_a = a.checkout("w", &[("main.tf", main.as_str())]);
    tstore(&a, &cfg, &ca).arg("init").arg(&dir_a).ok();
    tstore(&a, &cfg, &ca)
        .args(["push", "--modules", &mirror])
        .ok();
    let lock = fs_err::read_to_string(dir_a.join(LOCK)).unwrap();
    fs_err::rename(&base, base.with_extension("moved")).unwrap();
    let h1 = lock
        .split("\"h1:")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let tag = tag_of(&h1);
    let manifest_type = "application/vnd.oci.image.manifest.v1+json";
    let honest_manifest = oci.get(&format!("/v2/{repository}/manifests/{tag}"), manifest_type);
    let mut manifest: serde_json::Value = serde_json::from_slice(&honest_manifest).unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap().to_owned();
    let honest = oci.get(
        &format!("/v2/{repository}/blobs/{layer}"),
        "application/octet-stream",
    );

    // The same local headers (the tag's h1:), a central directory that says "evil.tf".
    let story = rename_in_central_directory(&honest, "vars.tf", "evil.tf");
    let read_by_directory: Vec<String> = zip::ZipArchive::new(std::io::Cursor::new(&story))
        .unwrap()
        .file_names()
        .map(str::to_owned)
        .collect();
    assert!(
        read_by_directory.contains(&"evil.tf".to_owned()),
        "{read_by_directory:?}"
    );
    let digest = oci.push_blob(repository, &story);
    manifest["layers"][0]["digest"] = digest.clone().into();
    manifest["layers"][0]["size"] = story.len().into();
    oci.push_manifest(
        repository,
        &tag,
        manifest_type,
        &serde_json::to_vec(&manifest).unwrap(),
    );

    let b = TestEnv::new();
    let dir_b = b.checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    let init = || {
        tstore(&b, &cfg, &ca)
            .env("TSTORE_MODULE_MIRROR", &mirror)
            .env("TSTORE_TRUST_LOCK", "1")
            .arg("init")
            .arg(&dir_b)
    };
    let refused = tstore_test_support::stderr(&init().fails());
    assert!(refused.contains("central directory"), "{refused}");
    assert!(refused.contains("vars.tf"), "{refused}");
    assert!(!dir_b.join(".terraform/modules").exists());

    // The honest layer under the tag again: the same runner installs it.
    oci.push_manifest(repository, &tag, manifest_type, &honest_manifest);
    init().ok();
    let installed = dir_b.join(".terraform/modules/net");
    assert!(fs_err::read_to_string(installed.join("vars.tf"))
        .unwrap()
        .contains("default = 1"));
    assert!(!installed.join("evil.tf").exists());
}
