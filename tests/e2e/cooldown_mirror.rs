//! The cooldown's strongest date: when the team's module mirror first held a version. `tstore
//! push --modules` stamps each registry resolution and git reach record it writes
//! (`tstore.first-seen`) and carries the stamp over on every later push; a runner with an
//! empty store and no history of its own (a fresh CI job), against a registry that dates
//! nothing, chooses by the mirror's stamps:
//!
//! - a version the mirror has held for long enough is chosen, one it took in today is held
//!   back, and without the mirror nothing is old enough;
//! - a re-push never renews a stamp;
//! - a mirror the checkout names does not date versions under a job's policy (it could
//!   back-date them), and does under the checkout's own;
//! - a version published again with other content is not the one the stamp is for;
//! - a git tag the mirror has seen name its commit for long enough installs; moved to new
//!   code, it waits again.

use std::path::{Path, PathBuf};
use std::process::Output;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{GitRepo, TestEnv};

use tstore_test_support::Tstore;

use crate::common::json;
use crate::common::TstoreEnv as _;
use crate::cooldown::locked;

const LOCK: &str = ".tstore.lock.hcl";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const REPO: &str = "team/modules";
const STAMP: &str = "tstore.first-seen";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The mirror's manifests (by tag) whose annotations `pick` chooses.
fn mirror_tags(oci: &OciRegistry, pick: &dyn Fn(&serde_json::Value) -> bool) -> Vec<String> {
    let list: serde_json::Value =
        serde_json::from_slice(&oci.get(&format!("/v2/{REPO}/tags/list"), "application/json"))
            .unwrap();
    list["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .filter(|tag| pick(&manifest(oci, tag)["annotations"]))
        .collect()
}

fn manifest(oci: &OciRegistry, tag: &str) -> serde_json::Value {
    serde_json::from_slice(&oci.get(&format!("/v2/{REPO}/manifests/{tag}"), MANIFEST)).unwrap()
}

fn stamp(oci: &OciRegistry, tag: &str) -> u64 {
    manifest(oci, tag)["annotations"][STAMP]
        .as_str()
        .expect("a stamped record")
        .parse()
        .unwrap()
}

/// Move the stamp of `tag` `days` days back: the mirror's writer (this test) says it first
/// held the claim then.
fn age_stamp(oci: &OciRegistry, tag: &str, days: u64) -> u64 {
    let mut doc = manifest(oci, tag);
    let aged = stamp(oci, tag) - days * 86_400;
    doc["annotations"][STAMP] = serde_json::Value::String(aged.to_string());
    oci.push_manifest(REPO, tag, MANIFEST, &serde_json::to_vec(&doc).unwrap());
    aged
}

/// A registry of `ns/m/x` that dates nothing (as OpenTofu's), a git repository whose tags
/// are its versions, a mirror, and the machine that pushes to it.
struct Fixture {
    reg: ModuleRegistry,
    repo: GitRepo,
    oci: OciRegistry,
    mirror: String,
    pusher: TestEnv,
    /// Holds the git remote.
    _root: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let reg = ModuleRegistry::start();
        let repo = GitRepo::init(
            root.path().join("remotes/m"),
            &[("main.tf", "output \"v\" {\n  value = \"one\"\n}\n")],
        );
        repo.commit("one");
        let oci = OciRegistry::start();
        let mirror = format!("oci://{}/{REPO}", oci.host());
        Fixture {
            reg,
            repo,
            oci,
            mirror,
            pusher: TestEnv::new(),
            _root: root,
        }
    }

    /// Tag `version` at the repository's head and list it, undated.
    fn publish(&self, version: &str) {
        self.repo.tag(&format!("v{version}"));
        self.reg
            .publish("ns/m/x", version, &self.repo.source(&format!("v{version}")));
    }

    /// `tstore` on `env`, with the registry's CLI configuration and the mirror's CA.
    fn on(&self, env: &TestEnv) -> Tstore {
        let cli = self
            .reg
            .write_cli_config(&env.root.path().join("cli.tfrc"), "");
        let ca = self.oci.write_ca(&env.root.path().join("ca.pem"));
        env.tstore()
            .cli_config(&cli)
            .env("SSL_CERT_FILE", ca)
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
    }

    /// A checkout on `env` calling the module at `constraint`, with `.tstore.hcl` `file`.
    fn checkout(&self, env: &TestEnv, name: &str, constraint: &str, file: &str) -> PathBuf {
        let main = format!(
            "module \"m\" {{\n  source  = \"{}/ns/m/x\"\n  version = \"{constraint}\"\n}}\n",
            self.reg.host()
        );
        let dir = env.checkout(name, &[("main.tf", main.as_str())]);
        if !file.is_empty() {
            fs_err::write(dir.join(".tstore.hcl"), file).unwrap();
        }
        dir
    }

    /// A fresh runner's init of `dir` under a seven-day policy set by the job, with the
    /// mirror named by the job when `with_mirror`.
    fn runner_init(&self, env: &TestEnv, dir: &Path, with_mirror: bool, args: &[&str]) -> Output {
        self.on(env)
            .env("TSTORE_MIN_RELEASE_AGE", "7d")
            .env(
                "TSTORE_MODULE_MIRROR",
                if with_mirror {
                    self.mirror.as_str()
                } else {
                    ""
                },
            )
            .current_dir(dir)
            .arg("init")
            .args(args)
            .output()
    }

    /// Publish `version`, take it into the pusher's store and push it; the mirror's writer
    /// then says the mirror has held it for ten days.
    fn pushed_ten_days_ago(&self, version: &str) {
        self.publish(version);
        let dir = self.checkout(&self.pusher, "a", version, "");
        self.on(&self.pusher).current_dir(&dir).arg("init").ok();
        self.push();
        let tag = &mirror_tags(&self.oci, &|a| a["tstore.version"] == version)[0];
        age_stamp(&self.oci, tag, 10);
    }

    /// The pusher's `push --modules --json` of its whole store.
    fn push(&self) -> serde_json::Value {
        json(
            &self
                .on(&self.pusher)
                .args(["push", "--json", "--modules", &self.mirror])
                .ok(),
        )
    }
}

