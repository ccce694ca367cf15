//! Step 2: link or copy each remote install, from the packages' read-only statements.

use std::collections::BTreeMap;

use super::fetch::Fetched;
use super::package_meta::{Meta, ReadOnlyStatus};
use super::policy::{Fallback, ModulePolicy, Verdict};
use super::tree::Node;
use super::{package_meta, Action, ModuleWarning};
use tstore_tofu::flavor::Flavor;

/// The decision for one install or local copy.
#[derive(Clone, Debug)]
pub(super) struct Decision {
    pub(super) action: Action,
    pub(super) status: ReadOnlyStatus,
    pub(super) reason: String,
    /// Whether the module is known to write into its own directory: declared
    /// self-modifying, or found writing there by the `auto` fallback.
    pub(super) writes: bool,
}

pub(super) fn decide(
    nodes: &[Node],
    installs: &BTreeMap<String, (Fetched, Option<Meta>)>,
    root_meta: Option<&Meta>,
    policy: &ModulePolicy,
    flavor: Flavor,
) -> Vec<Decision> {
    let default_host = flavor.default_registry_host();
    let meta_of = |n: &Node| -> Option<&Meta> {
        match &n.install {
            Some(k) => installs.get(k).and_then(|(_, m)| m.as_ref()),
            None => root_meta,
        }
    };
    let root_dependencies = root_meta.and_then(|m| m.modules.get(".").and_then(|r| r.dependencies));
    let statuses: Vec<(ReadOnlyStatus, String)> = nodes
        .iter()
        .map(|n| {
            let mut inherited = None;
            let mut cur = n.parent;
            while let Some(i) = cur {
                if let Some(m) = meta_of(&nodes[i]) {
                    inherited = Some(m.entry(&nodes[i].pkg_path).dependencies.unwrap_or(true));
                    break;
                }
                cur = nodes[i].parent;
            }
            if inherited.is_none() {
                inherited = root_meta.map(|m| m.entry(".").dependencies.unwrap_or(true));
            }
            let own = meta_of(n).map(|m| (m, n.pkg_path.as_str()));
            package_meta::decide(&package_meta::Facts {
                own,
                inherited,
                root_dependencies,
            })
        })
        .collect();
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (status, reason) = statuses[i].clone();
            let is_install_root = n.install.as_deref() == Some(n.key.as_str());
            if n.link_to.is_some() {
                // A directory named by absolute path is the user's own, like a local
                // module outside the checkout: read in place, never copied into it.
                Decision {
                    action: Action::InPlace,
                    status,
                    reason: format!(
                        "a local directory named by absolute path: read in place through a \
                         link, never copied; {reason}"
                    ),
                    writes: status == ReadOnlyStatus::SelfModifying,
                }
            } else if is_install_root {
                // The whole instance: this module and every local module loaded from it.
                let members: Vec<usize> = (0..nodes.len())
                    .filter(|&j| nodes[j].install.as_deref() == Some(n.key.as_str()))
                    .collect();
                let worst = members
                    .iter()
                    .find(|&&j| statuses[j].0 == ReadOnlyStatus::SelfModifying)
                    .or_else(|| {
                        members
                            .iter()
                            .find(|&&j| statuses[j].0 == ReadOnlyStatus::Unknown)
                    });
                let mut writes = false;
                let (action, why) = match worst {
                    Some(&j) if statuses[j].0 == ReadOnlyStatus::SelfModifying => {
                        writes = true;
                        (Action::Copy, describe(&nodes[j], i == j, &statuses[j].1))
                    }
                    // Nobody in the package said: the repository's, then the machine's
                    // source rules, then the fallback.
                    Some(&j) => {
                        let unknown = describe(&nodes[j], i == j, &statuses[j].1);
                        // The rule quotes the source it matched: shown without secrets.
                        let shown = |rule: String| crate::redact::scrub(&rule, &[&n.source]);
                        match policy.verdict(&n.source, default_host).map(|v| match v {
                            Verdict::ReadOnly(rule) => Verdict::ReadOnly(shown(rule)),
                            Verdict::Copy(rule) => Verdict::Copy(shown(rule)),
                        }) {
                            Some(Verdict::ReadOnly(rule)) => {
                                (Action::Link, format!("{unknown}; linked: {rule}"))
                            }
                            Some(Verdict::Copy(rule)) => {
                                (Action::Copy, format!("{unknown}; copied: {rule}"))
                            }
                            None => match policy.fallback() {
                                (Fallback::Link, who) => {
                                    (Action::Link, format!("{unknown}; linked: {who}"))
                                }
                                (Fallback::Copy, who) => (
                                    Action::Copy,
                                    format!(
                                        "{unknown}; copied: {who} (a read_only pattern in {} or --assume-read-only links it)",
                                        super::repository_file::REPOSITORY_FILE
                                    ),
                                ),
                                (Fallback::Auto, who) => {
                                    match self_writes(nodes, &members, installs, flavor) {
                                        None => (
                                            Action::Link,
                                            format!("{unknown}; linked: {who}: no module of the package writes into its own directory"),
                                        ),
                                        Some(write) => {
                                            writes = true;
                                            (
                                                Action::Copy,
                                                format!("{unknown}; copied: {who}: {write}"),
                                            )
                                        }
                                    }
                                }
                            },
                        }
                    }
                    None => (
                        Action::Link,
                        format!("every module in the package instance is read-only: {reason}"),
                    ),
                };
                Decision {
                    action,
                    status,
                    reason: why,
                    writes,
                }
            } else if n.install.is_none()
                && status == ReadOnlyStatus::SelfModifying
                && outside_working_dir(&n.dir)
            {
                // A copy would bring files from outside the checkout into it (a checkout's
                // meta file is input from its author, and the directory may hold anything):
                // the module is read in place, where it writes anyway, as terraform does.
                Decision {
                    action: Action::InPlace,
                    status,
                    reason: format!(
                        "{reason}; but {:?} is outside the working directory, so it is read in \
                         place rather than copied into it",
                        n.dir
                    ),
                    writes: status == ReadOnlyStatus::SelfModifying,
                }
            } else if n.install.is_none() && status == ReadOnlyStatus::SelfModifying {
                Decision {
                    action: Action::Copy,
                    status,
                    reason: format!(
                        "{reason}; a local module of the root package gets its own copy"
                    ),
                    writes: status == ReadOnlyStatus::SelfModifying,
                }
            } else {
                Decision {
                    action: Action::InPlace,
                    status,
                    reason: if n.install.is_some() {
                        format!(
                            "inside the install of module \"{}\"; {reason}",
                            n.install.as_deref().unwrap_or("")
                        )
                    } else {
                        format!("local path, read in place; {reason}")
                    },
                    writes: status == ReadOnlyStatus::SelfModifying,
                }
            }
        })
        .collect()
}

