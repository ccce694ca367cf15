//! The cooldown (`min_release_age`): against a loopback module registry whose versions carry
//! their publish dates, a version younger than the policy is passed over for an older one;
//! none old enough is a refusal naming what is held back and until when; exclusions and a
//! lock entry take a young version; the flag overrides the file and says so; a misspelt
//! setting is an error naming its line, with nothing written.

use std::path::PathBuf;
use std::process::Output;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{GitRepo, TestEnv};

use crate::common::TstoreEnv as _;

const LOCK: &str = ".tstore.lock.hcl";

/// A time `days` days before now, as a registry writes it.
fn days_ago(days: u64) -> String {
    let at = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    humantime::format_rfc3339_seconds(at).to_string()
}

/// A registry of `ns/m/x`, whose every version is a tag of one git repository.
struct Fixture {
    env: TestEnv,
    reg: ModuleRegistry,
    repo: GitRepo,
    cli_config: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let env = TestEnv::new();
        let reg = ModuleRegistry::start();
        let repo = GitRepo::init(
            env.root.path().join("remotes/m"),
            &[("main.tf", "output \"v\" {\n  value = \"m\"\n}\n")],
        );
        repo.commit("m");
        let cli_config = reg.write_cli_config(&env.root.path().join("cli.tfrc"), "");
        Fixture {
            env,
            reg,
            repo,
            cli_config,
        }
    }

    /// Publish `version` (tagged in the repository), dated `days` ago (`None`: no date).
    fn publish(&self, version: &str, days: Option<u64>) {
        self.repo.tag(&format!("v{version}"));
        self.reg.publish_dated(
            "ns/m/x",
            version,
            &self.repo.source(&format!("v{version}")),
            days.map(days_ago).as_deref(),
        );
    }

    /// A checkout calling the module at `constraint`, with `.tstore.hcl` `policy`.
    fn checkout(&self, name: &str, constraint: &str, policy: &str) -> PathBuf {
        let main = format!(
            "module \"m\" {{\n  source  = \"{}/ns/m/x\"\n  version = \"{constraint}\"\n}}\n",
            self.reg.host()
        );
        let dir = self.env.checkout(name, &[("main.tf", main.as_str())]);
        if !policy.is_empty() {
            fs_err::write(dir.join(".tstore.hcl"), policy).unwrap();
        }
        dir
    }

    fn init(&self, dir: &std::path::Path, args: &[&str]) -> Output {
        self.env
            .tstore()
            .cli_config(&self.cli_config)
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .current_dir(dir)
            .arg("init")
            .args(args)
            .output()
    }
}

/// The version the module lock file locks, if any.
pub(crate) fn locked(dir: &std::path::Path) -> Option<String> {
    version_in(dir, LOCK)
}

/// The first version the lock file `name` in `dir` records, if any.
fn version_in(dir: &std::path::Path, name: &str) -> Option<String> {
    let text = fs_err::read_to_string(dir.join(name)).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("version"))
        .map(|v| {
            v.trim_start_matches([' ', '='])
                .trim()
                .trim_matches('"')
                .to_owned()
        })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const SEVEN_DAYS: &str = "min_release_age = \"7d\"\n";

#[test]
fn a_version_younger_than_the_policy_is_passed_over_for_an_older_one() {
    let f = Fixture::new();
    f.publish("1.0.0", Some(30));
    f.publish("1.1.0", Some(1));
    // Without a policy, the newest.
    let free = f.checkout("free", ">= 1.0.0", "");
    let out = f.init(&free, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&free).as_deref(), Some("1.1.0"));

    let held = f.checkout("held", ">= 1.0.0", SEVEN_DAYS);
    let out = f.init(&held, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&held).as_deref(), Some("1.0.0"));
    // --json says when the chosen version was published, and who says so.
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report.to_string();
    assert!(text.contains("\"published\""), "{text}");
    assert!(text.contains("\"source\":\"registry\""), "{text}");
    // --explain says it in words.
    fs_err::remove_dir_all(held.join(".terraform")).unwrap();
    let out = f.init(&held, &["-upgrade", "--explain"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the newest version old enough under min_release_age: published "),
        "{stdout}"
    );
    assert!(stdout.contains("(date from the registry)"), "{stdout}");
}

