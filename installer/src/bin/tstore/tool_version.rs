//! Which release of the flavor's tool a command follows, by the first rule that answers:
//! `--tool-version` / `TSTORE_TOOL_VERSION`; `version -json` of the flavor's tool (`tofu` or
//! `terraform`) found on `PATH`; the newest release tstore knows.
//!
//! Asking the binary costs a process (~35 ms), so its answer is kept in
//! `$XDG_STATE_HOME/tstore/tool-versions.json` by the binary's identity (canonical path,
//! device, inode, size, modification time): a warm init reads one small file, and an
//! upgraded binary (a new inode or mtime) is asked again. The file is a cache: unreadable,
//! malformed or unwritable, it is ignored.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Serialize;
use tstore_tofu::flavor::{Flavor, FlavorChoice};
use tstore_tofu::tool_version::ToolVersion;

use crate::Settings;

/// The tool version in force and the rule that decided it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ToolChoice {
    /// `terraform 1.11.4`.
    #[serde(rename = "name", serialize_with = "as_string")]
    pub(crate) tool: ToolVersion,
    /// `--tool-version`, `TSTORE_TOOL_VERSION`, `PATH`, `newest`.
    pub(crate) decided_by: &'static str,
    /// The binary asked, for the `PATH` rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) binary: Option<PathBuf>,
}

fn as_string<S: serde::Serializer>(t: &ToolVersion, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(t)
}

/// The tool version `given` (`--tool-version` / `TSTORE_TOOL_VERSION`) parsed for a flavor
/// not yet known: the flavor it names, if it names one (`terraform 1.15.4`).
pub(crate) fn named_flavor(given: &str) -> Result<Option<Flavor>> {
    let words: Vec<&str> = given.split_whitespace().collect();
    if words.len() < 2 {
        return Ok(None);
    }
    Ok(Some(ToolVersion::parse(given, Flavor::Tofu)?.flavor))
}

/// The tool version for a directory of flavor `flavor` (decided by `flavor_choice`); a
/// release newer than any tstore knows is said once per run, then followed as the newest
/// known.
pub(crate) fn resolve(settings: &Settings, flavor_choice: &FlavorChoice) -> Result<ToolChoice> {
    let choice = decide(settings, flavor_choice)?;
    if choice.tool.newer_than_known() && settings.run.first_time("a tool newer than known") {
        tracing::warn!(
            "{} ({}) is newer than any release tstore knows; following the rules of {}, the \
             newest it knows",
            choice.tool,
            choice.decided_by,
            ToolVersion::newest(choice.tool.flavor)
        );
    }
    Ok(choice)
}

fn decide(settings: &Settings, flavor_choice: &FlavorChoice) -> Result<ToolChoice> {
    let flavor = flavor_choice.flavor;
    if let Some(given) = &settings.tool_version_given {
        let tool = ToolVersion::parse(given, flavor)?;
        if tool.flavor != flavor {
            bail!(
                "the tool version {tool} is not {flavor}'s, and {flavor} was chosen by {}: give \
                 a {flavor} version, or --flavor {}",
                flavor_choice.decided_by,
                tool.flavor
            );
        }
        return Ok(ToolChoice {
            tool,
            decided_by: if settings.tool_version_from_env {
                "TSTORE_TOOL_VERSION"
            } else {
                "--tool-version"
            },
            binary: None,
        });
    }
    let search_path = settings.search_path.as_deref().unwrap_or_default();
    if let Some(binary) = tstore_process::find_on_path(flavor.as_str(), search_path) {
        let cache = settings
            .state_dir
            .as_ref()
            .map(|d| d.join("tool-versions.json"));
        match version_of(&binary, flavor, cache.as_deref()) {
            Ok(tool) => {
                return Ok(ToolChoice {
                    tool,
                    decided_by: "PATH",
                    binary: Some(binary),
                })
            }
            Err(why) => tracing::warn!(
                "cannot tell the version of {}: {why}; following {} (set --tool-version or \
                 TSTORE_TOOL_VERSION to choose)",
                binary.display(),
                ToolVersion::newest(flavor)
            ),
        }
    }
    Ok(ToolChoice {
        tool: ToolVersion::newest(flavor),
        decided_by: "newest",
        binary: None,
    })
}

/// The version `binary` reports, from the cache when the binary is the one it was asked of.
fn version_of(binary: &Path, flavor: Flavor, cache: Option<&Path>) -> Result<ToolVersion, String> {
    let real = binary.canonicalize().map_err(|e| e.to_string())?;
    let meta = std::fs::metadata(&real).map_err(|e| e.to_string())?;
    let identity = format!(
        "{}\0{}\0{}\0{}\0{}.{}",
        real.display(),
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec()
    );
    let mut known: BTreeMap<String, String> = cache
        .and_then(|c| std::fs::read(c).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    if let Some(version) = known.get(&identity) {
        if let Ok(tool) = ToolVersion::parse(version, flavor) {
            return Ok(tool);
        }
    }
    let version = ask(&real)?;
    let tool = ToolVersion::parse(&version, flavor).map_err(|e| e.to_string())?;
    if let Some(cache) = cache {
        known.insert(identity, tool.version.to_string());
        if let Err(e) = write_cache(cache, &known) {
            tracing::debug!(
                "cannot remember the tool version in {}: {e}",
                cache.display()
            );
        }
    }
    Ok(tool)
}

/// `BINARY version -json`'s `terraform_version` (both tools name it so), with the update
/// check off and a deadline: a binary that hangs is not waited for.
fn ask(binary: &Path) -> Result<String, String> {
    let mut child = tstore_process::Command::new(binary)
        .args(["version", "-json"])
        .env("CHECKPOINT_DISABLE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("`version -json` did not answer within 10 s".into());
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout
            .by_ref()
            .take(1 << 20)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
    }
    #[derive(serde::Deserialize)]
    struct VersionJson {
        terraform_version: String,
    }
    serde_json::from_slice::<VersionJson>(&out)
        .map(|v| v.terraform_version)
        .map_err(|_| "`version -json` printed no terraform_version".into())
}

fn write_cache(path: &Path, known: &BTreeMap<String, String>) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut temp, known)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