/// The warnings for modules that write into their own directory (a copy made because they
/// do, or a module its package declares self-modifying) under `count` or `for_each`: all the
/// instances of a call share the one directory installed for it, so their writes collide.
pub(super) fn shared_by_instances(nodes: &[Node], decisions: &[Decision]) -> Vec<ModuleWarning> {
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let d = &decisions[i];
        // A package's own member that writes is warned of, not the install that holds it.
        let member_writes = |j: usize| {
            j != i && nodes[j].install.as_deref() == Some(n.key.as_str()) && decisions[j].writes
        };
        if !d.writes || (0..nodes.len()).any(member_writes) {
            continue;
        }
        let mut cur = Some(i);
        while let Some(j) = cur {
            if let Some(by) = nodes[j].repeated_by {
                out.push(ModuleWarning::SharedByInstances {
                    key: n.key.clone(),
                    repeated: nodes[j].key.clone(),
                    by,
                    dir: n.dir.clone(),
                });
                break;
            }
            cur = nodes[j].parent;
        }
    }
    out
}

/// Whether a root-package module directory (relative to the working directory, symlinks
/// resolved) lies outside the working directory.
fn outside_working_dir(dir: &str) -> bool {
    let path = std::path::Path::new(dir);
    path.is_absolute()
        || path
            .components()
            .next()
            .is_some_and(|c| c == std::path::Component::ParentDir)
}

