//! Progress reporters: tofu-style lines on stdout, download bars and the module fetch bar on a
//! terminal.

use std::io::Write;

use tstore_installer::{Event, Reporter, SIGNING_SKIPPED};

/// Prints tofu-style progress lines to stdout; downloads get an indicatif bar on a
/// terminal (stderr) and one plain line otherwise.
pub(crate) struct HumanReporter {
    /// Present when stderr is a terminal.
    bars: Option<indicatif::MultiProgress>,
    active: std::sync::Mutex<std::collections::HashMap<String, indicatif::ProgressBar>>,
    /// The bar of a batch of parallel module fetches and the packages in flight.
    module_fetches: std::sync::Mutex<Option<(indicatif::ProgressBar, Vec<String>)>>,
    /// The line for a version reused from the lock file names it (the tool's release).
    names_reused_version: bool,
}

impl HumanReporter {
    pub(crate) fn new() -> Self {
        use std::io::IsTerminal;
        HumanReporter {
            bars: std::io::stderr()
                .is_terminal()
                .then(indicatif::MultiProgress::new),
            active: Default::default(),
            module_fetches: Default::default(),
            names_reused_version: false,
        }
    }

    /// Lines in the words of `tool`'s release where they changed between releases.
    pub(crate) fn for_tool(mut self, tool: &tstore_tofu::tool_version::ToolVersion) -> Self {
        self.names_reused_version = tool.follows(&tstore_tofu::tool_version::REUSED_VERSION_NAMED);
        self
    }

    /// Module fetch events; `true` if `event` was one. One bar on a terminal (stderr)
    /// counts finished packages and names the ones in flight; off a terminal nothing is
    /// drawn (tofu prints no per-package line either).
    fn module_fetch_event(&self, event: &Event<'_>) -> bool {
        let mut batch = self
            .module_fetches
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match *event {
            Event::FetchingModulePackages { total } => {
                if let Some(multi) = &self.bars {
                    let bar = multi.add(indicatif::ProgressBar::new(total as u64));
                    bar.set_style(
                        indicatif::ProgressStyle::with_template(
                            "Fetching module packages [{pos}/{len}] {wide_msg}",
                        )
                        .expect("valid template"),
                    );
                    *batch = Some((bar, Vec::new()));
                }
            }
            Event::ModulePackageStarted { package } => {
                if let Some((bar, in_flight)) = batch.as_mut() {
                    in_flight.push(package.to_owned());
                    bar.set_message(in_flight.join(", "));
                }
            }
            Event::ModulePackageFinished { package } => {
                if let Some((bar, in_flight)) = batch.as_mut() {
                    if let Some(i) = in_flight.iter().position(|p| p == package) {
                        in_flight.remove(i);
                    }
                    bar.set_message(in_flight.join(", "));
                    bar.inc(1);
                }
            }
            Event::FetchedModulePackages => {
                if let Some((bar, _)) = batch.take() {
                    bar.finish_and_clear();
                }
            }
            _ => return false,
        }
        true
    }

