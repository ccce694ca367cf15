//! `providers lock` from a filesystem mirror on disk into a store of its own: provider zips
//! built here, hashes checked against `tstore_test_support::mirror`'s independent `h1:` and
//! `zh:`.

use std::path::PathBuf;
use std::sync::Mutex;

use tempfile::TempDir;
use tstore_store::{PackageKey, Store};
use tstore_test_support::mirror::{self, PkgFile};
use tstore_tofu::addr::{Platform, ProviderAddr};
use tstore_tofu::flavor::Flavor;
use tstore_tofu::lockfile::{LockFile, LockedProvider};

use super::*;
use crate::net::NetworkSettings;
use crate::options::WorkdirOptions;
use crate::providers::{InstallError, LockFileChange, ProviderOptions, LOCK_FILE_NAME};
use crate::report::{Event, Reporter};
use crate::workdir::data_dir::DataDir;

const FAKE: &str = "example.com/test/fake";
const OTHER: &str = "example.com/test/other";

/// A working directory, a filesystem mirror beside it, and a store of its own.
struct Setup {
    tmp: TempDir,
    store: Store,
}

impl Setup {
    /// A working directory whose `main.tf` is `config`, and an empty mirror.
    fn new(config: &str) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(tmp.path().join("work")).unwrap();
        fs_err::create_dir_all(tmp.path().join("mirror")).unwrap();
        fs_err::write(tmp.path().join("work/main.tf"), config).unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        Setup { tmp, store }
    }

    fn dir(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    fn mirror(&self) -> PathBuf {
        self.tmp.path().join("mirror")
    }

    fn lock_path(&self) -> PathBuf {
        self.dir().join(LOCK_FILE_NAME)
    }

    /// Put `addr` `version` for `platform` into the mirror as a packed zip whose one file,
    /// the provider executable, holds `contents`; returns its `h1:` and `zh:`.
    fn publish(&self, addr: &str, version: &str, platform: &str, contents: &[u8]) -> [String; 2] {
        let kind = addr.rsplit('/').next().unwrap();
        let name = format!("terraform-provider-{kind}_v{version}");
        let files = [PkgFile {
            path: &name,
            contents,
            executable: true,
        }];
        let zip = mirror::write_packed(&self.mirror(), addr, version, platform, &files);
        [mirror::h1(&files), mirror::zh(&zip)]
    }

    fn options(&self, platforms: &[&str], only: &[&str]) -> LockOptions {
        let dir = self.dir();
        LockOptions {
            base: ProviderOptions {
                workdir: WorkdirOptions::new(
                    dir.clone(),
                    DataDir::resolve(&dir, None),
                    Flavor::Tofu,
                    self.tmp.path().join("mount"),
                    NetworkSettings::default(),
                ),
                platform: Platform::current(),
                methods: Vec::new(),
                cli_config: "no CLI configuration".to_owned(),
            },
            platforms: platforms.iter().map(|p| p.parse().unwrap()).collect(),
            source: LockSource::FilesystemMirror(self.mirror()),
            only: only.iter().map(|a| addr(a)).collect(),
        }
    }

    fn lock(&self, platforms: &[&str], only: &[&str]) -> Result<LockReport, InstallError> {
        lock(
            &self.store,
            &self.options(platforms, only),
            &Fetches::default(),
        )
    }

    /// The lock file's entries as (address, version, constraints, hashes).
    fn lock_file(&self) -> Vec<(String, String, Option<String>, Vec<String>)> {
        let lock = LockFile::load(&self.lock_path())
            .unwrap()
            .expect("a lock file");
        lock.providers
            .iter()
            .map(|(a, p)| {
                (
                    a.to_string(),
                    p.version.to_string(),
                    p.constraints.clone(),
                    p.hashes.iter().cloned().collect(),
                )
            })
            .collect()
    }

    fn stored(&self, addr: &str, version: &str, platform: &str) -> bool {
        let key = PackageKey::provider(addr, version, platform);
        self.store.package(&key).unwrap().is_some()
    }
}

fn addr(s: &str) -> ProviderAddr {
    ProviderAddr::parse_normalized(s).unwrap()
}

fn sorted(hashes: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = hashes.into_iter().collect();
    v.sort();
    v
}

