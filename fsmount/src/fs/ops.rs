//! The `fuser::Filesystem` operations of [`StoreFs`]: lookups, attributes, directory
//! listings and reads answer from the tree and blobs; every mutation answers `EROFS`.

use super::*;

impl fuser::Filesystem for StoreFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_max_readahead(1 << 20);
        let _ = config.add_capabilities(fuser::InitFlags::FUSE_PARALLEL_DIROPS);
        // Passthrough would give native read speed, but is opt-in
        // (`MountOptions::passthrough`). The store may sit on a stacked filesystem, hence
        // the stack depth.
        if self.passthrough_wanted
            && config
                .capabilities()
                .contains(fuser::InitFlags::FUSE_PASSTHROUGH)
            && config.set_max_stack_depth(2).is_ok()
            && config
                .add_capabilities(fuser::InitFlags::FUSE_PASSTHROUGH)
                .is_ok()
        {
            *self.passthrough.get_mut() = true;
        } else if config
            .capabilities()
            .contains(fuser::InitFlags::FUSE_NO_OPEN_SUPPORT)
            && config
                .add_capabilities(fuser::InitFlags::FUSE_NO_OPEN_SUPPORT)
                .is_ok()
        {
            *self.no_open.get_mut() = true;
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut state = self.state();
        if let Err(e) = self.prepare_dir(&mut state, parent.0) {
            return reply.error(e);
        }
        let child = match state.node(parent.0) {
            Some(Node::IndexDir { children } | Node::Dir { children }) => children.get(name),
            _ => None,
        };
        match child.and_then(|&c| self.attr(&state, c)) {
            Some((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let mut state = self.state();
        if matches!(state.node(ino.0), Some(Node::IndexDir { .. })) {
            if let Err(e) = self.refresh(&mut state) {
                return reply.error(e);
            }
        }
        match self.attr(&state, ino.0) {
            Some((attr, ttl)) => reply.attr(&ttl, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.state().node(ino.0) {
            Some(Node::Symlink { target }) => reply.data(target.as_bytes()),
            Some(_) => reply.error(Errno::EINVAL),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY || flags.0 & libc::O_TRUNC != 0 {
            return reply.error(Errno::EROFS);
        }
        let blob = match self.state().node(ino.0) {
            Some(Node::File { blob, .. }) => *blob,
            Some(Node::Symlink { .. }) => return reply.error(Errno::ELOOP),
            Some(_) => return reply.error(Errno::EISDIR),
            None => return reply.error(Errno::ENOENT),
        };
        if self.no_open.load(Ordering::Relaxed) {
            // The mount is `ro`, so the kernel itself refuses writable opens with EROFS
            // before asking us; from here on it will not ask again.
            return reply.error(Errno::ENOSYS);
        }
        let path = self.store.blob_path(&blob);
        let file = match std::fs::File::open(&path) {
            Ok(file) => {
                self.served.record(ino.0, &path, &file);
                Arc::new(file)
            }
            Err(e) => {
                tracing::error!("opening blob {}: {e}", path.display());
                return reply.error(Errno::EIO);
            }
        };
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let backing = if self.passthrough.load(Ordering::Relaxed) {
            let mut map = self.backing.lock().unwrap_or_else(|e| e.into_inner());
            match map.get(&ino.0).and_then(Weak::upgrade) {
                Some(b) => Some(b),
                None => match reply.open_backing(&*file) {
                    Ok(b) => {
                        let b = Arc::new(b);
                        map.insert(ino.0, Arc::downgrade(&b));
                        Some(b)
                    }
                    Err(e) => {
                        tracing::warn!("FUSE passthrough refused ({e}); serving reads instead");
                        self.passthrough.store(false, Ordering::Relaxed);
                        None
                    }
                },
            }
        } else {
            None
        };
        // Registered before the reply: a read may arrive on another thread right after it.
        self.handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                fh,
                Handle {
                    file,
                    _backing: backing.clone(),
                },
            );
        let flags = FopenFlags::FOPEN_KEEP_CACHE;
        match &backing {
            Some(b) => reply.opened_passthrough(FileHandle(fh), flags, b),
            None => reply.opened(FileHandle(fh), flags),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let file = if fh.0 == 0 && self.no_open.load(Ordering::Relaxed) {
            match self.file_by_inode(ino.0) {
                Ok(file) => Some(file),
                Err(e) => return reply.error(e),
            }
        } else {
            self.handles
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&fh.0)
                .map(|h| h.file.clone())
        };
        let Some(file) = file else {
            return reply.error(Errno::EBADF);
        };
        let mut buf = vec![0u8; size as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match file.read_at(&mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::error!("reading a blob: {e}");
                    return reply.error(Errno::EIO);
                }
            }
        }
        reply.data(&buf[..filled]);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let mut state = self.state();
        if let Err(e) = self.prepare_dir(&mut state, ino.0) {
            return reply.error(e);
        }
        let flags = match state.node(ino.0) {
            Some(Node::Dir { .. }) => FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR,
            _ => FopenFlags::empty(),
        };
        reply.opened(FileHandle(0), flags);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let mut state = self.state();
        if let Err(e) = self.prepare_dir(&mut state, ino.0) {
            return reply.error(e);
        }
        let children = match state.node(ino.0) {
            Some(Node::IndexDir { children } | Node::Dir { children }) => children,
            _ => return reply.error(Errno::ENOTDIR),
        };
        let dots = [
            (ino.0, FileType::Directory, OsStr::new(".")),
            (ino.0, FileType::Directory, OsStr::new("..")),
        ];
        let entries = dots.into_iter().chain(children.iter().map(|(name, &c)| {
            let kind = match state.node(c) {
                Some(Node::File { .. }) => FileType::RegularFile,
                Some(Node::Symlink { .. }) => FileType::Symlink,
                _ => FileType::Directory,
            };
            (c, kind, name.as_os_str())
        }));
        for (i, (child, kind, name)) in entries.enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing to flush; ENOSYS makes the kernel stop sending flush on every close (one
        // round trip less per small file).
        reply.error(Errno::ENOSYS);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: fuser::ReplyXattr,
    ) {
        reply.error(Errno::NO_XATTR);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: fuser::ReplyXattr) {
        if size == 0 {
            reply.size(0);
        } else {
            reply.data(&[]);
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.state().nodes.len() as u64;
        reply.statfs(0, 0, 0, files, 0, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: fuser::AccessFlags, reply: ReplyEmpty) {
        if mask.contains(fuser::AccessFlags::W_OK) {
            return reply.error(Errno::EROFS);
        }
        if self.state().node(ino.0).is_some() {
            reply.ok();
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    // Every mutation: EROFS. The mount is `ro` too, so the kernel answers most of these
    // itself; these are the second wall.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        erofs_entry(reply);
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        erofs_entry(reply);
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        erofs_entry(reply);
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: fuser::RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        erofs_entry(reply);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: fuser::WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: fuser::ReplyCreate,
    ) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }
}
