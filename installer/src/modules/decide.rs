//! Step 2: link or copy each remote install, from the packages' read-only statements.

use std::collections::BTreeMap;

use super::policy::{Meta, ReadOnlyStatus};
use super::source_rules::{Fallback, ModulePolicy, Verdict};
use super::walk::{Fetched, Node};
use super::{policy, Action};

/// The decision for one install or local copy.
#[derive(Clone, Debug)]
pub(super) struct Decision {
    pub(super) action: Action,
    pub(super) status: ReadOnlyStatus,
    pub(super) reason: String,
}

pub(super) fn decide(
    nodes: &[Node],
    installs: &BTreeMap<String, (Fetched, Option<Meta>)>,
    root_meta: Option<&Meta>,
    policy: &ModulePolicy,
    default_host: &str,
) -> Vec<Decision> {
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
            policy::decide(&policy::Facts {
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
            if is_install_root {
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
                let (action, why) = match worst {
                    Some(&j) if statuses[j].0 == ReadOnlyStatus::SelfModifying => {
                        (Action::Copy, describe(&nodes[j], i == j, &statuses[j].1))
                    }
                    // Nobody in the package said: the repository's, then the machine's
                    // source rules, then the fallback.
                    Some(&j) => {
                        let unknown = describe(&nodes[j], i == j, &statuses[j].1);
                        match policy.verdict(&n.source, default_host) {
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
                                        super::source_rules::REPOSITORY_FILE
                                    ),
                                ),
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
                }
            } else if n.install.is_none() && status == ReadOnlyStatus::SelfModifying {
                Decision {
                    action: Action::Copy,
                    status,
                    reason: format!(
                        "{reason}; a local module of the root package gets its own copy"
                    ),
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
                }
            }
        })
        .collect()
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
            at: SourcePos {
                file: PathBuf::from("main.tf"),
                line: Some(1),
            },
        }
    }

    fn installs(metas: &[(&str, Option<&str>)]) -> BTreeMap<String, (Fetched, Option<Meta>)> {
        metas
            .iter()
            .map(|(key, meta)| {
                let fetched = Fetched {
                    id: format!("pkg-{key}"),
                    view: PathBuf::from("/view"),
                    subdir: None,
                };
                let meta = meta.map(|text| policy::parse(text).expect("valid meta"));
                ((*key).to_owned(), (fetched, meta))
            })
            .collect()
    }

    const HOST: &str = "registry.example.org";
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
                "no statement: the compatible default",
                None,
                false,
                Action::Copy,
            ),
            ("no statement, read-only assumed", None, true, Action::Link),
        ];
        for (case, meta, assume, want) in cases {
            let policy = ModulePolicy {
                assume_read_only: assume,
                ..ModulePolicy::default()
            };
            let got = decide(&nodes, &installs(&[("a", meta)]), None, &policy, HOST);
            assert_eq!(got[0].action, want, "{case}: {}", got[0].reason);
            assert_eq!(got[1].action, Action::InPlace, "{case}");
        }
    }

    /// A local module of the root package is read in place unless the root's meta file
    /// says it modifies itself; a caller's `dependencies = false` makes its callees copies.
    #[test]
    fn root_package_locals_and_inherited_statements() {
        let root_meta = policy::parse(
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
            HOST,
        );
        assert_eq!(got[0].action, Action::Copy, "{}", got[0].reason);
        assert_eq!(got[1].action, Action::Copy, "{}", got[1].reason);
        let got = decide(
            &nodes,
            &installs(&[("b", Some(READ_ONLY))]),
            None,
            &ModulePolicy::default(),
            HOST,
        );
        assert_eq!(got[0].action, Action::InPlace, "{}", got[0].reason);
        assert_eq!(got[1].action, Action::Link, "{}", got[1].reason);
    }

    /// Packages nobody made a statement about follow the repository's source rules, then
    /// the machine's, then the fallback; an author's statement still wins.
    #[test]
    fn source_rules_decide_unknown_packages_only() {
        use super::super::source_rules::SourceRules;
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
                "no rule",
                policy(&["other/*"], &[], None),
                None,
                Action::Copy,
            ),
            (
                "the author's self = false wins",
                policy(&["acme/*"], &[], None),
                Some(SELF_MODIFYING),
                Action::Copy,
            ),
        ];
        for (case, policy, meta, want) in cases {
            let got = decide(&nodes, &installs(&[("a", meta)]), None, &policy, HOST);
            assert_eq!(got[0].action, want, "{case}: {}", got[0].reason);
        }
    }
}
