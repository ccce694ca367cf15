//! What both phases of an install (modules, then providers) take about the working directory
//! they install into. The binary fills it once from the command line and the environment;
//! each phase's own options wrap it.

use std::path::PathBuf;
use std::sync::Arc;

use tstore_tofu::flavor::Flavor;
use tstore_tofu::static_eval::RootInputs;
use tstore_tofu::tool_version::ToolVersion;

use crate::net::NetworkSettings;
use crate::workdir::data_dir::DataDir;

/// One working directory's install settings, shared by the module and provider phases.
#[derive(Clone, Debug)]
pub struct WorkdirOptions {
    /// The working directory (root module), canonical.
    pub dir: PathBuf,
    /// Its data directory (`.terraform` or `TF_DATA_DIR`): installs go under `modules/` and
    /// `providers/`.
    pub data_dir: DataDir,
    /// Which tool's conventions apply: the default registry, the lock file's header, which
    /// files a module has.
    pub flavor: Flavor,
    /// Which release of the flavor's tool runs the directory: `required_version` is checked
    /// against it, and the rules that changed between releases follow it.
    pub tool: ToolVersion,
    /// The mount path links point into (`TSTORE_MOUNT`).
    pub mount: PathBuf,
    /// How to reach registries, mirrors and OCI registries.
    pub network: NetworkSettings,
    /// `-upgrade`: ignore the lock's selections, replace private copies even when unchanged.
    pub upgrade: bool,
    /// `-lockfile=readonly`: fail rather than change a lock file.
    pub lockfile_readonly: bool,
    /// The root module's variable values (`-var`, `-var-file`, `TF_VAR_*`, tfvars files)
    /// and workspace, for what tofu evaluates early (module sources and versions).
    pub variables: Arc<RootInputs>,
    /// The root module's test directory (tofu installs the modules its test files run).
    pub test_directory: String,
    /// `-backend=false` (or `-cloud=false`) was given: OpenTofu from 1.13 then reads no
    /// state (`tool_version::NO_STATE_WITHOUT_BACKEND`).
    pub backend_off: bool,
    /// The cooldown (`min_release_age`): a version chosen (no lock entry, `-upgrade`,
    /// `providers lock`, `modules lock`) is the newest old enough. `None`: off.
    pub release_age: Option<crate::ReleaseAge>,
}

impl WorkdirOptions {
    /// The root module as the configuration loader reads it: its inputs as the tool version
    /// evaluates them, and its test directory.
    pub(crate) fn root_module(&self) -> tstore_tofu::config::tree::RootModule {
        tstore_tofu::config::tree::RootModule {
            inputs: tstore_tofu::static_eval::Inputs::Root(self.root_inputs()),
            test_directory: self.test_directory_read(),
        }
    }

    /// The configuration's requirements (providers, state storage), its installed modules
    /// read from the data directory.
    pub(crate) fn configuration_requirements(
        &self,
    ) -> Result<
        tstore_tofu::config::tree::ConfigurationRequirements,
        tstore_tofu::config::tree::ModuleTreeError,
    > {
        tstore_tofu::config::tree::load_configuration_requirements(
            &self.dir,
            &self.data_dir.modules(),
            self.flavor,
            self.root_module(),
        )
    }
    /// The root module's inputs as the tool version evaluates a module's `source` and
    /// `version` and a provider requirement's: terraform ≥ 1.15 knows only `const`
    /// variables in the former (`tool_version::CONST_MODULE_SOURCES`), and from 1.17
    /// evaluates the latter (`tool_version::CONST_PROVIDER_REQUIREMENTS`).
    pub(crate) fn root_inputs(&self) -> Arc<RootInputs> {
        use tstore_tofu::tool_version::{CONST_MODULE_SOURCES, CONST_PROVIDER_REQUIREMENTS};
        let constant_only = self.tool.follows(&CONST_MODULE_SOURCES);
        let provider_requirements = self.tool.follows(&CONST_PROVIDER_REQUIREMENTS);
        if self.variables.constant_only() == constant_only
            && self.variables.provider_requirements() == provider_requirements
        {
            return Arc::clone(&self.variables);
        }
        Arc::new(
            (*self.variables)
                .clone()
                .with_constant_only(constant_only)
                .with_provider_requirements(provider_requirements),
        )
    }

    /// The root module's test directory when the tool version installs the modules its
    /// test files call (`tool_version::TEST_FILE_MODULES`); `None`: they are not read.
    pub(crate) fn test_directory_read(&self) -> Option<String> {
        self.tool
            .follows(&tstore_tofu::tool_version::TEST_FILE_MODULES)
            .then(|| self.test_directory.clone())
    }

    /// Settings for `dir` with nothing asked of the command line: the newest release of the
    /// flavor's tool, no upgrade, the lock file writable, no variables, the default test
    /// directory.
    pub fn new(
        dir: PathBuf,
        data_dir: DataDir,
        flavor: Flavor,
        mount: PathBuf,
        network: NetworkSettings,
    ) -> WorkdirOptions {
        WorkdirOptions {
            dir,
            data_dir,
            flavor,
            tool: ToolVersion::newest(flavor),
            mount,
            network,
            upgrade: false,
            lockfile_readonly: false,
            variables: Arc::default(),
            test_directory: tstore_tofu::config::test_files::DEFAULT_TEST_DIRECTORY.to_owned(),
            backend_off: false,
            release_age: None,
        }
    }
}
