//! A zip read as it downloads (a module mirror's layer): the store's streamed ingest,
//! `tstore_store::Ingest::zip_stream` (store/src/ingest/zip_stream.rs), with small limits.
//! Beyond not failing: bytes the stream accepts, the file ingest (`Ingest::zip`, which
//! trusts the central directory) accepts too, with the same tree — a streamed zip unpacks to
//! what a reader of its central directory would.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tstore_fuzz::with_store(|store| {
        let Ok(streamed) = store
            .ingest()
            .zip_stream(&mut { data }, std::path::Path::new("layer"))
        else {
            return;
        };
        let (_dir, zip) = tstore_fuzz::write_scratch("layer.zip", data);
        let filed = match store.ingest().zip(&zip) {
            Ok(filed) => filed,
            Err(e) => panic!("the stream took what the central directory refuses: {e:?}"),
        };
        assert_eq!(streamed, filed.ingested);
    });
});
