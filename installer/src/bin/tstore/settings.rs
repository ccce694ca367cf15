//! Everything the binary takes from its environment, read once at start.
//!
//! [`Environment::capture`] reads the process environment: this module is the only place
//! that does. [`Settings::resolve`] turns it and the command line into the typed settings
//! every command gets. Libraries receive values, never variable names to read: those that
//! interpret variables by name (the CLI configuration's `TF_CLI_CONFIG_FILE`,
//! `TF_PLUGIN_CACHE_DIR` and `$VAR` paths, `TF_VAR_*` and `TF_WORKSPACE`, `TF_TOKEN_*`,
//! `SSL_CERT_FILE`, `TF_REGISTRY_CLIENT_TIMEOUT`, `DOCKER_CONFIG`, …) get the snapshot,
//! [`Settings::env`]. The variables that stand for flags (`TSTORE_HOME`, `TSTORE_MOUNT`,
//! `TSTORE_FLAVOR`, `TSTORE_NO_FUSE`, `TSTORE_KEEP_ARCHIVES`) are clap's `env` attributes and
//! arrive through the parsed command line (`cli/mod.rs`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tstore_installer::{ModuleMirror, ReleaseAge, RepositoryReleaseAge};
use tstore_store::Limits;
use tstore_tofu::flavor::{DecidedBy, FlavorChoice};

use crate::{cli, flavor};

/// The process environment as it was at start, every variable in its order.
pub(crate) struct Environment {
    vars: Vec<(OsString, OsString)>,
}

impl Environment {
    /// Read the process environment.
    pub(crate) fn capture() -> Environment {
        Environment {
            vars: std::env::vars_os().collect(),
        }
    }

    /// A client's environment, as the init server received it.
    pub(crate) fn from_vars(vars: Vec<(OsString, OsString)>) -> Environment {
        Environment { vars }
    }

    /// Every variable, in order.
    pub(crate) fn vars(&self) -> &[(OsString, OsString)] {
        &self.vars
    }

    /// The value of `name`, as `getenv` finds it (the first one).
    pub(crate) fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// The value of `name` if it is set and unicode, as `std::env::var(name).ok()`.
    pub(crate) fn var(&self, name: &str) -> Option<&str> {
        self.var_os(name).and_then(OsStr::to_str)
    }

    /// The value of `name`, unless it is unset or empty.
    fn non_empty_os(&self, name: &str) -> Option<&OsStr> {
        self.var_os(name).filter(|v| !v.is_empty())
    }

    /// A lookup for the libraries that take one (`CliConfig::load`, `effective_methods`).
    pub(crate) fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |name| self.var(name).map(str::to_owned)
    }

    /// The variables whose names and values are unicode, in order, for the libraries that
    /// scan them (`TF_VAR_*`, `TF_TOKEN_*`); the others no tool could have meant for them.
    pub(crate) fn unicode_vars(&self) -> Vec<(String, String)> {
        self.vars
            .iter()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v.to_str()?.to_owned())))
            .collect()
    }

    /// `NO_COLOR` set to anything but the empty string: no colour, as no-color.org asks.
    pub(crate) fn no_color(&self) -> bool {
        self.non_empty_os("NO_COLOR").is_some()
    }

    /// The store's directory when neither `--store` nor `TSTORE_HOME` names one:
    /// `$XDG_DATA_HOME/tstore`, else `~/.local/share/tstore` (`None`: no `HOME`).
    pub(crate) fn default_store_dir(&self) -> Option<PathBuf> {
        match self.non_empty_os("XDG_DATA_HOME") {
            Some(xdg) => Some(PathBuf::from(xdg).join("tstore")),
            None => Some(PathBuf::from(self.var_os("HOME")?).join(".local/share/tstore")),
        }
    }

    /// `TSTORE_LOG`: the log filter (`tracing_subscriber`'s `EnvFilter` directives).
    pub(crate) fn log_filter(&self) -> Option<&str> {
        self.var("TSTORE_LOG")
    }
}

