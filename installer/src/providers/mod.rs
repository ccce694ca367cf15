//! Provider installation: the three-phase flow of `tstore init` ([`init`](init())),
//! `tstore providers lock` ([`lock`]) and the installation sources ([`sources`]).

mod init;
pub mod lock;
pub mod sources;

pub use self::init::*;
