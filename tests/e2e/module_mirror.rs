//! The module mirror with two runners and a real `docker-registry` (HTTPS, a login): runner A
//! installs a monorepo's roots (git, registry and archive modules, a nested call) from their
//! origins and pushes its module packages; every origin goes away (git remotes moved, the
//! module registry and archive host answering 503); runner B, with an empty store and only
//! `TSTORE_MODULE_MIRROR`, installs every root byte for byte as A did, and terraform plans
//! them. A second push uploads nothing; a tag moved to other content and a tampered layer
//! are refused with nothing linked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{run_ok, stderr, stdout, GitRepo, TestEnv, Tstore};

use crate::common::{json, sh, TstoreEnv as _};

const LOCK: &str = ".tstore.lock.hcl";
const USER: &str = "ci";
const PASSWORD: &str = "mirror-s3cret";

fn output_tf(value: &str) -> String {
    format!("output \"v\" {{\n  value = \"{value}\"\n}}\n")
}

/// A bare repository `<base>/NAME.git` holding `files` (those named in `exec` executable),
/// tagged `tag`.
fn repo(base: &Path, name: &str, tag: &str, files: &[(&str, &str)], exec: &[&str]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let work = GitRepo::init(base.join(name), files);
    for file in exec {
        fs_err::set_permissions(
            work.path().join(file),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    work.commit("one")
        .tag(tag)
        .clone_bare(base.join(format!("{name}.git")))
        .path()
        .to_owned()
}

/// Everything a runner's roots hold after init: per root, the module lock file,
/// `modules.json`, and every file under `.terraform/modules` (links followed) with its
/// contents and exec bit.
fn installed(stacks: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut all = BTreeMap::new();
    for root in ["app", "db"] {
        let dir = stacks.join(root);
        all.insert(
            format!("{root}/{LOCK}"),
            fs_err::read_to_string(dir.join(LOCK)).unwrap(),
        );
        let modules = dir.join(".terraform/modules");
        for entry in walkdir::WalkDir::new(&modules)
            .follow_links(true)
            .sort_by_file_name()
        {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                let rel = entry.path().strip_prefix(&modules).unwrap();
                if rel.to_string_lossy() == ".tstore-installs.json" {
                    continue;
                }
                let exec = entry.metadata().unwrap().permissions().mode() & 0o111 != 0;
                all.insert(
                    format!("{root}/.terraform/modules/{} exec={exec}", rel.display()),
                    fs_err::read_to_string(entry.path()).unwrap(),
                );
            }
        }
    }
    all
}

/// A runner: its environment, a docker-style login for the OCI registry, its CA file.
struct Runner {
    env: TestEnv,
    ca: PathBuf,
}

impl Runner {
    fn new(oci: &OciRegistry) -> Runner {
        use base64::Engine as _;
        let env = TestEnv::new();
        let ca = oci.write_ca(&env.root.path().join("ca.pem"));
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        fs_err::create_dir_all(env.home.join(".docker")).unwrap();
        fs_err::write(
            env.home.join(".docker/config.json"),
            format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, oci.host()),
        )
        .unwrap();
        Runner { env, ca }
    }

    fn tstore(&self, cfg: &Path) -> Tstore {
        self.env
            .tstore()
            .cli_config(cfg)
            .env("SSL_CERT_FILE", &self.ca)
            .no_fuse()
    }

    /// Runner B's side: only the mirror, and the git refs' reach left to the lock (the
    /// remotes cannot be asked).
    fn tstore_with_mirror(&self, cfg: &Path, mirror: &str) -> Tstore {
        self.tstore(cfg)
            .env("TSTORE_MODULE_MIRROR", mirror)
            .env("TSTORE_TRUST_LOCK", "1")
    }

    /// A copy of A's roots with their lock files, nothing installed.
    fn checkout_of(&self, a_stacks: &Path) -> PathBuf {
        let stacks = self.env.work.join("stacks");
        for root in ["app", "db"] {
            let dir = stacks.join(root);
            fs_err::create_dir_all(&dir).unwrap();
            for file in ["main.tf", LOCK] {
                fs_err::copy(a_stacks.join(root).join(file), dir.join(file)).unwrap();
            }
        }
        stacks
    }
}