#[test]
fn none_old_enough_is_refused_naming_what_is_held_back_and_nothing_is_written() {
    let f = Fixture::new();
    f.publish("1.0.0", None);
    f.publish("1.1.0", Some(2));
    let dir = f.checkout("w", ">= 1.0.0", SEVEN_DAYS);
    let out = f.init(&dir, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is old enough under min_release_age 7d"),
        "{stderr}"
    );
    assert!(stderr.contains("1.1.0 (published "), "{stderr}");
    assert!(stderr.contains("eligible from "), "{stderr}");
    assert!(stderr.contains("1.0.0 (no publish date known)"), "{stderr}");
    assert!(stderr.contains("min_release_age_exclude"), "{stderr}");
    assert!(!dir.join(LOCK).exists());
    assert!(!dir.join(".terraform/modules/modules.json").exists());
}

#[test]
fn an_exclusion_a_lock_entry_and_the_flag_take_a_young_version() {
    let f = Fixture::new();
    f.publish("1.0.0", Some(30));
    f.publish("1.1.0", Some(1));

    // Excluded by pattern: as without the policy.
    let excluded = f.checkout(
        "excluded",
        ">= 1.0.0",
        "min_release_age = \"7d\"\nmin_release_age_exclude = [\"*/ns/*\"]\n",
    );
    let out = f.init(&excluded, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&excluded).as_deref(), Some("1.1.0"));

    // Locked before the policy came: installed as locked, also on an empty store.
    let locked_dir = f.checkout("locked", ">= 1.0.0", "");
    assert!(f.init(&locked_dir, &[]).status.success());
    assert_eq!(locked(&locked_dir).as_deref(), Some("1.1.0"));
    fs_err::write(locked_dir.join(".tstore.hcl"), SEVEN_DAYS).unwrap();
    fs_err::remove_dir_all(&f.env.store).unwrap();
    let out = f.init(&locked_dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&locked_dir).as_deref(), Some("1.1.0"));
    // -upgrade chooses again, under the policy.
    let out = f.init(&locked_dir, &["-upgrade"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked(&locked_dir).as_deref(), Some("1.0.0"));

    // The flag for one run overrides the file, and says so.
    let flagged = f.checkout("flagged", ">= 1.0.0", SEVEN_DAYS);
    let out = f.init(&flagged, &["--min-release-age=0"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(locked(&flagged).as_deref(), Some("1.1.0"));
    assert!(
        stderr.contains("--min-release-age (0) overrides min_release_age (7d)"),
        "{stderr}"
    );
}

#[test]
fn a_misspelt_policy_setting_is_an_error_naming_its_line() {
    let f = Fixture::new();
    f.publish("1.0.0", Some(30));
    let dir = f.checkout("w", ">= 1.0.0", "# team policy\nmin_relase_age = \"7d\"\n");
    let out = f.init(&dir, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(".tstore.hcl:2: Unsupported argument"),
        "{stderr}"
    );
    assert!(
        stderr.contains("did you mean \"min_release_age\"?"),
        "{stderr}"
    );
    assert!(!dir.join(LOCK).exists());
    assert!(!dir.join(".terraform").exists());
}

const FAKE_FILES: [tstore_test_support::mirror::PkgFile<'static>; 1] =
    [tstore_test_support::mirror::PkgFile {
        path: "terraform-provider-fake",
        contents: b"hello\n",
        executable: true,
    }];

const PROVIDER_CONFIG: &str = r#"terraform {
  required_providers {
    fake = {
      source  = "tstore.test/test/fake"
      version = ">= 1.0.0"
    }
  }
}
"#;

/// The provider locked in `.terraform.lock.hcl`.
fn locked_provider(dir: &std::path::Path) -> Option<String> {
    version_in(dir, ".terraform.lock.hcl")
}

#[test]
fn providers_are_chosen_under_the_cooldown_by_init_upgrade_and_providers_lock() {
    use tstore_test_support::registry::TestRegistry;
    let env = TestEnv::new();
    let reg = TestRegistry::start();
    let zip = tstore_test_support::mirror::zip_bytes(&FAKE_FILES);
    for version in ["1.0.0", "1.1.0", "1.2.0"] {
        reg.publish("test/fake", version, &[("linux_amd64", zip.clone())]);
    }
    reg.date("test/fake", "1.0.0", &days_ago(60));
    reg.date("test/fake", "1.1.0", &days_ago(30));
    reg.date("test/fake", "1.2.0", &days_ago(1));
    let cfg = reg.write_cli_config(
        &env.root.path().join("cli-config/registry.tfrc"),
        &["tstore.test"],
        "  direct {}",
    );
    let run = |dir: &std::path::Path, args: &[&str]| -> Output {
        env.tstore()
            .cli_config(&cfg)
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .current_dir(dir)
            .args(args)
            .output()
    };
    let dir = env.checkout("w", &[("main.tf", PROVIDER_CONFIG)]);
    fs_err::write(dir.join(".tstore.hcl"), SEVEN_DAYS).unwrap();
    let out = run(&dir, &["init"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked_provider(&dir).as_deref(), Some("1.1.0"));

    // `providers outdated` says what the cooldown holds back, and what an upgrade would
    // take without it.
    let out = run(&dir, &["providers", "outdated"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("locked 1.1.0, the newest old enough"),
        "{stdout}"
    );
    assert!(
        stdout.contains("held back by min_release_age: 1.2.0 (published "),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 of 1 locked provider outdated"),
        "{stdout}"
    );
    let out = run(&dir, &["providers", "outdated", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["providers"][0]["held_back"][0]["version"], "1.2.0",
        "{report}"
    );
    let out = run(
        &dir,
        &["--min-release-age=0", "providers", "outdated", "-exit-code"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("locked 1.1.0, now 1.2.0"),
        "{}",
        text(&out.stdout)
    );

    // `providers lock` chooses the same way.
    let locked = env.checkout("l", &[("main.tf", PROVIDER_CONFIG)]);
    fs_err::write(locked.join(".tstore.hcl"), SEVEN_DAYS).unwrap();
    let out = run(&locked, &["providers", "lock", "-platform=linux_amd64"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked_provider(&locked).as_deref(), Some("1.1.0"));

    // None old enough: refused, naming what is held back; the lock is left as it was.
    fs_err::write(dir.join(".tstore.hcl"), "min_release_age = \"90d\"\n").unwrap();
    let before = fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap();
    let out = run(&dir, &["init", "-upgrade"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is old enough under min_release_age 90d"),
        "{stderr}"
    );
    assert!(stderr.contains("1.2.0 (published "), "{stderr}");
    assert_eq!(
        fs_err::read_to_string(dir.join(".terraform.lock.hcl")).unwrap(),
        before
    );
    // The locked version installs as locked under any policy.
    let out = run(&dir, &["init"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locked_provider(&dir).as_deref(), Some("1.1.0"));
}

/// This machine's first sightings of git tags naming commits, by key.
fn first_seen_path(env: &TestEnv) -> PathBuf {
    env.home.join(".local/state/tstore/git-first-seen.json")
}

/// Every first sighting of `env` made `days` days earlier.
fn age_first_sightings(env: &TestEnv, days: u64) {
    let path = first_seen_path(env);
    let mut known: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
    assert!(!known.is_empty());
    for time in known.values_mut() {
        *time = serde_json::json!(time.as_u64().unwrap() - days * 86_400);
    }
    fs_err::write(&path, serde_json::to_string(&known).unwrap()).unwrap();
}

#[test]
fn a_git_tag_waits_from_when_this_machine_first_saw_it_name_its_commit() {
    let env = TestEnv::new();
    let repo = GitRepo::init(
        env.root.path().join("remotes/lib"),
        &[("main.tf", "output \"v\" {\n  value = \"one\"\n}\n")],
    );
    repo.commit("one").tag("v1");
    let call = |reference: &str| {
        format!(
            "module \"m\" {{\n  source = \"{}\"\n}}\n",
            repo.source(reference)
        )
    };
    let run = |dir: &std::path::Path, args: &[&str]| -> Output {
        env.tstore()
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .current_dir(dir)
            .arg("init")
            .args(args)
            .output()
    };
    let checkout = |name: &str, reference: &str, policy: &str| {
        let dir = env.checkout(name, &[("main.tf", call(reference).as_str())]);
        fs_err::write(dir.join(".tstore.hcl"), policy).unwrap();
        dir
    };

    // First seen now: held back, nothing written to the checkout.
    let dir = checkout("w", "v1", SEVEN_DAYS);
    let out = run(&dir, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the tag \"v1\" of "), "{stderr}");
    assert!(
        stderr.contains("which this machine first saw it name"),
        "{stderr}"
    );
    assert!(stderr.contains("becomes eligible "), "{stderr}");
    assert!(!dir.join(LOCK).exists());
    assert!(!dir.join(".terraform/modules/modules.json").exists());

    // A week later (the sighting aged): installed, and --explain says since when.
    age_first_sightings(&env, 8);
    let out = run(&dir, &["--explain"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("the tag has named this commit since "),
        "{}",
        text(&out.stdout)
    );

    // The tag moved to new code: a new cooldown for a call the lock does not pin; the
    // locked call installs its locked commit as before.
    repo.write(&[("main.tf", "output \"v\" {\n  value = \"two\"\n}\n")])
        .commit("two")
        .move_tag("v1");
    let fresh = checkout("fresh", "v1", SEVEN_DAYS);
    let out = run(&fresh, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = run(&dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // A branch is not a version; an excluded source is not held back.
    let branch = checkout("branch", "main", SEVEN_DAYS);
    assert!(run(&branch, &[]).status.success());
    let excluded = checkout(
        "excluded",
        "v1",
        &format!(
            "{SEVEN_DAYS}min_release_age_exclude = [\"git::file://{}*\"]\n",
            repo.path().display()
        ),
    );
    let out = run(&excluded, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn modules_outdated_lists_what_the_cooldown_holds_back_and_when_it_is_eligible() {
    let f = Fixture::new();
    f.publish("1.0.0", Some(30));
    let dir = f.checkout("w", ">= 1.0.0", SEVEN_DAYS);
    assert!(f.init(&dir, &[]).status.success());
    f.publish("1.1.0", Some(20));
    f.publish("1.2.0", Some(2));
    let outdated = |args: &[&str]| {
        f.env
            .tstore()
            .cli_config(&f.cli_config)
            .no_fuse()
            .current_dir(&dir)
            .args(["modules", "outdated"])
            .args(args)
            .output()
    };
    let out = outdated(&[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("locked 1.0.0, now 1.1.0"), "{stdout}");
    assert!(
        stdout.contains("held back by min_release_age: 1.2.0 (published "),
        "{stdout}"
    );
    assert!(stdout.contains("eligible from "), "{stdout}");
    assert!(stdout.contains("1 of 1 locked call outdated"), "{stdout}");
    let out = outdated(&["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let held = &report["calls"][0]["held_back"][0];
    assert_eq!(held["version"], "1.2.0", "{report}");
    assert!(held["eligible_at"].as_u64().is_some(), "{report}");
}

#[test]
fn modules_outdated_lists_newer_version_tags_of_tag_pinned_calls_across_roots() {
    let env = TestEnv::new();
    let repo = GitRepo::init(
        env.root.path().join("remotes/vpc"),
        &[("main.tf", "output \"v\" {\n  value = \"one\"\n}\n")],
    );
    repo.commit("one").tag("v1.0.0");
    let call = format!(
        "module \"vpc\" {{\n  source = \"{}\"\n}}\n",
        repo.source("v1.0.0")
    );
    let top = env.root.path().join("work/infra");
    for root in ["a", "b"] {
        fs_err::create_dir_all(top.join(root)).unwrap();
        fs_err::write(top.join(root).join("main.tf"), &call).unwrap();
    }
    let tstore_in = |dir: &std::path::Path, args: &[&str]| -> Output {
        env.tstore()
            .no_fuse()
            .env("TSTORE_NO_SERVER", "1")
            .current_dir(dir)
            .args(args)
            .output()
    };
    let out = tstore_in(&top, &["init", "--recursive"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    repo.write(&[("main.tf", "output \"v\" {\n  value = \"two\"\n}\n")])
        .commit("two")
        .tag("v1.1.0")
        .tag("v2.0.0-rc1")
        .tag("not-a-version");

    let out = tstore_in(&top, &["modules", "outdated", "--recursive"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("locked v1.0.0"), "{stdout}");
    assert!(stdout.contains("newer tags: v1.1.0"), "{stdout}");
    assert!(
        !stdout.contains("v2.0.0-rc1") && !stdout.contains("not-a-version"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 of 2 locked calls outdated in 2 roots"),
        "{stdout}"
    );

    // Under the cooldown, a tag first seen now is held back, with the date it is eligible.
    fs_err::write(top.join(".tstore.hcl"), SEVEN_DAYS).unwrap();
    let out = tstore_in(&top, &["modules", "outdated", "--recursive", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outdated"], 0, "{report}");
    let tag = &report["roots"][0]["calls"][0]["newer_tags"][0];
    assert_eq!(tag["tag"], "v1.1.0", "{report}");
    assert!(tag["held_until"].as_u64().is_some(), "{report}");
}

#[test]
fn a_checkout_that_lowers_the_teams_cooldown_is_said_on_the_machines_that_ran_under_it() {
    let f = Fixture::new();
    f.publish("1.0.0", Some(30));
    let dir = f.checkout("w", ">= 1.0.0", SEVEN_DAYS);
    let out = f.init(&dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("the last init on this machine"));
    // A pull request lowers it.
    fs_err::write(dir.join(".tstore.hcl"), "min_release_age = \"1h\"\n").unwrap();
    let out = f.init(&dir, &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is now 1h; the last init on this machine ran under 7d"),
        "{stderr}"
    );
    // Said once: the next init under the same policy says nothing.
    let out = f.init(&dir, &[]);
    assert!(!text(&out.stderr).contains("the last init on this machine"));
    // Dropped altogether.
    fs_err::write(dir.join(".tstore.hcl"), "# no cooldown\n").unwrap();
    let out = f.init(&dir, &[]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is now none; the last init on this machine ran under 1h"),
        "{stderr}"
    );
}

/// The cooldown's records live in the user's private state directory: a record that is a
/// link (planted by whoever could write there, or a restored home) is neither read through
/// nor written through; it is replaced by a file of tstore's own.
#[test]
fn the_cooldowns_records_are_never_read_or_written_through_a_link() {
    let f = Fixture::new();
    f.publish("1.0.0", Some(30));
    let state = f.env.home.join(".local/state/tstore");
    fs_err::create_dir_all(&state).unwrap();
    let outside = f.env.root.path().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    let mut planted = Vec::new();
    for name in ["policy-seen.json", "git-first-seen.json"] {
        let target = outside.join(name);
        // A record that would make every policy look unchanged, and every tag old.
        fs_err::write(&target, "{\"planted\": \"1\"}").unwrap();
        std::os::unix::fs::symlink(&target, state.join(name)).unwrap();
        planted.push(target);
    }
    // A registry call and a git tag call (excluded from the policy, still sighted).
    let dir = f.checkout(
        "w",
        ">= 1.0.0",
        &format!("{SEVEN_DAYS}min_release_age_exclude = [\"git::*\"]\n"),
    );
    let main = fs_err::read_to_string(dir.join("main.tf")).unwrap();
    fs_err::write(
        dir.join("main.tf"),
        format!(
            "{main}module \"t\" {{\n  source = \"{}\"\n}}\n",
            f.repo.source("v1.0.0")
        ),
    )
    .unwrap();
    let out = f.init(&dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let policy = state.join("policy-seen.json");
    assert!(!fs_err::symlink_metadata(&policy).unwrap().is_symlink());
    assert!(fs_err::read_to_string(&policy).unwrap().contains("7d"));
    let sightings = state.join("git-first-seen.json");
    assert!(!fs_err::symlink_metadata(&sightings).unwrap().is_symlink());
    assert!(!fs_err::read_to_string(&sightings)
        .unwrap()
        .contains("planted"));
    for target in planted {
        assert_eq!(
            fs_err::read_to_string(&target).unwrap(),
            "{\"planted\": \"1\"}"
        );
    }
}
