//! The providers the working directory's state needs, as `init` adds them to the
//! configuration's (terraform's `internal/command/init.go` `getProviders`; OpenTofu's at
//! `v1.12.x`): every provider of a resource still in the state, unconstrained, so that the
//! plan that destroys a resource deleted from the configuration finds its provider.
//!
//! Only a local state is seen: the state file the local backend keeps for the selected
//! workspace (`TF_WORKSPACE`, else the data directory's `environment` file, else
//! `default`), inside the working directory. A remote backend's state is not: the report
//! says so, and the binary says it when the lock file loses a provider.

use std::collections::BTreeSet;

use serde::Serialize;
use tstore_tofu::addr::ProviderAddr;
use tstore_tofu::read::{open_regular, read_capped};
use tstore_tofu::state::{self, StateStorage, DEFAULT_WORKSPACE};

use crate::options::WorkdirOptions;

/// The data directory's file naming the selected workspace (`terraform workspace select`).
const ENVIRONMENT_FILE: &str = "environment";
/// A workspace name is short; a larger `environment` file is not one.
const MAX_ENVIRONMENT_FILE: u64 = 4096;

/// What `init` saw of the state, in `init --json` as `state`.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct StateReport {
    /// The workspace whose state was looked for.
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

/// The selected workspace: `TF_WORKSPACE`, else the data directory's `environment` file,
/// else `default`.
fn selected_workspace(opts: &WorkdirOptions) -> String {
    if let Some(given) = opts.variables.workspace_given() {
        return given.to_owned();
    }
    read_capped(
        &opts.data_dir.path.join(ENVIRONMENT_FILE),
        MAX_ENVIRONMENT_FILE,
    )
    .ok()
    .map(|s| s.trim().to_owned())
    .filter(|s| !s.is_empty())
    .unwrap_or_else(|| DEFAULT_WORKSPACE.to_owned())
}

/// The providers the state of `opts.dir` (kept as `storage` says) needs, and what was seen.
pub(crate) fn state_providers(
    opts: &WorkdirOptions,
    storage: &StateStorage,
) -> (BTreeSet<ProviderAddr>, StateReport) {
    let workspace = selected_workspace(opts);
    let report = |seen| StateReport {
        workspace: workspace.clone(),
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
    let Some(file) = state::local_state_file(storage, &workspace) else {
        let reason = "its path leaves the working directory".to_owned();
        return (
            BTreeSet::new(),
            report(StateSeen::Unread { file: None, reason }),
        );
    };
    let shown = file.display().to_string();
    let path = opts.dir.join(&file);
    if path.symlink_metadata().is_err() {
        return (BTreeSet::new(), report(StateSeen::Absent));
    }
    let read = open_regular(&path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidInput => "it is not a regular file".to_owned(),
            _ => format!("it cannot be read ({})", e.kind()),
        })
        .and_then(|f| state::providers_in_state(f).map_err(|e| e.to_string()));
    match read {
        Ok(providers) => (providers, report(StateSeen::Read { file: shown })),
        Err(reason) => (
            BTreeSet::new(),
            report(StateSeen::Unread {
                file: Some(shown),
                reason,
            }),
        ),
    }
}