/// The monorepo: the origins (git repositories, a module registry that also hosts an
/// archive), the CLI configuration that names the registry, and runner A's two roots.
struct Monorepo {
    base: PathBuf,
    registry: ModuleRegistry,
    cfg: PathBuf,
    stacks: PathBuf,
}

impl Monorepo {
    fn new(a: &Runner) -> Monorepo {
        let root = a.env.root.path();
        let base = root.join("git");
        let inner = repo(
            &base,
            "inner",
            "v1",
            &[("main.tf", &output_tf("inner"))],
            &[],
        );
        let outer_main = format!(
            "module \"inner\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n\noutput \"v\" {{\n  value = module.inner.v\n}}\n",
            inner.display()
        );
        let outer = repo(
            &base,
            "outer",
            "v2",
            &[
                ("main.tf", outer_main.as_str()),
                ("scripts/run.sh", "#!/bin/sh\necho run\n"),
            ],
            &["scripts/run.sh"],
        );
        let net = repo(
            &base,
            "net",
            "v1.0.0",
            &[
                ("main.tf", &output_tf("net")),
                ("modules/sub/main.tf", &output_tf("sub")),
            ],
            &[],
        );
        let registry = ModuleRegistry::start();
        registry.publish(
            "team/net/aws",
            "1.0.0",
            &format!("git::file://{}?ref=v1.0.0", net.display()),
        );
        let tarball = {
            let src = root.join("label-src");
            fs_err::create_dir_all(&src).unwrap();
            fs_err::write(src.join("main.tf"), output_tf("label")).unwrap();
            sh(&src, "tar czf ../label.tar.gz main.tf");
            fs_err::read(root.join("label.tar.gz")).unwrap()
        };
        let label = registry.archive("label.tar.gz", tarball);
        let cfg = registry.write_cli_config(&root.join("cli.tfrc"), "");
        let host = registry.host();
        let app = format!(
            "module \"outer\" {{\n  source = \"git::file://{}?ref=v2\"\n}}\n\nmodule \"net\" {{\n  source  = \"{host}/team/net/aws\"\n  version = \"~> 1.0\"\n}}\n\nmodule \"label\" {{\n  source = \"{label}\"\n}}\n\noutput \"all\" {{\n  value = [module.outer.v, module.net.v, module.label.v]\n}}\n",
            outer.display()
        );
        let db = format!(
            "module \"inner\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n\nmodule \"sub\" {{\n  source  = \"{host}/team/net/aws//modules/sub\"\n  version = \"1.0.0\"\n}}\n\noutput \"all\" {{\n  value = [module.inner.v, module.sub.v]\n}}\n",
            inner.display()
        );
        let stacks = a.env.work.join("stacks");
        for (name, main) in [("app", &app), ("db", &db)] {
            fs_err::create_dir_all(stacks.join(name)).unwrap();
            fs_err::write(stacks.join(name).join("main.tf"), main).unwrap();
        }
        Monorepo {
            base,
            registry,
            cfg,
            stacks,
        }
    }

    /// Every origin goes away: the git remotes are moved, the registry and the archive
    /// host answer 503.
    fn origins_gone(&self) {
        fs_err::rename(&self.base, self.base.with_extension("moved")).unwrap();
        self.registry.server.fail_all(503);
    }
}

/// `h1-<hex>`: the mirror's tag of a lock file's `h1:`.
fn tag_of(h1: &str) -> String {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(h1.strip_prefix("h1:").unwrap())
        .unwrap();
    format!("h1-{}", hex::encode(bytes))
}

