//! The fixture the `modules_*` tests share: a bare git repository made by the test
//! ([`package_repo`]), a root calling it ([`root_config`], [`checkout`]), and the full
//! registry/git/archive fixture built on it ([`full_fixture`]); `modules.json` records as
//! a set ([`records`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{modules_json_path, parse_modules_json, GitRepo, ModuleRecord, TestEnv};

use crate::common::sh;

/// The package repository at `<base>/repo.git` (tag v1.0.0): a root module calling
/// `./modules/inner`, `sub` calling `modules/inner` of the same repository remotely, a
/// dotfile and a symlink; with `meta` as its `module-package.meta.hcl` when given.
pub(crate) fn package_repo(base: &Path, meta: Option<&str>) {
    let sub = format!("module \"deep\" {{\n  source = \"git::file://{}/repo.git//modules/inner?ref=v1.0.0\"\n  tag    = \"deep\"\n}}\noutput \"msg\" {{\n  value = \"sub:${{module.deep.msg}}\"\n}}\noutput \"path\" {{\n  value = path.module\n}}\n", base.display());
    let mut files = vec![
        ("main.tf", "variable \"name\" {\n  default = \"pkg-root\"\n}\nmodule \"inner\" {\n  source = \"./modules/inner\"\n  tag    = var.name\n}\noutput \"msg\" {\n  value = \"root:${module.inner.msg}\"\n}\noutput \"path\" {\n  value = path.module\n}\n"),
        ("modules/inner/main.tf", "variable \"tag\" {\n  default = \"x\"\n}\noutput \"msg\" {\n  value = \"inner:${var.tag}\"\n}\noutput \"path\" {\n  value = path.module\n}\n"),
        ("sub/main.tf", sub.as_str()),
        ("README.md", "readme\n"),
        (".hidden", "hidden\n"),
    ];
    if let Some(meta) = meta {
        files.push(("module-package.meta.hcl", meta));
    }
    let work = GitRepo::init(base.join("src"), &files);
    std::os::unix::fs::symlink("main.tf", work.path().join("link.tf.txt")).unwrap();
    work.commit("init")
        .tag("v1.0.0")
        .clone_bare(base.join("repo.git"));
}

pub(crate) fn root_config(base: &Path) -> String {
    let b = base.display();
    format!(
        "module \"local\" {{\n  source = \"./local-mod\"\n}}\n\
         module \"gita\" {{\n  source = \"git::file://{b}/repo.git?ref=v1.0.0\"\n}}\n\
         module \"gitb\" {{\n  source = \"git::file://{b}/repo.git?ref=v1.0.0\"\n}}\n\
         module \"gitsub\" {{\n  source = \"git::file://{b}/repo.git//sub?ref=v1.0.0\"\n}}\n\
         output \"all\" {{\n  value = [module.local.msg, module.gita.msg, module.gitb.msg, module.gitsub.msg]\n}}\n"
    )
}

pub(crate) fn checkout(
    env: &TestEnv,
    name: &str,
    base: &Path,
    meta: Option<&str>,
) -> std::path::PathBuf {
    let main = root_config(base);
    let mut files = vec![
        ("main.tf", main.as_str()),
        ("local-mod/main.tf", "module \"nested\" {\n  source = \"../local-mod2\"\n}\noutput \"msg\" {\n  value = \"local:${module.nested.msg}\"\n}\n"),
        ("local-mod2/main.tf", "output \"msg\" {\n  value = \"local2\"\n}\n"),
    ];
    if let Some(m) = meta {
        files.push(("module-package.meta.hcl", m));
    }
    env.checkout(name, &files)
}

/// Each `modules.json` record, so records compare whatever order (and key order) the writer
/// used; the file is one line, with no trailing newline.
pub(crate) fn records(dir: &Path) -> BTreeSet<ModuleRecord> {
    let text = fs_err::read_to_string(modules_json_path(dir)).unwrap();
    assert!(!text.ends_with('\n'), "one line, no trailing newline");
    parse_modules_json(&text).into_iter().collect()
}

/// A new [`TestEnv`] and its dir `<root>/git` (created), where a test's repositories live.
pub(crate) fn env_with_git_dir() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    let base = env.root.path().join("git");
    fs_err::create_dir_all(&base).unwrap();
    (env, base)
}

