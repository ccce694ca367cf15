//! Where provider packages come from, one module per installation method: filesystem
//! mirrors ([`fs_mirror`]), origin registries ([`registry`]), network mirrors
//! ([`net_mirror`]) and OCI registries ([`oci_mirror`]). Each lists versions and hands over a package with the hashes it
//! vouches for; verifying and committing them is the install flow's job.

pub(crate) mod fs_mirror;
pub(crate) mod net_mirror;
pub(crate) mod oci_mirror;
pub(crate) mod registry;