/// The `h1:` of call `key` in a module lock file's text.
fn h1_of(lock: &str, key: &str) -> String {
    let block = lock
        .split(&format!("module \"{key}\" {{"))
        .nth(1)
        .unwrap_or_else(|| panic!("no entry {key} in\n{lock}"));
    let start = block.find("\"h1:").unwrap() + 1;
    block[start..start + block[start..].find('"').unwrap()].to_owned()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: each check reads the store and checkouts the steps before it built"
)]
fn a_runner_without_origins_installs_every_locked_module_from_the_mirror() {
    let oci = OciRegistry::start_with_login(USER, PASSWORD);
    let mirror = format!("oci://{}/team/modules", oci.host());
    let a = Runner::new(&oci);
    let mono = Monorepo::new(&a);

    // Runner A: init every root from the origins, fill the store from the lock files, push.
    a.tstore(&mono.cfg)
        .args(["init", "--recursive"])
        .arg(&mono.stacks)
        .ok();
    a.tstore(&mono.cfg)
        .args(["fetch", "--recursive"])
        .arg(&mono.stacks)
        .ok();
    let push = |runner: &Runner, extra: &[&str]| {
        runner
            .tstore(&mono.cfg)
            .args(["push", "--json", "--modules", &mirror, "--recursive"])
            .args(extra)
            .arg(&mono.stacks)
    };
    let first = json(&push(&a, &[]).ok());
    let packages = first["pushed_modules"]["packages"].as_array().unwrap();
    // outer, inner (called twice, one package), net's repository, the label archive.
    assert_eq!(packages.len(), 4, "{first}");
    assert!(packages
        .iter()
        .all(|p| p["blobs_uploaded"].as_u64() >= Some(1) || p["blobs_present"] == 2));
    let resolutions = first["pushed_modules"]["resolutions"].as_array().unwrap();
    assert_eq!(resolutions.len(), 1, "{first}");
    assert_eq!(resolutions[0]["version"], "1.0.0");
    assert_eq!(resolutions[0]["written"], true);

    // A second push uploads nothing: no blob, no manifest.
    let before = oci.requests().len();
    let second = json(&push(&a, &[]).ok());
    for p in second["pushed_modules"]["packages"].as_array().unwrap() {
        assert_eq!(p["blobs_uploaded"], 0, "{second}");
    }
    assert_eq!(second["pushed_modules"]["resolutions"][0]["written"], false);
    let writes: Vec<String> = oci.requests()[before..]
        .iter()
        .filter(|r| r.starts_with("PUT") || r.starts_with("POST") || r.starts_with("PATCH"))
        .cloned()
        .collect();
    assert!(writes.is_empty(), "the second push wrote {writes:?}");

    let a_installed = installed(&mono.stacks);
    let lock_app = fs_err::read_to_string(mono.stacks.join("app").join(LOCK)).unwrap();
    mono.origins_gone();
    let asked_before = mono.registry.server.requests().len();

    // Runner B: an empty store, only the mirror.
    let b = Runner::new(&oci);
    let b_stacks = b.checkout_of(&mono.stacks);
    let out = b
        .tstore_with_mirror(&mono.cfg, &mirror)
        .args(["init", "--recursive"])
        .arg(&b_stacks)
        .ok();
    assert_eq!(installed(&b_stacks), a_installed);
    for root in ["app", "db"] {
        assert_eq!(
            fs_err::read(b_stacks.join(root).join(".terraform/modules/modules.json")).unwrap(),
            fs_err::read(
                mono.stacks
                    .join(root)
                    .join(".terraform/modules/modules.json")
            )
            .unwrap(),
            "{root}: modules.json"
        );
        let mut plan = b.env.terraform(&b_stacks.join(root));
        plan.args(["plan", "-input=false", "-no-color"]);
        let plan = stdout(&run_ok(&mut plan));
        assert!(plan.contains("all"), "{plan}");
    }
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains(&format!(
            "module mirror {mirror}: 4 packages from it, 0 packages from their origins"
        )),
        "{said}"
    );
    // The origins were not needed: whatever reached the registry got 503.
    assert!(mono.registry.server.requests()[asked_before..]
        .iter()
        .all(|r| r.status == 503));

    // Where each package came from, in init's JSON. Again without the mirror: the registry
    // call fails, its registry unreachable (the mirror's resolution answered the run that
    // asked, and the store keeps only a registry's own answers).
    let fresh = b.checkout_of(&mono.stacks);
    let _ = fs_err::remove_dir_all(fresh.join("app/.terraform"));
    let without = b
        .tstore_with_mirror(&mono.cfg, "")
        .arg("init")
        .arg(fresh.join("app"))
        .fails();
    let err = format!("{}{}", stdout(&without), stderr(&without));
    assert!(
        err.contains("cannot install module \"net\"") && err.contains("503"),
        "{err}"
    );
    // With the mirror: every package from the store, found by its lock entry's hash and
    // vouched for by the mirror, none of them under its origin's name.
    let again = b
        .tstore_with_mirror(&mono.cfg, &mirror)
        .arg("init")
        .arg(fresh.join("app"))
        .json();
    let calls = again["modules"].as_array().unwrap();
    let obtained: Vec<&str> = calls
        .iter()
        .filter_map(|c| c["obtained"].as_str())
        .collect();
    assert_eq!(obtained, ["store", "store", "store", "store"], "{again}");
    for c in calls.iter().filter(|c| c["obtained"].is_string()) {
        assert_eq!(c["vouched_by"], "mirror", "{again}");
        let package = c["package"].as_str().unwrap();
        assert!(package.starts_with("mirror-"), "{package}");
    }

    // A runner C with an empty store, the mirror named by the repository's .tstore.hcl,
    // sees each package come from the mirror.
    let c = Runner::new(&oci);
    let c_stacks = c.checkout_of(&mono.stacks);
    fs_err::write(
        c_stacks.join(".tstore.hcl"),
        format!("module_mirror = \"{mirror}\"\n"),
    )
    .unwrap();
    let from_mirror = c
        .tstore(&mono.cfg)
        .env("TSTORE_TRUST_LOCK", "1")
        .arg("init")
        .arg(c_stacks.join("app"))
        .json();
    assert_eq!(from_mirror["module_mirror"], mirror.as_str());
    let obtained: Vec<(&str, &str)> = from_mirror["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| Some((c["key"].as_str()?, c["obtained"].as_str()?)))
        .collect();
    assert_eq!(
        obtained,
        [
            ("label", "mirror"),
            ("net", "mirror"),
            ("outer", "mirror"),
            ("outer.inner", "mirror")
        ],
        "{from_mirror}"
    );

    // A tag moved to other content: refused, naming the call, the mirror and both hashes;
    // nothing is linked. A push without --force refuses to put it back.
    let label_tag = tag_of(&h1_of(&lock_app, "label"));
    let other = tstore_test_support::mirror::zip_bytes(&[tstore_test_support::mirror::PkgFile {
        path: "main.tf",
        contents: output_tf("not the label").as_bytes(),
        executable: false,
    }]);
    oci.push_module("team/modules", &label_tag, &other);
    let d = Runner::new(&oci);
    let d_stacks = d.checkout_of(&mono.stacks);
    let refused = stderr(
        &d.tstore_with_mirror(&mono.cfg, &mirror)
            .arg("init")
            .arg(d_stacks.join("app"))
            .fails(),
    );
    assert!(
        refused.contains("module.label") || refused.contains("\"label\""),
        "{refused}"
    );
    assert!(refused.contains(&label_tag), "{refused}");
    assert!(refused.contains(&h1_of(&lock_app, "label")), "{refused}");
    assert!(!d_stacks.join("app/.terraform/modules").exists());
    let taken = stderr(&push(&a, &[]).fails());
    assert!(taken.contains("--force"), "{taken}");
    push(&a, &["--force"]).ok();

    // A tampered layer: the registry serves other bytes under the layer's digest.
    let outer_tag = tag_of(&h1_of(&lock_app, "outer"));
    let manifest: serde_json::Value = serde_json::from_slice(&oci.get(
        &format!("/v2/team/modules/manifests/{outer_tag}"),
        "application/vnd.oci.image.manifest.v1+json",
    ))
    .unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    fs_err::write(oci.blob_file(layer), b"tampered").unwrap();
    let e = Runner::new(&oci);
    let e_stacks = e.checkout_of(&mono.stacks);
    let refused = stderr(
        &e.tstore_with_mirror(&mono.cfg, &mirror)
            .arg("init")
            .arg(e_stacks.join("app"))
            .fails(),
    );
    assert!(
        refused.contains(layer) || refused.contains("digest"),
        "{refused}"
    );
    assert!(!e_stacks.join("app/.terraform/modules").exists());
    assert!(!refused.contains(PASSWORD), "{refused}");
}

