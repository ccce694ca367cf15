//! What tstore writes for a working directory: links under `.terraform/` into the mount
//! path ([`link`]), every change made through [`safe_fs`] (a directory opened once and
//! walked without following symlinks, plain relative paths only, removals that remove the
//! entry and never what it points at), keys read back from state checked by [`guard`],
//! files replaced atomically ([`atomic`]), the `-plugin-dir` record tofu reads
//! ([`plugin_path`]), and the links that make the directory a root of the
//! store ([`root_links`]).

pub(crate) mod atomic;
pub(crate) mod data_dir;
pub(crate) mod guard;
pub mod interrupt;
pub(crate) mod link;
pub mod plugin_path;
pub(crate) mod root_links;
pub(crate) mod safe_fs;
