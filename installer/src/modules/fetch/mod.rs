//! Bringing one remote package into the store, or finding it there: git, http archives,
//! and the memos that avoid fetching again ([`Fetcher`]); registry resolution
//! (`resolution.rs`); the fetch state of one install and its parallel prefetch
//! ([`FetchSession`]).

use super::FetchError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tstore_store::{HashRecord, ModuleSourceMemo, PackageKey, Provenance, Store};

use super::getters::{archive, git};
use crate::net::http::{HttpClient, Validators};
use crate::net::NetworkSettings;
use crate::redact::display_url;
use tstore_tofu::module_source::{clean_join, Getter, ModuleSource, RemotePackage};

/// A package in the store (or a local directory read in place), as a call installs it.
#[derive(Clone, Debug)]
pub(super) struct Fetched {
    pub(super) id: String,
    pub(super) view: PathBuf,
    /// A `//subdir` named by a registry location or `X-Terraform-Get`.
    pub(super) subdir: Option<String>,
    /// A local directory a call names by absolute path or `file://`: never ingested, read
    /// where it is, and `.terraform/modules/KEY` links to it (as terraform's file getter
    /// does), so no file of it is copied and no permission of it widened.
    pub(super) in_place: Option<PathBuf>,
    /// For a git package, the commit it is.
    pub(super) commit: Option<String>,
    /// What vouches for the package's name: its origin, or the lock entry's hash (the store's
    /// content, a module mirror) that found it.
    pub(super) provenance: Provenance,
}

/// An archive downloaded from `url` into `file`.
#[derive(Clone, Copy)]
pub(super) struct Download<'a> {
    pub(super) kind: archive::ArchiveKind,
    pub(super) file: &'a Path,
    pub(super) url: &'a str,
    pub(super) sha256: &'a [u8; 32],
}

/// Package ids one fetch fetched or found in the store.
#[derive(Debug, Default)]
pub(super) struct FetchLog {
    /// Fetched from their origins.
    pub(super) fetched: Vec<String>,
    /// Found in the store.
    pub(super) reused: Vec<String>,
    /// Fetched from the module mirror.
    pub(super) mirrored: Vec<String>,
}

/// Fetches packages into the store; shared by the threads of [`Walker::prefetch`].
pub(super) struct Fetcher<'a> {
    /// The run: the remotes' answers it asked once.
    pub(super) run: &'a crate::Run,
    pub(super) store: &'a Store,
    /// Per package address, the result of its fetch in this init: the first thread to ask
    /// fetches it while the others wait, so two calls (or an `X-Terraform-Get` hop and a
    /// call) naming one address download it once.
    pub(super) slots: &'a Slots,
    pub(super) default_host: &'a str,
    /// Set by the walker before any http(s) or registry package is fetched.
    pub(super) http: Option<HttpClient>,
    /// Credentials and TLS settings (OCI logins from the CLI configuration).
    pub(super) network: &'a NetworkSettings,
    /// Where an archive's download progress goes (a bar on a terminal).
    pub(super) reporter: &'a dyn crate::report::Reporter,
    /// The module mirror and its client, once made: asked for first-seen dates under the
    /// cooldown.
    pub(super) mirror: Option<(
        &'a crate::modules::mirror::ModuleMirror,
        &'a crate::net::oci::OciClient,
    )>,
}

pub(super) type Slots =
    std::sync::Mutex<HashMap<String, std::sync::Arc<std::sync::Mutex<Option<Fetched>>>>>;