/// What may write into its own directory among the modules of one package instance
/// (`members`, indexes into `nodes`), as one line; `None` when nothing does. A directory
/// that cannot be inspected counts as a write: copying is the safe answer.
fn self_writes(
    nodes: &[Node],
    members: &[usize],
    installs: &BTreeMap<String, (Fetched, Option<Meta>)>,
    flavor: Flavor,
) -> Option<String> {
    let mut found = Vec::new();
    for &j in members {
        let n = &nodes[j];
        let Some((fetched, _)) = n.install.as_ref().and_then(|k| installs.get(k)) else {
            continue;
        };
        let dir = match n.pkg_path.as_str() {
            "." => fetched.view.clone(),
            p => fetched.view.join(p),
        };
        match tstore_tofu::writes::detect_self_writes(&dir, flavor) {
            Ok(writes) => found.extend(writes.into_iter().map(|w| {
                let file =
                    w.at.file
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned());
                let place = match (n.pkg_path.as_str(), file) {
                    (".", Some(f)) => f,
                    (p, Some(f)) => format!("{p}/{f}"),
                    (p, None) => p.to_owned(),
                };
                let line = w.at.line.map(|l| format!(":{l}")).unwrap_or_default();
                format!("{} {} at {place}{line} ({})", w.block, w.argument, w.why)
            })),
            Err(e) => found.push(format!("module {:?} cannot be inspected: {e}", n.pkg_path)),
        }
    }
    let first = found.first()?;
    Some(match found.len() {
        1 => format!("may write into its own directory: {first}"),
        n => format!(
            "may write into its own directory: {first} (and {} more)",
            n - 1
        ),
    })
}