/// Records the `Fetching` events as `provider version platform`.
#[derive(Default)]
struct Fetches(Mutex<Vec<String>>);

impl Reporter for Fetches {
    fn event(&self, event: Event<'_>) {
        if let Event::Fetching {
            provider,
            version,
            platform,
        } = event
        {
            let line = format!("{provider} {version} {platform}");
            self.0.lock().unwrap().push(line);
        }
    }
}

fn config(providers: &[(&str, &str, Option<&str>)]) -> String {
    let mut text = String::from("terraform {\n  required_providers {\n");
    for (name, source, version) in providers {
        let version = version
            .map(|v| format!(", version = \"{v}\""))
            .unwrap_or_default();
        text.push_str(&format!(
            "    {name} = {{ source = \"{source}\"{version} }}\n"
        ));
    }
    text.push_str("  }\n}\n");
    text
}

/// Two platforms: the entry holds each platform's `h1:` and the `zh:` of each zip verified
/// from the mirror; the report lists the platforms in the order asked; both packages are
/// in the store, and nothing is installed into the working directory. A second run
/// changes nothing.
#[test]
fn two_platforms_record_the_h1_and_zh_of_each() {
    let s = Setup::new(&config(&[("fake", FAKE, Some("1.0.0"))]));
    let linux = s.publish(FAKE, "1.0.0", "linux_amd64", b"fake for linux");
    let darwin = s.publish(FAKE, "1.0.0", "darwin_arm64", b"fake for darwin");
    // Another version the constraint excludes.
    s.publish(FAKE, "1.1.0", "linux_amd64", b"fake 1.1.0");

    let fetches = Fetches::default();
    let report = lock(
        &s.store,
        &s.options(&["darwin_arm64", "linux_amd64"], &[]),
        &fetches,
    )
    .unwrap();

    assert_eq!(report.lock_file, LockFileChange::Created);
    assert_eq!(report.providers.len(), 1);
    let provider = &report.providers[0];
    assert_eq!(
        (provider.provider.as_str(), provider.version.as_str()),
        (FAKE, "1.0.0")
    );
    let platforms: Vec<&str> = provider
        .platforms
        .iter()
        .map(|p| p.platform.as_str())
        .collect();
    assert_eq!(platforms, ["darwin_arm64", "linux_amd64"]);
    // Each platform's report holds that platform's hashes, and not the other's.
    for (report, [h1, zh]) in provider.platforms.iter().zip([&darwin, &linux]) {
        let hashes: Vec<String> = report.hashes.iter().map(|r| r.hash.to_string()).collect();
        assert_eq!(
            sorted(hashes),
            sorted([h1.clone(), zh.clone()]),
            "{report:?}"
        );
    }
    assert_eq!(
        *fetches.0.lock().unwrap(),
        [
            "example.com/test/fake 1.0.0 darwin_arm64",
            "example.com/test/fake 1.0.0 linux_amd64"
        ]
    );
    assert_eq!(
        s.lock_file(),
        [(
            FAKE.to_owned(),
            "1.0.0".to_owned(),
            Some("1.0.0".to_owned()),
            sorted(linux.iter().chain(&darwin).cloned()),
        )]
    );
    assert!(s.stored(FAKE, "1.0.0", "linux_amd64"));
    assert!(s.stored(FAKE, "1.0.0", "darwin_arm64"));
    assert!(!s.stored(FAKE, "1.1.0", "linux_amd64"));
    assert!(
        !s.dir().join(".terraform").exists(),
        "providers lock links nothing"
    );

    let written = fs_err::read(s.lock_path()).unwrap();
    let again = s.lock(&["darwin_arm64", "linux_amd64"], &[]).unwrap();
    assert_eq!(again.lock_file, LockFileChange::Unchanged);
    assert_eq!(fs_err::read(s.lock_path()).unwrap(), written);
}