/// A module mirror setting that is not `oci://REGISTRY/REPOSITORY` fails init before anything
/// is fetched or written, naming where it was read and not quoting the value.
#[test]
fn a_module_mirror_setting_that_is_not_a_repository_is_refused() {
    let env = TestEnv::new();
    let main = "module \"m\" {\n  source = \"git::https://git.invalid/m.git?ref=v1\"\n}\n";
    let dir = env.checkout("w", &[("main.tf", main)]);
    fs_err::write(
        dir.join(".tstore.hcl"),
        "module_mirror = \"https://user:TOKEN123@reg.invalid/modules\"\n",
    )
    .unwrap();
    let err = stderr(&env.tstore().no_fuse().arg("init").arg(&dir).fails());
    assert!(err.contains(".tstore.hcl"), "{err}");
    assert!(
        err.contains("module_mirror must be \"oci://REGISTRY/REPOSITORY\""),
        "{err}"
    );
    assert!(!err.contains("TOKEN123"), "{err}");
    assert!(!dir.join(".terraform").exists());

    let err = stderr(
        &env.tstore()
            .no_fuse()
            .env("TSTORE_MODULE_MIRROR", "oci://reg.invalid/modules?tag=x")
            .arg("init")
            .arg(&dir)
            .fails(),
    );
    assert!(
        err.contains("TSTORE_MODULE_MIRROR: a module mirror is oci://REGISTRY/REPOSITORY"),
        "{err}"
    );
    assert!(!dir.join(".terraform").exists());
}

