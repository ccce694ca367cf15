//! The providers the working directory's state needs, as `init` adds them to the
//! configuration's (terraform's `internal/command/init.go` `getProviders`; OpenTofu's at
//! `v1.12.x`): every provider of a resource still in the state, unconstrained, so that the
//! plan that destroys a resource deleted from the configuration finds its provider.
//!
//! Only a local state is seen: the state file the local backend keeps for the selected
//! workspace (`TF_WORKSPACE`, else the data directory's `environment` file, else
//! `default`), inside the working directory. A remote backend's state is not: the report
//! says so, and the binary says it when the lock file loses a provider.
//!
//! **Only files inside the working directory are read, and no link is followed to one.**
//! The state file and the `environment` file are reached from the working directory
//! through `safe_fs`: every directory on the way (`terraform.tfstate.d`, the workspace's,
//! `.terraform`) opened with `O_NOFOLLOW`, the file itself too. A symbolic link anywhere
//! below the working directory is not followed, where terraform and OpenTofu follow it: the
//! state is not read (reported `unread`, naming the link, as any local state tstore cannot
//! read), init goes on, and a warning names the link and what is not installed. A link
//! committed as `terraform.tfstate` would otherwise make root in CI read, and install the
//! providers of, a state file outside the checkout; and the `environment` file's content is
//! shown as the workspace's name.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use serde::Serialize;
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::state::{self, StateStorage, DEFAULT_WORKSPACE};

use crate::options::WorkdirOptions;
use crate::workdir::safe_fs::{Kind, RelPath, SafeDir, SafeFsError};

/// The data directory's file naming the selected workspace (`terraform workspace select`).
const ENVIRONMENT_FILE: &str = "environment";
/// A workspace name is short; a larger `environment` file is not one.
const MAX_ENVIRONMENT_FILE: u64 = 4096;

/// What `init` saw of the state, in `init --json` as `state`.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct StateReport {
    /// The workspace whose state was looked for (empty when it is not known: the
    /// `environment` file naming it is a link, not followed).
    pub workspace: String,
    /// How far it was seen.
    pub seen: StateSeen,
    /// The providers that only the state needs, which the install added.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub only_in_state: Vec<String>,
}

/// How far the state was seen.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StateSeen {
    /// The local state file, read.
    Read {
        /// The file, relative to the working directory.
        file: String,
    },
    /// No local state yet.
    #[default]
    Absent,
    /// Kept by a backend tstore does not read (`s3`, `cloud`, …): not seen.
    Remote {
        /// The backend's type.
        backend: String,
    },
    /// Not looked for, as the tool version does not with these flags (`-backend=false`
    /// under OpenTofu from 1.13).
    NotLookedFor {
        /// Why.
        reason: String,
    },
    /// A local state that was not read, and why (the reason never quotes the file).
    Unread {
        /// The file, relative to the working directory, when it has a place there.
        file: Option<String>,
        /// Why.
        reason: String,
    },
}

impl StateSeen {
    /// Whether a provider only this state needs could be missed.
    pub fn is_blind(&self) -> bool {
        matches!(self, StateSeen::Remote { .. } | StateSeen::Unread { .. })
    }
}

/// Why a local state file (or the `environment` file) was not read.
struct NotRead {
    /// The reason `init` reports (it never quotes the file).
    reason: String,
    /// Whether a symbolic link stopped it (said as a warning too).
    link: bool,
}

impl NotRead {
    fn link(what: &str) -> NotRead {
        NotRead {
            reason: format!(
                "{what} a symbolic link, which tstore does not follow (only files inside the \
                 working directory are read)"
            ),
            link: true,
        }
    }

    fn other(reason: impl Into<String>) -> NotRead {
        NotRead {
            reason: reason.into(),
            link: false,
        }
    }

    /// A refusal or failure of the no-follow walk from `anchor` (a link named relative to
    /// it).
    fn of_walk(err: SafeFsError, anchor: &Path) -> NotRead {
        match err {
            SafeFsError::SymlinkedFile { .. } => NotRead::link("it is"),
            SafeFsError::SymlinkedDir { path } => {
                let shown = path.strip_prefix(anchor).unwrap_or(&path);
                NotRead::link(&format!("{} is", shown.display()))
            }
            SafeFsError::Io { source, .. } => {
                NotRead::other(format!("it cannot be read ({})", source.kind()))
            }
            other => NotRead::other(format!("it cannot be read ({other})")),
        }
    }
}

