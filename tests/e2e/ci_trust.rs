//! Where tstore meets CI: a pull request's author controls the checkout, the job's
//! environment holds secrets, and the job log is readable by that author. Each test plays
//! one attack with the real binary and asserts what must hold.

use std::os::unix::fs::symlink;
use std::path::Path;

use tstore_test_support::{module_records, stderr, stdout, TestEnv};

use tstore_test_support::Tstore;

use crate::common::TstoreEnv;

/// A value that must never reach a job log.
const SECRET: &str = "tok-5ecret-do-not-print-7f3a";

/// `tstore init DIR` (no FUSE) with the job's secret in the environment, whatever the outcome.
fn init(env: &TestEnv, dir: &Path) -> std::process::Output {
    let secret = env.tstore().env("TF_TOKEN_private_example", SECRET);
    secret.no_fuse().init(dir).output()
}

#[track_caller]
fn assert_no_secret(out: &std::process::Output, case: &str) {
    let all = format!("{}{}", stdout(out), stderr(out));
    assert!(
        !all.contains(SECRET) && !all.contains("KEY-MATERIAL") && !all.contains("KEYMATERIAL"),
        "{case}: the output holds a secret:\n{all}"
    );
}

/// tstore's own files committed as symlinks to the process environment, or to a private
/// key outside the checkout, are refused as links; nothing of their targets is printed.
#[test]
fn own_files_linked_to_secrets_are_not_read_or_printed() {
    let env = TestEnv::new();
    let key = env.root.path().join("private/id_key");
    fs_err::create_dir_all(key.parent().unwrap()).unwrap();
    fs_err::write(&key, "KEY-MATERIAL = \"\n-----BEGIN KEY-----\n").unwrap();
    for target in [Path::new("/proc/self/environ"), key.as_path()] {
        for (name, own_file) in [
            ("policy", ".tstore.hcl"),
            ("root-meta", "module-package.meta.hcl"),
        ] {
            let case = format!("{own_file} -> {}", target.display());
            let dir = env.checkout(
                &format!("{name}-{}", target.file_name().unwrap().to_string_lossy()),
                &[
                    ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
                    ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
                ],
            );
            symlink(target, dir.join(own_file)).unwrap();
            let out = init(&env, &dir);
            assert_no_secret(&out, &case);
            assert!(!out.status.success(), "{case}: init succeeded");
            assert!(
                stderr(&out).contains("symbolic link"),
                "{case}: the error does not say why:\n{}",
                stderr(&out)
            );
            assert!(
                !dir.join(".terraform").exists(),
                "{case}: a failed init changed the checkout"
            );
        }
    }
}

