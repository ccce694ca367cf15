//! Provider installation: the three-phase flow of `tstore init` ([`init`](init())),
//! `tstore providers lock` ([`lock`]) and the installation sources ([`sources`]).

mod archives;
mod error;
mod fetch;
mod init;
pub(crate) mod lock;
mod obtain;
mod report;
pub(crate) mod sources;

pub use self::archives::keep_source_archive;
pub use self::error::*;
pub use self::fetch::{fetch_locked_providers, FetchedProvider};
pub use self::init::*;
pub use self::obtain::ingest_mirror_package;
pub(crate) use self::obtain::*;
pub use self::report::*;
pub(crate) use crate::report::{Event, LockFileChange, Reporter};
