//! The CI recipes of `docs/recipes/`, run as written. Each recipe is a CI file; the test
//! reads it with a YAML parser and runs its shell steps with its environment in a checkout
//! of two stacks, twice, as two runs on two machines: the first installs from a filesystem
//! mirror of the real null provider, its store is carried to the second as the CI's cache
//! would carry it, and the second has no provider source at all. So the recipe's claims —
//! the cache makes a run install nothing from the network, `terraform plan` works after
//! `tstore init` alone, no FUSE is needed — fail this test if they stop being true.
//!
//! What the test does instead of the CI service, and only that: it clones the checkout
//! (`actions/checkout`), puts the real terraform on `PATH` (`setup-terraform`, GitLab's
//! `before_script`) with the binary under test as `tstore` ("Install tstore"), and moves the
//! cached directory between runs with `tar` (GitHub's cache) or `zip`/`unzip` (GitLab's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml::Value;
use tstore_test_support::{mirror, peers, run_ok, stderr, TestEnv};

use crate::common::{tstore_bin, TstoreEnv as _, NULL_CONFIG};

fn recipe(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/recipes")
        .join(name);
    serde_yaml::from_str(&fs_err::read_to_string(path).unwrap()).unwrap()
}

/// A string-to-string map of a YAML mapping (environment variables).
fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_mapping()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => serde_yaml::to_string(other).unwrap().trim().to_owned(),
                    };
                    (k.as_str().unwrap().to_owned(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One CI machine: its own home and tools, a fresh checkout of the repository at the same
/// path every run (CI services reuse the project path).
struct Machine<'a> {
    env: &'a TestEnv,
    home: PathBuf,
    checkout: PathBuf,
    path: std::ffi::OsString,
}

impl<'a> Machine<'a> {
    fn new(env: &'a TestEnv, name: &str, repo: &Path) -> Machine<'a> {
        let base = env.root.path().join(name);
        let home = base.join("home");
        let bin = base.join("bin");
        fs_err::create_dir_all(&home).unwrap();
        fs_err::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(tstore_bin(), bin.join("tstore")).unwrap();
        std::os::unix::fs::symlink(&peers().terraform, bin.join("terraform")).unwrap();
        let system = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&system)))
            .unwrap();
        // The project path is the same on every machine, as on a CI runner.
        let checkout = env.root.path().join("builds/project");
        if checkout.exists() {
            fs_err::remove_dir_all(&checkout).unwrap();
        }
        fs_err::create_dir_all(checkout.parent().unwrap()).unwrap();
        run_ok(Command::new("cp").arg("-a").arg(repo).arg(&checkout));
        Machine {
            env,
            home,
            checkout,
            path,
        }
    }

    /// `bash -eo pipefail -c SCRIPT` in the checkout with the job's variables, a home of its
    /// own and nothing of the test environment's store settings: the recipe decides them.
    fn run(&self, script: &str, vars: &BTreeMap<String, String>, cli_config: &Path) -> String {
        let mut cmd = self.env.command(Path::new("bash"));
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(&self.checkout)
            .env("HOME", &self.home)
            .env("PATH", &self.path)
            .env("CI_PROJECT_DIR", &self.checkout)
            .env("TF_CLI_CONFIG_FILE", cli_config)
            .env_remove("TSTORE_HOME")
            .env_remove("TSTORE_MOUNT")
            .env_remove("XDG_DATA_HOME");
        for (key, value) in vars {
            let value = value.replace("$CI_PROJECT_DIR", &self.checkout.to_string_lossy());
            cmd.env(key, value);
        }
        let out = run_ok(&mut cmd);
        stderr(&out)
    }

    /// The provider entry of `stack`, which must be a link into this machine's store.
    fn assert_linked(&self, stack: &str, store: &Path) {
        let entry = self.checkout.join(format!(
            "stacks/{stack}/.terraform/providers/{}/{}/{}",
            mirror::NULL_ADDR,
            mirror::NULL_VERSION,
            mirror::PLATFORM
        ));
        let target = fs_err::read_link(&entry).expect("the provider entry is a link");
        let resolved = fs_err::canonicalize(&target).unwrap();
        assert!(
            resolved.starts_with(fs_err::canonicalize(store).unwrap()),
            "{} resolves to {}, outside the store {}",
            entry.display(),
            resolved.display(),
            store.display()
        );
    }
}

/// A repository of two stacks with the null provider, `app` also calling a git module, lock
/// files committed (as CI sees them: made by a developer's `tstore init`). The module's bare
/// repository is `<root>/git/labels.git`.
fn repository(env: &TestEnv, cfg: &Path) -> PathBuf {
    let repo = env.root.path().join("repo");
    let labels = tstore_test_support::GitRepo::tagged_module(
        &env.root.path().join("git"),
        "labels",
        &[("main.tf", "output \"label\" {\n  value = \"app\"\n}\n")],
    );
    for stack in ["app", "net"] {
        let dir = repo.join("stacks").join(stack);
        fs_err::create_dir_all(&dir).unwrap();
        let mut main = NULL_CONFIG.to_owned();
        if stack == "app" {
            main.push_str(&format!(
                "\nmodule \"labels\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
                labels.display()
            ));
        }
        fs_err::write(dir.join("main.tf"), main).unwrap();
        env.tstore()
            .cli_config(cfg)
            .args(["init", "-input=false"])
            .arg(&dir)
            .ok();
        // The developer's checkout keeps only what is committed.
        fs_err::remove_dir_all(dir.join(".terraform")).unwrap();
    }
    repo
}

