//! `--json` output: one pretty-printed JSON document on stdout, ending in a newline. Every
//! document is an object whose first field is `"format_version"` ([`FORMAT_VERSION`]): a
//! script checks it, and it changes only when a field changes meaning or goes away (new
//! fields may appear without it).

use std::cell::RefCell;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

thread_local! {
    /// Documents [`print`] keeps instead of printing, while [`capture`] runs (scoped to
    /// that call, not a run's memory).
    static CAPTURED: RefCell<Option<Vec<serde_json::Value>>> = const { RefCell::new(None) };
}

/// Run `f`, keeping the JSON documents it prints instead of printing them (a command that
/// runs another for each of several directories makes one document of theirs).
///
/// The capture is this thread's for the call's length only: it ends when `f` returns or
/// unwinds (a served request that panics leaves nothing captured for the next).
pub(crate) fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<serde_json::Value>) {
    /// Ends the capture, however `f` ends.
    struct Ends;
    impl Drop for Ends {
        fn drop(&mut self) {
            CAPTURED.with(|c| *c.borrow_mut() = None);
        }
    }
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let ends = Ends;
    let result = f();
    let documents = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    drop(ends);
    (result, documents)
}

/// The version of the `--json` formats.
pub(crate) const FORMAT_VERSION: u64 = 1;

/// Print `value` as the command's JSON document, with `format_version` first.
pub(crate) fn print(value: &impl Serialize) -> Result<()> {
    let mut document = serde_json::Map::new();
    document.insert("format_version".into(), FORMAT_VERSION.into());
    match serde_json::to_value(value)? {
        serde_json::Value::Object(fields) => document.extend(fields),
        other => {
            document.insert("value".into(), other);
        }
    }
    let document = serde_json::Value::Object(document);
    let kept = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(documents) => {
            documents.push(document.clone());
            true
        }
        None => false,
    });
    if kept {
        return Ok(());
    }
    let mut out = crate::say::stdout();
    serde_json::to_writer_pretty(&mut out, &document)?;
    writeln!(out)?;
    Ok(())
}

/// An RFC 3339 time in UTC with microseconds (`2026-11-25T10:01:30.000042Z`), the form of
/// the `@timestamp` of tofu's JSON UI lines (its logger writes local time with an offset;
/// UTC is the same instant).
pub(crate) fn timestamp(at: std::time::SystemTime) -> String {
    humantime::format_rfc3339_micros(at).to_string()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{capture, print, timestamp, CAPTURED};

    #[test]
    fn timestamps_are_rfc3339_utc_with_microseconds() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            timestamp(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000000Z"
        );
        assert_eq!(
            timestamp(UNIX_EPOCH + Duration::from_micros(1_795_600_890_123_456)),
            "2026-11-25T10:01:30.123456Z"
        );
    }

    #[test]
    fn a_capture_that_unwinds_leaves_nothing_captured() {
        let unwound = std::panic::catch_unwind(|| {
            capture(|| {
                print(&serde_json::json!({"a": 1})).unwrap();
                panic!("the request panicked");
            })
        });
        assert!(unwound.is_err());
        assert!(CAPTURED.with(|c| c.borrow().is_none()));
        let ((), documents) = capture(|| print(&serde_json::json!({"b": 2})).unwrap());
        assert_eq!(documents.len(), 1);
        assert_eq!(documents[0]["b"], 2);
    }
}
