//! A package's files as a deterministic zip: the same files give the same bytes, whatever
//! the machine, so a registry can recognize a blob it already has by its digest.

use std::io::{Cursor, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

/// Zip the package directory `dir` (a store view): entries sorted by path, every time
/// 1980-01-01 00:00, regular files `0644` or `0755` by their exec bit, symlinks kept as
/// links, no directory entries, deflate.
pub(crate) fn package_zip(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut entries: Vec<walkdir::DirEntry> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(std::io::Error::other)?;
    entries.retain(|e| !e.file_type().is_dir());
    let name = |e: &walkdir::DirEntry| -> std::io::Result<String> {
        let rel = e.path().strip_prefix(dir).map_err(std::io::Error::other)?;
        rel.to_str()
            .map(str::to_owned)
            .ok_or_else(|| std::io::Error::other(format!("{} is not UTF-8", rel.display())))
    };
    let mut named = entries
        .iter()
        .map(|e| Ok((name(e)?, e)))
        .collect::<std::io::Result<Vec<_>>>()?;
    named.sort_by(|a, b| a.0.cmp(&b.0));

    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let base = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::default());
    for (name, entry) in named {
        if entry.file_type().is_symlink() {
            let target = fs_err::read_link(entry.path())?;
            let target = target
                .to_str()
                .ok_or_else(|| std::io::Error::other("a symlink target is not UTF-8"))?;
            zip.add_symlink(name, target, base.unix_permissions(0o777))
                .map_err(std::io::Error::other)?;
            continue;
        }
        let mode = fs_err::metadata(entry.path())?.permissions().mode();
        let unix = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        zip.start_file(name, base.unix_permissions(unix))
            .map_err(std::io::Error::other)?;
        zip.write_all(&fs_err::read(entry.path())?)?;
    }
    Ok(zip.finish().map_err(std::io::Error::other)?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_files_give_the_same_zip() {
        let make = |root: &Path| {
            fs_err::create_dir_all(root.join("sub")).unwrap();
            fs_err::write(root.join("b.txt"), "b\n").unwrap();
            fs_err::write(root.join("sub/a"), "a\n").unwrap();
            fs_err::write(root.join("terraform-provider-x"), "#!/bin/sh\n").unwrap();
            fs_err::set_permissions(
                root.join("terraform-provider-x"),
                std::fs::Permissions::from_mode(0o555),
            )
            .unwrap();
            std::os::unix::fs::symlink("b.txt", root.join("link")).unwrap();
        };
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        make(one.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        make(two.path());
        let zip = package_zip(one.path()).unwrap();
        assert_eq!(zip, package_zip(two.path()).unwrap());

        let mut archive = zip::ZipArchive::new(Cursor::new(zip)).unwrap();
        let names: Vec<String> = archive.file_names().map(str::to_owned).collect();
        assert_eq!(names, ["b.txt", "link", "sub/a", "terraform-provider-x"]);
        let exe = archive.by_name("terraform-provider-x").unwrap();
        assert_eq!(exe.unix_mode().unwrap() & 0o777, 0o755);
        drop(exe);
        let link = archive.by_name("link").unwrap();
        assert!(link.is_symlink());
    }

    #[test]
    fn a_package_zip_unpacks_as_it_streams_to_the_tree_of_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("files");
        fs_err::create_dir_all(files.join("sub")).unwrap();
        fs_err::write(files.join("main.tf"), "variable \"x\" {}\n").unwrap();
        fs_err::write(files.join("sub/a.tf"), "").unwrap();
        fs_err::write(files.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs_err::set_permissions(files.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("main.tf", files.join("link.tf")).unwrap();
        let zip = package_zip(&files).unwrap();
        let store = tstore_store::Store::open(&dir.path().join("store")).unwrap();
        let streamed = store
            .ingest()
            .zip_stream(&mut zip.as_slice(), Path::new("layer"))
            .unwrap();
        assert_eq!(streamed, store.ingest().dir(&files).unwrap());
    }
}
