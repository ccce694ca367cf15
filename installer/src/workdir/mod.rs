//! What tstore writes for a working directory: links under `.terraform/` into the mount
//! path ([`link`]), never through a symlinked directory nor from a crafted key
//! ([`guard`]), files replaced atomically ([`atomic`]), the links that make the
//! directory a root of the store ([`roots`]), and the mount path itself ([`mountpoint`]).

pub mod atomic;
pub mod data_dir;
pub mod guard;
pub mod interrupt;
pub mod link;
pub mod mountpoint;
pub mod roots;
