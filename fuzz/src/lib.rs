//! What the fuzz targets share: scratch directories on tmpfs, and one store with small
//! archive limits.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tstore_store::{Limits, Store};

/// Where scratch directories go: `/dev/shm` when there is one (the store fsyncs every blob;
/// on tmpfs that is free), else the system's temp directory.
fn scratch_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// A fresh, empty scratch directory, removed when dropped.
pub fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tstore-fuzz-")
        .tempdir_in(scratch_base())
        .expect("a scratch directory")
}

/// Archive limits small enough that an input cannot make a target slow or large.
pub fn small_limits() -> Limits {
    Limits {
        max_total_bytes: 1 << 20,
        max_entry_bytes: 256 << 10,
        max_entries: 256,
        max_ratio: 200,
    }
}

/// Inputs one store serves before it is removed and made anew: blobs of every input
/// accumulate in it.
const STORE_USES: u32 = 500;

struct Shared {
    store: Store,
    _dir: tempfile::TempDir,
    uses: u32,
}

static STORE: Mutex<Option<Shared>> = Mutex::new(None);

/// Run `f` with a store that has [`small_limits`] (one per process, made anew every
/// [`STORE_USES`] inputs).
pub fn with_store<T>(f: impl FnOnce(&Store) -> T) -> T {
    let mut guard = STORE.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_none_or(|s| s.uses >= STORE_USES) {
        *guard = None;
        let dir = scratch_dir();
        let store = Store::open(&dir.path().join("store"))
            .expect("a store")
            .with_limits(small_limits());
        *guard = Some(Shared {
            store,
            _dir: dir,
            uses: 0,
        });
    }
    let shared = guard.as_mut().expect("a store");
    shared.uses += 1;
    f(&shared.store)
}

/// Write `bytes` to a file named `name` in a fresh scratch directory; returns the directory
/// (removed when dropped) and the file's path.
pub fn write_scratch(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = scratch_dir();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("writing the input");
    (dir, path)
}

/// libFuzzer's panic hook aborts on every panic, also one the code under test contains: the
/// xz decoder runs on a thread of its own, whose panic (lzma-rs overflowing on a hostile
/// header) becomes an ingest error. Panics there are left to that containment; every
/// other panic still aborts.
fn contain_xz_decoder_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let aborting = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let contained = std::thread::current().name()
                == Some(tstore_store::XZ_DECODER_THREAD);
            if !contained {
                aborting(info);
            }
        }));
    });
}

/// Ingest `bytes` as a module package tar archive compressed as `compression`, as the
/// module fetch does (`tstore_store::Ingest::module_tar`).
pub fn ingest_module_tar(compression: tstore_store::TarCompression, bytes: &[u8]) {
    contain_xz_decoder_panics();
    let (_dir, archive) = write_scratch("module.tar", bytes);
    with_store(|store| {
        let _ = store.ingest().module_tar(&archive, compression);
    });
}
