//! `oci://` packages into the store: the getter's layer (`getters::oci`) known by its
//! digest, downloaded only when the store lacks that digest's package, then ingested.

use tstore_store::Provenance;

use super::{package_id, FetchLog, Fetched, Fetcher};
use crate::modules::getters::oci::{module_layer, oci_error, OciModuleAddress};
use crate::modules::FetchError;
use crate::net::oci::OciClient;

impl Fetcher<'_> {
    /// The module package an `oci://` address names: its manifest resolved (checked against
    /// the digest when the address gives one), its zip layer from the store when the store
    /// holds that digest's package, else downloaded, checked and ingested.
    pub(super) fn fetch_oci(&self, url: &str, log: &mut FetchLog) -> Result<Fetched, FetchError> {
        let address = OciModuleAddress::parse(url)?;
        let http = self
            .http
            .as_ref()
            .ok_or_else(|| FetchError::Protocol("no HTTP client".into()))?;
        let credentials = self
            .network
            .oci_logins()
            .map_err(|e| FetchError::Protocol(e.to_string()))?;
        let client = OciClient::new(http.clone(), credentials);
        let repo = &address.repository;
        let digest = module_layer(&client, &address, url)?;
        let id = package_id("oci", &repo.to_string(), &format!("oci\0{repo}\0{digest}"));
        // Of its origin, and that layer's own bytes: a zip layer's digest is its `zh:`.
        let zh = digest
            .strip_prefix("sha256:")
            .and_then(|hex| format!("zh:{hex}").parse::<tstore_store::Hash>().ok());
        if let Some(zh) = &zh {
            if self.known_with(&id, zh)? {
                log.reused.push(id.clone());
                return self.fetched(&id, Provenance::Origin);
            }
        }
        let tmp = self.tmpdir()?;
        let file = tmp.path().join("module.zip");
        let shown = url.to_owned();
        let progress = self.progress(&shown);
        let downloaded = client.download_blob(repo, &digest, &file, &progress);
        self.reporter
            .event(crate::report::Event::DownloadedModuleArchive { package: &shown });
        downloaded.map_err(|e| oci_error(url, e))?;
        let archive = self.store.ingest().zip(&file).map_err(FetchError::from)?;
        let f = self.commit(
            &id,
            &archive.ingested.tree,
            vec![archive.ingested.h1, archive.zh],
            Provenance::Origin,
        )?;
        log.fetched.push(id);
        Ok(f)
    }
}