/// A mirror that lacks a package falls back to the origin and says so: the summary line
/// counts it, `--explain` and `init --json` say why per call (not in the mirror, or no lock
/// entry pins it); `tstore fetch` asks the mirror too.
#[test]
fn a_package_the_mirror_lacks_comes_from_its_origin_and_the_output_says_why() {
    let oci = OciRegistry::start_with_login(USER, PASSWORD);
    let mirror = format!("oci://{}/team/modules", oci.host());
    let a = Runner::new(&oci);
    let base = a.env.root.path().join("git");
    let one = repo(&base, "one", "v1", &[("main.tf", &output_tf("one"))], &[]);
    let two = repo(&base, "two", "v1", &[("main.tf", &output_tf("two"))], &[]);
    let call = |name: &str, repo: &Path| {
        format!(
            "module \"{name}\" {{\n  source = \"git::file://{}?ref=v1\"\n}}\n",
            repo.display()
        )
    };
    let cfg = a.env.root.path().join("empty.tfrc");
    fs_err::write(&cfg, "").unwrap();
    // Runner A locks and pushes `one` only.
    let dir_a = a
        .env
        .checkout("w", &[("main.tf", call("one", &one).as_str())]);
    a.tstore(&cfg).arg("init").arg(&dir_a).ok();
    a.tstore(&cfg).args(["push", "--modules", &mirror]).ok();

    // Runner B: `one` from the mirror, `two` (locked, not pushed) and `three` (not in the
    // lock) from their origins.
    let main = format!("{}{}", call("one", &one), call("two", &two));
    let dev = Runner::new(&oci);
    let dir_lock = dev.env.checkout("lock", &[("main.tf", main.as_str())]);
    dev.tstore(&cfg)
        .args(["modules", "lock"])
        .arg(&dir_lock)
        .ok();
    let b = Runner::new(&oci);
    let lock = fs_err::read_to_string(dir_lock.join(LOCK)).unwrap();
    let main3 = format!("{main}{}", call("three", &two));
    let dir_b = b
        .env
        .checkout("w", &[("main.tf", main3.as_str()), (LOCK, lock.as_str())]);
    let out = b
        .tstore(&cfg)
        .env("TSTORE_MODULE_MIRROR", &mirror)
        .args(["init", "--explain"])
        .arg(&dir_b)
        .ok();
    let said = stdout(&out);
    assert!(
        said.contains(&format!(
            "Module mirror {mirror}: 1 package from it, 2 packages from their origins (--explain says why)"
        )),
        "{said}"
    );
    let explained = |key: &str| {
        said.split(&format!("- {key} in"))
            .nth(1)
            .and_then(|rest| rest.split("\n- ").next())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        explained("one").contains("package from the module mirror"),
        "{said}"
    );
    assert!(
        explained("two").contains("package from its origin: the module mirror has no package h1-"),
        "{said}"
    );
    assert!(
        explained("three").contains("package from its origin: no module lock entry pins it"),
        "{said}"
    );

    // The same in a new checkout of a new runner, as JSON: `one` from the mirror.
    let c = Runner::new(&oci);
    let dir_c = c
        .env
        .checkout("w", &[("main.tf", main3.as_str()), (LOCK, lock.as_str())]);
    let report = json(
        &c.tstore(&cfg)
            .env("TSTORE_MODULE_MIRROR", &mirror)
            .args(["init", "--json"])
            .arg(&dir_c)
            .ok(),
    );
    let calls: Vec<(String, String, Option<String>)> = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap().to_owned(),
                c["obtained"].as_str().unwrap().to_owned(),
                c["origin_why"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(calls[0], ("one".into(), "mirror".into(), None), "{report}");
    assert_eq!(
        (calls[1].0.as_str(), calls[1].1.as_str()),
        ("three", "origin")
    );
    assert_eq!(calls[1].2.as_deref(), Some("no module lock entry pins it"));
    assert_eq!(
        (calls[2].0.as_str(), calls[2].1.as_str()),
        ("two", "origin")
    );
    assert!(calls[2]
        .2
        .as_deref()
        .is_some_and(|w| w.starts_with("the module mirror has no package h1-")));
    assert_eq!(
        report["module_packages"]["mirrored"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(report["module_mirror"], mirror.as_str());

    // `tstore fetch` asks the mirror too: with `one`'s remote gone, a runner fills its store
    // from the lock file, then inits with neither mirror nor that remote.
    fs_err::rename(&one, one.with_extension("moved")).unwrap();
    let d = Runner::new(&oci);
    let dir_d = d
        .env
        .checkout("w", &[("main.tf", main.as_str()), (LOCK, lock.as_str())]);
    d.tstore(&cfg)
        .env("TSTORE_MODULE_MIRROR", &mirror)
        .env("TSTORE_TRUST_LOCK", "1")
        .arg("fetch")
        .arg(&dir_d)
        .ok();
    assert!(!dir_d.join(".terraform").exists());
    let report = json(
        &d.tstore(&cfg)
            .env("TSTORE_TRUST_LOCK", "1")
            .args(["init", "--json"])
            .arg(&dir_d)
            .ok(),
    );
    let obtained: Vec<&str> = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["obtained"].as_str())
        .collect();
    assert_eq!(obtained, ["store", "store"], "{report}");
}