impl Fetcher<'_> {
    /// The store's memo for `source`, when the package it names is intact in the store (a
    /// memo is its origin's answer, and names only a package of its origin).
    pub(super) fn memo(&self, source: &str) -> Result<Option<ModuleSourceMemo>, FetchError> {
        match self
            .store
            .memos()
            .module_source(source)
            .map_err(FetchError::from)?
        {
            Some(memo) if self.known(&memo.package, Provenance::Origin)? => Ok(Some(memo)),
            _ => Ok(None),
        }
    }

    pub(super) fn remember(&self, source: &str, memo: &ModuleSourceMemo) -> Result<(), FetchError> {
        self.store
            .memos()
            .record_module_source(source, memo)
            .map(|_| ())
            .map_err(FetchError::from)
    }

    /// The package at `package`, from the store or fetched into it (once per init).
    pub(super) fn fetch(
        &self,
        package: &RemotePackage,
        hops: usize,
        log: &mut FetchLog,
    ) -> Result<Fetched, FetchError> {
        if hops > 8 {
            return Err(FetchError::Protocol(
                "too many X-Terraform-Get redirections".into(),
            ));
        }
        let slot = {
            let mut slots = self
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(package.to_string()).or_default().clone()
        };
        let mut slot = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = &*slot {
            return Ok(f.clone());
        }
        let fetched = self.fetch_uncached(package, hops, log)?;
        *slot = Some(fetched.clone());
        Ok(fetched)
    }

    pub(super) fn fetch_uncached(
        &self,
        package: &RemotePackage,
        hops: usize,
        log: &mut FetchLog,
    ) -> Result<Fetched, FetchError> {
        let fetched = match package.getter {
            Getter::Git => self.fetch_git(&package.url, log)?,
            Getter::Oci => self.fetch_oci(&package.url, log)?,
            // A call's own absolute path never gets here (it is read in place); a local
            // directory named by a registry's download location or an `X-Terraform-Get`
            // would let a server pick any directory of this machine to install.
            Getter::File => {
                return Err(FetchError::Package(format!(
                    "{} is a local directory named by a server; tstore reads a local \
                     directory only when a module call names it",
                    display_url(&package.to_string())
                )))
            }
            Getter::Http => {
                let http = self
                    .http
                    .as_ref()
                    .ok_or_else(|| FetchError::Protocol("no HTTP client".into()))?;
                let tmp = self.tmpdir()?;
                let file = tmp.path().join("archive");
                // An archive URL's package is revalidated, never trusted blindly: the memo's
                // validators make the GET conditional, and only `304` reuses its package.
                let memo_key = format!("http\0{}", package.url);
                let memo = self.memo(&memo_key)?;
                let since = memo.as_ref().map(|m| Validators {
                    etag: m.etag.clone(),
                    last_modified: m.last_modified.clone(),
                });
                let shown = display_url(&package.url);
                let progress = self.progress(&shown);
                let fetched = archive::fetch(http, &package.url, &file, since.as_ref(), &progress);
                self.reporter
                    .event(crate::report::Event::DownloadedModuleArchive { package: &shown });
                match fetched? {
                    archive::HttpFetch::NotModified => {
                        let memo = memo.expect("a conditional request needs a memo");
                        log.reused.push(memo.package.clone());
                        self.fetched(&memo.package, Provenance::Origin)?
                    }
                    archive::HttpFetch::Redirect(next) => {
                        let (pkg, sub) = match ModuleSource::parse(&next, self.default_host) {
                            Ok(ModuleSource::Remote { package, subdir }) => (package, subdir),
                            _ => {
                                return Err(FetchError::Package(format!(
                                    "{} names {:?} (X-Terraform-Get), which is not a supported \
                                     remote address",
                                    display_url(&package.url),
                                    display_url(&next)
                                )))
                            }
                        };
                        let mut f = self.fetch(&pkg, hops + 1, log)?;
                        f.subdir = join_subdirs(&[f.subdir.take(), sub]);
                        f
                    }
                    archive::HttpFetch::Archive {
                        kind,
                        sha256,
                        validators,
                    } => {
                        let id = package_id(
                            "http",
                            &package.url,
                            &format!("http\0{}\0{}", package.url, hex::encode(sha256)),
                        );
                        let download = Download {
                            kind,
                            file: &file,
                            url: &package.url,
                            sha256: &sha256,
                        };
                        let f = self.http_archive(&id, &download, log)?;
                        // Remembered with or without validators: without, the next
                        // unpinned fetch is a plain GET; a pinned call finds its package by
                        // it with no request at all.
                        self.remember(
                            &memo_key,
                            &ModuleSourceMemo {
                                package: id,
                                location: String::new(),
                                subdir: String::new(),
                                etag: validators.etag,
                                last_modified: validators.last_modified,
                            },
                        )?;
                        f
                    }
                }
            }
        };
        Ok(fetched)
    }

    /// The package `id` of a downloaded archive: found in the store (of its origin, with this
    /// download's own SHA-256 as its `zh:`), or ingested, with the archive's `zh:` beside the
    /// tree's `h1:`.
    pub(super) fn http_archive(
        &self,
        id: &str,
        download: &Download<'_>,
        log: &mut FetchLog,
    ) -> Result<Fetched, FetchError> {
        let Download {
            kind,
            file,
            url,
            sha256,
        } = *download;
        if self.known_with(id, &tstore_store::Hash::zh_from_sha256(sha256))? {
            log.reused.push(id.to_owned());
            return self.fetched(id, Provenance::Origin);
        }
        // The store checks and ingests the archive; a refusal names the address, not the
        // temporary file the download went to.
        let named = |e| FetchError::Store(archive_named_by(e, url));
        let (tree, hashes) = match kind.tar_compression() {
            None => {
                let a = self.store.ingest().zip(file).map_err(named)?;
                (a.ingested.tree, vec![a.ingested.h1, a.zh])
            }
            Some(compression) => {
                let i = self
                    .store
                    .ingest()
                    .module_tar(file, compression)
                    .map_err(named)?;
                let zh = tstore_store::Hash::zh_from_sha256(sha256);
                (i.tree, i.h1.into_iter().chain([zh]).collect())
            }
        };
        log.fetched.push(id.to_owned());
        self.commit(id, &tree, hashes, Provenance::Origin)
    }

    pub(super) fn fetch_git(&self, url: &str, log: &mut FetchLog) -> Result<Fetched, FetchError> {
        let addr = git::GitAddress::parse(url)?;
        if let Some(commit) = git::resolve(self.run, &addr)? {
            let id = git_id(&addr.repo, &commit);
            if self.known(&id, Provenance::Origin)? {
                log.reused.push(id.clone());
                return Ok(Fetched {
                    commit: Some(commit),
                    ..self.fetched(&id, Provenance::Origin)?
                });
            }
        } else if addr
            .reference
            .as_deref()
            .is_some_and(|r| !looks_like_sha(r))
        {
            return Err(FetchError::NoSuchRef {
                repo: addr.repo,
                reference: addr.reference.unwrap_or_default(),
            });
        }
        let tmp = self.tmpdir()?;
        let dest = tmp.path().join("checkout");
        let commit = super::getters::git_cache::GitCache::new(self.store.git_cache_dir()?)
            .checkout(&addr, &dest)?;
        let id = git_id(&addr.repo, &commit);
        let ingested = self
            .store
            .ingest()
            .module_dir(&dest)
            .map_err(FetchError::from)?;
        log.fetched.push(id.clone());
        let fetched = Fetched {
            commit: Some(commit.clone()),
            ..self.commit(
                &id,
                &ingested.tree,
                ingested.h1.into_iter().collect(),
                Provenance::Origin,
            )?
        };
        // Remembered for people, not for fetching (a git package is found by its commit):
        // `store ls` names the package by repository and ref.
        let reference = addr.reference.as_deref().unwrap_or("HEAD");
        self.remember(
            &format!("git\0{}?ref={reference}\0{commit}", addr.repo),
            &ModuleSourceMemo {
                package: id,
                ..ModuleSourceMemo::default()
            },
        )?;
        Ok(fetched)
    }

    /// The package of commit `commit` of the git repository at `url`, when the store holds
    /// it from the remote: a pinned call's package found without asking the remote.
    pub(super) fn stored_git_commit(
        &self,
        url: &str,
        commit: &str,
        log: &mut FetchLog,
    ) -> Result<Option<Fetched>, FetchError> {
        let addr = git::GitAddress::parse(url)?;
        let id = git_id(&addr.repo, commit);
        if !self.known(&id, Provenance::Origin)? {
            return Ok(None);
        }
        log.reused.push(id.clone());
        Ok(Some(Fetched {
            commit: Some(commit.to_ascii_lowercase()),
            ..self.fetched(&id, Provenance::Origin)?
        }))
    }

    /// The progress of a module archive's download, as events (`package` as shown): the
    /// first bytes announce it, so an archive answered `304` or refused draws nothing.
    pub(super) fn progress<'p>(&'p self, package: &'p str) -> impl Fn(u64, Option<u64>) + 'p {
        let started = std::sync::atomic::AtomicBool::new(false);
        move |bytes, total| {
            if !started.swap(true, std::sync::atomic::Ordering::Relaxed) {
                self.reporter
                    .event(crate::report::Event::DownloadingModuleArchive { package });
            }
            self.reporter.event(crate::report::Event::DownloadProgress {
                provider: package,
                bytes,
                total,
            });
        }
    }

    /// The package the store last fetched from the archive URL `url`, when the store holds
    /// it: a pinned call whose lock entry names this package's hash needs no request.
    pub(super) fn stored_archive(&self, url: &str) -> Result<Option<Fetched>, FetchError> {
        match self.memo(&format!("http\0{url}"))? {
            Some(memo) => Ok(Some(self.fetched(&memo.package, Provenance::Origin)?)),
            None => Ok(None),
        }
    }

    pub(super) fn tmpdir(&self) -> Result<tempfile::TempDir, FetchError> {
        let base = self.store.root().join("tmp");
        fs_err::create_dir_all(&base).map_err(FetchError::from)?;
        tempfile::Builder::new()
            .prefix(&tstore_store::temp_prefix("module"))
            .tempdir_in(&base)
            .map_err(FetchError::from)
    }

    /// Whether the store holds this package intact (a damaged one is removed and fetched
    /// again rather than linked) with `provenance` vouching for its name: a lookup by an
    /// origin's name sees only what that origin gave.
    pub(super) fn known(&self, id: &str, provenance: Provenance) -> Result<bool, FetchError> {
        Ok(self.intact(id)?.is_some_and(|p| p.provenance == provenance))
    }

    /// Whether the store holds this package intact, of its origin, with `hash` among its
    /// records (an archive's or a layer's own SHA-256: the name's claim).
    pub(super) fn known_with(
        &self,
        id: &str,
        hash: &tstore_store::Hash,
    ) -> Result<bool, FetchError> {
        Ok(self.intact(id)?.is_some_and(|p| {
            p.provenance == Provenance::Origin && p.hashes.iter().any(|r| r.hash == *hash)
        }))
    }

    /// The package `id` when the store holds it intact, its view made again from its tree
    /// when something removed it.
    fn intact(&self, id: &str) -> Result<Option<tstore_store::Package>, FetchError> {
        let key = PackageKey::module(id);
        let view = self.store.view_dir(&key).map_err(FetchError::from)?;
        if !view.is_dir() {
            // A view removed behind the store's back: made again from the package's tree.
            let Some(package) = self.store.package(&key).map_err(FetchError::from)? else {
                return Ok(None);
            };
            self.store
                .commit_package_as(&key, &package.tree, &[], None, package.provenance)
                .map_err(FetchError::from)?;
        }
        self.store.trusted_package(&key).map_err(FetchError::from)
    }

    pub(super) fn fetched(&self, id: &str, provenance: Provenance) -> Result<Fetched, FetchError> {
        Ok(Fetched {
            id: id.to_owned(),
            view: self
                .store
                .view_dir(&PackageKey::module(id))
                .map_err(FetchError::from)?,
            subdir: None,
            in_place: None,
            commit: None,
            provenance,
        })
    }

    /// The package `fetched` without its dot entries (files and directories whose name
    /// starts with `.`, at any depth): `fetched` itself when it has none, else a package of
    /// its own (`ID-nodot`), made once and sharing every blob with the original.
    pub(super) fn without_dot_entries(
        &self,
        fetched: &Fetched,
        log: &mut FetchLog,
    ) -> Result<Fetched, FetchError> {
        let is_dotted = |path: &str| path.split('/').any(|part| part.starts_with('.'));
        let key = PackageKey::module(&fetched.id);
        let Some(tree) = self.store.package_tree(&key).map_err(FetchError::from)? else {
            return Err(FetchError::Package(format!(
                "package {} is no longer in the store",
                fetched.id
            )));
        };
        let has_dot_entries = self
            .store
            .tree(&tree)
            .map_err(FetchError::from)?
            .entries()
            .iter()
            .any(|e| is_dotted(&e.path));
        if !has_dot_entries {
            return Ok(fetched.clone());
        }
        // Made from the package, so vouched for as it is.
        let id = format!("{}-nodot", fetched.id);
        let subdir = fetched.subdir.clone();
        let provenance = fetched.provenance;
        if self.known(&id, provenance)? {
            log.reused.push(id.clone());
            return Ok(Fetched {
                subdir,
                ..self.fetched(&id, provenance)?
            });
        }
        // Made here from a package the store holds (and the walk found fresh): nothing was
        // fetched for it (a report that counted it would say an origin was asked when none
        // was), and nothing is copied: its tree is the package's, less those entries.
        log.reused.push(id.clone());
        let ingested = self
            .store
            .ingest()
            .module_tree_without(&tree, is_dotted)
            .map_err(FetchError::from)?;
        let made = self.commit(
            &id,
            &ingested.tree,
            ingested.h1.into_iter().collect(),
            provenance,
        )?;
        Ok(Fetched { subdir, ..made })
    }

    /// Commit `tree` as package `id`, vouched for by `provenance`: an origin's name only for
    /// what that origin gave (`lock_id` and `mirror_id` name what a hash vouches for).
    pub(super) fn commit(
        &self,
        id: &str,
        tree: &tstore_store::TreeId,
        hashes: Vec<tstore_store::Hash>,
        provenance: Provenance,
    ) -> Result<Fetched, FetchError> {
        let key = PackageKey::module(id);
        let records: Vec<HashRecord> = hashes
            .into_iter()
            .map(HashRecord::verified_locally)
            .collect();
        self.store
            .commit_package_as(&key, tree, &records, None, provenance)
            .map_err(FetchError::from)?;
        self.fetched(id, provenance)
    }
}

