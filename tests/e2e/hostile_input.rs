//! Bounded resources on hostile input: deeply nested HCL in every kind of file tstore
//! parses, and oversized files read whole, end in an error that names the file, never in a
//! crash, and leave the working directory as it was.

use std::path::Path;
use std::process::Command;

use tstore_test_support::{snapshot, stderr, TestEnv};

use crate::common::tstore;

/// 2,000 nested brackets in 4 KB: a stack overflow for a naive recursive parser.
fn deep_expression() -> String {
    format!("{}{}", "[".repeat(2000), "]".repeat(2000))
}

/// A bare git repository `<base>/<name>.git` (tag v1) with `files`; its `git::` source.
fn repo(base: &Path, name: &str, files: &[(&str, &str)]) -> String {
    let src = base.join(format!("{name}-src"));
    fs_err::create_dir_all(&src).unwrap();
    for (path, content) in files {
        fs_err::write(src.join(path), content).unwrap();
    }
    let out = Command::new("sh")
        .arg("-ec")
        .arg(format!(
            "git init -q -b main . && git add -A && git -c user.name=t -c user.email=t@t \
             commit -qm init && git tag v1 && git clone -q --bare . ../{name}.git"
        ))
        .current_dir(&src)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", base)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("git::file://{}/{name}.git?ref=v1", base.display())
}

/// Run `tstore init` on `dir`: it must fail with exit 1 (not a signal), name `file`,
/// and leave the directory unchanged.
fn refused(env: &TestEnv, dir: &Path, file: &str, what: &str) {
    let before = snapshot(dir);
    let out = tstore(env, None)
        .env("TSTORE_NO_FUSE", "1")
        .arg("init")
        .arg(dir)
        .output()
        .expect("run tstore");
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
/// at most `TSTORE_MAX_RATIO` (200) times its size, so extraction stops at about 100 MiB;
/// init fails naming the limit, the store keeps no temp file and the directory is unchanged.
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
    let out = tstore(&env, None)
        .env("TSTORE_NO_FUSE", "1")
        .arg("init")
        .arg(&dir)
        .output()
        .expect("run tstore");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("bytes in total"), "{err}");
    assert_eq!(snapshot(&dir), before);
    let tmp = env.store.join("tmp");
    let left: Vec<_> = fs_err::read_dir(&tmp)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "the store's tmp keeps {left:?}");
}
