//! The working directory's `.terraform/`: links into the mount path ([`link`]) and the
//! mount path itself ([`mountpoint`]).

pub mod atomic;
pub mod link;
pub mod mountpoint;
