//! The init protocol driven without the binary: a real store in a temporary directory, a
//! provider from a filesystem mirror built here, hooks that record what they see.

use std::path::PathBuf;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use tempfile::TempDir;
use tstore_store::Store;
use tstore_test_support::mirror::{self, PkgFile};
use tstore_tofu::addr::Platform;
use tstore_tofu::cliconfig::CliConfig;
use tstore_tofu::flavor::Flavor;

use super::*;
use crate::options::WorkdirOptions;
use crate::report::Event;

const FAKE: &str = "example.com/test/fake";

/// A working directory requiring [`FAKE`], a filesystem mirror holding it, a store.
struct Setup {
    tmp: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        fs_err::create_dir_all(work.join("mods/net")).unwrap();
        fs_err::write(
            work.join("main.tf"),
            format!(
                "terraform {{\n  required_providers {{\n    fake = {{ source = \"{FAKE}\" }}\n  }}\n}}\n\
                 module \"net\" {{\n  source = \"./mods/net\"\n}}\n"
            ),
        )
        .unwrap();
        fs_err::write(work.join("mods/net/main.tf"), "").unwrap();
        let platform = Platform::current().to_string();
        let files = [PkgFile {
            path: "terraform-provider-fake_v1.0.0",
            contents: b"#!/bin/sh\n",
            executable: true,
        }];
        mirror::write_packed(&tmp.path().join("mirror"), FAKE, "1.0.0", &platform, &files);
        Setup { tmp }
    }

    fn dir(&self) -> PathBuf {
        self.tmp.path().join("work").canonicalize().unwrap()
    }

    fn store(&self) -> Store {
        Store::open(&self.tmp.path().join("store")).unwrap()
    }

    fn options(&self, with_modules: bool) -> InitOptions {
        let dir = self.dir();
        let workdir = WorkdirOptions::new(
            dir.clone(),
            DataDir::resolve(&dir, None),
            Flavor::Tofu,
            self.tmp.path().join("mount"),
            Default::default(),
        );
        InitOptions {
            providers: ProviderOptions {
                workdir: workdir.clone(),
                platform: Platform::current(),
                methods: CliConfig::plugin_dir_methods(&dir, &[self.tmp.path().join("mirror")]),
                cli_config: "no CLI configuration".to_owned(),
            },
            modules: with_modules.then(|| ModuleOptions {
                workdir,
                policy: Default::default(),
                upgrade_only: Vec::new(),
                reach_records: None,
                trust_lock: false,
                module_mirror: None,
                run: Default::default(),
            }),
            plugin_dirs: vec!["/opt/plugins".to_owned()],
        }
    }

    /// The roots `store` records for the working directory, with their link counts.
    fn recorded_links(&self, store: &Store) -> Option<usize> {
        let dir = self.dir();
        let roots = store.roots().list().unwrap();
        roots.iter().find(|r| r.path == dir).map(|r| r.links.len())
    }
}

struct Quiet;

impl Reporter for Quiet {
    fn event(&self, _: Event<'_>) {}
}

/// Hooks that record each call, and check what holds when the mount is ensured.
struct Recording<'a> {
    calls: Mutex<Vec<String>>,
    mount: Result<(), &'static str>,
    /// Checked inside `ensure_mount`: the store lock is held shared (gc cannot take it).
    store: Option<&'a Store>,
}