/// The package ids a `tstore init --json` report lists under `module_packages.<what>`
/// (`fetched`, `reused`), in its order.
pub(crate) fn module_packages(report: &serde_json::Value, what: &str) -> Vec<String> {
    report["module_packages"][what]
        .as_array()
        .unwrap_or_else(|| panic!("no module_packages.{what}: {report}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn json_str(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

/// `git archive --format=FORMAT v1.0.0` of `<base>/repo.git` (`tar.xz`/`tar.bz2`: the tar
/// piped through `xz`/`bzip2`).
pub(crate) fn git_archive(base: &Path, format: &str) -> Vec<u8> {
    let out_file = base.join(format!("pkg.{format}"));
    let (fmt, filter) = match format {
        "tar.xz" => ("tar", " | xz -c"),
        "tar.bz2" => ("tar", " | bzip2 -c"),
        f => (f, ""),
    };
    sh(
        base,
        &format!(
            "git -C repo.git archive --format={fmt} v1.0.0{filter} > {}",
            out_file.display()
        ),
    );
    fs_err::read(out_file).unwrap()
}

/// The full fixture: the root of [`root_config`] (a local module calling `../`, the same git
/// module at one tag twice, a git `//subdir` whose module calls a remote one, and the
/// package root calling `./modules/inner`), plus registry modules with version constraints
/// (git location; relative archive location) and http archives (zip with `//subdir`,
/// tar.gz forced by `?archive=`, a page answering `X-Terraform-Get`, tar.xz with `//subdir`,
/// tar.bz2 forced by `?archive=`).
/// `meta` is the package repository's `module-package.meta.hcl` (and so every archive's, and
/// the registry modules'), when given.
pub(crate) fn full_fixture(
    env: &TestEnv,
    base: &Path,
    meta: Option<&str>,
) -> (ModuleRegistry, std::path::PathBuf, String) {
    package_repo(base, meta);
    let reg = ModuleRegistry::start();
    let git = format!("git::file://{}/repo.git?ref=v1.0.0", base.display());
    for v in ["1.0.0", "1.1.0", "1.2.0-beta", "2.0.0"] {
        reg.publish("acme/gitpkg/null", v, &git);
        // From /v1/modules/acme/tarpkg/null/V/download up to the server root.
        reg.publish(
            "acme/tarpkg/null",
            v,
            "../../../../../../archives/pkg.tar.gz",
        );
    }
    let zip = reg.archive("pkg.zip", git_archive(base, "zip"));
    reg.archive("pkg.tar.gz", git_archive(base, "tar.gz"));
    reg.archive("pkg-noext", git_archive(base, "tar.gz"));
    reg.archive("pkg.tar.xz", git_archive(base, "tar.xz"));
    reg.archive("pkg-bz", git_archive(base, "tar.bz2"));
    let url = reg.server.url();
    reg.server.route_with_headers(
        "/page/pkg",
        200,
        &[("Content-Type", "text/html"), ("X-Terraform-Get", &zip)],
        "<html></html>",
    );
    let cfg = reg.write_cli_config(&env.root.path().join("cli-config/modules.tfrc"), "");
    let host = reg.host();
    let extra = format!(
        "module \"reg\" {{\n  source  = \"{host}/acme/gitpkg/null\"\n  version = \"~> 1.0\"\n}}\n\
         module \"regsub\" {{\n  source  = \"{host}/acme/gitpkg/null//sub\"\n  version = \"1.0.0\"\n}}\n\
         module \"tarreg\" {{\n  source  = \"{host}/acme/tarpkg/null\"\n  version = \">= 1.0.0, < 2.0.0\"\n}}\n\
         module \"zip\" {{\n  source = \"{url}/archives/pkg.zip//modules/inner\"\n}}\n\
         module \"tgz\" {{\n  source = \"{url}/archives/pkg-noext?archive=tar.gz\"\n}}\n\
         module \"page\" {{\n  source = \"{url}/page/pkg\"\n}}\n\
         module \"txz\" {{\n  source = \"{url}/archives/pkg.tar.xz//sub\"\n}}\n\
         module \"tbz\" {{\n  source = \"{url}/archives/pkg-bz?archive=tar.bz2\"\n}}\n\
         output \"remote\" {{\n  value = [module.reg.msg, module.regsub.msg, module.tarreg.msg, module.zip.msg, module.tgz.msg, module.page.msg, module.txz.msg, module.tbz.msg]\n}}\n"
    );
    (reg, cfg, extra)
}

/// A bare repo `<base>/<name>.git` (tag v1) holding `main_tf` and `meta` as its
/// `module-package.meta.hcl`; returns its `git::` source.
pub(crate) fn one_module_repo(
    base: &Path,
    name: &str,
    main_tf: &str,
    meta: Option<&str>,
) -> String {
    let mut files = vec![("main.tf", main_tf)];
    if let Some(meta) = meta {
        files.push(("module-package.meta.hcl", meta));
    }
    GitRepo::init(base.join(format!("{name}-src")), &files)
        .commit("init")
        .tag("v1")
        .clone_bare(base.join(format!("{name}.git")))
        .source("v1")
}