#[test]
fn a_fresh_runner_chooses_by_when_the_mirror_first_held_a_version() {
    let f = Fixture::new();
    f.publish("1.0.0");
    f.repo
        .write(&[("main.tf", "output \"v\" {\n  value = \"two\"\n}\n")])
        .commit("two");
    f.publish("1.1.0");
    // The pusher takes both versions in, and pushes them: each resolution stamped now.
    for (name, version) in [("a", "1.0.0"), ("b", "1.1.0")] {
        let dir = f.checkout(&f.pusher, name, version, "");
        f.on(&f.pusher).current_dir(&dir).arg("init").ok();
    }
    let pushed = f.push();
    let resolutions = pushed["pushed_modules"]["resolutions"].as_array().unwrap();
    assert_eq!(resolutions.len(), 2, "{pushed}");
    assert!(resolutions
        .iter()
        .all(|r| r["written"] == true && r["first_seen_at"].is_u64()));
    let of = |version: &'static str| {
        let tags = mirror_tags(&f.oci, &move |a| a["tstore.version"] == version);
        assert_eq!(tags.len(), 1, "{version}");
        tags[0].clone()
    };
    let (old, young) = (of("1.0.0"), of("1.1.0"));
    // The mirror has held 1.0.0 for ten days (its writer says so); a re-push keeps that.
    let aged = age_stamp(&f.oci, &old, 10);
    let again = f.push();
    assert_eq!(stamp(&f.oci, &old), aged);
    let kept = again["pushed_modules"]["resolutions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["version"] == "1.0.0")
        .unwrap()
        .clone();
    assert_eq!(kept["written"], false, "{again}");
    assert_eq!(kept["first_seen_at"], aged, "{again}");
    let young_stamp = stamp(&f.oci, &young);

    // A fresh runner: 1.1.0 held back (the mirror took it in today), 1.0.0 chosen.
    let runner = TestEnv::new();
    let dir = f.checkout(&runner, "stack", ">= 1.0.0", "");
    let out = f.runner_init(&runner, &dir, true, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&dir).as_deref(), Some("1.0.0"));
    let report = json(&out).to_string();
    assert!(report.contains("\"source\":\"mirror\""), "{report}");
    assert!(report.contains(&format!("\"at\":{aged}")), "{report}");
    assert_eq!(
        stamp(&f.oci, &young),
        young_stamp,
        "a runner writes nothing"
    );
    fs_err::remove_dir_all(dir.join(".terraform")).unwrap();
    let out = f.runner_init(&runner, &dir, true, &["-upgrade", "--explain"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(date from the module mirror's first sighting)"),
        "{}",
        text(&out.stdout)
    );

    // Without the mirror, the registry dates nothing: refused, nothing written.
    let bare = TestEnv::new();
    let dir = f.checkout(&bare, "stack", ">= 1.0.0", "");
    let out = f.runner_init(&bare, &dir, false, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no publish date known"), "{stderr}");
    assert!(!dir.join(LOCK).exists());
}

#[test]
fn a_mirror_the_checkout_names_dates_nothing_under_the_jobs_policy() {
    let f = Fixture::new();
    f.pushed_ten_days_ago("1.0.0");
    let named = format!("module_mirror = \"{}\"\n", f.mirror);

    // The job sets the policy; the checkout names the mirror: its dates are not believed.
    let runner = TestEnv::new();
    let dir = f.checkout(&runner, "stack", ">= 1.0.0", &named);
    let cmd = f.on(&runner);
    let out = cmd
        .env("TSTORE_MIN_RELEASE_AGE", "7d")
        .current_dir(&dir)
        .arg("init")
        .output();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no publish date known"), "{stderr}");

    // The checkout's own policy, with its own mirror: the mirror dates the version.
    let own = f.checkout(
        &runner,
        "own",
        ">= 1.0.0",
        &format!("{named}min_release_age = \"7d\"\n"),
    );
    let out = f.on(&runner).current_dir(&own).arg("init").output();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&own).as_deref(), Some("1.0.0"));
}