pub(super) fn looks_like_sha(r: &str) -> bool {
    r.len() >= 4 && r.bytes().all(|b| b.is_ascii_hexdigit())
}

pub(super) fn join_subdirs(parts: &[Option<String>]) -> Option<String> {
    let joined = parts
        .iter()
        .flatten()
        .fold(".".to_owned(), |acc, p| clean_join(&acc, p));
    (joined != ".").then_some(joined)
}

pub(super) fn git_id(repo: &str, commit: &str) -> String {
    package_id(
        "git",
        repo,
        &format!("git\0{repo}\0{}", commit.to_ascii_lowercase()),
    )
    .replacen(
        "git-",
        &format!("git-{}-", &commit[..commit.len().min(12)]),
        1,
    )
}

/// The id of content a lock entry's `h1:` vouches for (found in the store by that hash):
/// named by the hash, never by the call's origin.
pub(super) fn lock_id(url: &str, h1: &tstore_store::Hash) -> String {
    package_id("lock", url, &format!("lock\0{h1}"))
}

/// The id of content a module mirror served, checked against a lock entry's `h1:`: named
/// by the hash, never by the call's origin.
pub(super) fn mirror_id(url: &str, h1: &tstore_store::Hash) -> String {
    package_id("mirror", url, &format!("mirror\0{h1}"))
}