/// Settings shared by every command, resolved once from flags, environment and defaults.
pub(crate) struct Settings {
    /// `TSTORE_HOME`: where the store lives.
    pub(crate) store: PathBuf,
    /// `TSTORE_MOUNT`: the read-only view every link points into.
    pub(crate) mount: PathBuf,
    /// The flavor `--flavor` or `TSTORE_FLAVOR` gives, if any; otherwise each command
    /// decides it for its working directory ([`Settings::flavor_for`]).
    pub(crate) flavor_given: Option<FlavorChoice>,
    /// `--tool-version` / `TSTORE_TOOL_VERSION` as given (`tool_version.rs` reads it).
    pub(crate) tool_version_given: Option<String>,
    /// Whether it came from `TSTORE_TOOL_VERSION`.
    pub(crate) tool_version_from_env: bool,
    /// `$XDG_STATE_HOME/tstore` (default `~/.local/state/tstore`): the machine key, the
    /// tool versions already asked, the git refs checked to reach locked commits, the
    /// registry of `cli-config --out` files.
    pub(crate) state_dir: Option<PathBuf>,
    /// Archive limits (`TSTORE_MAX_ARCHIVE_BYTES`, `TSTORE_MAX_ENTRY_BYTES`,
    /// `TSTORE_MAX_ENTRIES`, `TSTORE_MAX_RATIO`), defaults from the store.
    pub(crate) limits: Limits,
    /// `--no-fuse` / `TSTORE_NO_FUSE`: use the views symlink instead of a FUSE mount.
    pub(crate) no_fuse: bool,
    /// `TSTORE_FUSE_PASSTHROUGH=1`: the mount daemon asks the kernel for FUSE passthrough
    /// (opt-in: `tstore_fsmount::MountOptions::passthrough` says why).
    pub(crate) fuse_passthrough: bool,
    /// `--keep-archives` / `TSTORE_KEEP_ARCHIVES`: keep provider zips whole in the store.
    pub(crate) keep_archives: bool,
    /// `--trust-lock` / `TSTORE_TRUST_LOCK`: where a git ref's reach of its locked commit
    /// cannot be checked (an outage), the lock's checksums alone decide.
    pub(crate) trust_lock: bool,
    /// The cooldown given for this run, and by what: `--min-release-age`, else
    /// `TSTORE_MIN_RELEASE_AGE` (each wins over `.tstore.hcl`).
    pub(crate) min_release_age_given: Option<(String, &'static str)>,
    /// `TSTORE_MIN_RELEASE_AGE_EXCLUDE`: source patterns, comma-separated, added to the
    /// repository file's exclusions.
    pub(crate) min_release_age_exclude: Vec<String>,
    /// `TSTORE_MODULE_MIRROR` as set (empty: no module mirror, whatever `.tstore.hcl` says).
    pub(crate) module_mirror_env: Option<String>,
    /// The machine key that binds the store's index to this machine
    /// (`$XDG_STATE_HOME/tstore/machine-key`, default `~/.local/state/tstore/machine-key`).
    /// Kept outside the store on purpose: a store restored from a cache does not carry it,
    /// so its index is re-verified before it is trusted.
    pub(crate) machine_key: Option<PathBuf>,
    /// `HOME`.
    pub(crate) home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, default `~/.config`: where the systemd user unit goes.
    pub(crate) config_home: Option<PathBuf>,
    /// `PATH`: where the flavor's tool and `fusermount3` are looked for.
    pub(crate) search_path: Option<OsString>,
    /// `TF_DATA_DIR` (unless empty), which moves `.terraform` as it does for tofu and
    /// terraform.
    pub(crate) tf_data_dir: Option<String>,
    /// `TF_CLI_CONFIG_FILE` (unless empty): the CLI configuration `cli-config` starts from.
    pub(crate) tf_cli_config_file: Option<PathBuf>,
    /// The whole environment, for the libraries that interpret variables by name.
    pub(crate) env: Environment,
    /// This run: what it learns from remotes and what it says once. Made with the
    /// settings, once per command (or served request), and dropped with them.
    pub(crate) run: std::sync::Arc<tstore_installer::Run>,
}

impl Settings {
    /// This machine's record of git refs checked to reach locked commits.
    pub(crate) fn reach_records(&self) -> Option<PathBuf> {
        self.state_dir.as_ref().map(|d| d.join("git-reach.json"))
    }

    /// The module mirror of the working directory `dir`: `TSTORE_MODULE_MIRROR` (a CI job's
    /// choice wins; set empty, none), else `module_mirror` in the repository's `.tstore.hcl`.
    pub(crate) fn module_mirror_for(&self, dir: &Path) -> Result<Option<ModuleMirror>> {
        match self.module_mirror_env.as_deref() {
            Some("") => Ok(None),
            Some(text) => ModuleMirror::parse(text, "TSTORE_MODULE_MIRROR")
                .map(Some)
                .map_err(anyhow::Error::msg),
            None => Ok(tstore_installer::find_repository_module_mirror(dir)?),
        }
    }