#[test]
fn a_version_published_again_with_other_content_is_not_what_the_mirror_dated() {
    let f = Fixture::new();
    f.pushed_ten_days_ago("1.0.0");
    // The registry now sends 1.0.0 to other code.
    f.repo
        .write(&[("main.tf", "output \"v\" {\n  value = \"evil\"\n}\n")])
        .commit("evil")
        .tag("evil");
    f.reg.publish("ns/m/x", "1.0.0", &f.repo.source("evil"));

    let runner = TestEnv::new();
    let dir = f.checkout(&runner, "stack", ">= 1.0.0", "");
    let out = f.runner_init(&runner, &dir, true, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is not the one the module mirror first saw as that version"),
        "{stderr}"
    );
    assert!(!dir.join(LOCK).exists());
    assert!(!dir.join(".terraform/modules/m").exists());
}

#[test]
fn a_git_tag_the_mirror_has_seen_long_enough_installs_and_moved_waits_again() {
    let f = Fixture::new();
    f.repo.tag("v1");
    let call = format!(
        "module \"t\" {{\n  source = \"{}\"\n}}\n",
        f.repo.source("v1")
    );
    let dir = f.pusher.checkout("a", &[("main.tf", call.as_str())]);
    f.on(&f.pusher).current_dir(&dir).arg("init").ok();
    let pushed = f.push();
    let records = pushed["pushed_modules"]["reach_records"]
        .as_array()
        .unwrap();
    assert!(
        records
            .iter()
            .any(|r| r["git_ref"] == "v1" && r["first_seen_at"].is_u64()),
        "{pushed}"
    );
    let tag = &mirror_tags(&f.oci, &|a| a["tstore.ref"] == "v1")[0];
    age_stamp(&f.oci, tag, 10);

    // A fresh runner has never seen the tag; the mirror has, for ten days.
    let runner = TestEnv::new();
    let dir = runner.checkout("stack", &[("main.tf", call.as_str())]);
    let out = f.runner_init(&runner, &dir, true, &["--explain"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(the module mirror's first sighting)"),
        "{}",
        text(&out.stdout)
    );
    // Without the mirror, the same runner waits (its own sighting is new).
    let other = runner.checkout("other", &[("main.tf", call.as_str())]);
    let out = f.runner_init(&runner, &other, false, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    // The tag moved to new code: the mirror's stamp is for the old commit.
    f.repo
        .write(&[("main.tf", "output \"v\" {\n  value = \"two\"\n}\n")])
        .commit("two")
        .move_tag("v1");
    let moved = TestEnv::new();
    let dir = moved.checkout("stack", &[("main.tf", call.as_str())]);
    let out = f.runner_init(&moved, &dir, true, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("which this machine first saw it name"),
        "{stderr}"
    );
}
