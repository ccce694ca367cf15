//! The walk on real directories and real git repositories (a local `file://` remote), with
//! a store of its own: the tree it records, the limits it enforces, the events it sends.

use std::path::PathBuf;
use std::sync::Mutex;

use tstore_store::Store;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::module_lock::ModuleLock;

use super::{walk, ModuleTree};
use crate::modules::locked::Pins;
use crate::modules::test_repos::tagged_repository;
use crate::modules::{ModuleInstallError, ModuleOptions};
use crate::options::WorkdirOptions;
use crate::report::{Event, Reporter};
use crate::workdir::data_dir::DataDir;

/// Records the module events it receives, as text.
#[derive(Default)]
/// The batch's events in order, and the keys of the calls "Downloading …" was said for.
struct Recorder(Mutex<Vec<String>>, Mutex<Vec<String>>);

impl Reporter for Recorder {
    fn event(&self, event: Event<'_>) {
        let line = match event {
            Event::FetchingModulePackages { total } => format!("batch {total}"),
            Event::ModulePackageStarted { package } => format!("start {package}"),
            Event::ModulePackageFinished { package } => format!("done {package}"),
            Event::FetchedModulePackages => "end".to_owned(),
            // What is said to the user around the batch: `said`.
            Event::InitializingModules => return,
            Event::DownloadingModule { key, .. } => {
                self.1.lock().unwrap().push(key.to_owned());
                return;
            }
            other => format!("{other:?}"),
        };
        self.0.lock().unwrap().push(line);
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
    store: Store,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let work = root.join("work");
        fs_err::create_dir_all(&work).unwrap();
        let store = Store::open(&root.join("store")).unwrap();
        Fixture {
            _tmp: tmp,
            root,
            work,
            store,
        }
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.work.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }

    fn options(&self) -> ModuleOptions {
        ModuleOptions {
            workdir: WorkdirOptions::new(
                self.work.clone(),
                DataDir::resolve(&self.work, None),
                Flavor::Tofu,
                self.root.join("mount"),
                Default::default(),
            ),
            policy: Default::default(),
            upgrade_only: Vec::new(),
            reach_records: None,
            trust_lock: false,
            module_mirror: None,
            run: Default::default(),
        }
    }

    fn walk(&self, reporter: &dyn Reporter) -> Result<ModuleTree, ModuleInstallError> {
        walk(&self.store, &self.options(), &Pins::default(), reporter)
    }

    /// A git repository at `name` with `files` committed and tagged `v1`.
    fn repository(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let repo = self.root.join("remotes").join(name);
        tagged_repository(&repo, files);
        repo
    }
}

fn keys(tree: &ModuleTree) -> Vec<(&str, &str, Option<usize>)> {
    tree.nodes
        .iter()
        .map(|n| (n.key.as_str(), n.dir.as_str(), n.parent))
        .collect()
}

#[test]
fn local_calls_are_walked_depth_first_with_their_callers() {
    let f = Fixture::new();
    f.write(
        "main.tf",
        "module \"b\" { source = \"./mods/b\" }\nmodule \"a\" { source = \"./mods/a\" }\n",
    );
    f.write("mods/a/main.tf", "module \"inner\" { source = \"../b\" }\n");
    f.write("mods/b/main.tf", "");
    let tree = f.walk(&Recorder::default()).unwrap();
    assert_eq!(
        keys(&tree),
        [
            ("a", "mods/a", None),
            ("a.inner", "mods/b", Some(0)),
            ("b", "mods/b", None),
        ]
    );
    assert!(tree.nodes.iter().all(|n| n.install.is_none()));
    assert!(tree.installs.is_empty() && tree.fetched.is_empty());
}