impl<'a> Recording<'a> {
    fn new(mount: Result<(), &'static str>) -> Recording<'a> {
        Recording {
            calls: Mutex::new(Vec::new()),
            mount,
            store: None,
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl InitHooks for Recording<'_> {
    type MountError = &'static str;

    fn waiting_for_root(&self, _dir: &Path) {
        self.calls.lock().unwrap().push("waiting_for_root".into());
    }

    fn ensure_mount(&self, _store: &Store) -> Result<(), &'static str> {
        if let Some(other) = self.store {
            let gc = other.locks().try_exclusive().unwrap();
            assert!(
                gc.is_none(),
                "the store lock is held while the mount is ensured"
            );
        }
        self.calls.lock().unwrap().push("ensure_mount".into());
        self.mount
    }

    fn providers_next(&self, modules: Option<&InstalledModules>) {
        let calls = modules.map(|m| m.report.calls.len());
        self.calls
            .lock()
            .unwrap()
            .push(format!("providers_next {calls:?}"));
    }

    fn providers_changed(&self, _store: &Store) {
        self.calls.lock().unwrap().push("providers_changed".into());
    }
}

#[test]
fn the_steps_run_in_order_under_both_locks_and_the_root_is_recorded() {
    let setup = Setup::new();
    let store = setup.store();
    let other = setup.store();
    let hooks = Recording {
        store: Some(&other),
        ..Recording::new(Ok(()))
    };
    let outcome = init(&store, &setup.options(true), &hooks, &Quiet).unwrap();
    assert_eq!(
        hooks.calls(),
        [
            "ensure_mount",
            "providers_next Some(1)",
            "providers_changed"
        ]
    );
    assert_eq!(outcome.providers.providers.len(), 1);
    assert_eq!(outcome.modules.unwrap().report.calls.len(), 1);
    assert_eq!(setup.recorded_links(&store), Some(1), "the provider's link");
    let plugin_path = setup.dir().join(".terraform/plugin_path");
    assert!(plugin_path.is_file(), "-plugin-dir recorded");
    // Both locks are let go: gc can take the store, another init the root.
    assert!(store.locks().try_exclusive().unwrap().is_some());
}

#[test]
fn a_failed_mount_installs_nothing_and_still_records_the_root() {
    let setup = Setup::new();
    let store = setup.store();
    init(
        &store,
        &setup.options(true),
        &Recording::new(Ok(())),
        &Quiet,
    )
    .unwrap();
    assert_eq!(setup.recorded_links(&store), Some(1));
    fs_err::remove_dir_all(setup.dir().join(".terraform")).unwrap();
    let hooks = Recording::new(Err("no FUSE here"));
    let err = init(&store, &setup.options(true), &hooks, &Quiet).unwrap_err();
    assert!(matches!(err, InitError::Mount("no FUSE here")), "{err:?}");
    assert_eq!(hooks.calls(), ["ensure_mount"]);
    assert!(!setup.dir().join(".terraform").exists(), "nothing written");
    // Recorded on failure too, with the links the directory has now: none, so forgotten.
    assert_eq!(setup.recorded_links(&store), None);
}

#[test]
fn a_failed_provider_phase_keeps_plugin_path_and_records_the_links_it_has() {
    let setup = Setup::new();
    let store = setup.store();
    let mut opts = setup.options(true);
    opts.plugin_dirs.clear();
    init(&store, &opts, &Recording::new(Ok(())), &Quiet).unwrap();
    // The root forgotten: only a record made by the failing init brings it back.
    let lock = store.locks().shared().unwrap();
    store.roots().record(&lock, &setup.dir(), &[]).unwrap();
    drop(lock);
    assert_eq!(setup.recorded_links(&store), None);
    let mut opts = setup.options(true);
    opts.providers.workdir.upgrade = true;
    opts.providers.methods.clear();
    let hooks = Recording::new(Ok(()));
    let err = init(&store, &opts, &hooks, &Quiet).unwrap_err();
    assert!(matches!(err, InitError::Providers(_)), "{err:?}");
    assert_eq!(hooks.calls(), ["ensure_mount", "providers_next Some(1)"]);
    assert!(
        !setup.dir().join(".terraform/plugin_path").exists(),
        "written only once the providers are in place"
    );
    assert_eq!(setup.recorded_links(&store), Some(1), "the link it had");
}

#[test]
fn without_a_module_phase_the_modules_directory_is_left_as_it_is() {
    let setup = Setup::new();
    let store = setup.store();
    init(
        &store,
        &setup.options(true),
        &Recording::new(Ok(())),
        &Quiet,
    )
    .unwrap();
    // The same records as tstore writes them, in another layout: a module phase would
    // write its own bytes.
    let manifest = setup.dir().join(".terraform/modules/modules.json");
    let written: serde_json::Value =
        serde_json::from_slice(&fs_err::read(&manifest).unwrap()).unwrap();
    let kept = serde_json::to_string_pretty(&written).unwrap() + "\n";
    fs_err::write(&manifest, &kept).unwrap();
    let hooks = Recording::new(Ok(()));
    let outcome = init(&store, &setup.options(false), &hooks, &Quiet).unwrap();
    assert!(outcome.modules.is_none());
    assert_eq!(
        hooks.calls(),
        ["ensure_mount", "providers_next None", "providers_changed"]
    );
    assert_eq!(fs_err::read_to_string(&manifest).unwrap(), kept);
    init(
        &store,
        &setup.options(true),
        &Recording::new(Ok(())),
        &Quiet,
    )
    .unwrap();
    assert_ne!(
        fs_err::read_to_string(&manifest).unwrap(),
        kept,
        "a module phase writes it"
    );
}

/// An init that waits for another init of its directory holds no store lock meanwhile: gc
/// can take the store.
#[test]
fn an_init_waiting_for_its_root_holds_nothing_gc_waits_for() {
    let setup = Setup::new();
    let store = setup.store();
    let root_lock = store.locks().root(&setup.dir(), || {}).unwrap();
    let (waiting, waited) = mpsc::channel();
    std::thread::scope(|s| {
        let second = s.spawn(|| {
            struct Signal(Mutex<mpsc::Sender<()>>, Recording<'static>);
            impl InitHooks for Signal {
                type MountError = &'static str;
                fn waiting_for_root(&self, _dir: &Path) {
                    self.0.lock().unwrap().send(()).unwrap();
                }
                fn ensure_mount(&self, store: &Store) -> Result<(), &'static str> {
                    self.1.ensure_mount(store)
                }
            }
            let hooks = Signal(Mutex::new(waiting), Recording::new(Ok(())));
            let store = setup.store();
            init(&store, &setup.options(true), &hooks, &Quiet).map(|_| ())
        });
        waited.recv_timeout(Duration::from_secs(60)).unwrap();
        let gc = store.locks().try_exclusive().unwrap();
        assert!(gc.is_some(), "the waiting init holds the store lock");
        drop(gc);
        drop(root_lock);
        second.join().unwrap().unwrap();
    });
    assert_eq!(setup.recorded_links(&store), Some(1));
}
