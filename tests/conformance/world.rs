//! The loopback world every case shares: a filesystem mirror with the real null provider,
//! a module registry, and git repositories, named in case files by placeholders.

use std::path::{Path, PathBuf};
use std::process::Command;

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::{mirror, TestEnv};

pub(crate) struct World {
    /// The CLI configuration both tools use: the mirror and the registry's host block.
    pub cli_config: PathBuf,
    registry: ModuleRegistry,
    git: PathBuf,
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
        );
        git_repo(
            &git,
            "withnull",
            &[(
                "main.tf",
                "terraform {\n  required_providers {\n    null = {\n      source  = \"hashicorp/null\"\n      version = \">= 2.0.0\"\n    }\n  }\n}\nresource \"null_resource\" \"x\" {}\n",
            )],
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
        let extra = format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
            mirror_dir.display()
        );
        let cli_config = registry.write_cli_config(&root.join("world/cli.tfrc"), &extra);
        World {
            cli_config,
            registry,
            git,
        }
    }

    /// `text` with the world's placeholders filled in.
    pub(crate) fn fill(&self, text: &str) -> String {
        text.replace("@@REGISTRY@@", &self.registry.host())
            .replace("@@HTTP@@", &self.registry.server.url())
            .replace("@@GIT@@", &self.git.display().to_string())
    }
}

/// A bare repository `<base>/<name>.git` with `files`, tagged `v1`.
fn git_repo(base: &Path, name: &str, files: &[(&str, &str)]) {
    let src = base.join(format!("{name}-src"));
    for (path, content) in files {
        let p = src.join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, content).unwrap();
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
