//! The store's index as the memory of configuration files' facts between processes
//! ([`tstore_tofu::config::FactsCache`]): a file whose bytes an earlier init parsed, under
//! the same rules and this very tstore build, is not parsed again. Facts are keyed by the
//! content's BLAKE3 (the id the store gives it as a blob) and the rules, to which this
//! build's version is added: another build may read files otherwise.
//!
//! A file of a module package's view is named by the package's tree in the index, not
//! read: the walk reads a package only after `Store::trusted_package` found its view as
//! the index records it (a view changed through a link without FUSE is installed again
//! first), so the tree names the bytes there.
//!
//! A failure to read or record facts is not an error: the file is parsed (and the failure
//! said at debug level).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tstore_store::{BlobId, EntryKind, PackageKey, Store, TreeId};
use tstore_tofu::config::{set_facts_cache, ContentId, FactsCache};

/// The rules' suffix: this build.
const BUILD: &str = env!("TSTORE_LONG_VERSION");

/// The most bytes of facts a process keeps in memory ([`KEPT`]).
const KEPT_BYTES: usize = 64 << 20;

/// The facts this process has read or recorded, by content and rules: a fact is a function
/// of its content and rules (tstore's build among them), true whichever init read it, so an
/// init server keeps them for every request it runs (the parser's own memo of decoded facts
/// also keys the path a file is shown under, which differs between checkouts; this one does
/// not). What a request learns of the store (which package has which tree) is asked again.
/// Only facts of a trusted index are read
/// (a restored index's are dropped before any read). Past [`KEPT_BYTES`], all are dropped
/// and read again as needed.
static KEPT: Mutex<Kept> = Mutex::new(Kept {
    bytes: 0,
    facts: None,
});

/// Facts by the rules they were derived under and their content.
type FactsByContent = HashMap<(String, ContentId), Arc<[u8]>>;

struct Kept {
    bytes: usize,
    facts: Option<FactsByContent>,
}

impl Kept {
    fn fact(&self, rules: &str, id: &ContentId) -> Option<Vec<u8>> {
        let key = (rules.to_owned(), *id);
        self.facts.as_ref()?.get(&key).map(|f| f.to_vec())
    }

    fn keep_fact(&mut self, rules: &str, id: &ContentId, facts: &[u8]) {
        if self.bytes + facts.len() > KEPT_BYTES {
            self.facts = None;
            self.bytes = 0;
        }
        self.bytes += facts.len();
        self.facts
            .get_or_insert_with(HashMap::new)
            .insert((rules.to_owned(), *id), facts.into());
    }
}

fn kept() -> std::sync::MutexGuard<'static, Kept> {
    KEPT.lock().unwrap_or_else(PoisonError::into_inner)
}

struct FactsInStore {
    store: Arc<Store>,
    /// The store's directory of module package views (`…/views/modules`).
    module_views: Option<PathBuf>,
    /// Per tree: its files (decoded once per init).
    trees: Mutex<HashMap<TreeId, Arc<TreeFiles>>>,
}

/// A tree's regular files by path, and the directories that hold a symlink.
struct TreeFiles {
    files: HashMap<String, BlobId>,
    with_symlinks: std::collections::HashSet<String>,
}

/// The directory part of a `/`-separated tree path (`""` at the top).
fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

impl FactsInStore {
    /// The key's rules: the parser's, then this build.
    fn rules(rules: &str) -> String {
        format!("{rules} tstore {BUILD}")
    }

    /// The files of module package `id` by path, as its tree in the index says now (the
    /// package is looked up every time: a package installed again has another tree).
    fn files_of(&self, id: &str) -> Option<Arc<TreeFiles>> {
        let tree_id = self.store.package_tree(&PackageKey::module(id)).ok()??;
        let mut trees = self.trees.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(files) = trees.get(&tree_id) {
            return Some(Arc::clone(files));
        }
        let tree = self.store.tree(&tree_id).ok()?;
        let mut files = TreeFiles {
            files: HashMap::new(),
            with_symlinks: Default::default(),
        };
        for e in tree.entries() {
            match e.kind {
                EntryKind::File { blob, .. } => {
                    files.files.insert(e.path.clone(), blob);
                }
                EntryKind::Symlink { .. } => {
                    files.with_symlinks.insert(parent_of(&e.path).to_owned());
                }
            }
        }
        let files = Arc::new(files);
        trees.insert(tree_id, Arc::clone(&files));
        Some(files)
    }

    /// Module package id and `/`-separated path inside it of `path`, a path under the
    /// store's module views.
    fn in_package(&self, path: &Path) -> Option<(String, String)> {
        let rel = path.strip_prefix(self.module_views.as_ref()?).ok()?;
        let mut parts = rel.iter();
        let id = parts.next()?.to_str()?.to_owned();
        let inner = parts
            .map(|p| p.to_str())
            .collect::<Option<Vec<_>>>()?
            .join("/");
        Some((id, inner))
    }
}

