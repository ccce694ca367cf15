//! A module package pushed to a real registry: one manifest whose one layer is the package
//! as a zip, and a tag naming another manifest left alone unless replaced.

use serde_json::json;
use tstore_test_support::oci_registry::tofu_layout as layout;

use super::{empty_config, sha256_digest, zip_entries, Registry, TestStore};
use crate::net::oci::OciRepository;
use crate::net::NetworkSettings;
use crate::publish::{oci_client, push_module, ExistingTag, PushError};

const REPO: &str = "modules/greeting";
const FILES: [(&str, &str); 2] = [
    ("main.tf", "variable \"name\" {}\n"),
    ("sub/README.md", "A greeting.\n"),
];

/// The tag names a manifest of the module package's artifact type: the empty config, and
/// one zip layer holding the package's files. A second push uploads nothing and leaves the
/// tag.
#[test]
fn a_module_package_is_one_manifest_whose_layer_is_its_zip() {
    let store = TestStore::new(false);
    store.add_module("greeting-1", &FILES);
    let registry = Registry::start();
    let repo = registry.repository(REPO);
    let push = || {
        push_module(
            &store.store,
            &registry.client,
            &repo,
            "1.0.0",
            "greeting-1",
            ExistingTag::Refuse,
        )
    };

    let pushed = push().unwrap();

    assert_eq!(pushed.package, "greeting-1");
    assert_eq!(pushed.reference, registry.at("modules/greeting:1.0.0"));
    assert_eq!((pushed.blobs_uploaded, pushed.blobs_present), (2, 0));
    let manifest = registry.document(REPO, "1.0.0", layout::MANIFEST);
    assert_eq!(manifest.digest, pushed.digest);
    assert_eq!(manifest.json["schemaVersion"], 2);
    assert_eq!(manifest.json["mediaType"], layout::MANIFEST);
    assert_eq!(manifest.json["artifactType"], layout::MODULE);
    assert_eq!(manifest.json["config"], empty_config());
    let layers = manifest.json["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    let layer = layers[0]["digest"].as_str().unwrap();
    let zip = registry.blob(REPO, layer);
    assert_eq!(
        layers[0],
        json!({"mediaType": layout::ZIP_LAYER, "digest": sha256_digest(&zip), "size": zip.len()})
    );
    let files: Vec<(String, Vec<u8>)> = zip_entries(&zip)
        .into_iter()
        .map(|(name, contents, _)| (name, contents))
        .collect();
    let want: Vec<(String, Vec<u8>)> = FILES
        .iter()
        .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
        .collect();
    assert_eq!(files, want);

    let tag_writes = || registry.requests(&format!("PUT /v2/{REPO}/manifests/1.0.0 "));
    assert_eq!(tag_writes(), 1);
    let again = push().unwrap();
    assert_eq!(again.digest, pushed.digest);
    assert_eq!((again.blobs_uploaded, again.blobs_present), (0, 2));
    assert_eq!(tag_writes(), 1, "the tag already names this manifest");
}

/// A tag naming another manifest is refused, and stays; told to replace it, the push does.
#[test]
fn a_tag_naming_another_manifest_is_refused_unless_replaced() {
    let store = TestStore::new(false);
    store.add_module("greeting-1", &FILES);
    let registry = Registry::start();
    let repo = registry.repository(REPO);
    let theirs = registry
        .registry
        .push_module(REPO, "1.0.0", b"another package");
    let push = |existing| {
        push_module(
            &store.store,
            &registry.client,
            &repo,
            "1.0.0",
            "greeting-1",
            existing,
        )
    };

    let err = push(ExistingTag::Refuse).unwrap_err();

    let PushError::TagTaken {
        reference,
        what,
        existing,
        ours,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*reference, registry.at("modules/greeting:1.0.0"));
    assert_eq!(what, "another manifest");
    assert_eq!(*existing, theirs);
    assert_ne!(*ours, theirs);
    let tag = registry.document(REPO, "1.0.0", layout::MANIFEST);
    assert_eq!(tag.digest, theirs, "the tag stays");

    let pushed = push(ExistingTag::Replace).unwrap();
    assert_eq!(pushed.digest, *ours);
    let tag = registry.document(REPO, "1.0.0", layout::MANIFEST);
    assert_eq!(tag.digest, pushed.digest);
}

/// A package id the store lacks is an error naming it, found before any registry is asked
/// (this one listens nowhere).
#[test]
fn a_package_the_store_lacks_is_nothing_selected() {
    let store = TestStore::new(false);
    let client = oci_client(&NetworkSettings::default()).unwrap();
    let repo = OciRepository {
        registry: "127.0.0.1:9".to_owned(),
        name: REPO.to_owned(),
    };

    let err = push_module(
        &store.store,
        &client,
        &repo,
        "1.0.0",
        "absent",
        ExistingTag::Refuse,
    )
    .unwrap_err();

    let PushError::NothingSelected { selection } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(selection, "absent");
}
