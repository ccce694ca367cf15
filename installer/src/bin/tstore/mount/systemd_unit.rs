//! The systemd user unit that keeps the mount up across reboots and daemon crashes
//! (`tstore mount --enable` / `--disable`).
//!
//! Without the mount every link into it dangles, and terraform says only that no package is
//! cached in `.terraform/providers`. The unit runs `tstore mount --foreground` with this
//! binary, this store and this mount path, restarting it when it fails. A unit file that is
//! not tstore's (no marker on its first line) is never overwritten or removed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use tstore_process::Command;

use anyhow::{Context, Result};

use crate::Settings;

/// The unit's name.
pub(crate) const UNIT: &str = "tstore-mount.service";
const MARKER: &str = "# Written by `tstore mount --enable`";

/// Where systemd looks for the user's units.
fn unit_path(settings: &Settings) -> Result<PathBuf> {
    let config = settings
        .config_home
        .as_ref()
        .context("HOME is not set; cannot place the systemd unit")?;
    Ok(config.join("systemd/user").join(UNIT))
}

/// Whether a systemd user manager runs for this user (`systemctl --user` can talk to it).
fn systemd_runs() -> bool {
    Command::new("systemctl")
        .args(["--user", "show-environment"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn systemctl(args: &[&str]) -> Result<()> {
    let status = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .status()
        .context("cannot run systemctl")?;
    anyhow::ensure!(
        status.success(),
        "`systemctl --user {}` failed",
        args.join(" ")
    );
    Ok(())
}

/// Refuse to touch a unit file that is not tstore's.
fn ensure_ours(path: &Path) -> Result<bool> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.starts_with(MARKER) => Ok(true),
        Ok(_) => anyhow::bail!(
            "{} exists and was not written by tstore; nothing was changed. Remove or rename it \
             first",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// systemd's quoting of one word of `ExecStart=`/`Environment=` (and of the store path in
/// `Description=`): backslashes, quotes and specifiers escaped. A control character (a
/// newline would start a directive of its own) cannot be written in a unit at all: such a
/// value is refused, naming `what` it is.
fn quoted(s: &str, what: &str) -> Result<String> {
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        anyhow::bail!(
            "the {what} {:?} holds the control character {:?}, which a systemd unit cannot \
             hold; nothing was written. Choose a path without control characters",
            s,
            c
        );
    }
    Ok(format!(
        "\"{}\"",
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('%', "%%")
    ))
}

/// What [`enable`] did.
pub(crate) enum Enabled {
    /// The unit is written, enabled and started: the store is mounted now and at every login.
    Started,
    /// The unit is written at this path, but no systemd user manager runs to enable it.
    WrittenOnly(PathBuf),
}

/// Write the unit (serving this store at this mount path with this binary), then enable and
/// start it where a systemd user manager runs.
pub(crate) fn enable(settings: &Settings) -> Result<Enabled> {
    let path = unit_path(settings)?;
    ensure_ours(&path)?;
    let exe = std::env::current_exe().context("cannot find this tstore binary's path")?;
    let fusermount = ["/usr/bin/fusermount3", "/bin/fusermount3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("fusermount3");
    let unit = format!(
        "{MARKER}: keep the tstore store mounted read-only.\n\
         [Unit]\n\
         Description=tstore read-only FUSE mount of {store}\n\n\
         [Service]\n\
         Type=simple\n\
         Environment={env_store} {env_mount}\n\
         ExecStart={exe} mount --foreground\n\
         ExecStop={fusermount} -u -z {mount}\n\
         Restart=on-failure\n\
         RestartSec=2\n\n\
         [Install]\n\
         WantedBy=default.target\n",
        store = quoted(&settings.store.to_string_lossy(), "store path")?,
        env_store = quoted(
            &format!("TSTORE_HOME={}", settings.store.display()),
            "store path"
        )?,
        env_mount = quoted(
            &format!("TSTORE_MOUNT={}", settings.mount.display()),
            "mount path"
        )?,
        exe = quoted(&exe.to_string_lossy(), "tstore binary's path")?,
        mount = quoted(&settings.mount.to_string_lossy(), "mount path")?,
    );
    fs_err::create_dir_all(path.parent().expect("a unit path has a parent"))?;
    fs_err::write(&path, unit)?;
    if !systemd_runs() {
        return Ok(Enabled::WrittenOnly(path));
    }
    systemctl(&["daemon-reload"])?;
    systemctl(&["enable", "--now", UNIT])?;
    Ok(Enabled::Started)
}

/// What [`disable`] did.
pub(crate) enum Disabled {
    /// There was no unit of ours.
    NoUnit,
    /// The unit was stopped, disabled and removed from this path.
    Removed(PathBuf),
}

/// Stop and disable the unit, and remove its file.
pub(crate) fn disable(settings: &Settings) -> Result<Disabled> {
    let path = unit_path(settings)?;
    if !ensure_ours(&path)? {
        return Ok(Disabled::NoUnit);
    }
    if systemd_runs() {
        systemctl(&["disable", "--now", UNIT])?;
    }
    fs_err::remove_file(&path)?;
    if systemd_runs() {
        systemctl(&["daemon-reload"])?;
    }
    Ok(Disabled::Removed(path))
}
