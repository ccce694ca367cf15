//! `tstore roots ls`.
//! `roots ls --json`'s fields: `docs/reference/json.md`.

use clap::Subcommand;
use std::process::ExitCode;

use anyhow::Result;

use super::open_existing_store;
use crate::json;
use crate::Settings;

/// `tstore roots ls`.
pub(crate) fn ls(settings: &Settings, json: bool) -> Result<ExitCode> {
    let store = open_existing_store(settings)?;
    let roots = store.roots().list()?;
    if json {
        json::print(&serde_json::json!({ "roots": roots }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for r in &roots {
        outln!(
            "{}  ({})",
            crate::escape::line(&r.path.to_string_lossy()),
            crate::units::count(r.links.len() as u64, "link")
        );
        for l in &r.links {
            outln!(
                "  {} -> {}",
                crate::escape::line(&l.link.to_string_lossy()),
                crate::escape::line(&l.package.to_string())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tstore roots …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum RootsCommand {
    /// List the recorded roots and their links.
    #[command(
        after_help = "Examples:\n  tstore roots ls           # DIR, then each link it has into the mount\n  tstore roots ls --json    # for scripts"
    )]
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}
