//! A provider version pushed to a real registry: the index and manifests it writes, the
//! layer it picks (the kept source zip, or one built from the store), and what it does with
//! a tag that already names something.

use std::cell::RefCell;

use serde_json::json;
use tstore_test_support::oci_registry::tofu_layout as layout;

use super::{empty_config, make_writable, sha256_digest, zip_entries, Registry, TestStore, HOST};
use crate::publish::{push_providers, ExistingTag, PushError, PushedVersion};

const TEMPLATE: &str = "mirror/${hostname}/${namespace}/${type}";
const REPO: &str = "mirror/registry.opentofu.org/hashicorp/null";

/// Push every provider of `store` to `registry`'s [`TEMPLATE`].
fn push(
    store: &TestStore,
    registry: &Registry,
    existing: ExistingTag,
) -> Result<Vec<PushedVersion>, PushError> {
    let template = registry.at(TEMPLATE);
    push_providers(
        &store.store,
        &registry.client,
        &template,
        &[],
        existing,
        &|_| {},
    )
}

/// One version for two platforms is one tag naming an index (the provider's artifact
/// type), whose descriptors, sorted by platform, carry the platform and name a manifest
/// each; a manifest's one layer is the store's kept source zip, titled as a release zip,
/// and its config the empty document. A second push uploads nothing and leaves the tag.
#[test]
fn a_version_is_an_index_with_a_manifest_per_platform() {
    let store = TestStore::new(true);
    let linux = store.add_provider("null", "2.1.2", "linux_amd64", b"null for linux", true);
    let darwin = store.add_provider("null", "2.1.2", "darwin_arm64", b"null for darwin", true);
    let registry = Registry::start();
    let reported = RefCell::new(Vec::new());

    let pushed = push_providers(
        &store.store,
        &registry.client,
        &registry.at(TEMPLATE),
        &[],
        ExistingTag::Refuse,
        &|v| reported.borrow_mut().push(v.reference.clone()),
    )
    .unwrap();

    assert_eq!(pushed.len(), 1);
    let p = &pushed[0];
    assert_eq!(p.provider, format!("{HOST}/hashicorp/null"));
    assert_eq!(p.version, "2.1.2");
    assert_eq!(p.reference, registry.at(&format!("{REPO}:2.1.2")));
    assert_eq!(p.platforms, ["darwin_arm64", "linux_amd64"]);
    assert!(p.rebuilt.is_empty(), "{p:?}");
    assert_eq!(
        (p.blobs_uploaded, p.blobs_present),
        (3, 0),
        "config and two zips"
    );
    assert_eq!(*reported.borrow(), std::slice::from_ref(&p.reference));

    let index = registry.document(REPO, "2.1.2", layout::INDEX);
    assert_eq!(index.digest, p.digest);
    assert_eq!(index.json["schemaVersion"], 2);
    assert_eq!(index.json["mediaType"], layout::INDEX);
    assert_eq!(index.json["artifactType"], layout::PROVIDER);
    let descriptors = index.json["manifests"].as_array().unwrap();
    assert_eq!(descriptors.len(), 2, "{}", index.json);
    for (descriptor, (platform, zip)) in descriptors
        .iter()
        .zip([("darwin_arm64", &darwin), ("linux_amd64", &linux)])
    {
        let (os, arch) = platform.split_once('_').unwrap();
        assert_eq!(
            descriptor["platform"],
            json!({"os": os, "architecture": arch})
        );
        assert_eq!(descriptor["mediaType"], layout::MANIFEST);
        assert_eq!(descriptor["artifactType"], layout::PROVIDER_TARGET);
        let digest = descriptor["digest"].as_str().unwrap();
        let manifest = registry.document(REPO, digest, layout::MANIFEST);
        assert_eq!(manifest.digest, digest);
        assert_eq!(descriptor["size"], manifest.size);
        assert_eq!(manifest.json["mediaType"], layout::MANIFEST);
        assert_eq!(manifest.json["artifactType"], layout::PROVIDER_TARGET);
        assert_eq!(manifest.json["config"], empty_config());
        assert_eq!(
            manifest.json["layers"],
            json!([{
                "mediaType": layout::ZIP_LAYER,
                "digest": sha256_digest(zip),
                "size": zip.len(),
                "annotations": {
                    "org.opencontainers.image.title":
                        format!("terraform-provider-null_2.1.2_{platform}.zip"),
                },
            }]),
            "{platform}: the layer is the source's zip"
        );
    }

    let tag_writes = || registry.requests(&format!("PUT /v2/{REPO}/manifests/2.1.2 "));
    assert_eq!(tag_writes(), 1);
    let uploads = registry.uploads();
    let again = push(&store, &registry, ExistingTag::Refuse).unwrap();
    assert_eq!(again[0].digest, p.digest);
    assert_eq!((again[0].blobs_uploaded, again[0].blobs_present), (0, 3));
    assert_eq!(registry.uploads(), uploads, "nothing is uploaded again");
    assert_eq!(
        tag_writes(),
        1,
        "a tag naming the same packages is not written"
    );
}

