//! The loopback world every case shares: a filesystem mirror with the real null provider,
//! a module registry (git and archive locations), git repositories, and plain directories
//! named by absolute path, named in case files by placeholders.

use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{mirror, TestEnv};

pub(crate) struct World {
    /// The CLI configuration both tools use: the mirror and the registry's host block.
    pub cli_config: PathBuf,
    registry: ModuleRegistry,
    git: PathBuf,
    local: PathBuf,
}

/// Versions the registry lists for `acme/mod/null` (all served by the same git tag).
const MODULE_VERSIONS: &[&str] = &[
    "0.9.0",
    "1.0.0",
    "1.1.0",
    "1.2.0-beta",
    "1.2.0-rc.1",
    "2.0.0",
    "2.1.0-alpha",
];

impl World {
    pub(crate) fn start(env: &TestEnv) -> World {
        let root = env.root.path();
        let mirror_dir = root.join("world/mirror");
        mirror::null_unpacked(&mirror_dir);
        let git = root.join("world/git");
        fs_err::create_dir_all(&git).unwrap();
        git_repo(
            &git,
            "mod",
            &[
                ("main.tf", "variable \"name\" {\n  default = \"mod\"\n}\noutput \"name\" {\n  value = var.name\n}\n"),
                ("modules/inner/main.tf", "output \"inner\" {\n  value = \"inner\"\n}\n"),
                ("sub/main.tf", "module \"deep\" {\n  source = \"../modules/inner\"\n}\noutput \"sub\" {\n  value = module.deep.inner\n}\n"),
                ("README.md", "a module\n"),
                // Dot entries: a second install of one package address leaves them out.
                (".editorconfig", "root = true\n"),
                (".github/workflows/ci.yml", "on: push\n"),
                ("modules/inner/.terraform-docs.yml", "formatter: md\n"),
            ],
            &[],
        );
        // A package whose module is reached through a symlinked directory: terraform
        // records the directory the link resolves to, and joins `../other` to that.
        git_repo(
            &git,
            "linked",
            &[
                ("main.tf", "module \"l\" {\n  source = \"./modules/link\"\n}\noutput \"o\" {\n  value = module.l.o\n}\n"),
                ("nested/real/main.tf", "module \"o\" {\n  source = \"../other\"\n}\noutput \"o\" {\n  value = module.o.o\n}\n"),
                ("nested/other/main.tf", "output \"o\" {\n  value = \"other\"\n}\n"),
            ],
            &[("modules/link", "../nested/real")],
        );
        git_repo(
            &git,
            "withnull",
            &[(
                "main.tf",
                "terraform {\n  required_providers {\n    null = {\n      source  = \"hashicorp/null\"\n      version = \">= 2.0.0\"\n    }\n  }\n}\nresource \"null_resource\" \"x\" {}\n",
            )],
            &[],
        );
        let registry = ModuleRegistry::start();
        let location = format!("git::file://{}/mod.git?ref=v1", git.display());
        for v in MODULE_VERSIONS {
            registry.publish("acme/mod/null", v, &location);
        }
        registry.publish(
            "acme/withnull/null",
            "1.0.0",
            &format!("git::file://{}/withnull.git?ref=v1", git.display()),
        );
        // An archive whose files sit in one top-level directory, published with the
        // `//*` location that selects it.
        let archive = archive_with_top_directory(root, "archived-1.0");
        let url = registry.archive("archived.tar.gz", archive);
        registry.publish("acme/archived/null", "1.0.0", &format!("{url}//*"));
        let local = root.join("world/local");
        for (path, content) in [
            ("pkg/main.tf", "module \"in\" {\n  source = \"./sub\"\n}\noutput \"o\" {\n  value = module.in.o\n}\n"),
            ("pkg/sub/main.tf", "module \"deep\" {\n  source = \"../modules/inner\"\n}\noutput \"o\" {\n  value = module.deep.o\n}\n"),
            ("pkg/modules/inner/main.tf", "output \"o\" {\n  value = \"inner\"\n}\n"),
            ("outside/main.tf", "module \"b\" {\n  source = \"./b\"\n}\n"),
            ("outside/b/main.tf", "output \"o\" {\n  value = \"b\"\n}\n"),
        ] {
            let p = local.join(path);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, content).unwrap();
        }
        let extra = format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
            mirror_dir.display()
        );
        let cli_config = registry.write_cli_config(&root.join("world/cli.tfrc"), &extra);
        World {
            cli_config,
            registry,
            git,
            local,
        }
    }

    /// `text` with the world's placeholders filled in.
    pub(crate) fn fill(&self, text: &str) -> String {
        text.replace("@@REGISTRY@@", &self.registry.host())
            .replace("@@HTTP@@", &self.registry.server.url())
            .replace("@@GIT@@", &self.git.display().to_string())
            .replace("@@LOCAL@@", &self.local.display().to_string())
    }
}

/// A bare repository `<base>/<name>.git` with `files` and `links` (path, target), tagged
/// `v1`.
fn git_repo(base: &Path, name: &str, files: &[(&str, &str)], links: &[(&str, &str)]) {
    let src = base.join(format!("{name}-src"));
    for (path, content) in files {
        let p = src.join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, content).unwrap();
    }
    for (path, target) in links {
        let p = src.join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
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
}

/// A `.tar.gz` holding one directory `top` (a module calling its `sub`), as a release
/// tarball holds its files.
fn archive_with_top_directory(root: &Path, top: &str) -> Vec<u8> {
    let dir = root.join("world/archive-src");
    for (path, content) in [
        ("main.tf", "output \"o\" {\n  value = \"top\"\n}\n"),
        ("sub/main.tf", "output \"o\" {\n  value = \"sub\"\n}\n"),
    ] {
        let p = dir.join(top).join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, content).unwrap();
    }
    let out = Command::new("tar")
        .args(["-czf", "-", top])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