/// A local module's directory is recorded as terraform records it: joined to its caller's,
/// then its symlinks resolved in the layout terraform gives `.terraform/modules` (the first
/// install of a directory named by absolute path is a link to it, later ones are copies;
/// a package's own links are kept).
/// upstream: internal/initwd/module_install.go@v1.0.3, internal/initwd/getter.go@v1.0.3
#[test]
fn local_modules_get_the_directories_terraform_records() {
    let f = Fixture::new();
    let outside = f.root.join("outside");
    for (rel, text) in [
        ("pkg/main.tf", "module \"in\" { source = \"./sub\" }\n"),
        (
            "pkg/sub/main.tf",
            "module \"deep\" { source = \"../modules/inner\" }\n",
        ),
        ("pkg/modules/inner/main.tf", ""),
        ("linked/main.tf", "module \"b\" { source = \"./b\" }\n"),
        ("linked/b/main.tf", ""),
    ] {
        let path = outside.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
    let outside = outside.canonicalize().unwrap();
    let repo = f.root.join("remotes/linked");
    fs_err::create_dir_all(repo.join("modules")).unwrap();
    std::os::unix::fs::symlink("../nested/real", repo.join("modules/link")).unwrap();
    let repo = f.repository(
        "linked",
        &[
            ("main.tf", "module \"l\" { source = \"./modules/link\" }\n"),
            (
                "nested/real/main.tf",
                "module \"o\" { source = \"../other\" }\n",
            ),
            ("nested/other/main.tf", ""),
        ],
    );
    std::os::unix::fs::symlink(outside.join("linked"), f.work.join("a")).unwrap();
    let pkg = outside.join("pkg").display().to_string();
    f.write(
        "main.tf",
        &format!(
            "module \"a\" {{ source = \"./a\" }}\n\
             module \"abs\" {{ source = \"{pkg}\" }}\n\
             module \"again\" {{ source = \"{pkg}\" }}\n\
             module \"g\" {{ source = \"git::file://{}?ref=v1\" }}\n",
            repo.display()
        ),
    );
    let tree = f.walk(&Recorder::default()).unwrap();
    let dirs: Vec<(&str, &str)> = tree
        .nodes
        .iter()
        .map(|n| (n.key.as_str(), n.dir.as_str()))
        .collect();
    let at = |rel: &str| outside.join(rel).display().to_string();
    assert_eq!(
        dirs,
        [
            ("a", at("linked").as_str()),
            ("a.b", at("linked/b").as_str()),
            ("abs", ".terraform/modules/abs"),
            ("abs.in", at("pkg/sub").as_str()),
            ("abs.in.deep", at("pkg/modules/inner").as_str()),
            ("again", ".terraform/modules/again"),
            ("again.in", ".terraform/modules/again/sub"),
            ("again.in.deep", ".terraform/modules/again/modules/inner"),
            ("g", ".terraform/modules/g"),
            ("g.l", ".terraform/modules/g/nested/real"),
            ("g.l.o", ".terraform/modules/g/nested/other"),
        ]
    );
    let g_l = &tree.nodes[9];
    assert_eq!(g_l.pkg_path, "nested/real");
}

/// Under a data directory named by absolute path (`TF_DATA_DIR=/…`), a package's local
/// module is recorded under that absolute directory too.
#[test]
fn an_absolute_data_directory_keeps_local_module_dirs_absolute() {
    let f = Fixture::new();
    let repo = f.repository(
        "pkg",
        &[
            (
                "main.tf",
                "module \"in\" { source = \"./modules/inner\" }\n",
            ),
            ("modules/inner/main.tf", ""),
        ],
    );
    f.write(
        "main.tf",
        &format!(
            "module \"g\" {{ source = \"git::file://{}?ref=v1\" }}\n",
            repo.display()
        ),
    );
    let data = f.root.join("data");
    let mut opts = f.options();
    opts.workdir.data_dir = DataDir::resolve(&f.work, Some(&data.display().to_string()));
    let tree = walk(&f.store, &opts, &Pins::default(), &Recorder::default()).unwrap();
    let dirs: Vec<&str> = tree.nodes.iter().map(|n| n.dir.as_str()).collect();
    let under = |rel: &str| data.join(rel).display().to_string();
    assert_eq!(dirs, [under("modules/g"), under("modules/g/modules/inner")]);
}

#[test]
fn a_module_calling_itself_stops_at_the_depth_limit() {
    let f = Fixture::new();
    f.write("main.tf", "module \"loop\" { source = \"./m\" }\n");
    f.write("m/main.tf", "module \"again\" { source = \"./\" }\n");
    let err = f.walk(&Recorder::default()).unwrap_err().to_string();
    assert!(err.contains("cannot install module"), "{err}");
    let chain = crate::modules::chain(&f.walk(&Recorder::default()).unwrap_err());
    assert!(chain.contains("levels deep"), "{chain}");
}

#[test]
fn calls_that_cannot_be_installed_name_their_call() {
    for (source, version, says) in [
        (
            "./m",
            Some("1.0.0"),
            "can't use local directory \"./m\" as a module registry address",
        ),
        (
            "s3::https://bucket.example.invalid/m.zip",
            None,
            "s3:: getter",
        ),
        ("./missing", None, "Unreadable module directory"),
        ("not a source", None, "it is not a local path"),
    ] {
        let f = Fixture::new();
        let version = version.map_or(String::new(), |v| format!("  version = \"{v}\"\n"));
        f.write(
            "main.tf",
            &format!("module \"m\" {{\n  source = \"{source}\"\n{version}}}\n"),
        );
        f.write("m/main.tf", "");
        let err = f.walk(&Recorder::default()).unwrap_err();
        let chain = crate::modules::chain(&err);
        assert!(
            chain.contains("main.tf:1") && chain.contains("\"m\"") && chain.contains(says),
            "{source}: {chain}"
        );
    }
}

#[test]
fn remote_packages_of_one_module_are_fetched_in_parallel_once_and_then_reused() {
    let f = Fixture::new();
    let one = f.repository(
        "one",
        &[
            ("main.tf", "module \"local\" { source = \"./sub\" }\n"),
            ("sub/main.tf", ""),
        ],
    );
    let two = f.repository("two", &[("main.tf", "")]);
    f.write(
        "main.tf",
        &format!(
            "module \"a\" {{ source = \"git::file://{one}?ref=v1\" }}\n\
             module \"b\" {{ source = \"git::file://{two}?ref=v1\" }}\n\
             module \"c\" {{ source = \"git::file://{one}?ref=v1\" }}\n",
            one = one.display(),
            two = two.display()
        ),
    );
    let recorder = Recorder::default();
    let tree = f.walk(&recorder).unwrap();
    // Said once per address, before the batch, for the first call that needs it.
    assert_eq!(*recorder.1.lock().unwrap(), ["a", "b"]);
    let events = recorder.0.into_inner().unwrap();
    // Two addresses, one batch: each started and finished once, the batch closed last.
    assert_eq!(events.first().map(String::as_str), Some("batch 2"));
    assert_eq!(events.last().map(String::as_str), Some("end"));
    for repo in [&one, &two] {
        let address = format!("git::file://{}?ref=v1", repo.display());
        for what in ["start", "done"] {
            let line = format!("{what} {address}");
            assert_eq!(
                events.iter().filter(|e| **e == line).count(),
                1,
                "{events:?}"
            );
        }
    }
    assert_eq!(
        keys(&tree)
            .iter()
            .map(|(k, d, p)| (*k, *d, *p))
            .collect::<Vec<_>>(),
        [
            ("a", ".terraform/modules/a", None),
            ("a.local", ".terraform/modules/a/sub", Some(0)),
            ("b", ".terraform/modules/b", None),
            ("c", ".terraform/modules/c", None),
            ("c.local", ".terraform/modules/c/sub", Some(3)),
        ]
    );
    // A module inside a package belongs to that package's install.
    assert_eq!(tree.nodes[1].install.as_deref(), Some("a"));
    assert_eq!(tree.nodes[1].pkg_path, "sub");
    assert_eq!(tree.nodes[0].package, tree.nodes[3].package);
    assert_eq!(tree.fetched.len(), 2, "{:?}", tree.fetched);
    assert!(tree.reused.is_empty(), "{:?}", tree.reused);

    // A second walk finds both packages in the store.
    let again = f.walk(&Recorder::default()).unwrap();
    assert!(again.fetched.is_empty(), "{:?}", again.fetched);
    let mut reused = again.reused.clone();
    reused.sort();
    reused.dedup();
    assert_eq!(reused.len(), 2, "{reused:?}");
}

#[test]
fn a_local_path_may_not_leave_its_remote_package() {
    let f = Fixture::new();
    let repo = f.repository(
        "escape",
        &[("main.tf", "module \"up\" { source = \"../outside\" }\n")],
    );
    f.write(
        "main.tf",
        &format!(
            "module \"pkg\" {{ source = \"git::file://{}?ref=v1\" }}\n",
            repo.display()
        ),
    );
    let chain = crate::modules::chain(&f.walk(&Recorder::default()).unwrap_err());
    assert!(
        chain.contains("escapes module package") && chain.contains("\"pkg.up\""),
        "{chain}"
    );
}

#[test]
fn pinned_calls_are_fetched_in_one_batch_then_installed_without_their_remotes() {
    let f = Fixture::new();
    let one = f.repository("one", &[("main.tf", "")]);
    let two = f.repository("two", &[("main.tf", "")]);
    f.write(
        "main.tf",
        &format!(
            "module \"a\" {{ source = \"git::file://{}?ref=v1\" }}\n\
             module \"b\" {{ source = \"git::file://{}?ref=v1\" }}\n",
            one.display(),
            two.display()
        ),
    );
    // This machine's records of the refs' reach: what lets a later run install a pinned
    // commit without asking its remote (each walk is a run of its own).
    let opts = ModuleOptions {
        reach_records: Some(f.root.join("state/git-reach.json")),
        ..f.options()
    };
    let first = walk(&f.store, &opts, &Pins::default(), &Recorder::default()).unwrap();
    let lock = ModuleLock {
        entries: first
            .nodes
            .iter()
            .filter_map(|n| Some((n.key.clone(), n.lock_entry.clone()?)))
            .collect(),
    };
    assert_eq!(lock.entries.len(), 2, "{lock:?}");
    assert!(lock.entries.values().all(|e| e.commit.is_some()));
    let pins = Pins::new(Some(&lock), false, &[]);

    // Another store: both pinned packages are fetched in one parallel batch.
    let cold = Store::open(&f.root.join("store-2")).unwrap();
    let recorder = Recorder::default();
    let fetched = walk(
        &cold,
        &ModuleOptions {
            run: Default::default(),
            ..opts.clone()
        },
        &pins,
        &recorder,
    )
    .unwrap();
    let events = recorder.0.into_inner().unwrap();
    assert_eq!(
        events.first().map(String::as_str),
        Some("batch 2"),
        "{events:?}"
    );
    assert_eq!(fetched.fetched.len(), 2, "{:?}", fetched.fetched);

    // The remotes gone: the stored commits install with no git at all.
    for repo in [&one, &two] {
        fs_err::rename(repo, repo.with_extension("gone")).unwrap();
    }
    let recorder = Recorder::default();
    let warm = walk(
        &cold,
        &ModuleOptions {
            run: Default::default(),
            ..opts
        },
        &pins,
        &recorder,
    )
    .unwrap();
    assert!(recorder.0.into_inner().unwrap().is_empty(), "no batch");
    assert!(warm.fetched.is_empty(), "{:?}", warm.fetched);
    assert!(warm.nodes.iter().all(|n| n.selected_by == Some("lock")));
}

#[test]
fn an_invalid_meta_file_is_a_warning_naming_the_call() {
    let f = Fixture::new();
    let repo = f.repository(
        "meta",
        &[("main.tf", ""), ("module-package.meta.hcl", "module {\n")],
    );
    f.write(
        "main.tf",
        &format!(
            "module \"m\" {{ source = \"git::file://{}?ref=v1\" }}\n",
            repo.display()
        ),
    );
    let tree = f.walk(&Recorder::default()).unwrap();
    match tree.warnings.as_slice() {
        [crate::modules::ModuleWarning::InvalidMeta { key, at, .. }] => {
            assert_eq!(key, "m");
            assert!(at.to_string().ends_with("main.tf:1"), "{at}");
        }
        other => panic!("{other:?}"),
    }
}