/// `only` works on the providers it names: the others keep their entries as they were
/// (hashes not recomputed), and a provider neither locked nor named stays out.
#[test]
fn only_locks_the_providers_it_names() {
    let s = Setup::new(&config(&[
        ("fake", FAKE, None),
        ("other", OTHER, None),
        ("third", "example.com/test/third", None),
    ]));
    s.publish(FAKE, "1.0.0", "linux_amd64", b"fake");
    let other = s.publish(OTHER, "2.0.0", "linux_amd64", b"other");
    s.publish("example.com/test/third", "3.0.0", "linux_amd64", b"third");
    fs_err::write(
        s.lock_path(),
        "provider \"example.com/test/fake\" {\n  version = \"1.0.0\"\n  hashes = [\"h1:kept-as-it-was\"]\n}\n",
    )
    .unwrap();

    let report = s.lock(&["linux_amd64"], &[OTHER]).unwrap();

    assert_eq!(report.lock_file, LockFileChange::Updated);
    let locked: Vec<&str> = report
        .providers
        .iter()
        .map(|p| p.provider.as_str())
        .collect();
    assert_eq!(locked, [OTHER]);
    assert_eq!(
        s.lock_file(),
        [
            (
                FAKE.to_owned(),
                "1.0.0".to_owned(),
                None,
                vec!["h1:kept-as-it-was".to_owned()],
            ),
            (OTHER.to_owned(), "2.0.0".to_owned(), None, sorted(other)),
        ]
    );
    assert!(!s.stored(FAKE, "1.0.0", "linux_amd64"));
    assert!(!s.stored("example.com/test/third", "3.0.0", "linux_amd64"));
}

/// The lock pins the version while the constraints allow it, and the old entry's hashes
/// stay beside the new ones when the version did not change.
#[test]
fn a_locked_version_keeps_its_old_hashes() {
    let s = Setup::new(&config(&[("fake", FAKE, Some(">= 1.0.0"))]));
    let pinned = s.publish(FAKE, "1.0.0", "linux_amd64", b"fake 1.0.0");
    s.publish(FAKE, "1.1.0", "linux_amd64", b"fake 1.1.0");
    let old = LockFile {
        providers: [(
            addr(FAKE),
            LockedProvider {
                version: "1.0.0".parse().unwrap(),
                constraints: Some(">= 1.0.0".to_owned()),
                hashes: ["zh:from-another-platform".to_owned()].into(),
            },
        )]
        .into(),
        ..LockFile::default()
    };
    fs_err::write(s.lock_path(), render(&old, Flavor::Tofu)).unwrap();

    let report = s.lock(&["linux_amd64"], &[]).unwrap();

    assert_eq!(report.providers[0].version, "1.0.0");
    assert_eq!(report.lock_file, LockFileChange::Updated);
    let mut want = pinned.to_vec();
    want.push("zh:from-another-platform".to_owned());
    assert_eq!(
        s.lock_file(),
        [(
            FAKE.to_owned(),
            "1.0.0".to_owned(),
            Some(">= 1.0.0".to_owned()),
            sorted(want),
        )]
    );
}

/// A version the mirror lacks is a typed error, and nothing is written: no lock file, no
/// package in the store.
#[test]
fn a_version_the_mirror_lacks_is_no_matching_version() {
    let s = Setup::new(&config(&[("fake", FAKE, Some("2.0.0"))]));
    s.publish(FAKE, "1.0.0", "linux_amd64", b"fake");

    let err = s.lock(&["linux_amd64"], &[]).unwrap_err();

    let InstallError::NoMatchingVersion { provider, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(provider, FAKE);
    assert!(!s.lock_path().exists());
    assert!(s.store.packages().unwrap().is_empty());
}

/// Every platform is fetched before anything is written: a platform the mirror lacks
/// fails the run, and the platform it has is not committed nor locked.
#[test]
fn a_platform_the_mirror_lacks_fails_before_anything_is_written() {
    let s = Setup::new(&config(&[("fake", FAKE, None)]));
    s.publish(FAKE, "1.0.0", "linux_amd64", b"fake");

    let err = s.lock(&["linux_amd64", "windows_amd64"], &[]).unwrap_err();

    let InstallError::NoPackageForPlatform {
        provider,
        version,
        platform,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (provider.as_str(), version.to_string(), platform.to_string()),
        (FAKE, "1.0.0".to_owned(), "windows_amd64".to_owned())
    );
    assert!(!s.lock_path().exists());
    assert!(s.store.packages().unwrap().is_empty());
}
