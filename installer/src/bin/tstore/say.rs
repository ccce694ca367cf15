//! Writing to the user's standard streams. A reader that goes away (`tstore init | head`,
//! a closed terminal, a served client whose pipe broke) never stops the command: what it
//! can no longer read is dropped, as tofu drops it, and the command ends as it would have.
//! `outln!`/`errln!` panic on such a write; the binary uses these instead (a lint
//! in `main.rs` forbids the others).

use std::io::Write;

/// Write `text` to stdout; a failed write is dropped.
pub(crate) fn out(text: std::fmt::Arguments<'_>) {
    let _ = std::io::stdout().lock().write_fmt(text);
}

/// Write `text` to stderr; a failed write is dropped.
pub(crate) fn err(text: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(text);
}

/// stdout as a writer for `write!`: what a reader that went away cannot take is dropped
/// (the write reports it taken), so a command's result does not turn into "Broken pipe".
pub(crate) fn stdout() -> Lossy<std::io::Stdout> {
    Lossy(std::io::stdout())
}

/// A writer whose writes to a reader that went away are dropped.
pub(crate) struct Lossy<W>(W);

impl<W: Write> Write for Lossy<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}

/// `print!`, without the panic on a reader that went away.
macro_rules! out {
    ($($arg:tt)*) => { $crate::say::out(format_args!($($arg)*)) };
}

/// `outln!`, without the panic on a reader that went away.
macro_rules! outln {
    () => { $crate::say::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::say::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `errln!`, without the panic on a reader that went away.
macro_rules! errln {
    () => { $crate::say::err(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::say::err(format_args!("{}\n", format_args!($($arg)*))) };
}
