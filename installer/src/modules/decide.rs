//! Step 2: link or copy each remote install, from the packages' read-only statements.

use std::collections::BTreeMap;

use super::policy::{Meta, ReadOnlyStatus};
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
    assume_read_only: bool,
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
                    Some(&j) if assume_read_only => (
                        Action::Link,
                        format!(
                            "{}; linked because read-only is assumed",
                            describe(&nodes[j], i == j, &statuses[j].1)
                        ),
                    ),
                    Some(&j) => (
                        Action::Copy,
                        format!(
                            "{}; copied, the compatible default (--assume-read-only links)",
                            describe(&nodes[j], i == j, &statuses[j].1)
                        ),
                    ),
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