    /// A download's bar of bytes, labelled `label`, kept under `key` for its progress.
    fn add_bar(&self, multi: &indicatif::MultiProgress, key: &str, label: String) {
        let bar = multi.add(indicatif::ProgressBar::new(0));
        bar.set_style(
            indicatif::ProgressStyle::with_template("  {msg} [{bar:30}] {bytes}/{total_bytes}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(label);
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        active.insert(key.to_owned(), bar);
    }

    /// Download events; `true` if `event` was one.
    fn download_event(&self, event: &Event<'_>) -> bool {
        match *event {
            Event::Downloading {
                provider,
                version,
                url,
            } => {
                match &self.bars {
                    Some(multi) => self.add_bar(multi, provider, format!("{provider} v{version}")),
                    None => {
                        let said = format!("- Downloading {provider} v{version} from {url}");
                        let _ = writeln!(std::io::stderr(), "{}", crate::escape::line(&said));
                    }
                }
                true
            }
            // A module archive: a bar on a terminal, nothing more off one ("Downloading SOURCE
            // for KEY..." was said).
            Event::DownloadingModuleArchive { package } => {
                if let Some(multi) = &self.bars {
                    self.add_bar(multi, package, crate::escape::line(package).into_owned());
                }
                true
            }
            Event::DownloadedModuleArchive { package } => {
                let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(bar) = active.remove(package) {
                    bar.finish_and_clear();
                }
                true
            }
            Event::DownloadProgress {
                provider,
                bytes,
                total,
            } => {
                let active = self.active.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(bar) = active.get(provider) {
                    if let Some(total) = total {
                        bar.set_length(total);
                    }
                    bar.set_position(bytes);
                }
                true
            }
            _ => false,
        }
    }
}

impl Reporter for HumanReporter {
    fn event(&self, event: Event<'_>) {
        if self.download_event(&event) || self.module_fetch_event(&event) {
            return;
        }
        // Phase 3 (linking) has begun once these come: downloads are over.
        let linking = matches!(
            event,
            Event::Installing { .. } | Event::UsingPreviouslyInstalled { .. }
        );
        if linking {
            let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
            for (_, bar) in active.drain() {
                bar.finish_and_clear();
            }
        }
        let line = match event {
            Event::Downloading { .. }
            | Event::DownloadProgress { .. }
            | Event::DownloadingModuleArchive { .. }
            | Event::DownloadedModuleArchive { .. }
            | Event::FetchingModulePackages { .. }
            | Event::ModulePackageStarted { .. }
            | Event::ModulePackageFinished { .. }
            | Event::FetchedModulePackages => return,
            Event::InitializingModules => {
                // tstore's own words, styled: not escaped like the lines that quote input.
                let heading = crate::style::heading("Initializing modules...");
                let _ = writeln!(std::io::stdout(), "\n{heading}");
                return;
            }
            Event::DownloadingModule { source, key } => {
                format!("Downloading {source} for {key}...")
            }
            Event::ReusingLocked { provider, version } if self.names_reused_version => {
                format!("- Reusing version {version} of {provider} from the dependency lock file")
            }
            Event::ReusingLocked { provider, .. } => {
                format!("- Reusing previous version of {provider} from the dependency lock file")
            }
            Event::Finding {
                provider,
                constraints: "",
            } => format!("- Finding latest version of {provider}..."),
            Event::Finding {
                provider,
                constraints,
            } => format!("- Finding {provider} versions matching \"{constraints}\"..."),
            Event::UsingPreviouslyInstalled { provider, version } => {
                format!("- Using previously-installed {provider} v{version}")
            }
            Event::UsingFromStore { provider, version } => {
                format!("- Using {provider} v{version} from the store")
            }
            Event::Fetching {
                provider,
                version,
                platform,
            } => format!("- Fetching {provider} {version} for {platform}..."),
            Event::Retrieved {
                provider,
                version,
                platform,
                auth,
            } => format!("- Retrieved {provider} {version} for {platform} ({auth})"),
            Event::ChecksumsTracked {
                provider,
                platform,
                change,
            } => format!("- Obtained {provider} checksums for {platform}; {change}"),
            Event::ObtainedChecksums {
                provider,
                platform,
                auth,
            } => format!("- Obtained {provider} checksums for {platform} ({auth})"),
            Event::Installing { provider, version } => {
                format!("- Installing {provider} v{version}...")
            }
            Event::Installed {
                provider,
                version,
                auth,
                from_store,
            } => {
                let store = if from_store { ", from the store" } else { "" };
                if auth == SIGNING_SKIPPED {
                    // OpenTofu's own line for a package whose signature was not checked
                    // (internal/command/views/init.go@v1.12.2, `ProviderInstalledSkippedSignature`).
                    let store = if from_store { " (from the store)" } else { "" };
                    format!(
                        "- Installed {provider} v{version}. Signature validation was skipped due to \
                         the registry not containing GPG keys for this provider{store}"
                    )
                } else {
                    format!("- Installed {provider} v{version} ({auth}{store})")
                }
            }
        };
        let _ = writeln!(std::io::stdout(), "{}", crate::escape::line(&line));
    }
}

/// Reports downloads only (a line, or a bar on a terminal): for commands whose own lines
/// say what they fetch and why (`tstore push`).
pub(crate) struct DownloadsOnly(pub(crate) HumanReporter);

impl Reporter for DownloadsOnly {
    fn event(&self, event: Event<'_>) {
        self.0.download_event(&event);
    }
}

/// Reports nothing (for `--json`).
pub(crate) struct Silent;

impl Reporter for Silent {
    fn event(&self, _: Event<'_>) {}
}
