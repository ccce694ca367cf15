//! `tstore version`: as `tofu version`, the version and the platform, then the provider
//! versions the lock file of the current directory selects (best effort: a missing or
//! unreadable lock file lists none). `-json` prints them as one document.
//!
//! upstream: internal/command/version.go@v1.12.6, internal/command/views/version.go@v1.12.6

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use tstore_tofu::addr::Platform;
use tstore_tofu::lockfile::LockFile;

use crate::json;

// Arguments of `tstore version`.
#[derive(Debug, Args)]
pub(crate) struct VersionArgs {
    /// Print JSON (`tstore_version`, `commit`, `platform`, `provider_selections`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", hide_default_value = true, value_parser = crate::cli::values::go_bool)]
    pub json: bool,
}

pub(crate) fn version(as_json: bool) -> Result<ExitCode> {
    let platform = Platform::current().to_string();
    let selections: BTreeMap<String, String> =
        match LockFile::load(std::path::Path::new(tstore_installer::LOCK_FILE_NAME)) {
            Ok(Some(lock)) => lock
                .providers
                .iter()
                .map(|(addr, p)| (addr.to_string(), p.version.to_string()))
                .collect(),
            _ => BTreeMap::new(),
        };
    if as_json {
        let known = |v: &'static str| (!v.is_empty()).then_some(v);
        json::print(&serde_json::json!({
            "tstore_version": env!("CARGO_PKG_VERSION"),
            "commit": known(env!("TSTORE_COMMIT")),
            "commit_date": known(env!("TSTORE_COMMIT_DATE")),
            "platform": platform,
            "provider_selections": selections,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!("tstore v{}\non {platform}\n", env!("TSTORE_LONG_VERSION"));
    for (addr, version) in &selections {
        text.push_str(&format!("+ provider {addr} v{version}\n"));
    }
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}
