//! A package's name is its origin's word, through a module mirror: a pull request's checkout
//! on a shared runner names a mirror of its author's (`module_mirror` in `.tstore.hcl`) and a
//! lock entry holding the `h1:` of the author's own tree beside a trusted source. The mirror
//! vouches for the author's tree, for the pull request's own install; the effect checked is
//! what matters: a teammate's later lock-free init of the trusted source, on the same store,
//! installs the trusted files.
//!
//! - a git call (`?ref=v1` and the trusted repository's real v1 commit): the trusted commit's
//!   name is never given to the mirror's tree;
//! - an archive URL (the genuine archive's `zh:` beside the author's `h1:`): a lock-free init
//!   downloads the genuine archive and installs it;
//! - a registry version (the mirror's resolution of that version names the author's
//!   package): the resolution answers the pull request's run only, so a lock-free init with
//!   the registry down fails, and with it back installs the genuine package.
//!
//! The author's mirror is a `docker-registry` of their own, filled by `tstore push --modules`
//! from their own machine (a store of their own). (The lock-only variant of the attack is in
//! `origin_names.rs`.)

use std::path::{Path, PathBuf};
use std::process::Output;

use tstore_test_support::mirror::{zip_bytes, PkgFile};
use tstore_test_support::module_registry::ModuleRegistry;
use tstore_test_support::oci_registry::OciRegistry;
use tstore_test_support::{GitRepo, TestEnv, Tstore};

use crate::common::{first_h1, json, said, TstoreEnv as _};

const LOCK: &str = ".tstore.lock.hcl";
/// The repository of the author's mirror.
const REPOSITORY: &str = "pr/modules";
/// The registry module of the third attack, and its version.
const MODULE: &str = "acme/net/aws";
const VERSION: &str = "5.5.3";

/// `main.tf` of a package: one output saying `who`.
fn output_tf(who: &str) -> String {
    format!("output \"v\" {{\n  value = \"{who}\"\n}}\n")
}

/// A bare repository `<base>/NAME.git` whose tag `tag` holds one output saying `who`.
fn repo(base: &Path, name: &str, tag: &str, who: &str) -> PathBuf {
    GitRepo::init(base.join(name), &[("main.tf", &output_tf(who))])
        .commit(who)
        .tag(tag)
        .clone_bare(base.join(format!("{name}.git")))
        .path()
        .to_owned()
}

/// A root calling module `m` from `source` (and `version`, when given).
fn call(source: &str, version: Option<&str>) -> String {
    let version = version.map_or(String::new(), |v| format!("  version = \"{v}\"\n"));
    format!("module \"m\" {{\n  source = \"{source}\"\n{version}}}\n")
}

fn git_source(repo: &Path, tag: &str) -> String {
    format!("git::file://{}?ref={tag}", repo.display())
}

/// What `dir`'s init installed for `m` (empty: nothing).
fn installed(dir: &Path) -> String {
    fs_err::read_to_string(dir.join(".terraform/modules/m/main.tf")).unwrap_or_default()
}

/// `h1-<hex>`: the mirror's tag of the package whose tree has `h1`.
fn tag_of(h1: &str) -> String {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(h1.strip_prefix("h1:").unwrap())
        .unwrap();
    format!("h1-{}", hex::encode(bytes))
}

/// A machine: its own store, mount and home; it trusts the author's mirror's certificate
/// (as a runner trusts a public registry's), reads `cfg` as its CLI configuration.
struct Machine {
    env: TestEnv,
    ca: PathBuf,
    cfg: PathBuf,
}

impl Machine {
    fn new(mirror: &OciRegistry, cfg: &Path) -> Machine {
        let env = TestEnv::new();
        let ca = mirror.write_ca(&env.root.path().join("ca.pem"));
        Machine {
            env,
            ca,
            cfg: cfg.to_owned(),
        }
    }

    fn tstore(&self) -> Tstore {
        self.env
            .tstore()
            .cli_config(&self.cfg)
            .env("SSL_CERT_FILE", &self.ca)
            .no_fuse()
    }

    /// `tstore init --json DIR`, whatever it exits with.
    fn init(&self, dir: &Path) -> Output {
        self.tstore().args(["init", "--json"]).arg(dir).output()
    }

    /// `tstore push --modules MIRROR`: every module package of this machine's store.
    fn push(&self, mirror: &str) -> serde_json::Value {
        json(
            &self
                .tstore()
                .args(["push", "--json", "--modules", mirror])
                .ok(),
        )
    }

    /// The pull request's checkout: `main`, the module lock `lock`, and a `.tstore.hcl`
    /// naming `mirror`.
    fn pull_request(&self, main: &str, lock: &str, mirror: &str) -> PathBuf {
        let repository_file = format!("module_mirror = \"{mirror}\"\n");
        self.env.checkout(
            "pr",
            &[
                ("main.tf", main),
                (LOCK, lock),
                (".tstore.hcl", repository_file.as_str()),
            ],
        )
    }