pub(super) fn describe(n: &Node, same: bool, reason: &str) -> String {
    if same {
        reason.to_owned()
    } else {
        format!("module \"{}\": {reason}", n.key)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tstore_tofu::config::SourcePos;

    use super::*;

    fn node(key: &str, install: Option<&str>, pkg_path: &str, parent: Option<usize>) -> Node {
        Node {
            key: key.into(),
            source: String::new(),
            kind: "git",
            version: None,
            dir: String::new(),
            install: install.map(str::to_owned),
            pkg_path: pkg_path.into(),
            parent,
            package: install.map(|_| "pkg".to_owned()),
            vouched_by: None,
            at: SourcePos {
                file: PathBuf::from("main.tf"),
                line: Some(1),
            },
            link_to: None,
            lock_entry: None,
            selected_by: None,
            published: None,
            held_back: Vec::new(),
            repeated_by: None,
            origin_why: None,
        }
    }

    /// A package view holding `files`, kept for the test process's life (decide reads it).
    fn view(files: &[(&str, &str)]) -> PathBuf {
        let dir = tempfile::tempdir().unwrap().keep();
        for (name, text) in files {
            let p = dir.join(name);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, text).unwrap();
        }
        dir
    }

    const PLAIN: &[(&str, &str)] = &[
        ("main.tf", "output \"x\" {\n  value = 1\n}\n"),
        ("sub/main.tf", "output \"y\" {\n  value = 2\n}\n"),
    ];

    fn installs(metas: &[(&str, Option<&str>)]) -> BTreeMap<String, (Fetched, Option<Meta>)> {
        installs_of(metas, PLAIN)
    }

    fn installs_of(
        metas: &[(&str, Option<&str>)],
        files: &[(&str, &str)],
    ) -> BTreeMap<String, (Fetched, Option<Meta>)> {
        metas
            .iter()
            .map(|(key, meta)| {
                let fetched = Fetched {
                    id: format!("pkg-{key}"),
                    view: view(files),
                    subdir: None,
                    in_place: None,
                    commit: None,
                    provenance: tstore_store::Provenance::Origin,
                };
                let meta = meta.map(|text| package_meta::parse(text).expect("valid meta"));
                ((*key).to_owned(), (fetched, meta))
            })
            .collect()
    }

    const FLAVOR: Flavor = Flavor::Tofu;
    const READ_ONLY: &str = "module \"m\" {\n  path = \".\"\n}\n";
    const SELF_MODIFYING: &str =
        "module \"m\" {\n  path = \".\"\n  read-only = { self = false }\n}\n";
    const SUB_SELF_MODIFYING: &str = "module \"m\" {\n  path = \".\"\n}\nmodule \"s\" {\n  path = \"./sub\"\n  read-only = { self = false }\n}\n";

    /// One remote install `a` holding a local module `a.sub`: the install is linked only
    /// when every module of it is read-only; the member inside it is read in place.
    #[test]
    fn an_install_links_only_when_every_member_is_read_only() {
        let nodes = [
            node("a", Some("a"), ".", None),
            node("a.sub", Some("a"), "sub", Some(0)),
        ];
        // (case, meta of a, --assume-read-only, action of a)
        let cases = [
            ("read-only package", Some(READ_ONLY), false, Action::Link),
            (
                "self-modifying root",
                Some(SELF_MODIFYING),
                false,
                Action::Copy,
            ),
            (
                "self-modifying member",
                Some(SUB_SELF_MODIFYING),
                false,
                Action::Copy,
            ),
            (
                "self-modifying wins over assume",
                Some(SUB_SELF_MODIFYING),
                true,
                Action::Copy,
            ),
            (
                "no statement, nothing writes: auto links",
                None,
                false,
                Action::Link,
            ),
            ("no statement, read-only assumed", None, true, Action::Link),
        ];
        for (case, meta, assume, want) in cases {
            let policy = ModulePolicy {
                assume_read_only: assume,
                ..ModulePolicy::default()
            };
            let got = decide(&nodes, &installs(&[("a", meta)]), None, &policy, FLAVOR);
            assert_eq!(got[0].action, want, "{case}: {}", got[0].reason);
            assert_eq!(got[1].action, Action::InPlace, "{case}");
        }
    }

    /// A directory named by absolute path is read in place through its link whatever its
    /// own meta file or the policy say: nothing of it is copied.
    #[test]
    fn a_directory_named_by_absolute_path_is_never_copied() {
        let mut install = node("a", Some("a"), ".", None);
        install.link_to = Some(PathBuf::from("/srv/modules/net"));
        let nodes = [install, node("a.sub", Some("a"), "sub", Some(0))];
        let copy_everything = ModulePolicy {
            levels: vec![
                super::super::policy::parse_machine_rules("default = \"copy\"\n", "test").unwrap(),
            ],
            ..ModulePolicy::default()
        };
        for policy in [ModulePolicy::default(), copy_everything] {
            let got = decide(
                &nodes,
                &installs(&[("a", Some(SELF_MODIFYING))]),
                None,
                &policy,
                FLAVOR,
            );
            assert_eq!(got[0].action, Action::InPlace, "{}", got[0].reason);
            assert_eq!(got[1].action, Action::InPlace, "{}", got[1].reason);
        }
    }

    /// A local module of the root package is read in place unless the root's meta file
    /// says it modifies itself; a caller's `dependencies = false` makes its callees copies.
    #[test]
    fn root_package_locals_and_inherited_statements() {
        let root_meta = package_meta::parse(
            "module \"r\" {\n  path = \".\"\n  read-only = { dependencies = false }\n}\nmodule \"l\" {\n  path = \"./local\"\n  read-only = { self = false }\n}\n",
        )
        .unwrap();
        let nodes = [
            node("local", None, "local", None),
            node("b", Some("b"), ".", None),
        ];
        let got = decide(
            &nodes,
            &installs(&[("b", Some(READ_ONLY))]),
            Some(&root_meta),
            &ModulePolicy::default(),
            FLAVOR,
        );
        assert_eq!(got[0].action, Action::Copy, "{}", got[0].reason);
        assert_eq!(got[1].action, Action::Copy, "{}", got[1].reason);
        let got = decide(
            &nodes,
            &installs(&[("b", Some(READ_ONLY))]),
            None,
            &ModulePolicy::default(),
            FLAVOR,
        );
        assert_eq!(got[0].action, Action::InPlace, "{}", got[0].reason);
        assert_eq!(got[1].action, Action::Link, "{}", got[1].reason);

        // The same statement about `./local` when it leads out of the working directory (a
        // symlink: the node's directory is the resolved one) never copies it into the checkout.
        for dir in ["../elsewhere", "/etc"] {
            let mut n = node("local", None, "local", None);
            n.dir = dir.into();
            let got = decide(
                &[n],
                &installs(&[]),
                Some(&root_meta),
                &ModulePolicy::default(),
                FLAVOR,
            );
            assert_ne!(got[0].action, Action::Copy, "{dir}: {}", got[0].reason);
        }
    }

    /// Packages nobody made a statement about follow the repository's source rules, then
    /// the machine's, then the fallback; an author's statement still wins.
    #[test]
    fn source_rules_decide_unknown_packages_only() {
        use super::super::policy::SourceRules;
        let mut nodes = [node("a", Some("a"), ".", None)];
        nodes[0].source = "acme/net/aws".into();
        let policy = |read_only: &[&str], copy: &[&str], default| ModulePolicy {
            levels: vec![SourceRules {
                origin: ".tstore.hcl".into(),
                read_only: read_only.iter().map(|s| (*s).to_owned()).collect(),
                copy: copy.iter().map(|s| (*s).to_owned()).collect(),
                default,
            }],
            assume_read_only: false,
        };
        let cases = [
            (
                "trusted",
                policy(&["acme/*"], &[], None),
                None,
                Action::Link,
            ),
            (
                "copy beats trusted",
                policy(&["acme/*"], &["*/net/*"], None),
                None,
                Action::Copy,
            ),
            (
                "default link",
                policy(&[], &[], Some(Fallback::Link)),
                None,
                Action::Link,
            ),
            (
                "no rule, default copy",
                policy(&["other/*"], &[], Some(Fallback::Copy)),
                None,
                Action::Copy,
            ),
            (
                "no rule, auto",
                policy(&["other/*"], &[], None),
                None,
                Action::Link,
            ),
            (
                "the author's self = false wins",
                policy(&["acme/*"], &[], None),
                Some(SELF_MODIFYING),
                Action::Copy,
            ),
        ];
        for (case, policy, meta, want) in cases {
            let got = decide(&nodes, &installs(&[("a", meta)]), None, &policy, FLAVOR);
            assert_eq!(got[0].action, want, "{case}: {}", got[0].reason);
        }
    }

    /// The reason a source rule gives quotes the source without its secrets.
    #[test]
    fn a_rule_quotes_the_source_without_credentials() {
        use super::super::policy::SourceRules;
        let mut nodes = [node("a", Some("a"), ".", None)];
        nodes[0].source =
            "git::https://user:s3cret@git.test/org/net.git?ref=v1&sshkey=TOK3N".into();
        for (read_only, copy) in [
            (vec!["*net*".to_owned()], vec![]),
            (vec![], vec!["*".to_owned()]),
        ] {
            let policy = ModulePolicy {
                levels: vec![SourceRules {
                    origin: ".tstore.hcl".into(),
                    read_only,
                    copy,
                    default: None,
                }],
                assume_read_only: false,
            };
            let got = decide(&nodes, &installs(&[("a", None)]), None, &policy, FLAVOR);
            let reason = &got[0].reason;
            assert!(
                reason.contains("git::https://git.test/org/net.git?ref=v1&sshkey=redacted"),
                "{reason}"
            );
            assert!(
                !reason.contains("s3cret") && !reason.contains("TOK3N"),
                "{reason}"
            );
        }
    }

    /// `auto`, the default: a package nobody made a statement about is linked unless a
    /// module of its instance may write into its own directory; `default = "copy"` copies.
    #[test]
    fn auto_links_unless_a_member_writes_into_itself() {
        use super::super::policy::SourceRules;
        let nodes = [
            node("a", Some("a"), ".", None),
            node("a.sub", Some("a"), "sub", Some(0)),
        ];
        let writes_in_sub: &[(&str, &str)] = &[
            ("main.tf", "module \"sub\" {\n  source = \"./sub\"\n}\n"),
            (
                "sub/main.tf",
                "data \"archive_file\" \"z\" {\n  type        = \"zip\"\n  source_dir  = \"${path.module}/src\"\n  output_path = \"${path.module}/fn.zip\"\n}\n",
            ),
        ];
        let reads_only: &[(&str, &str)] = &[
            (
                "main.tf",
                "locals {\n  t = file(\"${path.module}/x.txt\")\n}\n",
            ),
            ("sub/main.tf", "output \"y\" {\n  value = 2\n}\n"),
        ];
        let copy_default = ModulePolicy {
            levels: vec![SourceRules {
                origin: ".tstore.hcl".into(),
                default: Some(Fallback::Copy),
                ..SourceRules::default()
            }],
            assume_read_only: false,
        };
        let cases = [
            (
                "a member writes",
                writes_in_sub,
                ModulePolicy::default(),
                Action::Copy,
            ),
            (
                "only reads",
                reads_only,
                ModulePolicy::default(),
                Action::Link,
            ),
            ("default = copy", reads_only, copy_default, Action::Copy),
        ];
        for (case, files, policy, want) in cases {
            let got = decide(
                &nodes,
                &installs_of(&[("a", None)], files),
                None,
                &policy,
                FLAVOR,
            );
            assert_eq!(got[0].action, want, "{case}: {}", got[0].reason);
        }
        let got = decide(
            &nodes,
            &installs_of(&[("a", None)], writes_in_sub),
            None,
            &ModulePolicy::default(),
            FLAVOR,
        );
        assert!(
            got[0]
                .reason
                .contains("data.archive_file.z output_path at sub/main.tf:4"),
            "{}",
            got[0].reason
        );
    }
}
