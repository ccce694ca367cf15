//! Git module packages through one cached bare repository per URL (`git-cache/` in the
//! store): a tag is fetched shallow, so a repository with a long history moves a small part
//! of its objects; two tags of one URL share the cached repository, the second fetching
//! only what the first lacked; `?depth=` is kept; gc drops a cache nothing used lately.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::{GitRepo, TestEnv};

use crate::common::TstoreEnv as _;

/// A bare repository `NAME.git` with `commits` commits, each changing a 4 KiB file of
/// random bytes (so each brings new objects), tagged `v1` at the middle and `v2` at the
/// end; `main.tf` holds the tag.
fn long_history(base: &Path, name: &str, commits: usize) -> PathBuf {
    let work = GitRepo::init(base.join(name), &[]);
    for i in 1..=commits {
        let mut data = vec![0_u8; 4096];
        fs_err::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut data)
            .unwrap();
        fs_err::write(work.path().join("data.bin"), data).unwrap();
        work.write(&[(
            "main.tf",
            &format!("output \"v\" {{\n  value = \"{i}\"\n}}\n"),
        )])
        .commit(&format!("c{i}"));
        if i == commits / 2 {
            work.tag("v1");
        }
    }
    work.tag("v2");
    work.clone_bare(base.join(format!("{name}.git")))
        .path()
        .to_owned()
}

/// Objects in the repository `git_dir` (loose and packed).
fn objects(git_dir: &Path) -> u64 {
    let out = Command::new("git")
        .args(["--git-dir"])
        .arg(git_dir)
        .args(["count-objects", "-v"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ")?;
            matches!(k, "count" | "in-pack").then(|| v.parse::<u64>().unwrap())
        })
        .sum()
}

fn cached_repos(env: &TestEnv) -> Vec<PathBuf> {
    let dir = env.store.join("git-cache");
    let mut repos: Vec<PathBuf> = fs_err::read_dir(&dir)
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "git"))
                .collect()
        })
        .unwrap_or_default();
    repos.sort();
    repos
}

#[test]
fn tags_are_fetched_shallow_into_one_cached_repository_per_url() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = long_history(&base, "pkg", 60);
    let all = objects(&repo);
    let url = format!("git::file://{}", repo.display());
    let one = env.checkout(
        "one",
        &[(
            "main.tf",
            format!("module \"a\" {{\n  source = \"{url}?ref=v1\"\n}}\n").as_str(),
        )],
    );
    env.tstore().no_fuse().arg("init").arg(&one).ok();
    let repos = cached_repos(&env);
    assert_eq!(repos.len(), 1, "{repos:?}");
    let first = objects(&repos[0]);
    assert!(
        first * 10 < all,
        "a shallow fetch of one tag moved {first} of the repository's {all} objects"
    );
    let read = |dir: &Path, call: &str| {
        fs_err::read_to_string(dir.join(format!(".terraform/modules/{call}/main.tf"))).unwrap()
    };
    assert!(read(&one, "a").contains("\"30\""));

    // A second tag of the same URL: the same cached repository, a few objects more.
    let two = env.checkout(
        "two",
        &[(
            "main.tf",
            format!(
                "module \"a\" {{\n  source = \"{url}?ref=v1\"\n}}\nmodule \"b\" {{\n  source = \"{url}?ref=v2\"\n}}\n"
            )
            .as_str(),
        )],
    );
    env.tstore().no_fuse().arg("init").arg(&two).ok();
    assert_eq!(cached_repos(&env), repos, "one repository per URL");
    let second = objects(&repos[0]);
    assert!(
        second > first && second - first < 10,
        "{first} then {second} objects"
    );
    assert!(read(&two, "b").contains("\"60\""));
    // No URL is written into the cached repository.
    let config = fs_err::read_to_string(repos[0].join("config")).unwrap();
    assert!(!config.contains("pkg.git"), "{config}");

    // gc drops a cached repository unused for its grace period, not one used within it.
    env.tstore().no_fuse().args(["gc", "--min-age", "1h"]).ok();
    assert_eq!(cached_repos(&env), repos, "used a moment ago: kept");
    let stamp = repos[0].join("tstore-used");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    fs_err::File::options()
        .write(true)
        .open(&stamp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    env.tstore().no_fuse().args(["gc", "--min-age", "1h"]).ok();
    assert!(
        cached_repos(&env).is_empty(),
        "unused for two hours: dropped"
    );
    // The installed packages stay (the checkouts still link them).
    assert!(read(&two, "b").contains("\"60\""));
}

#[test]
fn a_depth_the_call_asks_for_is_fetched() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    let repo = long_history(&base, "pkg", 20);
    let dir = env.checkout(
        "deep",
        &[(
            "main.tf",
            format!(
                "module \"c\" {{\n  source = \"git::file://{}?ref=v2&depth=5\"\n}}\n",
                repo.display()
            )
            .as_str(),
        )],
    );
    env.tstore().no_fuse().arg("init").arg(&dir).ok();
    let repos = cached_repos(&env);
    let commits = Command::new("git")
        .arg("--git-dir")
        .arg(&repos[0])
        .args(["rev-list", "--all", "--count"])
        .output()
        .unwrap();
    let count: u64 = String::from_utf8_lossy(&commits.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(count, 5, "commits after a depth-5 fetch");
}
