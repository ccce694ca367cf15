//! Development tool for `scripts/corpus-check`: parses configuration files the way
//! `tstore init` does and prints one verdict per file, tab-separated:
//!
//! ```text
//! ok      PATH
//! error   PATH    MESSAGE
//! ```
//!
//! Paths come from the arguments, or one per line on stdin when there are none.
//! The exit status is 0 whenever every file was judged, whatever the verdicts.

use std::io::{self, BufRead, Write};
use std::path::Path;

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let paths: Vec<String> = if args.is_empty() {
        io::stdin().lock().lines().collect::<io::Result<_>>()?
    } else {
        args
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    for path in paths.iter().filter(|p| !p.is_empty()) {
        match tstore_tofu::config::check_file(Path::new(path)) {
            Ok(()) => writeln!(out, "ok\t{path}")?,
            Err(e) => {
                let message = e.to_string().replace(['\n', '\t'], " ");
                writeln!(out, "error\t{path}\t{message}")?
            }
        }
    }
    out.flush()
}