/// A syntax error in a regular `.tstore.hcl` says where, not what the line holds; a
/// `terraform.tfvars` linked to the environment (tofu reads it for early evaluation) fails
/// without printing it.
#[test]
fn syntax_errors_of_hostile_files_quote_nothing() {
    let env = TestEnv::new();
    let dir = env.checkout(
        "bad-policy",
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            (
                ".tstore.hcl",
                &format!("modules {{\n  x = {SECRET} ! \n}}\n"),
            ),
        ],
    );
    let out = init(&env, &dir);
    assert!(!out.status.success(), "init succeeded: {}", stderr(&out));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    assert_no_secret(&out, "a .tstore.hcl with a syntax error");

    let dir = env.checkout(
        "tfvars",
        &[
            (
                "main.tf",
                "variable \"v\" {\n  type = string\n}\nmodule \"m\" {\n  source = \"./m/${var.v}\"\n}\n",
            ),
            ("m/a/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ],
    );
    // An identifier-shaped secret parses as a variable reference, so only evaluation fails.
    let outside = env.root.path().join("private/credentials");
    fs_err::create_dir_all(outside.parent().unwrap()).unwrap();
    fs_err::write(&outside, "v = KEYMATERIAL_abc123\n").unwrap();
    for target in [Path::new("/proc/self/environ"), outside.as_path()] {
        let link = dir.join("terraform.tfvars");
        let _ = fs_err::remove_file(&link);
        symlink(target, &link).unwrap();
        let out = env
            .tstore()
            .no_fuse()
            .env("TSTORE_FLAVOR", "tofu")
            .env("TF_TOKEN_private_example", SECRET)
            .arg("init")
            .arg(&dir)
            .output();
        assert!(!out.status.success(), "init succeeded: {}", stderr(&out));
        let case = format!("terraform.tfvars -> {}", target.display());
        assert_no_secret(&out, &case);
        assert!(
            !stderr(&out).contains("KEYMATERIAL"),
            "{case}: {}",
            stderr(&out)
        );
    }
}

/// A module named by absolute path or `file://` is the user's own directory, as a local
/// module outside the checkout is: `.terraform/modules/KEY` links to it (terraform's file
/// getter links it too), nothing of it enters the store or is copied into the checkout, so
/// a 0600 key in a 0700 directory is never made readable to others. Even a policy that asks
/// for private copies does not copy it.
#[test]
fn absolute_path_modules_are_read_in_place_never_copied() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let private = env.root.path().join("private-modules/net");
    fs_err::create_dir_all(private.join("sub")).unwrap();
    fs_err::write(private.join("main.tf"), "output \"x\" {\n  value = 1\n}\n").unwrap();
    fs_err::write(
        private.join("sub/main.tf"),
        "output \"y\" {\n  value = 2\n}\n",
    )
    .unwrap();
    fs_err::write(private.join("deploy.key"), "KEY-MATERIAL\n").unwrap();
    fs_err::set_permissions(
        private.join("deploy.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    fs_err::set_permissions(
        private.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let p = private.display();
    let dir = env.checkout(
        "abs",
        &[
            (
                "main.tf",
                &format!(
                    "module \"a\" {{\n  source = \"{p}\"\n}}\nmodule \"b\" {{\n  source = \"file://{p}\"\n}}\nmodule \"c\" {{\n  source = \"{p}//sub\"\n}}\n"
                ),
            ),
            (".tstore.hcl", "modules {\n  default = \"copy\"\n}\n"),
        ],
    );
    let out = init(&env, &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    for key in ["a", "b", "c"] {
        let slot = dir.join(".terraform/modules").join(key);
        assert_eq!(
            fs_err::read_link(&slot).unwrap(),
            private,
            "{key} does not link to the directory"
        );
    }
    let records = module_records(&dir);
    assert!(
        records
            .iter()
            .any(|r| r.key == "c" && r.dir == ".terraform/modules/c/sub"),
        "{records:?}"
    );
    // Nothing of the directory was copied anywhere: not into the checkout, not the store.
    for root in [dir.join(".terraform"), env.store.clone()] {
        for entry in walkdir::WalkDir::new(&root).follow_links(false) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                let text = fs_err::read(entry.path()).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&text).contains("KEY-MATERIAL"),
                    "{} holds the key",
                    entry.path().display()
                );
            }
        }
    }
    // The judge reads the same modules through the links.
    let plan = env
        .terraform(&dir)
        .args(["validate", "-no-color"])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    // A call removed later takes its link with it, and the directory is untouched.
    fs_err::write(
        dir.join("main.tf"),
        format!("module \"a\" {{\n  source = \"{p}\"\n}}\n"),
    )
    .unwrap();
    let out = init(&env, &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs_err::symlink_metadata(dir.join(".terraform/modules/b")).is_err());
    assert!(private.join("deploy.key").exists());
    assert_eq!(
        fs_err::metadata(private.join("deploy.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

fn null_cmd(m: &tstore_test_support::NullMirror) -> Tstore {
    m.env.tstore().cli_config(&m.cfg).no_fuse()
}

fn roots_listed(m: &tstore_test_support::NullMirror) -> Vec<String> {
    let out = null_cmd(m).args(["roots", "ls", "--json"]).ok();
    crate::common::json(&out)["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A CI job that runs `tstore init "$PWD"` from a symlinked path (`/ci/current/app`) records
/// the real directory: when the alias is replaced, the root and what it links survive gc.
#[test]
fn a_root_initialised_through_a_symlinked_path_survives_its_alias() {
    let m = TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let real = m
        .env
        .checkout("builds/app", &[("main.tf", crate::common::NULL_CONFIG)]);
    let alias = m.env.root.path().join("current");
    symlink(m.env.work.join("builds"), &alias).unwrap();
    null_cmd(&m).arg("init").arg(alias.join("app")).ok();
    let real = real.canonicalize().unwrap();
    assert_eq!(roots_listed(&m), [real.display().to_string()]);
    fs_err::remove_file(&alias).unwrap();
    let gc = crate::common::json(&null_cmd(&m).args(["gc", "--min-age", "0", "--json"]).ok());
    assert_eq!(gc["roots_dropped"], serde_json::json!([]), "{gc}");
    assert_eq!(gc["packages_removed"], serde_json::json!([]), "{gc}");
    m.env.assert_terraform_plans_null(&real);
}

/// When nothing but dead roots is left to collect (the read-only check answers), gc drops
/// them for real: the next run reports nothing, and `roots ls` no longer lists them.
#[test]
fn gc_drops_the_dead_roots_it_reports() {
    let m = TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let a = m
        .env
        .checkout("a", &[("main.tf", crate::common::NULL_CONFIG)]);
    let b = m
        .env
        .checkout("b", &[("main.tf", crate::common::NULL_CONFIG)]);
    for d in [&a, &b] {
        null_cmd(&m).arg("init").arg(d).ok();
    }
    let b_path = b.canonicalize().unwrap().display().to_string();
    fs_err::remove_dir_all(&b).unwrap();
    // Both links named the same package, which a stays on: nothing else to collect.
    let gc = |m: &tstore_test_support::NullMirror| {
        crate::common::json(&null_cmd(m).args(["gc", "--min-age", "0", "--json"]).ok())
    };
    let first = gc(&m);
    assert_eq!(
        first["roots_dropped"],
        serde_json::json!([b_path]),
        "{first}"
    );
    assert_eq!(first["roots_live"], 1, "{first}");
    assert!(!roots_listed(&m).contains(&b_path));
    let second = gc(&m);
    assert_eq!(second["roots_dropped"], serde_json::json!([]), "{second}");
    assert_eq!(second["roots_live"], 1, "{second}");
}

/// A working directory inside the store (its `tmp/`, say) or the mount is refused before
/// anything is written: gc would otherwise delete it with what it links.
#[test]
fn a_working_directory_inside_the_store_is_refused() {
    let m = TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let outside = m
        .env
        .checkout("first", &[("main.tf", crate::common::NULL_CONFIG)]);
    null_cmd(&m).arg("init").arg(&outside).ok();
    for inside in [
        m.env.store.join("tmp/work"),
        m.env.mount.join("providers/w"),
    ] {
        let real = inside.canonicalize().unwrap_or(inside.clone());
        let made = fs_err::create_dir_all(&real).is_ok()
            && fs_err::write(real.join("main.tf"), crate::common::NULL_CONFIG).is_ok();
        assert!(
            made || inside.starts_with(&m.env.mount),
            "{}",
            real.display()
        );
        let out = null_cmd(&m).arg("init").arg(&inside).output();
        assert!(
            !out.status.success(),
            "{}: init succeeded",
            inside.display()
        );
        assert!(stderr(&out).contains("is inside"), "{}", stderr(&out));
        assert!(!real.join(".terraform").exists());
        assert!(!real.join(".terraform.lock.hcl").exists());
        let _ = fs_err::remove_dir_all(&real);
    }
    assert_eq!(roots_listed(&m).len(), 1);
}

/// A module that brings a tree deeper than one removal pass descends (300 levels) is
/// replaced by `-upgrade` and removed when its call goes, leaving nothing behind.
#[test]
fn private_copies_of_any_depth_are_replaced_and_removed() {
    let env = TestEnv::new();
    let dir = env.checkout(
        "deep",
        &[
            ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
            ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            (
                "module-package.meta.hcl",
                "module \"m\" {\n  path = \"./m\"\n  read-only = { self = false }\n}\n",
            ),
        ],
    );
    let mut deep = dir.join("m");
    for _ in 0..300 {
        deep.push("d");
    }
    fs_err::create_dir_all(&deep).unwrap();
    fs_err::write(deep.join("leaf"), "x").unwrap();
    let run = |args: &[&str]| {
        let out = env
            .tstore()
            .no_fuse()
            .arg("init")
            .args(args)
            .arg(&dir)
            .output();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    };
    run(&[]);
    let copy = dir.join(".terraform/modules/m");
    assert!(copy.join("main.tf").is_file(), "no private copy");
    run(&["-upgrade"]);
    assert!(
        copy.join("main.tf").is_file(),
        "no private copy after -upgrade"
    );
    fs_err::write(dir.join("main.tf"), "output \"y\" {\n  value = 2\n}\n").unwrap();
    run(&[]);
    let left: Vec<_> = fs_err::read_dir(dir.join(".terraform/modules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "modules.json" && n != ".tstore-installs.json")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Several inits of one directory at once (CI retries, a script that starts them in
/// parallel) each succeed, and every `modules.json` record names a directory that exists.
#[test]
fn concurrent_inits_of_one_directory_are_serialized() {
    let env = TestEnv::new();
    let dir = env.checkout(
        "busy",
        &[
            (
                "main.tf",
                "module \"a\" {\n  source = \"./a\"\n}\nmodule \"b\" {\n  source = \"./b\"\n}\n",
            ),
            ("a/main.tf", "output \"x\" {\n  value = 1\n}\n"),
            ("b/main.tf", "output \"y\" {\n  value = 2\n}\n"),
            (
                "module-package.meta.hcl",
                "module \"a\" {\n  path = \"./a\"\n  read-only = { self = false }\n}\nmodule \"b\" {\n  path = \"./b\"\n  read-only = { self = false }\n}\n",
            ),
        ],
    );
    let rounds = std::env::var("TSTORE_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    for round in 0..rounds {
        let children: Vec<_> = (0..3)
            .map(|_| {
                env.tstore()
                    .no_fuse()
                    .args(["init", "-upgrade"])
                    .arg(&dir)
                    .command()
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round}: {}", stderr(&out));
        }
        for record in module_records(&dir) {
            let d = dir.join(&record.dir);
            assert!(
                d.join("main.tf").is_file() || record.dir == ".",
                "round {round}: modules.json names {} which is gone",
                d.display()
            );
        }
    }
}

/// A module tree that fans out at every level (31 levels of two calls each: two billion
/// instances) fails with a clear error instead of walking until memory runs out, and
/// leaves the checkout untouched.
#[test]
fn a_module_tree_that_fans_out_exponentially_is_bounded() {
    let env = TestEnv::new();
    let mut files = vec![(
        "main.tf".to_owned(),
        "module \"a\" {\n  source = \"./l0\"\n}\nmodule \"b\" {\n  source = \"./l0\"\n}\n"
            .to_owned(),
    )];
    for level in 0..31 {
        let body = if level == 30 {
            "output \"x\" {\n  value = 1\n}\n".to_owned()
        } else {
            let next = level + 1;
            format!(
                "module \"a\" {{\n  source = \"../l{next}\"\n}}\nmodule \"b\" {{\n  source = \"../l{next}\"\n}}\n"
            )
        };
        files.push((format!("l{level}/main.tf"), body));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let dir = env.checkout("fan", &files);
    let out = init(&env, &dir);
    assert!(!out.status.success(), "init succeeded");
    assert!(
        stderr(&out).contains("module instances"),
        "{}",
        stderr(&out)
    );
    assert!(
        !dir.join(".terraform").exists(),
        "a failed init wrote .terraform"
    );
}

/// A local module's directory swapped for a symlink to a private directory while init
/// runs (a race a pull request's own scripts can play) never gets the private files copied
/// into the checkout: what is judged and what is copied is one opened directory.
#[test]
fn a_local_module_swapped_for_a_symlink_during_init_copies_nothing_from_outside() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let env = TestEnv::new();
    let outside = env.root.path().join("private-dir");
    fs_err::create_dir_all(outside.join("sub")).unwrap();
    fs_err::write(outside.join("main.tf"), "output \"x\" {\n  value = 1\n}\n").unwrap();
    fs_err::write(outside.join("stolen.key"), "KEY-MATERIAL\n").unwrap();
    fs_err::write(outside.join("sub/stolen.key"), "KEY-MATERIAL\n").unwrap();
    let mut files = vec![
        ("main.tf", "module \"m\" {\n  source = \"./m\"\n}\n"),
        ("m/main.tf", "output \"x\" {\n  value = 1\n}\n"),
        (
            "module-package.meta.hcl",
            "module \"m\" {\n  path = \"./m\"\n  read-only = { self = false }\n}\n",
        ),
    ];
    let many: Vec<String> = (0..100).map(|i| format!("m/d{i}/f.txt")).collect();
    for f in &many {
        files.push((f.as_str(), "x\n"));
    }
    files.push(("m/sub/ok.txt", "x\n"));
    let dir = env.checkout("race", &files);
    let stop = AtomicBool::new(false);
    let mut leaked = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
            // Atomic swaps (RENAME_EXCHANGE), so the name always exists: a directory of the
            // module, or the module itself, becomes a symlink to the private directory and
            // back, at random points of the copy.
            let sub = dir.join("m/sub");
            let sub_link = dir.join("m/sub.link");
            let m = dir.join("m");
            let m_link = dir.join("m.link");
            symlink(outside.join("sub"), &sub_link).unwrap();
            symlink(&outside, &m_link).unwrap();
            let swap = |a: &Path, b: &Path| {
                let _ = renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE);
            };
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                let (a, b) = if round.is_multiple_of(8) {
                    (&m, &m_link)
                } else {
                    (&sub, &sub_link)
                };
                swap(a, b);
                std::thread::sleep(std::time::Duration::from_micros(50));
                swap(a, b);
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        });
        for _ in 0..60 {
            let _ = env
                .tstore()
                .no_fuse()
                .args(["init", "-upgrade"])
                .arg(&dir)
                .output();
            for entry in walkdir::WalkDir::new(dir.join(".terraform")).follow_links(false) {
                let Ok(entry) = entry else { continue };
                if entry.file_name() == "stolen.key" {
                    leaked.push(entry.path().to_owned());
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(leaked.is_empty(), "copied in from outside: {leaked:?}");
}

/// gc run from cron while a provider serves from the FUSE mount (terraform keeps it running
/// for a whole plan or apply): its package is kept while the process maps it, so the
/// kernel can always read the binary again; once the provider exits, the next gc sweeps it.
#[test]
fn gc_keeps_what_a_running_provider_maps_from_the_mount() {
    use std::io::BufRead;
    let m = TestEnv::with_null_mirror(tstore_test_support::Layout::Packed);
    let dir = m
        .env
        .checkout("stack", &[("main.tf", crate::common::NULL_CONFIG)]);
    m.env.tstore().cli_config(&m.cfg).arg("init").arg(&dir).ok();
    let bin = dir
        .join(".terraform/providers/registry.terraform.io/hashicorp/null/2.1.2/linux_amd64")
        .join(tstore_test_support::NULL_PROVIDER_FILE);
    let original = fs_err::read(&bin).unwrap();
    // As terraform starts it: with the plugin handshake it serves until killed.
    let mut provider = std::process::Command::new(&bin)
        .env("TF_PLUGIN_MAGIC_COOKIE", NULL_PLUGIN_COOKIE)
        .env("TMPDIR", m.env.root.path().join("tmp"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut handshake = String::new();
    std::io::BufReader::new(provider.stdout.take().unwrap())
        .read_line(&mut handshake)
        .unwrap();
    assert!(
        handshake.starts_with("1|"),
        "no plugin handshake: {handshake:?}"
    );
    // The working directory goes away: nothing links the package any more.
    fs_err::remove_dir_all(dir.join(".terraform")).unwrap();
    let gc = || {
        crate::common::json(
            &m.env
                .tstore()
                .cli_config(&m.cfg)
                .args(["gc", "--min-age", "0", "--json"])
                .ok(),
        )
    };
    let rounds: usize = std::env::var("TSTORE_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let exe = std::fs::File::open(format!("/proc/{}/exe", provider.id())).unwrap();
    let outcome = (|| {
        for round in 0..rounds {
            let report = gc();
            if report["packages_removed"] != serde_json::json!([]) || report["packages_in_use"] != 1
            {
                return Err(format!("round {round}: {report}"));
            }
            // The kernel drops the binary's cached pages and reads it again through the
            // daemon.
            nix::fcntl::posix_fadvise(
                &exe,
                0,
                0,
                nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
            )
            .unwrap();
            let mut again = Vec::new();
            (&exe)
                .read_at_end_from_start(&mut again)
                .map_err(|e| format!("round {round}: reading the running binary again: {e}"))?;
            if again != original {
                return Err(format!(
                    "round {round}: the running binary reads other bytes"
                ));
            }
            if provider.try_wait().unwrap().is_some() {
                return Err(format!("round {round}: the provider died"));
            }
        }
        Ok(())
    })();
    // This test's own handle of the binary counts as a use too.
    drop(exe);
    let _ = provider.kill();
    let _ = provider.wait();
    outcome.unwrap();
    let report = gc();
    assert_eq!(
        report["packages_removed"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
}

/// Reading a whole file from its start, through a shared handle.
trait ReadAllFromStart {
    fn read_at_end_from_start(&self, into: &mut Vec<u8>) -> std::io::Result<()>;
}

impl ReadAllFromStart for &std::fs::File {
    fn read_at_end_from_start(&self, into: &mut Vec<u8>) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt as _;
        let mut buf = vec![0u8; 1 << 20];
        let mut offset = 0u64;
        loop {
            let n = self.read_at(&mut buf, offset)?;
            if n == 0 {
                return Ok(());
            }
            into.extend_from_slice(&buf[..n]);
            offset += n as u64;
        }
    }
}

/// The handshake cookie of terraform's plugin protocol (public, the same in every
/// terraform): a provider started with it serves instead of printing its usage.
const NULL_PLUGIN_COOKIE: &str = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";