    /// The cooldown for the working directory `dir`: `--min-release-age`, else
    /// `TSTORE_MIN_RELEASE_AGE`, else `min_release_age` of the repository's `.tstore.hcl`;
    /// the file's exclusions and `TSTORE_MIN_RELEASE_AGE_EXCLUDE`'s together. `None`: off.
    /// A given age that overrides the file's other one is said once per run.
    pub(crate) fn release_age_for(&self, dir: &Path) -> Result<Option<ReleaseAge>> {
        let file = tstore_installer::find_repository_release_age(dir)?;
        if let Some(file) = &file {
            self.say_policy_change(file);
        }
        let (min_age, set_by) = match (&self.min_release_age_given, &file) {
            (Some((text, by)), file) => {
                let age = ReleaseAge::parse_age(text).map_err(|e| anyhow::anyhow!("{by}: {e}"))?;
                if let Some(RepositoryReleaseAge {
                    min_age: Some(theirs),
                    file,
                    ..
                }) = file
                {
                    if *theirs != age && self.run.first_time("min_release_age overridden") {
                        tracing::warn!(
                            "{by} ({}) overrides min_release_age ({}) of {}",
                            ReleaseAge::age_text(age),
                            ReleaseAge::age_text(*theirs),
                            file.display()
                        );
                    }
                }
                (age, (*by).to_owned())
            }
            (
                None,
                Some(RepositoryReleaseAge {
                    min_age: Some(age),
                    file,
                    ..
                }),
            ) => (*age, format!("min_release_age in {}", file.display())),
            (None, _) => return Ok(None),
        };
        if min_age.is_zero() {
            return Ok(None);
        }
        let mut exclude = file.map(|f| f.exclude).unwrap_or_default();
        exclude.extend(self.min_release_age_exclude.iter().cloned());
        Ok(Some(ReleaseAge {
            min_age,
            exclude,
            set_by,
        }))
    }

    /// Say, once per run, when the repository file's `min_release_age` differs from what the
    /// last init on this machine saw there (a checkout that lowers or drops its team's
    /// cooldown), and remember what it says now.
    fn say_policy_change(&self, file: &RepositoryReleaseAge) {
        let Some(state) = &self.state_dir else { return };
        let Some(before) = tstore_installer::policy_seen_before(
            &state.join("policy-seen.json"),
            &file.file,
            file.min_age,
        ) else {
            return;
        };
        let now = file
            .min_age
            .map_or_else(|| "none".to_owned(), ReleaseAge::age_text);
        if self.run.first_time("min_release_age changed") {
            tracing::warn!(
                "min_release_age of {} is now {now}; the last init on this machine ran under \
                 {before}: check that the team's cooldown is meant to change",
                file.file.display()
            );
        }
    }

