//! For the fuzz harness (`fuzz/`) only, not part of the API: what it needs beyond the public
//! entry points it fuzzes.

/// Forget the configuration files parsed so far. [`crate::config`] remembers every file it
/// parsed for the life of the process; the harness parses a new file per input, and this keeps
/// that memo from growing without end (and an input from being answered by an earlier one's).
pub fn forget_parsed_config_files() {
    crate::config::parsed::forget_all();
}
