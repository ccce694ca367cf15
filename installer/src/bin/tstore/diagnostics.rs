//! Errors as tofu prints them: `Error: summary`, the detail, causes and a hint; or, for
//! `init -json`, as the JSON diagnostics `tofu init -json` prints on stdout. Every library
//! error is rendered through its [`Diagnostic`] implementation, by one function
//! ([`ErrorReport::from_error`]).

use std::error::Error;
use std::io::Write;

use tstore_diagnostic::Diagnostic;
use tstore_installer::{InstallError, ModuleInstallError, PushError};
use tstore_store::StoreError;
use tstore_tofu::config::ConfigError;

use crate::cli::UsageError;

/// One error, in the parts tofu's diagnostics have.
#[derive(Debug)]
pub(crate) struct ErrorReport {
    /// The line after `Error: `.
    pub summary: String,
    /// The paragraph below it, when there is one.
    pub detail: Option<String>,
    /// The chain of causes, outermost first.
    pub causes: Vec<String>,
    /// A suggestion, when there is an obvious next step.
    pub hint: Option<String>,
}

impl ErrorReport {
    /// An error of a command, outermost first along its chain of causes. The report starts
    /// at the outermost error with a detail of its own (tofu's summary above its message:
    /// an [`InstallError`]), what wraps it dropped; else at the top. Its summary and detail
    /// are its [`Diagnostic`]'s (a plain error: its message, no detail), the errors below
    /// it are the causes, and the hint is the first one along the chain.
    pub(crate) fn from_error(err: &anyhow::Error) -> ErrorReport {
        let chain: Vec<&(dyn Error + 'static)> = err.chain().collect();
        let head = chain
            .iter()
            .position(|e| diagnostic(*e).is_some_and(|d| d.detail().is_some()))
            .unwrap_or(0);
        let chain = &chain[head..];
        let (summary, detail) = match diagnostic(chain[0]) {
            Some(d) => (d.summary(), d.detail()),
            None => (chain[0].to_string(), None),
        };
        ErrorReport {
            summary,
            detail,
            causes: chain[1..].iter().map(|c| c.to_string()).collect(),
            hint: chain.iter().find_map(|e| diagnostic(*e)?.hint()),
        }
    }

    /// A command line that does not parse.
    pub(crate) fn from_usage(err: &UsageError) -> ErrorReport {
        ErrorReport {
            summary: UsageError::SUMMARY.to_owned(),
            detail: Some(err.detail.clone()),
            causes: Vec::new(),
            hint: Some(format!("`{}` lists the flags it takes", err.help_command())),
        }
    }

    /// As people read it on stderr.
    fn human(&self) -> String {
        let mut out = format!("\n{}\n", crate::style::error(&self.summary));
        if let Some(detail) = &self.detail {
            out.push_str(&format!("\n{}\n", crate::escape::text(detail)));
        }
        for cause in &self.causes {
            // One line each: a cause quotes paths and sources from the checkout.
            out.push_str(&format!("  caused by: {}\n", crate::escape::line(cause)));
        }
        if let Some(hint) = &self.hint {
            out.push_str(&format!("\n  hint: {}\n", crate::escape::text(hint)));
        }
        out
    }

    /// The `detail` of the JSON diagnostic: the detail, causes and hint as paragraphs.
    fn json_detail(&self) -> String {
        let mut parts = Vec::new();
        if let Some(detail) = &self.detail {
            parts.push(detail.clone());
        }
        if !self.causes.is_empty() {
            let causes: Vec<String> = self
                .causes
                .iter()
                .map(|c| format!("caused by: {c}"))
                .collect();
            parts.push(causes.join("\n"));
        }
        if let Some(hint) = &self.hint {
            parts.push(format!("hint: {hint}"));
        }
        parts.join("\n\n")
    }

    /// One line of JSON as `tofu init -json` prints a diagnostic (its UI log line, keys in
    /// the order tofu's logger sorts them):
    /// `{"@level":"error","@message":"Error: …","@module":"tstore.ui","@timestamp":"…",
    /// "diagnostic":{"severity":"error","summary":"…","detail":"…"},"type":"diagnostic"}`.
    ///
    /// upstream: internal/command/views/json_view.go@v1.12.6 (`JSONView.Diagnostics`)
    pub(crate) fn json_line(&self, now: std::time::SystemTime) -> String {
        let line = serde_json::json!({
            "@level": "error",
            "@message": format!("Error: {}", self.summary),
            "@module": "tstore.ui",
            "@timestamp": crate::json::timestamp(now),
            "diagnostic": {
                "severity": "error",
                "summary": self.summary,
                "detail": self.json_detail(),
            },
            "type": "diagnostic",
        });
        line.to_string()
    }
}

/// `e` as the library error it is, when it is one: every library error type that
/// implements [`Diagnostic`] is listed here.
fn diagnostic<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a dyn Diagnostic> {
    if let Some(e) = e.downcast_ref::<InstallError>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<StoreError>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<ModuleInstallError>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<PushError>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<ConfigError>() {
        return Some(e);
    }
    None
}

/// Print an error as tofu does (`Error: summary`, blank line, detail), then the chain
/// of causes and a hint when there is one.
pub(crate) fn print_error(err: &anyhow::Error) {
    print_human(&ErrorReport::from_error(err));
}

/// Print `report` on stderr for people.
pub(crate) fn print_human(report: &ErrorReport) {
    let _ = std::io::stderr().write_all(report.human().as_bytes());
}

/// Print `report` on stdout as one JSON line (`init -json`); stderr gets nothing, as
/// with `tofu init -json`.
pub(crate) fn print_json(report: &ErrorReport) {
    let mut line = report.json_line(std::time::SystemTime::now());
    line.push('\n');
    let _ = std::io::stdout().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_diagnostic_has_tofus_shape() {
        let diagnostic = ErrorReport {
            summary: "Failed to install provider".into(),
            detail: Some("the package is bad".into()),
            causes: vec!["short read".into()],
            hint: Some("try again".into()),
        };
        let epoch = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_795_600_890_000_042);
        let line = diagnostic.json_line(epoch);
        assert_eq!(
            line,
            r#"{"@level":"error","@message":"Error: Failed to install provider","@module":"tstore.ui","@timestamp":"2026-11-25T10:01:30.000042Z","diagnostic":{"severity":"error","summary":"Failed to install provider","detail":"the package is bad\n\ncaused by: short read\n\nhint: try again"},"type":"diagnostic"}"#
        );
    }