    /// The settings of this command line in the environment `env`.
    pub(crate) fn resolve(cli: &cli::Cli, env: Environment) -> Result<Settings> {
        let home = env.var_os("HOME").map(PathBuf::from);
        let store = match &cli.store {
            Some(p) => p.clone(),
            None => env
                .default_store_dir()
                .context("HOME is not set; set TSTORE_HOME to choose the store's directory")?,
        };
        let mount = match &cli.mount {
            Some(p) => p.clone(),
            None => home
                .as_ref()
                .context("HOME is not set; set TSTORE_MOUNT to choose the mount path")?
                .join(".tofu-store"),
        };
        // A tool version that names its tool sets the flavor when --flavor does not.
        let tool_flavor = match &cli.tool_version {
            Some(given) => crate::tool_version::named_flavor(given)?,
            None => None,
        };
        let flavor_given = match (cli.flavor, tool_flavor) {
            (Some(flavor), _) => Some(FlavorChoice {
                flavor,
                decided_by: if cli.flavor_from_env {
                    DecidedBy::Environment
                } else {
                    DecidedBy::Flag
                },
            }),
            (None, Some(flavor)) => Some(FlavorChoice {
                flavor,
                decided_by: DecidedBy::ToolVersion,
            }),
            (None, None) => None,
        };
        let state_dir = match env.non_empty_os("XDG_STATE_HOME") {
            Some(xdg) => Some(PathBuf::from(xdg).join("tstore")),
            None => home.as_ref().map(|h| h.join(".local/state/tstore")),
        }
        .map(absolute)
        .transpose()?;
        let machine_key = state_dir.as_ref().map(|dir| dir.join("machine-key"));
        let config_home = match env.non_empty_os("XDG_CONFIG_HOME") {
            Some(dir) => Some(PathBuf::from(dir)),
            None => home.as_ref().map(|h| h.join(".config")),
        };
        let (store, mount) = (absolute(store)?, absolute(mount)?);
        tracing::debug!(
            "store {} ({}), mount path {} ({})",
            store.display(),
            if cli.store.is_some() {
                "TSTORE_HOME or --store"
            } else {
                "the default"
            },
            mount.display(),
            if cli.mount.is_some() {
                "TSTORE_MOUNT or --mount"
            } else {
                "the default"
            },
        );
        Ok(Settings {
            run: std::sync::Arc::new(tstore_installer::Run::new()),
            store,
            mount,
            flavor_given,
            tool_version_given: cli.tool_version.clone(),
            tool_version_from_env: cli.tool_version_from_env,
            state_dir,
            limits: archive_limits(&env)?,
            no_fuse: cli.no_fuse,
            fuse_passthrough: env.var_os("TSTORE_FUSE_PASSTHROUGH") == Some(OsStr::new("1")),
            keep_archives: cli.keep_archives,
            trust_lock: cli.trust_lock,
            min_release_age_given: match &cli.min_release_age {
                Some(age) => Some((age.clone(), "--min-release-age")),
                None => env
                    .var_os("TSTORE_MIN_RELEASE_AGE")
                    .filter(|v| !v.is_empty())
                    .map(|v| (v.to_string_lossy().into_owned(), "TSTORE_MIN_RELEASE_AGE")),
            },
            min_release_age_exclude: env
                .var_os("TSTORE_MIN_RELEASE_AGE_EXCLUDE")
                .map(|v| {
                    v.to_string_lossy()
                        .split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            module_mirror_env: env.var("TSTORE_MODULE_MIRROR").map(str::to_owned),
            machine_key,
            config_home,
            search_path: env.var_os("PATH").map(OsStr::to_owned),
            tf_data_dir: env
                .var("TF_DATA_DIR")
                .filter(|d| !d.is_empty())
                .map(Into::into),
            tf_cli_config_file: env.non_empty_os("TF_CLI_CONFIG_FILE").map(PathBuf::from),
            home,
            env,
        })
    }

    /// The flavor for the working directory `dir`, and the rule that decided it
    /// (`flavor.rs`).
    pub(crate) fn flavor_for(&self, dir: &Path) -> Result<FlavorChoice> {
        let search_path = self.search_path.as_deref().unwrap_or_default();
        flavor::resolve(self.flavor_given.as_ref(), dir, search_path)
    }
}

/// Archive limits, each overridable by an environment variable.
fn archive_limits(env: &Environment) -> Result<Limits> {
    let mut limits = Limits::default();
    for (var, field) in [
        ("TSTORE_MAX_ARCHIVE_BYTES", &mut limits.max_total_bytes),
        ("TSTORE_MAX_ENTRY_BYTES", &mut limits.max_entry_bytes),
        ("TSTORE_MAX_ENTRIES", &mut limits.max_entries),
        ("TSTORE_MAX_RATIO", &mut limits.max_ratio),
    ] {
        if let Some(value) = env.var_os(var) {
            let text = value.to_string_lossy();
            *field = text.trim().parse().with_context(|| {
                format!("{var}={text:?} is not a whole number; unset it or give a positive integer")
            })?;
        }
    }
    Ok(limits)
}

fn absolute(path: PathBuf) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path);
    }
    if path.as_os_str().is_empty() {
        bail!("an empty path was given for the store or the mount path");
    }
    Ok(std::path::absolute(&path)?)
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt as _;

    use super::*;

    fn environment(pairs: &[(&str, &[u8])]) -> Environment {
        Environment {
            vars: pairs
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from_vec(v.to_vec())))
                .collect(),
        }
    }

    #[test]
    fn lookups_answer_as_the_process_environment_would() {
        let env = environment(&[
            ("A", b"first"),
            ("A", b"second"),
            ("LATIN1", b"caf\xe9"),
            ("NO_COLOR", b""),
        ]);
        assert_eq!(env.var("A"), Some("first"), "the first, as getenv");
        assert_eq!(env.var("LATIN1"), None, "not unicode, as std::env::var");
        assert!(env.var_os("LATIN1").is_some());
        assert_eq!(env.var("UNSET"), None);
        assert!(!env.no_color(), "an empty NO_COLOR allows colour");
        assert!(environment(&[("NO_COLOR", b"1")]).no_color());
        let unicode: Vec<String> = env.unicode_vars().into_iter().map(|(k, _)| k).collect();
        assert_eq!(unicode, ["A", "A", "NO_COLOR"]);
    }

    #[test]
    fn archive_limits_are_whole_numbers() {
        let limits = archive_limits(&environment(&[("TSTORE_MAX_ENTRIES", b" 12 ")])).unwrap();
        assert_eq!(limits.max_entries, 12);
        let err = archive_limits(&environment(&[("TSTORE_MAX_RATIO", b"lots")])).unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains("TSTORE_MAX_RATIO=\"lots\" is not a whole number"),
            "{err}"
        );
    }
}
