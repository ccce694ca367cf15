//! Bounded resources on hostile input: deeply nested HCL in every kind of file tstore
//! parses, and oversized files read whole, end in an error that names the file, never in a
//! crash, and leave the working directory as it was.

use std::path::Path;
use std::process::Command;

use tstore_test_support::{snapshot, stderr, GitRepo, TestEnv};

use crate::common::TstoreEnv as _;

/// 2,000 nested brackets in 4 KB: a stack overflow for a naive recursive parser.
fn deep_expression() -> String {
    format!("{}{}", "[".repeat(2000), "]".repeat(2000))
}

/// A bare git repository `<base>/<name>.git` (tag v1) with `files`; its `git::` source.
fn repo(base: &Path, name: &str, files: &[(&str, &str)]) -> String {
    GitRepo::init(base.join(format!("{name}-src")), files)
        .commit("init")
        .tag("v1")
        .clone_bare(base.join(format!("{name}.git")))
        .source("v1")
}

/// Run `tstore init` on `dir`: it must fail with exit 1 (not a signal), name `file`,
/// and leave the directory unchanged.
fn refused(env: &TestEnv, dir: &Path, file: &str, what: &str) {
    let before = snapshot(dir);
    let out = env.tstore().no_fuse().arg("init").arg(dir).output();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(
        err.contains(file),
        "{what}: the error does not name {file}: {err}"
    );
    assert_eq!(
        snapshot(dir),
        before,
        "{what}: the working directory changed"
    );
}

#[test]
fn deep_nesting_in_each_file_kind_is_an_error_with_its_place() {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    let deep = deep_expression();

    let dir = env.checkout(
        "root",
        &[("main.tf", &format!("locals {{\n  x = {deep}\n}}\n"))],
    );
    refused(&env, &dir, "main.tf:2", "the root module");

    let lock = format!(
        "provider \"registry.terraform.io/hashicorp/null\" {{\n  version = \"2.1.2\"\n  hashes = {deep}\n}}\n"
    );
    let dir = env.checkout(
        "lock",
        &[("main.tf", "locals {}\n"), (".terraform.lock.hcl", &lock)],
    );
    refused(&env, &dir, ".terraform.lock.hcl:3", "the lock file");

    let source = repo(
        &base,
        "deepmod",
        &[("main.tf", &format!("locals {{\n  x = {deep}\n}}\n"))],
    );
    let dir = env.checkout(
        "remote",
        &[(
            "main.tf",
            &format!("module \"m\" {{\n  source = \"{source}\"\n}}\n"),
        )],
    );
    refused(
        &env,
        &dir,
        ".terraform/modules/m/main.tf:2",
        "a remote module",
    );

    let source = repo(
        &base,
        "deepmeta",
        &[
            ("main.tf", "locals {}\n"),
            ("module-package.meta.hcl", &format!("x = {deep}\n")),
        ],
    );
    // A meta file nobody can parse is a warning for a remote package (it makes no
    // statement) and an error for the root package.
    let dir = env.checkout(
        "meta",
        &[
            (
                "main.tf",
                &format!("module \"m\" {{\n  source = \"{source}\"\n}}\n"),
            ),
            ("module-package.meta.hcl", &format!("x = {deep}\n")),
        ],
    );
    refused(
        &env,
        &dir,
        "module-package.meta.hcl",
        "the root package's meta file",
    );
}

#[test]
fn oversized_files_read_whole_are_refused() {
    let env = TestEnv::new();
    // 20 MiB of comment: larger than any lock file tstore reads.
    let big = "#".repeat(20 << 20);
    let dir = env.checkout(
        "lock",
        &[("main.tf", "locals {}\n"), (".terraform.lock.hcl", &big)],
    );
    refused(&env, &dir, ".terraform.lock.hcl", "an oversized lock file");
    let dir = env.checkout(
        "meta",
        &[
            ("main.tf", "locals {}\n"),
            ("module-package.meta.hcl", &big),
        ],
    );
    refused(
        &env,
        &dir,
        "module-package.meta.hcl",
        "an oversized meta file",
    );
}