/// An empty filesystem mirror: a machine with no way to obtain a provider.
fn no_source(env: &TestEnv) -> PathBuf {
    let empty = env.root.path().join("empty-mirror");
    fs_err::create_dir_all(&empty).unwrap();
    env.cli_config_fs_mirror(&empty)
}

#[test]
fn the_github_actions_recipe_plans_and_its_cache_makes_the_next_run_offline() {
    let null = TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let env = &null.env;
    let repo = repository(env, &null.cfg);
    let workflow = recipe("github-actions.yml");
    let job = &workflow["jobs"]["plan"];
    let vars = string_map(&job["env"]);
    assert_eq!(vars.get("TSTORE_NO_FUSE").map(String::as_str), Some("1"));

    let steps = job["steps"].as_sequence().expect("steps");
    let mut scripts = Vec::new();
    let mut cached = None;
    for step in steps {
        if let Some(uses) = step["uses"].as_str() {
            // The store's cache (the binary's, `tstore-bin`, is the CI service's business:
            // the test puts the binary under test on PATH).
            if uses.starts_with("actions/cache") && step["id"].as_str() != Some("tstore-bin") {
                cached = step["with"]["path"].as_str().map(str::to_owned);
            }
            continue;
        }
        if step["name"].as_str() == Some("Install tstore") {
            continue;
        }
        let run = step["run"].as_str().expect("a step runs a script");
        let mut step_vars = vars.clone();
        step_vars.extend(string_map(&step["env"]));
        scripts.push((run.to_owned(), step_vars));
    }
    assert_eq!(scripts.len(), 3, "init, plan, gc");
    let cached = cached.expect("the workflow caches the store");
    let cached = cached.strip_prefix("~/").expect("a path in the home");

    // Three runners: an empty store; the first's cache restored with every source
    // reachable; the second's cache restored with no provider source and the git server
    // gone (the job opts in to the lock's commits, as the recipe says to).
    let save = |machine: &Machine, tar: &str| {
        let cache = env.root.path().join(tar);
        run_ok(
            Command::new("tar")
                .arg("-cf")
                .arg(&cache)
                .arg("-C")
                .arg(&machine.home)
                .arg(cached),
        );
        cache
    };
    let restore = |machine: &Machine, cache: &Path| {
        run_ok(
            Command::new("tar")
                .arg("-xf")
                .arg(cache)
                .arg("-C")
                .arg(&machine.home),
        );
    };
    let timed = |machine: &Machine, cfg: &Path, extra: &[(&str, &str)], name: &str| {
        let started = std::time::Instant::now();
        for (script, vars) in &scripts {
            let mut vars = vars.clone();
            vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            machine.run(script, &vars, cfg);
        }
        // A measurement for the notes, never asserted.
        eprintln!("recipe {name}: {:?}", started.elapsed());
        let store = machine.home.join(cached);
        machine.assert_linked("app", &store);
        machine.assert_linked("net", &store);
        let label = machine
            .checkout
            .join("stacks/app/.terraform/modules/labels/main.tf");
        assert!(fs_err::read_to_string(&label).unwrap().contains("\"app\""));
    };

    let first = Machine::new(env, "runner-1", &repo);
    timed(&first, &null.cfg, &[], "empty store");
    let cache = save(&first, "cache-1.tar");

    let second = Machine::new(env, "runner-2", &repo);
    restore(&second, &cache);
    timed(&second, &null.cfg, &[], "restored, sources reachable");
    let cache = save(&second, "cache-2.tar");

    let git = env.root.path().join("git/labels.git");
    fs_err::rename(&git, env.root.path().join("git/gone.git")).unwrap();
    let third = Machine::new(env, "runner-3", &repo);
    restore(&third, &cache);
    let offline = no_source(env);
    timed(
        &third,
        &offline,
        &[("TSTORE_TRUST_LOCK", "1")],
        "restored, sources unreachable",
    );
}

#[test]
fn the_gitlab_ci_recipe_plans_and_its_cache_makes_the_next_pipeline_offline() {
    let null = TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let env = &null.env;
    let repo = repository(env, &null.cfg);
    let pipeline = recipe("gitlab-ci.yml");
    let job = &pipeline["plan"];
    let vars = string_map(&job["variables"]);
    let script: Vec<&str> = job["script"]
        .as_sequence()
        .expect("a script")
        .iter()
        .map(|line| line.as_str().unwrap())
        .collect();
    let script = script.join("\n");
    let cached: Vec<&str> = job["cache"]["paths"]
        .as_sequence()
        .expect("cache paths")
        .iter()
        .map(|p| p.as_str().unwrap().trim_end_matches('/'))
        .collect();
    assert_eq!(cached, [".tstore"], "the cache keeps the store");

    let first = Machine::new(env, "runner-1", &repo);
    first.run(&script, &vars, &null.cfg);
    first.assert_linked("app", &first.checkout.join(".tstore"));
    first.assert_linked("net", &first.checkout.join(".tstore"));
    // GitLab's cache is a zip archive: hardlinks become copies, symlinks stay links.
    let cache = env.root.path().join("cache.zip");
    let mut zip = Command::new("zip");
    zip.args(["-q", "-r", "-y"])
        .arg(&cache)
        .args(&cached)
        .current_dir(&first.checkout);
    run_ok(&mut zip);

    let second = Machine::new(env, "runner-2", &repo);
    assert!(!second.checkout.join(".tstore").exists());
    let mut unzip = Command::new("unzip");
    unzip.arg("-q").arg(&cache).current_dir(&second.checkout);
    run_ok(&mut unzip);
    second.run(&script, &vars, &no_source(env));
    second.assert_linked("app", &second.checkout.join(".tstore"));
    second.assert_linked("net", &second.checkout.join(".tstore"));
}
