//! The fetcher on a store of its own and real git repositories (local `file://` remotes):
//! package identity, reuse, the dot-entry variant, and what it refuses.

use std::path::PathBuf;

use tstore_store::Store;
use tstore_tofu::module_source::{Getter, RemotePackage};

use super::{join_subdirs, package_id, FetchLog, Fetcher, Slots};
use crate::modules::test_repos::tagged_repository;
use crate::net::NetworkSettings;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    store: Store,
    slots: Slots,
    network: NetworkSettings,
    run: crate::Run,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let store = Store::open(&root.join("store")).unwrap();
        Fixture {
            _tmp: tmp,
            root,
            store,
            slots: Slots::default(),
            network: NetworkSettings::default(),
            run: crate::Run::new(),
        }
    }

    fn fetcher(&self) -> Fetcher<'_> {
        /// Progress goes nowhere in these tests.
        struct NoReport;
        impl crate::report::Reporter for NoReport {
            fn event(&self, _: crate::report::Event<'_>) {}
        }
        Fetcher {
            run: &self.run,
            store: &self.store,
            slots: &self.slots,
            default_host: "registry.example.invalid",
            http: None,
            network: &self.network,
            reporter: &NoReport,
            mirror: None,
        }
    }

    /// A repository with `files` committed and tagged `v1`; its commit id.
    fn repository(&self, files: &[(&str, &str)]) -> (PathBuf, String) {
        let repo = self.root.join("remote");
        let commit = tagged_repository(&repo, files);
        (repo, commit)
    }
}

fn git_package(url: String) -> RemotePackage {
    RemotePackage {
        getter: Getter::Git,
        url,
    }
}

#[test]
fn a_tag_and_its_commit_name_one_package_fetched_once() {
    let f = Fixture::new();
    let (repo, commit) = f.repository(&[("main.tf", "")]);
    let by_tag = git_package(format!("file://{}?ref=v1", repo.display()));
    let mut log = FetchLog::default();
    let first = f.fetcher().fetch_uncached(&by_tag, 0, &mut log).unwrap();
    assert_eq!(log.fetched, std::slice::from_ref(&first.id));
    assert!(
        first.id.starts_with(&format!("git-{}-", &commit[..12])),
        "{}",
        first.id
    );
    assert!(first.view.join("main.tf").is_file());

    // By commit: the same package, found in the store (no clone).
    let by_commit = git_package(format!("file://{}?ref={commit}", repo.display()));
    let mut log = FetchLog::default();
    let again = f.fetcher().fetch_uncached(&by_commit, 0, &mut log).unwrap();
    assert_eq!(again.id, first.id);
    assert!(log.fetched.is_empty(), "{:?}", log.fetched);
    assert_eq!(log.reused, std::slice::from_ref(&first.id));
}

#[test]
fn a_missing_tag_is_named() {
    let f = Fixture::new();
    let (repo, _) = f.repository(&[("main.tf", "")]);
    let err = f
        .fetcher()
        .fetch_uncached(
            &git_package(format!("file://{}?ref=v9", repo.display())),
            0,
            &mut FetchLog::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("no branch or tag \"v9\""), "{err}");
}

#[test]
fn a_missing_tag_is_named_without_the_credentials_of_its_repository() {
    let f = Fixture::new();
    let (repo, _) = f.repository(&[("main.tf", "")]);
    let err = f
        .fetcher()
        .fetch_uncached(
            &git_package(format!(
                "file://git:S3CRET@localhost{}?ref=v9",
                repo.display()
            )),
            0,
            &mut FetchLog::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("no branch or tag \"v9\""), "{err}");
    assert!(err.contains("file://git@localhost/"), "{err}");
    assert!(!err.contains("S3CRET"), "{err}");
}

#[test]
fn a_refused_package_is_named_without_its_secrets() {
    let f = Fixture::new();
    let package = RemotePackage {
        getter: Getter::File,
        url: "file://u:S3CRET@localhost/etc?sig=SIGNED".to_owned(),
    };
    let err = f
        .fetcher()
        .fetch(&package, 1, &mut FetchLog::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("file://u@localhost/etc?sig=redacted"), "{err}");
    assert!(!err.contains("S3CRET") && !err.contains("SIGNED"), "{err}");
    let err = super::bad_location("https://TOKEN@h.test/x.zip?token=T").to_string();
    assert!(
        err.contains("\"https://h.test/x.zip?token=redacted\""),
        "{err}"
    );
}