    #[test]
    fn a_plain_error_is_its_own_summary_with_its_causes() {
        let err = anyhow::anyhow!("inner").context("outer");
        let diagnostic = ErrorReport::from_error(&err);
        assert_eq!(diagnostic.summary, "outer");
        assert_eq!(diagnostic.detail, None);
        assert_eq!(diagnostic.causes, ["inner"]);
        assert_eq!(diagnostic.json_detail(), "caused by: inner");
    }

    fn open_to_others() -> StoreError {
        StoreError::OpenToOthers {
            path: "/s".into(),
            mode: 0o775,
        }
    }

    /// A store error under the binary's context: the context is the summary, the store's
    /// message a cause, and its hint (no longer part of the message) comes last, as before.
    #[test]
    fn a_library_errors_hint_is_found_along_the_chain() {
        let err = anyhow::Error::from(open_to_others()).context("cannot open the store at /s");
        let report = ErrorReport::from_error(&err);
        assert_eq!(
            report.human(),
            "\nError: cannot open the store at /s\n  caused by: the store at /s can be written \
             by other users (mode 775)\n\n  hint: `chmod 700 /s`; a store is private to its owner\n"
        );
        let alone = ErrorReport::from_error(&anyhow::Error::from(open_to_others()));
        assert_eq!(
            alone.human(),
            "\nError: the store at /s can be written by other users (mode 775)\n\n  hint: \
             `chmod 700 /s`; a store is private to its owner\n"
        );
    }

    /// An install error heads the report wherever it is in the chain: tofu's summary, its
    /// message as the detail; the store error below it gives the hint it lacks.
    #[test]
    fn an_install_error_gives_tofus_summary_and_its_causes_hint() {
        let install = InstallError::Store {
            provider: "example.com/acme/thing".into(),
            version: "1.0.0".parse().unwrap(),
            source: open_to_others(),
        };
        let err = anyhow::Error::from(install).context("dropped");
        let report = ErrorReport::from_error(&err);
        assert_eq!(report.summary, "Failed to install provider");
        assert_eq!(
            report.detail.as_deref(),
            Some("store operation failed for provider example.com/acme/thing 1.0.0")
        );
        assert_eq!(
            report.causes,
            ["the store at /s can be written by other users (mode 775)"]
        );
        assert_eq!(
            report.hint.as_deref(),
            Some("`chmod 700 /s`; a store is private to its owner")
        );
    }
}
