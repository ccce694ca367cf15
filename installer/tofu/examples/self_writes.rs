//! Print what may write into each module directory given: `self_writes [--tofu] DIR...`.
//! Every directory holding configuration files under DIR counts, so a package's local
//! modules are inspected with it.

use std::path::{Path, PathBuf};

use tstore_tofu::flavor::Flavor;
use tstore_tofu::writes::detect_self_writes;

fn module_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut has_config = false;
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') {
                subdirs.push(path);
            }
        } else if [".tf", ".tf.json", ".tofu", ".tofu.json"]
            .iter()
            .any(|ext| name.ends_with(ext))
        {
            has_config = true;
        }
    }
    if has_config {
        out.push(dir.to_owned());
    }
    subdirs.sort();
    for sub in subdirs {
        module_dirs(&sub, out);
    }
}

fn main() {
    let mut flavor = Flavor::Terraform;
    let mut dirs = Vec::new();
    for arg in std::env::args().skip(1) {
        if arg == "--tofu" {
            flavor = Flavor::Tofu;
        } else {
            module_dirs(Path::new(&arg), &mut dirs);
        }
    }
    for dir in dirs {
        match detect_self_writes(&dir, flavor) {
            Ok(found) if found.is_empty() => println!("{}: none", dir.display()),
            Ok(found) => {
                println!("{}:", dir.display());
                for w in found {
                    println!("  {w}");
                }
            }
            Err(e) => println!("{}: error: {e}", dir.display()),
        }
    }
}
