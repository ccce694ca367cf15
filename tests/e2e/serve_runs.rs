//! A served init is the init of a process of its own, request after request: one sequence
//! of inits, with the remotes changing between them (a branch moved, a tag moved, a module
//! version published, a tag deleted), run by a server in one world and by processes of their
//! own in another, ends alike after every step: exit codes, output, lock files, installed
//! files. A server that believed an earlier request's answers would lock the old commit
//! after `-upgrade`, or install a deleted tag; one that kept a file's facts by its path
//! would miss a call added to the root's file.

use std::path::{Path, PathBuf};

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{GitRepo, TestEnv};

use crate::common::TstoreEnv as _;
use crate::serve::Server;

/// `main.tf` of the package: one output.
fn output_tf(value: &str) -> String {
    format!("output \"v\" {{\n  value = \"{value}\"\n}}\n")
}

/// One world: its own store, home and checkouts; its inits served or not.
struct World {
    env: TestEnv,
    cli_config: PathBuf,
    server: Option<Server>,
}

/// What a user compares after an init.
#[derive(Debug, PartialEq)]
struct Ended {
    step: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    files: Vec<(String, String)>,
}

impl World {
    fn new(reg: &ModuleRegistry, served: bool) -> World {
        let env = TestEnv::new();
        let cli_config = reg.write_cli_config(&env.root.path().join("cli.tfrc"), "");
        let server = served.then(|| Server::start(&env, &[]));
        World {
            env,
            cli_config,
            server,
        }
    }

    fn init(&self, step: &str, dir: &str, main_tf: &str, args: &[&str]) -> Ended {
        let dir = self.env.root.path().join("work").join(dir);
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(dir.join("main.tf"), main_tf).unwrap();
        let served_before = self.served();
        let mut tstore = self
            .env
            .tstore()
            .cli_config(&self.cli_config)
            .no_fuse()
            .current_dir(&dir)
            .arg("init")
            .args(args);
        if self.server.is_none() {
            tstore = tstore.env("TSTORE_NO_SERVER", "1");
        }
        let out = tstore.output();
        if let Some(server) = &self.server {
            server.wait_for(|_| self.served() == served_before + 1);
        }
        let root = self.env.root.path().display().to_string();
        let shown = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "<world>");
        Ended {
            step: step.to_owned(),
            code: out.status.code(),
            stdout: shown(&out.stdout),
            stderr: shown(&out.stderr),
            files: files(&dir)
                .into_iter()
                .map(|(name, text)| (name, text.replace(&root, "<world>")))
                .collect(),
        }
    }

    /// How many inits the server ran.
    fn served(&self) -> usize {
        self.server.as_ref().map_or(0, |s| s.count("init exited"))
    }
}

/// The checkout's lock files, `modules.json` and installed modules' `main.tf`, by name.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for name in [
        ".terraform.lock.hcl",
        ".tstore.lock.hcl",
        ".terraform/modules/modules.json",
    ] {
        if let Ok(text) = fs_err::read_to_string(dir.join(name)) {
            files.push((name.to_owned(), text));
        }
    }
    if let Ok(entries) = fs_err::read_dir(dir.join(".terraform/modules")) {
        let mut names: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for name in names {
            let main = dir.join(".terraform/modules").join(&name).join("main.tf");
            if let Ok(text) = fs_err::read_to_string(&main) {
                files.push((format!("modules/{}", name.to_string_lossy()), text));
            }
        }
    }
    files
}

#[test]
fn a_sequence_of_inits_ends_alike_served_and_in_processes_of_their_own() {
    let reg = ModuleRegistry::start();
    let remotes = tempfile::tempdir().unwrap();
    let repo = GitRepo::init(
        remotes.path().join("lib"),
        &[("main.tf", &output_tf("one"))],
    );
    repo.commit("one").tag("v1");
    reg.publish("ns/m/x", "1.0.0", &repo.source("v1"));
    let calls = format!(
        "module \"branch\" {{\n  source = \"{}\"\n}}\n\
         module \"tag\" {{\n  source = \"{}\"\n}}\n\
         module \"reg\" {{\n  source  = \"{}/ns/m/x\"\n  version = \">= 1.0.0\"\n}}\n",
        repo.source("main"),
        repo.source("v1"),
        reg.host()
    );
    let own = World::new(&reg, false);
    let served = World::new(&reg, true);
    let both = |step: &str, dir: &str, main_tf: &str, args: &[&str]| {
        let a = own.init(step, dir, main_tf, args);
        let b = served.init(step, dir, main_tf, args);
        assert_eq!(a, b, "served and own differ after: {step}");
        a
    };

    let first = both("the first init", "w", &calls, &[]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);

    repo.write(&[("main.tf", &output_tf("two"))]).commit("two");
    let moved = both("a branch moved, -upgrade", "w", &calls, &["-upgrade"]);
    assert_eq!(moved.code, Some(0), "{}", moved.stderr);
    assert!(
        moved
            .files
            .iter()
            .any(|(name, text)| name == "modules/branch" && text.contains("\"two\"")),
        "{:?}",
        moved.files
    );

    repo.write(&[("main.tf", &output_tf("three"))])
        .commit("three")
        .move_tag("v1");
    let retagged = both("a tag moved, -upgrade", "w", &calls, &["-upgrade"]);
    assert!(
        retagged
            .files
            .iter()
            .any(|(name, text)| name == "modules/tag" && text.contains("\"three\"")),
        "{:?}",
        retagged.files
    );

    reg.publish("ns/m/x", "1.1.0", &repo.source("main"));
    let published = both("a version published, -upgrade", "w", &calls, &["-upgrade"]);
    assert!(
        published
            .files
            .iter()
            .any(|(name, text)| name == ".tstore.lock.hcl" && text.contains("1.1.0")),
        "{:?}",
        published.files
    );

    // The root's file edited in place: the facts a request uses are its new content's (the
    // server keeps facts by content, never by path).
    let more = format!(
        "{calls}module \"again\" {{\n  source = \"{}\"\n}}\n",
        repo.source("main")
    );
    let edited = both("the root's file edited", "w", &more, &[]);
    assert_eq!(edited.code, Some(0), "{}", edited.stderr);
    assert!(
        edited.files.iter().any(|(name, _)| name == "modules/again"),
        "{:?}",
        edited.files
    );
    let back = both("the root's file as it was", "w", &calls, &[]);
    assert!(
        !back.files.iter().any(|(name, _)| name == "modules/again"),
        "{:?}",
        back.files
    );

    repo.delete_tag("v1");
    let tag_only = format!(
        "module \"tag\" {{\n  source = \"{}\"\n}}\n",
        repo.source("v1")
    );
    let gone = both("a tag deleted, a new checkout", "new", &tag_only, &[]);
    assert_eq!(gone.code, Some(1), "{}", gone.stderr);
    assert_eq!(served.served(), 7);
}