impl FactsCache for FactsInStore {
    fn id_of(&self, content: &[u8]) -> ContentId {
        *BlobId::of(content).as_bytes()
    }

    /// A file of a module package's view is known by the package's tree: the walk reads a
    /// package only once its view was found as the index records it (`trusted_package`,
    /// which checks the view's files), so its tree names the bytes there.
    fn content_id(&self, path: &Path) -> Option<ContentId> {
        let (id, file) = self.in_package(path)?;
        self.files_of(&id)?.files.get(&file).map(|b| *b.as_bytes())
    }

    /// A package directory is listed by its tree when it holds no symlink (whose target
    /// may be a directory) and the tree has it (a directory with no file below it, or none
    /// at all, is read, and fails there as a listing would).
    fn dir_files(&self, dir: &Path) -> Option<Vec<String>> {
        let (id, inner) = self.in_package(dir)?;
        let tree = self.files_of(&id)?;
        if tree.with_symlinks.contains(&inner) {
            return None;
        }
        let prefix = if inner.is_empty() {
            String::new()
        } else {
            format!("{inner}/")
        };
        let mut exists = inner.is_empty();
        let mut names = Vec::new();
        for path in tree.files.keys() {
            let Some(rest) = path.strip_prefix(&prefix) else {
                continue;
            };
            exists = true;
            if !rest.contains('/') {
                names.push(rest.to_owned());
            }
        }
        exists.then_some(names)
    }

    fn get(&self, rules: &str, id: &ContentId) -> Option<Vec<u8>> {
        let rules = Self::rules(rules);
        if let Some(facts) = kept().fact(&rules, id) {
            return Some(facts);
        }
        match self
            .store
            .file_facts()
            .get(&BlobId::from_bytes(*id), &rules)
        {
            Ok(found) => {
                if let Some(facts) = &found {
                    kept().keep_fact(&rules, id, facts);
                }
                found
            }
            Err(e) => {
                tracing::debug!("cannot read a file's facts: {e}");
                None
            }
        }
    }

    fn put(&self, rules: &str, id: &ContentId, facts: &[u8]) {
        let rules = Self::rules(rules);
        match self
            .store
            .file_facts()
            .record(&BlobId::from_bytes(*id), &rules, facts)
        {
            Ok(()) => kept().keep_fact(&rules, id, facts),
            Err(e) => tracing::debug!("cannot record a file's facts: {e}"),
        }
    }
}

/// While it lives, configuration files' facts are kept in `store` (and read from it).
#[must_use = "facts are kept in the store only while the guard lives"]
pub struct FactsKept(());

impl Drop for FactsKept {
    fn drop(&mut self) {
        set_facts_cache(None);
    }
}

/// Keep configuration files' facts in `store` until the guard is dropped.
pub fn keep_facts_in(store: Arc<Store>) -> FactsKept {
    let module_views = store
        .view_dir(&PackageKey::module("x"))
        .ok()
        .and_then(|d| d.parent().map(Path::to_path_buf));
    set_facts_cache(Some(Arc::new(FactsInStore {
        store,
        module_views,
        trees: Mutex::default(),
    })));
    FactsKept(())
}

/// A recorded fact that a fresh parse of its content contradicts.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FactsMismatch {
    /// The content (its blob id).
    pub blob: String,
    /// The rules it was recorded under.
    pub rules: String,
}

/// What [`check_facts`] found.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FactsCheck {
    /// Facts recorded.
    pub recorded: usize,
    /// Facts derived again from their content and found equal.
    pub matching: usize,
    /// Facts a fresh parse contradicts.
    pub mismatched: Vec<FactsMismatch>,
    /// Facts of content the store does not hold as one blob (a working directory's own
    /// files; a module directory's self-writes, keyed by all its files): kept until the
    /// next gc, not checkable here.
    pub not_held: usize,
    /// Facts recorded by another tstore build (never read by this one).
    pub other_builds: usize,
}

/// Derive every recorded fact whose content the store holds again, from the bytes, and
/// compare (`tstore store facts`).
pub fn check_facts(store: &Store) -> Result<FactsCheck, tstore_store::StoreError> {
    let suffix = FactsInStore::rules("");
    let mut check = FactsCheck::default();
    for (blob, rules, facts) in store.file_facts().all()? {
        check.recorded += 1;
        let Some(base) = rules.strip_suffix(&suffix) else {
            check.other_builds += 1;
            continue;
        };
        let content = match fs_err::read(store.blob_path(&blob)) {
            Ok(content) if BlobId::of(&content) == blob => content,
            _ => {
                check.not_held += 1;
                continue;
            }
        };
        if tstore_tofu::config::derive_facts(base, &content).as_deref() == Some(&facts[..]) {
            check.matching += 1;
        } else {
            check.mismatched.push(FactsMismatch {
                blob: blob.to_string(),
                rules,
            });
        }
    }
    Ok(check)
}
