//! The read-only FUSE filesystem over the store (not implemented yet).
//!
//! It will serve `providers/HOST/NS/TYPE/VERSION/OS_ARCH/…` and `modules/<id>/…`
//! straight from the store's blobs at the mount path (`TSTORE_MOUNT`, default
//! `~/.tofu-store`), answering EROFS to every mutation. Until then the mount path is a
//! symlink to the store's materialized views (see `tstore_installer::mountpoint`), so
//! links written into working directories today stay valid when FUSE arrives.
//!
//! **Architecture Invariant:** fsmount only reads the store; it never writes.