/// Without the source zip, the layer is built from the stored files, and is reported as
/// rebuilt: the same files, executable. Built by another store holding the same package,
/// it is the same zip, manifest and index, and that push uploads nothing.
#[test]
fn a_layer_built_from_the_store_is_the_same_from_any_store() {
    let one = TestStore::new(false);
    let source = one.add_provider("null", "2.1.2", "linux_amd64", b"null 2.1.2", false);
    let registry = Registry::start();

    let first = push(&one, &registry, ExistingTag::Refuse).unwrap();

    assert_eq!(first[0].rebuilt, ["linux_amd64"]);
    assert_eq!(first[0].blobs_uploaded, 2);
    let index = registry.document(REPO, "2.1.2", layout::INDEX);
    let digest = index.json["manifests"][0]["digest"].as_str().unwrap();
    let manifest = registry.document(REPO, digest, layout::MANIFEST);
    let layer = manifest.json["layers"][0]["digest"].as_str().unwrap();
    assert_ne!(layer, sha256_digest(&source), "not the source's zip");
    assert_eq!(
        zip_entries(&registry.blob(REPO, layer)),
        [(
            "terraform-provider-null_v2.1.2".to_owned(),
            b"null 2.1.2".to_vec(),
            0o755
        )]
    );

    let two = TestStore::new(false);
    two.add_provider("null", "2.1.2", "linux_amd64", b"null 2.1.2", false);
    let uploads = registry.uploads();
    let second = push(&two, &registry, ExistingTag::Refuse).unwrap();
    assert_eq!(second[0].rebuilt, ["linux_amd64"]);
    assert_eq!(second[0].digest, first[0].digest);
    assert_eq!(second[0].blobs_uploaded, 0);
    assert_eq!(registry.uploads(), uploads);
}