/// Whether a module package id claims an origin (a git commit, an archive URL's bytes, an
/// OCI layer), as opposed to naming content by a lock entry's hash (`lock-`, `mirror-`).
pub fn claims_origin(id: &str) -> bool {
    ["git-", "http-", "oci-"]
        .iter()
        .any(|prefix| id.starts_with(prefix))
}

/// `<kind>-<slug>-<20 hex>` (see the module docs).
pub(super) fn package_id(kind: &str, url: &str, identity: &str) -> String {
    let last = url
        .split('?')
        .next()
        .unwrap_or(url)
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    let mut slug: String = last
        .trim_end_matches(".git")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    slug = slug.trim_matches('.').to_owned();
    if slug.is_empty() {
        slug = "pkg".into();
    }
    let digest = Sha256::digest(identity.as_bytes());
    format!("{kind}-{slug}-{}", &hex::encode(digest)[..20])
}

mod by_lock_hash;
mod mirror;
mod oci;
mod pool;
mod resolution;
mod session;

pub(super) use self::session::{FetchSession, Job, MirrorAsk};
pub(super) use mirror::reach_from_mirror;
pub(super) use resolution::{bad_location, resolve_key, Resolved};

#[cfg(test)]
mod tests;

/// A store error about the archive downloaded from `url`, naming the address (credentials
/// and query left out) instead of the temporary file it was downloaded to.
fn archive_named_by(e: tstore_store::StoreError, url: &str) -> tstore_store::StoreError {
    use tstore_store::StoreError as E;
    let shown = || PathBuf::from(display_url(url));
    match e {
        E::HostileArchive { entry, reason, .. } => E::HostileArchive {
            archive: shown(),
            entry,
            reason,
        },
        E::BadTar { source, .. } => E::BadTar {
            archive: shown(),
            source,
        },
        E::BadZip { source, .. } => E::BadZip {
            archive: shown(),
            source,
        },
        other => other,
    }
}
