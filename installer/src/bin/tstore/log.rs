//! The log of a run: lines for people on stderr, no timestamps or module paths, coloured
//! only on a terminal. One log per run (a process of its own, or one request of the init
//! server), so what it says once it says once per run: an event carrying a `once` field is
//! dropped when that value was said before in this run (a library that sees no run, such
//! as the process crate naming a skipped `PATH` directory, says it each time it finds it).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// The log subscriber: `filter` as `TSTORE_LOG` gives it (default: warnings).
pub(crate) fn subscriber(
    filter: Option<&str>,
    colour: bool,
) -> impl tracing::Subscriber + Send + Sync + 'static {
    subscriber_to(std::io::stderr, filter, colour)
}

/// [`subscriber`], writing to `writer`.
fn subscriber_to<W>(
    writer: W,
    filter: Option<&str>,
    colour: bool,
) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(
            filter
                .and_then(|filter| tracing_subscriber::EnvFilter::try_new(filter).ok())
                .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(writer)
        .without_time()
        .with_target(false)
        .with_ansi(colour)
        .fmt_fields(tracing_subscriber::fmt::format::debug_fn(
            |writer, field, value| {
                match field.name() {
                    // What a line is said once by is not part of it.
                    "once" => Ok(()),
                    "message" => write!(writer, "{value:?}"),
                    name => write!(writer, " {name}={value:?}"),
                }
            },
        ))
        .finish()
        .with(OncePerRun::default())
}

/// Drops an event whose `once` value this log said already.
#[derive(Default)]
struct OncePerRun {
    said: Mutex<BTreeSet<String>>,
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for OncePerRun {
    fn event_enabled(&self, event: &tracing::Event<'_>, _: Context<'_, S>) -> bool {
        let mut once = OnceField(None);
        event.record(&mut once);
        match once.0 {
            Some(key) => self
                .said
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key),
            None => true,
        }
    }
}

/// An event's `once` field.
struct OnceField(Option<String>);

impl Visit for OnceField {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "once" {
            self.0 = Some(format!("{value:?}"));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "once" {
            self.0 = Some(value.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(lines: impl Fn()) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = subscriber_to(move || writer.clone(), None, false);
        tracing::subscriber::with_default(subscriber, lines);
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text
    }

    #[test]
    fn a_line_with_once_is_said_once_per_log_and_the_field_is_not_shown() {
        let say = || {
            tracing::warn!(once = "a", "skipped a");
            tracing::warn!(once = "a", "skipped a");
            tracing::warn!(once = %"b", "skipped b");
            tracing::warn!("plain");
            tracing::warn!("plain");
        };
        let text = logged(say);
        assert_eq!(text.matches("skipped a").count(), 1, "{text}");
        assert_eq!(text.matches("skipped b").count(), 1, "{text}");
        assert_eq!(text.matches("plain").count(), 2, "{text}");
        assert!(!text.contains("once"), "{text}");
        // Another run's log says it again.
        assert_eq!(logged(say).matches("skipped a").count(), 1);
    }
}
