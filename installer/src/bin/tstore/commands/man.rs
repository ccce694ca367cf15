//! `tstore man`: the man pages, made by `clap_mangen` from the clap definition. A page
//! lists its subcommands as `tstore-init(1)`, `tstore-store-verify(1)`, …, so `--dir`
//! writes one page per command under those names and every reference resolves.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

// Arguments of `tstore man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write `tstore.1` and one page per command (`tstore-init.1`, …) into this directory
    /// (created if missing) instead of printing the top page, so that every page a page
    /// refers to exists.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The command tree as the pages show it: no `help` subcommand (clap adds one to every
/// command with subcommands; it has no page), built so that each subcommand knows its
/// full name (`tstore-store-verify`).
fn documented_command(cli: clap::Command) -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let mut cmd = without_help(cli);
    cmd.build();
    cmd
}

/// Every page: the top one first, then each command's, depth first.
fn pages(cli: clap::Command) -> Vec<clap_mangen::Man> {
    fn add(cmd: &clap::Command, out: &mut Vec<clap_mangen::Man>) {
        out.push(clap_mangen::Man::new(cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            add(sub, out);
        }
    }
    let mut out = Vec::new();
    add(&documented_command(cli), &mut out);
    out
}

/// Print the top page on stdout, or write every page into `dir`.
pub(crate) fn man(cli: clap::Command, dir: Option<&Path>) -> Result<ExitCode> {
    let pages = pages(cli);
    let Some(dir) = dir else {
        let mut out = crate::say::stdout();
        return match pages[0].render(&mut out) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
            Err(e) => Err(anyhow::anyhow!(e).context("cannot write the man page")),
        };
    };
    fs_err::create_dir_all(dir)
        .with_context(|| format!("cannot create the man page directory {}", dir.display()))?;
    for page in &pages {
        let path = dir.join(page.get_filename());
        let mut text = Vec::new();
        page.render(&mut text)
            .with_context(|| format!("cannot render {}", path.display()))?;
        // A new file renamed over the name: whatever is at that name (a link to a file of
        // someone else's) is replaced, never written through.
        let mut temp = tempfile::Builder::new()
            .prefix(".tstore-man-")
            .tempfile_in(dir)
            .with_context(|| format!("cannot write into {}", dir.display()))?;
        std::io::Write::write_all(&mut temp, &text)?;
        temp.as_file()
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
        temp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
