//! Errors as tofu prints them: `Error: summary`, the detail, causes and a hint; or, for
//! `init -json`, as the JSON diagnostics `tofu init -json` prints on stdout.

use std::io::Write;

use tstore_installer::InstallError;

use crate::cli::UsageError;

/// One error, in the parts tofu's diagnostics have.
#[derive(Debug)]
pub(crate) struct Diagnostic {
    /// The line after `Error: `.
    pub summary: String,
    /// The paragraph below it, when there is one.
    pub detail: Option<String>,
    /// The chain of causes, outermost first.
    pub causes: Vec<String>,
    /// A suggestion, when there is an obvious next step.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// An error of a command: an [`InstallError`] (anywhere in the chain) gives tofu's
    /// summary with the error as detail; any other error is its own summary.
    pub(crate) fn from_error(err: &anyhow::Error) -> Diagnostic {
        if let Some(install) = err.downcast_ref::<InstallError>() {
            let mut causes = Vec::new();
            let mut source = std::error::Error::source(install);
            while let Some(cause) = source {
                causes.push(cause.to_string());
                source = cause.source();
            }
            Diagnostic {
                summary: install.summary().to_owned(),
                detail: Some(install.to_string()),
                causes,
                hint: install.hint(),
            }
        } else {
            Diagnostic {
                summary: err.to_string(),
                detail: None,
                causes: err.chain().skip(1).map(|c| c.to_string()).collect(),
                hint: None,
            }
        }
    }

    /// A command line that does not parse.
    pub(crate) fn from_usage(err: &UsageError) -> Diagnostic {
        Diagnostic {
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
            out.push_str(&format!("\n{detail}\n"));
        }
        for cause in &self.causes {
            out.push_str(&format!("  caused by: {cause}\n"));
        }
        if let Some(hint) = &self.hint {
            out.push_str(&format!("\n  hint: {hint}\n"));
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

/// Print an error as tofu does (`Error: summary`, blank line, detail), then the chain
/// of causes and a hint when there is one.
pub(crate) fn print_error(err: &anyhow::Error) {
    print_human(&Diagnostic::from_error(err));
}

/// Print `diagnostic` on stderr for people.
pub(crate) fn print_human(diagnostic: &Diagnostic) {
    let _ = std::io::stderr().write_all(diagnostic.human().as_bytes());
}

/// Print `diagnostic` on stdout as one JSON line (`init -json`); stderr gets nothing, as
/// with `tofu init -json`.
pub(crate) fn print_json(diagnostic: &Diagnostic) {
    let mut line = diagnostic.json_line(std::time::SystemTime::now());
    line.push('\n');
    let _ = std::io::stdout().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_diagnostic_has_tofus_shape() {
        let diagnostic = Diagnostic {
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
        let diagnostic = Diagnostic::from_error(&err);
        assert_eq!(diagnostic.summary, "outer");
        assert_eq!(diagnostic.detail, None);
        assert_eq!(diagnostic.causes, ["inner"]);
        assert_eq!(diagnostic.json_detail(), "caused by: inner");
    }
}