/// A version with build metadata is tagged with `_` for `+` (a tag cannot hold `+`); the
/// version and the layer's title keep the `+`.
#[test]
fn a_version_with_build_metadata_is_tagged_with_an_underscore() {
    let store = TestStore::new(true);
    store.add_provider("null", "1.0.0+ci.5", "linux_amd64", b"null", true);
    let registry = Registry::start();

    let pushed = push(&store, &registry, ExistingTag::Refuse).unwrap();

    assert_eq!(pushed[0].version, "1.0.0+ci.5");
    assert_eq!(
        pushed[0].reference,
        registry.at(&format!("{REPO}:1.0.0_ci.5"))
    );
    let index = registry.document(REPO, "1.0.0_ci.5", layout::INDEX);
    assert_eq!(index.digest, pushed[0].digest);
    let digest = index.json["manifests"][0]["digest"].as_str().unwrap();
    let manifest = registry.document(REPO, digest, layout::MANIFEST);
    assert_eq!(
        manifest.json["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "terraform-provider-null_1.0.0+ci.5_linux_amd64.zip"
    );
}

/// A tag naming something else than a provider index (here a module package) is a
/// conflict found before anything is uploaded, and the tag stays; told to replace it, the
/// push does.
#[test]
fn a_tag_naming_anything_but_a_provider_index_is_refused_unless_replaced() {
    let store = TestStore::new(true);
    store.add_provider("null", "2.1.2", "linux_amd64", b"null", true);
    let registry = Registry::start();
    let theirs = registry
        .registry
        .push_module(REPO, "2.1.2", b"a module, not a provider");
    let uploads = registry.uploads();

    let err = push(&store, &registry, ExistingTag::Refuse).unwrap_err();

    let PushError::TagTaken {
        reference,
        what,
        existing,
        ours,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*reference, registry.at(&format!("{REPO}:2.1.2")));
    assert_eq!(what, "something else than an OpenTofu provider index");
    assert_eq!(*existing, theirs);
    assert_eq!(ours, "an OpenTofu provider index");
    assert_eq!(registry.uploads(), uploads, "nothing uploaded");
    let tag = registry.document(REPO, "2.1.2", layout::MANIFEST);
    assert_eq!(tag.digest, theirs, "the tag stays");

    let pushed = push(&store, &registry, ExistingTag::Replace).unwrap();
    let tag = registry.document(REPO, "2.1.2", layout::INDEX);
    assert_eq!(tag.digest, pushed[0].digest);
    assert_eq!(tag.json["artifactType"], layout::PROVIDER);
}

/// A platform whose manifest under the tag holds another zip is another package: refused
/// before anything is uploaded, naming both zips. A manifest (of another tool) around the
/// same zip is the same package: the push uploads nothing and the tag stays.
#[test]
fn a_platform_is_another_package_only_when_its_zip_differs() {
    let store = TestStore::new(true);
    let ours = store.add_provider("null", "2.1.2", "linux_amd64", b"null", true);
    let other_build = super::provider_zip("null", "2.1.2", b"another build");
    let registry = Registry::start();
    registry.registry.push_provider(
        "taken/registry.opentofu.org/hashicorp/null",
        "2.1.2",
        &[("linux_amd64", other_build.clone())],
    );
    let same = registry.registry.push_provider(
        "same/registry.opentofu.org/hashicorp/null",
        "2.1.2",
        &[("linux_amd64", ours.clone())],
    );
    let uploads = registry.uploads();
    let push_to = |template: &str| {
        push_providers(
            &store.store,
            &registry.client,
            &registry.at(template),
            &[],
            ExistingTag::Refuse,
            &|_| {},
        )
    };

    let err = push_to("taken/${hostname}/${namespace}/${type}").unwrap_err();
    let PushError::TagTaken {
        what,
        existing,
        ours: our_zip,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(what, "another package for linux_amd64");
    assert_eq!(
        *existing,
        format!("its zip {}", sha256_digest(&other_build))
    );
    assert_eq!(*our_zip, sha256_digest(&ours));
    assert_eq!(registry.uploads(), uploads, "nothing uploaded");

    let pushed = push_to("same/${hostname}/${namespace}/${type}").unwrap();
    assert_eq!(pushed[0].digest, same, "the tag stays");
    assert_eq!(pushed[0].blobs_uploaded, 0);
    assert_eq!(registry.uploads(), uploads);
    let tag = registry.document(
        "same/registry.opentofu.org/hashicorp/null",
        "2.1.2",
        layout::INDEX,
    );
    assert_eq!(tag.digest, same);
}

/// A kept zip whose bytes are no longer those of its `zh:` is not pushed: the error names
/// the hash and the file, and nothing is uploaded.
#[test]
fn a_damaged_kept_zip_is_refused_before_any_upload() {
    let store = TestStore::new(true);
    store.add_provider("null", "2.1.2", "linux_amd64", b"null", true);
    let package = store.store.packages().unwrap().remove(0);
    let (zh, kept) = store
        .store
        .kept_archive_of(&package.hashes)
        .unwrap()
        .expect("the store kept the zip");
    make_writable(&kept);
    fs_err::write(&kept, b"damaged").unwrap();
    let registry = Registry::start();

    let err = push(&store, &registry, ExistingTag::Refuse).unwrap_err();

    let PushError::DamagedArchive { zh: named, path } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((named, path), (&zh.to_string(), &kept));
    assert_eq!(registry.uploads(), 0);
}