    /// The pull request's init on this machine (`main`, `lock`, `.tstore.hcl` naming
    /// `author`'s mirror), which must reach the mirror for the package whose tree has
    /// `theirs`; returns what it said, for later messages.
    fn run_pull_request(&self, author: &Author, main: &str, lock: &str, theirs: &str) -> String {
        let pr = self.pull_request(main, lock, &author.mirror);
        let out = self.init(&pr);
        assert!(author.served(theirs), "{}", said(&out));
        said(&out)
    }

    /// A teammate's lock-free init of `main` on this machine, after the pull request's run
    /// (`pr_said`): it must install `who`'s package, vouched for by its origin.
    fn teammate_installs(&self, main: &str, who: &str, pr_said: &str) -> Output {
        let teammate = self.env.checkout("teammate", &[("main.tf", main)]);
        let out = self.init(&teammate);
        assert_eq!(
            installed(&teammate),
            output_tf(who),
            "the teammate's init did not install {who}'s package\n{}\nthe pull request's \
             init: {pr_said}",
            said(&out),
        );
        assert_eq!(
            json(&out)["modules"][0]["vouched_by"],
            "origin",
            "{}",
            said(&out)
        );
        out
    }

    /// The store's module packages whose id starts with `prefix` (an origin's word) and
    /// whose provenance is not `origin`, as `store ls --json` lists them.
    fn origin_names_not_of_origin(&self, prefix: &str) -> Vec<String> {
        let ls = json(&self.tstore().args(["store", "ls", "--json"]).ok());
        ls["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "module" && p["provenance"] != "origin")
            .filter_map(|p| p["name"].as_str())
            .filter(|name| name.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }
}

/// The author's side: an OCI registry of their own as the mirror, and their own machine.
struct Author {
    oci: OciRegistry,
    mirror: String,
    machine: Machine,
}

impl Author {
    fn new(cfg: &Path) -> Author {
        let oci = OciRegistry::start();
        let mirror = format!("oci://{}/{REPOSITORY}", oci.host());
        let machine = Machine::new(&oci, cfg);
        Author {
            oci,
            mirror,
            machine,
        }
    }

    /// Their own tree into their store, from a repository of theirs, pushed to their mirror;
    /// returns its `h1:`.
    fn push_own_tree(&self) -> String {
        let base = self.machine.env.root.path().join("git");
        let mine = repo(&base, "mine", "v1", "attacker");
        let dir = self.machine.env.checkout(
            "mine",
            &[("main.tf", &call(&git_source(&mine, "v1"), None))],
        );
        self.machine.tstore().arg("init").arg(&dir).ok();
        self.machine.push(&self.mirror);
        first_h1(&fs_err::read_to_string(dir.join(LOCK)).unwrap())
    }

    /// The lock an honest init of `main` writes on the author's machine (after their push:
    /// what it fetches is not in the mirror), with its `h1:` swapped for `theirs`.
    fn forged_lock(&self, main: &str, theirs: &str) -> String {
        let dir = self.machine.env.checkout("honest", &[("main.tf", main)]);
        self.machine.tstore().arg("init").arg(&dir).ok();
        let honest = fs_err::read_to_string(dir.join(LOCK)).unwrap();
        let forged = honest.replace(&first_h1(&honest), theirs);
        assert_ne!(forged, honest);
        forged
    }

    /// Whether the mirror was asked for the package whose tree has `h1`: the attack reached
    /// the victim (whatever its init made of it).
    fn served(&self, h1: &str) -> bool {
        let wanted = format!("GET /v2/{REPOSITORY}/manifests/{}", tag_of(h1));
        self.oci.requests().iter().any(|r| r.starts_with(&wanted))
    }
}

/// An empty CLI configuration in `dir`.
fn empty_cfg(dir: &Path) -> PathBuf {
    let cfg = dir.join("empty.tfrc");
    fs_err::write(&cfg, "").unwrap();
    cfg
}

#[test]
fn a_mirror_a_pull_request_names_never_puts_its_tree_under_a_trusted_commit() {
    let origins = tempfile::tempdir().unwrap();
    let cfg = empty_cfg(origins.path());
    let trusted = repo(origins.path(), "trusted", "v1", "trusted");
    let trusted_call = call(&git_source(&trusted, "v1"), None);

    // The author, on their machine: their tree in their mirror; a lock of the trusted call
    // (its real v1 commit, which the ref reaches) with their tree's h1:.
    let author = Author::new(&cfg);
    let theirs = author.push_own_tree();
    let forged = author.forged_lock(&trusted_call, &theirs);
    assert!(
        forged.contains(&GitRepo::open(&trusted).rev("v1")),
        "{forged}"
    );

    // The shared runner runs the pull request's init; a teammate's lock-free init of the
    // trusted call on the same runner then installs the trusted files.
    let runner = Machine::new(&author.oci, &cfg);
    let pr_said = runner.run_pull_request(&author, &trusted_call, &forged, &theirs);
    runner.teammate_installs(&trusted_call, "trusted", &pr_said);
    assert_eq!(
        runner.origin_names_not_of_origin("git-"),
        Vec::<String>::new()
    );
}

#[test]
fn a_mirror_never_puts_its_tree_under_an_archive_urls_name() {
    let origins = tempfile::tempdir().unwrap();
    let cfg = empty_cfg(origins.path());
    let genuine = zip_bytes(&[PkgFile {
        path: "main.tf",
        contents: output_tf("genuine").as_bytes(),
        executable: false,
    }]);
    let genuine_zh = format!(
        "zh:{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&genuine))
    );
    let host = ModuleRegistry::start();
    let url = host.archive("net.zip", genuine);
    let url_call = call(&url, None);

    // The author's lock entry for the URL: their tree's h1: beside the genuine archive's zh:.
    let author = Author::new(&cfg);
    let theirs = author.push_own_tree();
    let forged = author.forged_lock(&url_call, &theirs);
    assert!(forged.contains(&genuine_zh), "{forged}");

    let runner = Machine::new(&author.oci, &cfg);
    let pr_said = runner.run_pull_request(&author, &url_call, &forged, &theirs);

    // A teammate's lock-free init of the URL downloads the genuine archive and installs it.
    let downloads = || {
        host.server
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path == "/archives/net.zip" && r.status == 200)
            .count()
    };
    let before = downloads();
    let out = runner.teammate_installs(&url_call, "genuine", &pr_said);
    assert!(downloads() > before, "{}", said(&out));
    assert_eq!(
        runner.origin_names_not_of_origin("http-"),
        Vec::<String>::new()
    );
}

/// The registry answers `MODULE` `VERSION` with `location` (the versions listed, and the
/// download's `X-Terraform-Get`).
fn serve_version(registry: &ModuleRegistry, location: &str) {
    registry.server.route_with_headers(
        &format!("/v1/modules/{MODULE}/{VERSION}/download"),
        204,
        &[("X-Terraform-Get", location)],
        Vec::new(),
    );
    registry.server.route(
        &format!("/v1/modules/{MODULE}/versions"),
        "application/json",
        format!(r#"{{"modules":[{{"versions":[{{"version":"{VERSION}"}}]}}]}}"#),
    );
}

#[test]
fn a_mirrors_registry_resolution_answers_the_run_that_asked_only() {
    let origins = tempfile::tempdir().unwrap();
    let registry = ModuleRegistry::start();
    let cfg = registry.write_cli_config(&origins.path().join("cli.tfrc"), "");
    let genuine = repo(origins.path(), "genuine", "v5.5.3", "genuine");
    let registry_call = call(&format!("{}/{MODULE}", registry.host()), Some(VERSION));

    // The author's machine, with a registry of theirs answering for the same host: the
    // version resolves to their own repository; init, then push the store (their package
    // and the registry's resolution) to their mirror. Their lock is the pull request's.
    let author = Author::new(&cfg);
    let mine = repo(
        &author.machine.env.root.path().join("git"),
        "mine",
        "v1",
        "attacker",
    );
    serve_version(&registry, &git_source(&mine, "v1"));
    let dir = author
        .machine
        .env
        .checkout("mine", &[("main.tf", registry_call.as_str())]);
    author.machine.tstore().arg("init").arg(&dir).ok();
    let pushed = author.machine.push(&author.mirror);
    let resolutions = &pushed["pushed_modules"]["resolutions"];
    assert_eq!(resolutions[0]["version"], VERSION, "{pushed}");
    let lock = fs_err::read_to_string(dir.join(LOCK)).unwrap();
    let theirs = first_h1(&lock);
    assert!(lock.contains(&format!("\"{VERSION}\"")), "{lock}");

    // The genuine registry, at that host.
    serve_version(&registry, &git_source(&genuine, "v5.5.3"));
    let runner = Machine::new(&author.oci, &cfg);
    let pr_said = runner.run_pull_request(&author, &registry_call, &lock, &theirs);

    // The registry down: a teammate's lock-free init of that version cannot resolve it, and
    // installs nothing (the mirror's answer was for the pull request's run).
    registry.server.fail_all(503);
    let teammate = runner
        .env
        .checkout("teammate", &[("main.tf", registry_call.as_str())]);
    let out = runner.init(&teammate);
    assert_ne!(
        installed(&teammate),
        output_tf("attacker"),
        "the teammate's init installed the pull request's package\n{}\nthe pull request's \
         init: {pr_said}",
        said(&out),
    );
    assert!(!out.status.success(), "{}", said(&out));
    assert!(!teammate.join(".terraform/modules").exists());

    // The registry back: the genuine package.
    serve_version(&registry, &git_source(&genuine, "v5.5.3"));
    let out = runner.init(&teammate);
    assert_eq!(installed(&teammate), output_tf("genuine"), "{}", said(&out));
    assert_eq!(
        json(&out)["modules"][0]["vouched_by"],
        "origin",
        "{}",
        said(&out)
    );
}