/// The selected workspace: `TF_WORKSPACE`, else the data directory's `environment` file,
/// else `default`. The file is read without following a link (`.terraform` included): one
/// is an error, as the workspace it names is then not known; a file that is missing, not
/// regular, too large or empty selects `default`, as before.
fn selected_workspace(opts: &WorkdirOptions) -> Result<String, NotRead> {
    if let Some(given) = opts.variables.workspace_given() {
        return Ok(given.to_owned());
    }
    let name = RelPath::new(ENVIRONMENT_FILE).expect("a plain name");
    let read = opts.data_dir.open(false).and_then(|dir| match dir {
        Some(dir) => dir.read_file(&name, MAX_ENVIRONMENT_FILE + 1),
        None => Ok(None),
    });
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e @ (SafeFsError::SymlinkedFile { .. } | SafeFsError::SymlinkedDir { .. })) => {
            return Err(NotRead::of_walk(e, &opts.dir));
        }
        Err(_) => None,
    };
    Ok(bytes
        .filter(|b| b.len() as u64 <= MAX_ENVIRONMENT_FILE)
        .and_then(|b| String::from_utf8(b).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_WORKSPACE.to_owned()))
}

/// Open the state file `file` (relative, from [`state::local_state_file`]) of the working
/// directory `dir` without following a link on the way or at the file: `None` when it does
/// not exist.
fn open_state(dir: &Path, file: &Path) -> Result<Option<std::fs::File>, NotRead> {
    let plain: Vec<_> = file
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy()),
            _ => None,
        })
        .collect();
    if plain.is_empty() {
        // `path = "."`: the working directory itself.
        return Err(NotRead::other("it is not a regular file"));
    }
    let rel = RelPath::new(plain.join("/"))
        .map_err(|e| NotRead::other(format!("it cannot be read ({e})")))?;
    let anchor = SafeDir::open_trusted(dir).map_err(|e| NotRead::of_walk(e, dir))?;
    let parent = match rel.parent() {
        Some(parent) => match anchor.open_dir(&parent) {
            Ok(Some(parent)) => parent,
            // A file where a directory would be: no state there, as the tools find none.
            Ok(None) | Err(SafeFsError::NotADirectory { .. }) => return Ok(None),
            Err(e) => return Err(NotRead::of_walk(e, dir)),
        },
        None => anchor,
    };
    let name = rel.file_name();
    if let Some(opened) = parent
        .open_regular_file(name)
        .map_err(|e| NotRead::of_walk(e, dir))?
    {
        return Ok(Some(opened));
    }
    // Not opened: say why (what is there now; the open above decided what is read).
    let entry = RelPath::new(name).expect("one plain component");
    match parent.kind(&entry) {
        Ok(None) => Ok(None),
        Ok(Some(Kind::Symlink)) => Err(NotRead::link("it is")),
        Ok(Some(_)) => Err(NotRead::other("it is not a regular file")),
        Err(e) => Err(NotRead::of_walk(e, dir)),
    }
}

/// The providers the state of `opts.dir` (kept as `storage` says) needs, and what was seen.
pub(crate) fn state_providers(
    opts: &WorkdirOptions,
    storage: &StateStorage,
) -> (BTreeSet<ProviderAddr>, StateReport) {
    let workspace = selected_workspace(opts);
    let report = |seen| StateReport {
        workspace: workspace
            .as_ref()
            .map_or_else(|_| String::new(), String::clone),
        seen,
        only_in_state: Vec::new(),
    };
    if opts.backend_off
        && opts
            .tool
            .follows(&tstore_tofu::tool_version::NO_STATE_WITHOUT_BACKEND)
    {
        let reason = "-backend=false: this release reads no state then".to_owned();
        return (BTreeSet::new(), report(StateSeen::NotLookedFor { reason }));
    }
    if let StateStorage::Remote(backend) = storage {
        let backend = backend.clone();
        return (BTreeSet::new(), report(StateSeen::Remote { backend }));
    }
    let selected = match &workspace {
        Ok(selected) => selected,
        Err(not_read) => {
            let shown = format!("{}/{ENVIRONMENT_FILE}", opts.data_dir.shown);
            return (BTreeSet::new(), report(unread(opts, shown, not_read)));
        }
    };
    let Some(file) = state::local_state_file(storage, selected) else {
        let reason = "its path leaves the working directory".to_owned();
        return (
            BTreeSet::new(),
            report(StateSeen::Unread { file: None, reason }),
        );
    };
    let shown = file.display().to_string();
    let read = open_state(&opts.dir, &file).and_then(|opened| {
        opened
            .map(|f| state::providers_in_state(f).map_err(|e| NotRead::other(e.to_string())))
            .transpose()
    });
    match read {
        Ok(Some(providers)) => (providers, report(StateSeen::Read { file: shown })),
        Ok(None) => (BTreeSet::new(), report(StateSeen::Absent)),
        Err(not_read) => (BTreeSet::new(), report(unread(opts, shown, &not_read))),
    }
}

/// `shown` (a file relative to the working directory) was not read: the report's entry,
/// and for a link a warning, since the tools would have followed it.
fn unread(opts: &WorkdirOptions, shown: String, not_read: &NotRead) -> StateSeen {
    if not_read.link {
        tracing::warn!(
            "{}: not read: {}; the providers only that state needs are not installed (replace \
             the link with the file itself to have them installed)",
            opts.dir.join(&shown).display(),
            not_read.reason
        );
    }
    StateSeen::Unread {
        file: Some(shown),
        reason: not_read.reason.clone(),
    }
}