/// A 512 MiB file of zeros in a tar.gz of well under 1 MiB: the whole archive may expand to
/// at most `TSTORE_MAX_RATIO` (200) times its size, so its header is refused before its
/// bytes are read; init fails naming the address and the limit, the store keeps no temp
/// file and the directory is unchanged.
#[test]
fn a_tar_gz_bomb_is_refused_and_leaves_nothing() {
    use std::io::Read;

    let env = TestEnv::new();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    {
        let mut tar = tar::Builder::new(&mut gz);
        let size = 512u64 << 20;
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, "zeros.bin", std::io::repeat(0).take(size))
            .unwrap();
        tar.finish().unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "the bomb is {} bytes", bomb.len());
    let reg = tstore_test_support::module_registry::ModuleRegistry::start();
    reg.archive("bomb.tar.gz", bomb);
    let url = format!("{}/archives/bomb.tar.gz", reg.server.url());
    let dir = env.checkout(
        "bomb",
        &[(
            "main.tf",
            &format!("module \"b\" {{\n  source = \"{url}\"\n}}\n"),
        )],
    );
    let before = snapshot(&dir);
    let out = env.tstore().no_fuse().arg("init").arg(&dir).output();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("decompression bomb"), "{err}");
    assert!(err.contains(&format!("refusing to unpack {url}")), "{err}");
    assert_eq!(snapshot(&dir), before);
    let tmp = env.store.join("tmp");
    let left: Vec<_> = fs_err::read_dir(&tmp)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "the store's tmp keeps {left:?}");
}

/// A module archive served over HTTP that would write outside its package (a `..` name, a
/// symlink leading out, a hard link): the store refuses it while streaming it in, init
/// fails naming the address (its query's secret redacted, never the temporary file the
/// download went to) and the entry, nothing is written outside the store, the working
/// directory is unchanged and the store's tmp is empty.
#[test]
fn a_module_tar_that_escapes_its_package_is_refused() {
    use std::io::Write as _;

    let env = TestEnv::new();
    let reg = tstore_test_support::module_registry::ModuleRegistry::start();
    // Old-style headers written one by one, so hostile names get through.
    let tar_of = |entries: &[(&str, tar::EntryType, &str, &[u8])]| {
        let mut b = tar::Builder::new(Vec::new());
        for (name, kind, link, data) in entries {
            let mut h = tar::Header::new_old();
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            h.set_entry_type(*kind);
            h.set_mode(0o644);
            h.set_size(data.len() as u64);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    };
    let gz = |tar: Vec<u8>| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&tar).unwrap();
        e.finish().unwrap()
    };
    use tar::EntryType as T;
    let main: (&str, T, &str, &[u8]) = ("main.tf", T::Regular, "", b"output \"x\" {}\n");
    let cases = [
        (
            "dotdot.tar.gz",
            gz(tar_of(&[main, ("../../evil", T::Regular, "", b"pwned")])),
            "../../evil",
        ),
        (
            "link.tar.gz",
            gz(tar_of(&[main, ("out", T::Symlink, "../../..", b"")])),
            "out",
        ),
        (
            "hard.tar",
            tar_of(&[main, ("h", T::Link, "/etc/passwd", b"")]),
            "h",
        ),
    ];
    for (name, bytes, entry) in cases {
        let url = reg.archive(name, bytes);
        let dir = env.checkout(
            name,
            &[(
                "main.tf",
                &format!("module \"m\" {{\n  source = \"{url}?token=S3CRET\"\n}}\n"),
            )],
        );
        let before = snapshot(&dir);
        let out = env.tstore().no_fuse().arg("init").arg(&dir).output();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("refusing to unpack {url}?token=")),
            "{name}: {err}"
        );
        assert!(err.contains(&format!("entry {entry:?}")), "{name}: {err}");
        assert!(!err.contains("S3CRET"), "{name}: {err}");
        let store_tmp = env.store.join("tmp").display().to_string();
        assert!(!err.contains(&store_tmp), "{name}: {err}");
        assert_eq!(snapshot(&dir), before, "{name}");
        for above in [env.root.path(), &env.work, &env.store] {
            assert!(!above.join("evil").exists(), "{name}: {}", above.display());
        }
        let left: Vec<_> = fs_err::read_dir(env.store.join("tmp"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{name}: the store's tmp keeps {left:?}");
    }
}

