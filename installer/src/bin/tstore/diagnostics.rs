//! Errors as tofu prints them: `Error: summary`, the detail, causes and a hint.

use std::io::Write;

use tstore_installer::InstallError;

/// Print an error as tofu does (`Error: summary`, blank line, detail), then the chain
/// of causes and a hint when there is one.
pub fn print_error(err: &anyhow::Error) {
    let mut out = String::new();
    if let Some(install) = err.downcast_ref::<InstallError>() {
        out.push_str(&format!(
            "\n{}\n\n{install}\n",
            crate::style::error(install.summary())
        ));
        let mut source = std::error::Error::source(install);
        while let Some(cause) = source {
            out.push_str(&format!("  caused by: {cause}\n"));
            source = cause.source();
        }
        if let Some(hint) = install.hint() {
            out.push_str(&format!("\n  hint: {hint}\n"));
        }
    } else {
        out.push_str(&format!("\n{}\n", crate::style::error(&err.to_string())));
        for cause in err.chain().skip(1) {
            out.push_str(&format!("  caused by: {cause}\n"));
        }
    }
    let _ = std::io::stderr().write_all(out.as_bytes());
}
