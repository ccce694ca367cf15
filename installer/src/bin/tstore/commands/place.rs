//! One working directory's settings, each resolved once per root into the options the
//! library takes: where it is (canonical, never inside the store or its mount), its flavor,
//! then its CLI configuration and tool version, its variables.
//!
//! Two stages, because a directory without configuration files needs only the first:
//! [`Place::find`] (where, which flavor), then [`Place::configure`] (the CLI configuration
//! and the tool version, each of which can fail on a bad file or flag).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use tstore_installer::{DataDir, NetworkSettings, ProviderOptions, WorkdirOptions};
use tstore_tofu::addr::Platform;
use tstore_tofu::cliconfig::{CliConfig, InstallMethod};
use tstore_tofu::flavor::{Flavor, FlavorChoice};
use tstore_tofu::static_eval::{RootInputs, VarOption};

use crate::tool_version::ToolChoice;
use crate::Settings;

/// A working directory and its flavor.
pub(crate) struct Place {
    /// The current directory: relative `-var-file` and mirror paths resolve against it.
    pub(crate) cwd: PathBuf,
    /// The working directory, canonical.
    pub(crate) dir: PathBuf,
    pub(crate) flavor: FlavorChoice,
}

/// A working directory with everything a command resolves for it once.
pub(crate) struct Configured {
    pub(crate) place: Place,
    pub(crate) cli_config: CliConfig,
    pub(crate) tool: ToolChoice,
}

impl Place {
    /// The working directory `given` names (relative to the current one; default: the
    /// current one) and its flavor.
    pub(crate) fn find(settings: &Settings, given: Option<&Path>) -> Result<Place> {
        let (cwd, dir) = working_directory(settings, given)?;
        let flavor = settings.flavor_for(&dir)?;
        Ok(Place { cwd, dir, flavor })
    }

    /// Its CLI configuration and tool version.
    pub(crate) fn configure(self, settings: &Settings) -> Result<Configured> {
        let cli_config = load_cli_config(settings, self.flavor.flavor)?;
        self.configure_with(settings, cli_config)
    }

    /// Its tool version, with the CLI configuration already read (`init` reads it before it
    /// opens the store, and asks the tool's version after).
    pub(crate) fn configure_with(
        self,
        settings: &Settings,
        cli_config: CliConfig,
    ) -> Result<Configured> {
        let tool = crate::tool_version::resolve(settings, &self.flavor)?;
        tracing::debug!("tool version {}: decided by {}", tool.tool, tool.decided_by);
        Ok(Configured {
            place: self,
            cli_config,
            tool,
        })
    }
}

impl Configured {
    pub(crate) fn flavor(&self) -> Flavor {
        self.place.flavor.flavor
    }

    /// The root module's variable values: `var_options` (`-var`, `-var-file`), `TF_VAR_*`,
    /// the tfvars files.
    pub(crate) fn variables(
        &self,
        settings: &Settings,
        var_options: &[VarOption],
    ) -> Result<Arc<RootInputs>> {
        let variables =
            RootInputs::gather(&self.place.dir, settings.env.unicode_vars(), var_options)
                .context("cannot read the root module's variable values")?;
        Ok(Arc::new(variables))
    }

    /// The install settings a command does not take from its own flags: the data directory
    /// (`TF_DATA_DIR`), the tool version, the mount path, the network, nothing upgraded, no
    /// variables.
    pub(crate) fn workdir_options(&self, settings: &Settings) -> Result<WorkdirOptions> {
        let dir = &self.place.dir;
        Ok(WorkdirOptions {
            tool: self.tool.tool.clone(),
            release_age: settings.release_age_for(dir)?,
            ..WorkdirOptions::new(
                dir.clone(),
                DataDir::resolve(dir, settings.tf_data_dir.as_deref()),
                self.flavor(),
                settings.mount.clone(),
                network_settings(settings, &self.cli_config),
            )
        })
    }

    /// The provider phase's options for `workdir`: the CLI configuration's installation
    /// methods (relative mirror paths against `base`), or only `plugin_dirs` when any is
    /// given (`-plugin-dir` replaces every method, as in tofu; an empty value only clears
    /// `.terraform/plugin_path`).
    pub(crate) fn provider_options(
        &self,
        settings: &Settings,
        workdir: WorkdirOptions,
        base: &Path,
        plugin_dirs: &[String],
    ) -> ProviderOptions {
        let plugin_dirs = tstore_installer::plugin_path::search_dirs(plugin_dirs);
        let methods: Vec<InstallMethod> = if plugin_dirs.is_empty() {
            self.cli_config.effective_methods(
                self.flavor(),
                base,
                &settings.env.lookup(),
                &tstore_installer::mirror_providers_in,
            )
        } else {
            CliConfig::plugin_dir_methods(base, &plugin_dirs)
        };
        ProviderOptions {
            workdir,
            platform: Platform::current(),
            methods,
            cli_config: self.cli_config.describe_files(),
        }
    }
}