/// Ctrl-C during a large ingest: tstore says `Interrupted`, exits 130, leaves no temporary
/// file of its own in the store and the working directory as it was.
#[test]
fn an_interrupted_init_leaves_no_temp_files() {
    use tstore_test_support::mirror::{self, PkgFile};

    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    // 160 MB that does not compress: ingest takes long enough to be interrupted.
    let mut big = vec![0u8; 160 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for chunk in big.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    mirror::write_unpacked(
        &mirror_dir,
        "registry.terraform.io/acme/big",
        "1.0.0",
        "linux_amd64",
        &[PkgFile {
            path: "terraform-provider-big_v1.0.0",
            contents: &big,
            executable: true,
        }],
    );
    drop(big);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let dir = env.checkout(
        "big",
        &[(
            "main.tf",
            "terraform {\n  required_providers {\n    big = {\n      source = \"acme/big\"\n    }\n  }\n}\n",
        )],
    );
    let before = snapshot(&dir);
    let tmp = env.store.join("tmp");
    let child = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&dir)
        .command()
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = std::time::Instant::now();
    let own = |tmp: &Path| -> Vec<String> {
        fs_err::read_dir(tmp)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(&format!("-{pid}-")))
                    .collect()
            })
            .unwrap_or_default()
    };
    while own(&tmp).is_empty() {
        assert!(start.elapsed().as_secs() < 60, "no temp file appeared");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let kill = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("Interrupted"), "{err}");
    assert!(own(&tmp).is_empty(), "temp files left: {:?}", own(&tmp));
    assert_eq!(snapshot(&dir), before);
}

/// A FIFO put in a checkout under a file's name (the lock files, a `.tf` file) is refused at
/// once, naming it: opening it would wait for a writer forever, holding the store's shared
/// lock, so that `gc` skipped every run meanwhile.
#[test]
fn a_fifo_in_place_of_a_file_is_refused_without_waiting() {
    let env = TestEnv::new();
    for (name, what) in [
        (".tstore.lock.hcl", "a FIFO module lock file"),
        (".terraform.lock.hcl", "a FIFO provider lock file"),
        ("extra.tf", "a FIFO configuration file"),
    ] {
        let dir = env.checkout(&format!("fifo-{name}"), &[("main.tf", "locals {}\n")]);
        let made = Command::new("mkfifo").arg(dir.join(name)).status().unwrap();
        assert!(made.success());
        refused(&env, &dir, name, what);
    }
}

/// A link under tstore's temporary name in `.terraform/modules` left by an init killed
/// while replacing a link (it points into the mount's `modules/`) is removed by the next
/// init as a link. A name alone allows no removal: a link of that name pointing elsewhere
/// (planted) is left, and what it points at is untouched.
#[test]
fn a_leftover_temporary_link_is_removed_as_a_link() {
    let env = TestEnv::new();
    let dir = env.checkout("w", &[("main.tf", "locals {}\n")]);
    let victim = env.checkout("victim", &[("keep.txt", "mine")]);
    let modules = dir.join(".terraform/modules");
    fs_err::create_dir_all(&modules).unwrap();
    let leftover = modules.join(".m.tstore-99999-7.tmp");
    std::os::unix::fs::symlink(env.mount.join("modules/git-m-0123"), &leftover).unwrap();
    let planted = modules.join(".n.tstore-99999-8.tmp");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let before = snapshot(&victim);
    let out = env.tstore().no_fuse().arg("init").arg(&dir).output();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs_err::symlink_metadata(&leftover).is_err(),
        "the temporary link is left"
    );
    assert!(
        fs_err::symlink_metadata(&planted).is_ok_and(|m| m.is_symlink()),
        "a link tstore did not make was removed by its name"
    );
    assert_eq!(snapshot(&victim), before);
}
