//! The store handle the server keeps between requests: its index connection (SQLite's
//! open, its schema read and its statements prepared) is paid once. Each request gets it
//! only after [`Store::reuse`] checked it again as a new open would, and only when the
//! request's settings would open the same store the same way; otherwise the request opens
//! its own, which is kept in turn.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use tstore_store::{Limits, Store};

use crate::Settings;

/// What decides how a store is opened.
#[derive(PartialEq, Eq)]
struct Opened {
    root: PathBuf,
    limits: Limits,
    keep_archives: bool,
    machine_key: Option<PathBuf>,
}

impl Opened {
    fn of(settings: &Settings) -> Opened {
        Opened {
            root: settings.store.clone(),
            limits: settings.limits.clone(),
            keep_archives: settings.keep_archives,
            machine_key: settings.machine_key.clone(),
        }
    }
}

/// The server's store handle, if any.
#[derive(Default)]
pub(crate) struct KeptStore(Mutex<Option<(Opened, Arc<Store>)>>);

impl KeptStore {
    /// The store for a request with `settings`: the kept handle, checked again, or a new
    /// one (which is kept from now on).
    pub(crate) fn for_request(&self, settings: &Settings) -> Result<Arc<Store>> {
        let wanted = Opened::of(settings);
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((opened, store)) = kept.as_mut() {
            // Nobody else holds it between requests: a handle still shared is not reused.
            if *opened == wanted {
                if let Some(handle) = Arc::get_mut(store) {
                    if handle.reuse()? {
                        return Ok(Arc::clone(store));
                    }
                }
            }
        }
        let store = Arc::new(crate::commands::open_store(settings)?);
        *kept = Some((wanted, Arc::clone(&store)));
        Ok(store)
    }

    /// Keep `store`, opened with `settings` (the server's own at its start).
    pub(crate) fn keep(&self, settings: &Settings, store: Store) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Opened::of(settings), Arc::new(store)));
    }

    /// Drop the kept handle: the next request opens the store anew (after a request that
    /// panicked, whatever it held half-done goes with it).
    pub(crate) fn forget(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