#[test]
fn dot_entries_are_left_out_in_a_package_of_their_own_made_once() {
    let f = Fixture::new();
    let (repo, _) = f.repository(&[
        ("main.tf", ""),
        (".hidden", "x"),
        ("sub/.github/ci.yml", "x"),
        ("sub/main.tf", ""),
    ]);
    let package = git_package(format!("file://{}?ref=v1", repo.display()));
    let fetched = f
        .fetcher()
        .fetch_uncached(&package, 0, &mut FetchLog::default())
        .unwrap();
    let mut log = FetchLog::default();
    let without = f.fetcher().without_dot_entries(&fetched, &mut log).unwrap();
    assert_eq!(without.id, format!("{}-nodot", fetched.id));
    // Made here from the store's package: nothing was fetched for it.
    assert!(log.fetched.is_empty(), "{:?}", log.fetched);
    assert_eq!(log.reused, std::slice::from_ref(&without.id));
    assert!(without.view.join("sub/main.tf").is_file());
    assert!(!without.view.join(".hidden").exists());
    assert!(!without.view.join("sub/.github").exists());
    assert!(
        fetched.view.join(".hidden").is_file(),
        "the original keeps them"
    );

    let mut log = FetchLog::default();
    let again = f.fetcher().without_dot_entries(&fetched, &mut log).unwrap();
    assert_eq!(again.id, without.id);
    assert_eq!(log.reused, std::slice::from_ref(&without.id));
    assert_eq!(again.view, without.view, "made once");
}

#[test]
fn a_package_without_dot_entries_is_its_own_variant() {
    let f = Fixture::new();
    let (repo, _) = f.repository(&[("main.tf", "")]);
    let package = git_package(format!("file://{}?ref=v1", repo.display()));
    let fetched = f
        .fetcher()
        .fetch_uncached(&package, 0, &mut FetchLog::default())
        .unwrap();
    let mut log = FetchLog::default();
    let same = f.fetcher().without_dot_entries(&fetched, &mut log).unwrap();
    assert_eq!(same.id, fetched.id);
    assert!(log.fetched.is_empty() && log.reused.is_empty());
}

#[test]
fn a_local_directory_named_by_a_server_is_refused() {
    let f = Fixture::new();
    let package = RemotePackage {
        getter: Getter::File,
        url: "file:///etc".to_owned(),
    };
    let err = f
        .fetcher()
        .fetch(&package, 1, &mut FetchLog::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("local directory named by a server"), "{err}");
}

#[test]
fn redirections_are_bounded() {
    let f = Fixture::new();
    let (repo, _) = f.repository(&[("main.tf", "")]);
    let package = git_package(format!("file://{}?ref=v1", repo.display()));
    let err = f
        .fetcher()
        .fetch(&package, 9, &mut FetchLog::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("too many X-Terraform-Get"), "{err}");
    assert!(f
        .fetcher()
        .fetch(&package, 8, &mut FetchLog::default())
        .is_ok());
}

#[test]
fn package_ids_are_one_safe_path_segment() {
    let id = package_id(
        "http",
        "https://h.example/a b/../x%2F.tar.gz?x=1",
        "identity",
    );
    assert!(id.starts_with("http-x_2F.tar.gz-"), "{id}");
    assert!(!id.contains(['/', ' ']), "{id}");
    assert_eq!(
        id,
        package_id("http", "https://other/x%2F.tar.gz", "identity")
    );
    assert_ne!(
        id,
        package_id("http", "https://h.example/x%2F.tar.gz", "other")
    );
    assert!(package_id("git", "https://h.example/..", "i").starts_with("git-pkg-"));
}

#[test]
fn subdirectories_join_and_clean() {
    let s = |v: &[Option<&str>]| -> Vec<Option<String>> {
        v.iter().map(|o| o.map(str::to_owned)).collect()
    };
    assert_eq!(join_subdirs(&s(&[None, None])), None);
    assert_eq!(
        join_subdirs(&s(&[Some("a"), None, Some("b/c")])).as_deref(),
        Some("a/b/c")
    );
    assert_eq!(join_subdirs(&s(&[Some("a"), Some("..")])), None);
    assert_eq!(
        join_subdirs(&s(&[Some("./a/"), Some("./b")])).as_deref(),
        Some("a/b")
    );
}