/// The current directory and the working directory a command names (`DIR`, relative to the
/// current one; default: the current one), canonical: one name for it from here on (a root
/// recorded under an alias, a symlinked CI path, would be dropped by gc once the alias goes,
/// with everything it links).
pub(crate) fn working_directory(
    settings: &Settings,
    given: Option<&Path>,
) -> Result<(PathBuf, PathBuf)> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let dir = match given {
        Some(d) => cwd.join(d),
        None => cwd.clone(),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "the working directory {} does not exist or is not a directory",
            dir.display()
        );
    }
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve the working directory {}", dir.display()))?;
    refuse_store_paths(settings, &dir)?;
    Ok((cwd, dir))
}

/// The working directories `dirs` name (the current one when none), each canonical, or
/// with `recursive` the roots under each; each once.
pub(crate) fn roots_of(
    settings: &Settings,
    dirs: &[PathBuf],
    recursive: bool,
    exclude: &[String],
) -> Result<Vec<PathBuf>> {
    let tops: Vec<Option<&Path>> = if dirs.is_empty() {
        vec![None]
    } else {
        dirs.iter().map(|d| Some(d.as_path())).collect()
    };
    let mut roots = Vec::new();
    for top in &tops {
        let (_, dir) = working_directory(settings, *top)?;
        if recursive {
            roots.extend(tstore_installer::find_roots(&dir, exclude)?);
        } else {
            roots.push(dir);
        }
    }
    let mut seen = HashSet::new();
    roots.retain(|r| seen.insert(r.clone()));
    if roots.is_empty() {
        anyhow::bail!(
            "no root module found under {} (a directory with .tf or .tofu files that no other \
             directory of the tree calls as a local module)",
            tops.iter()
                .map(|t| t.unwrap_or(Path::new(".")).display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(roots)
}

/// A working directory inside the store or the mount is refused: gc would count the
/// store's own files as a root and delete it with what it links, and links would point
/// into what they live in.
fn refuse_store_paths(settings: &Settings, dir: &Path) -> Result<()> {
    for (what, path) in [
        ("the store (TSTORE_HOME)", &settings.store),
        ("the store's mount (TSTORE_MOUNT)", &settings.mount),
    ] {
        let resolved = path.canonicalize().unwrap_or_else(|_| path.clone());
        if dir.starts_with(&resolved) {
            anyhow::bail!(
                "the working directory {} is inside {what} at {}; run tstore init in a \
                 checkout outside it",
                dir.display(),
                resolved.display()
            );
        }
    }
    Ok(())
}

/// The CLI configuration `flavor` reads, saying under `TSTORE_LOG=debug` which files were
/// looked at and read, and under `info` which file of the other tool exists but is not
/// read.
/// Said once per run: the CLI configuration file a variable names does not exist.
fn warn_missing_cli_config(settings: &Settings, var: &str, path: &Path) {
    if !settings.run.first_time("missing CLI configuration") {
        return;
    }
    errln!(
        "{}\n\nThe CLI configuration file at {:?} does not exist ({var} names it); no \
         other CLI configuration file is read.\n",
        crate::style::warning("Unable to open CLI configuration file"),
        path.display().to_string()
    );
}

pub(crate) fn load_cli_config(settings: &Settings, flavor: Flavor) -> Result<CliConfig> {
    let config = CliConfig::load(flavor, &settings.env.lookup())?;
    let search = &config.search;
    let list = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &search.named_by {
        // A named file that does not exist is skipped, and the tool warns of it (terraform
        // from 1.5, OpenTofu: `cliconfig.go`): so the next error, often a registry no host
        // block redirected, is not a surprise.
        Some((var, path)) if !path.exists() => warn_missing_cli_config(settings, var, path),
        Some((var, path)) => tracing::debug!(
            "CLI configuration: {var} names {}; no other file is read",
            path.display()
        ),
        None => tracing::debug!(
            "CLI configuration ({flavor}): looked at {}",
            if search.candidates.is_empty() {
                "nothing (HOME is not set)".to_owned()
            } else {
                list(&search.candidates)
            }
        ),
    }
    tracing::debug!("CLI configuration: read {}", config.describe_files());
    for other in &search.other_tool_files {
        tracing::info!(
            "{} exists but is not read under the {flavor} flavor (the other tool's file);              use --flavor, or name it with TF_CLI_CONFIG_FILE, to read it",
            other.display()
        );
    }
    Ok(config)
}

/// The network settings of `cli_config` and the environment (`TF_TOKEN_…`,
/// `SSL_CERT_FILE`, `TF_REGISTRY_CLIENT_TIMEOUT`, `DOCKER_CONFIG`), downloads capped at
/// `TSTORE_MAX_ARCHIVE_BYTES`.
pub(crate) fn network_settings(settings: &Settings, cli_config: &CliConfig) -> NetworkSettings {
    NetworkSettings::from_environment(cli_config, &settings.env.unicode_vars())
        .with_max_download_bytes(settings.limits.max_total_bytes)
}
