//! Which flavor a command follows, decided per working directory by the first rule that
//! answers: `--flavor` / `TSTORE_FLAVOR`; `flavor = "…"` in the repository's `.tstore.hcl`
//! (nearest at or above the directory); the existing lock file (its header, then its
//! provider hosts); the module lock file's registry hosts; `.tofu`/`.tofu.json` files in the
//! directory; the only one of `tofu` and `terraform` on `PATH`; the default, tofu. The rules
//! that read the directory are the language crate's (each lock file's `flavor_evidence`,
//! `flavor::from_tofu_files`); the `PATH` rule is here.

use std::ffi::OsStr;
use std::path::Path;

use anyhow::Result;
use tstore_tofu::flavor::{self, DecidedBy, Flavor, FlavorChoice};

/// The flavor of the working directory `dir`. `given` is what `--flavor` or
/// `TSTORE_FLAVOR` said, if anything; `search_path` is `PATH`.
pub(crate) fn resolve(
    given: Option<&FlavorChoice>,
    dir: &Path,
    search_path: &OsStr,
) -> Result<FlavorChoice> {
    let choice = decide(given, dir, search_path)?;
    tracing::debug!("flavor {}: decided by {}", choice.flavor, choice.decided_by);
    Ok(choice)
}

fn decide(given: Option<&FlavorChoice>, dir: &Path, search_path: &OsStr) -> Result<FlavorChoice> {
    if let Some(given) = given {
        return Ok(given.clone());
    }
    if let Some((flavor, file)) = tstore_installer::find_repository_flavor(dir)? {
        return Ok(FlavorChoice {
            flavor,
            decided_by: DecidedBy::RepositoryFile(file),
        });
    }
    let lock = dir.join(tstore_installer::LOCK_FILE_NAME);
    if let Some(choice) = tstore_tofu::lockfile::flavor_evidence(&lock) {
        return Ok(choice);
    }
    tracing::debug!("flavor: {} says nothing of the tool", lock.display());
    // A root with modules and no providers has only its module lock to say which tool's
    // registry its calls were resolved against.
    let module_lock = dir.join(tstore_tofu::module_lock::FILE_NAME);
    if let Some(choice) = tstore_tofu::module_lock::flavor_evidence(&module_lock) {
        return Ok(choice);
    }
    if let Some(choice) = flavor::from_tofu_files(dir) {
        return Ok(choice);
    }
    if let Some(choice) = from_path(search_path) {
        return Ok(choice);
    }
    Ok(FlavorChoice::default_choice())
}

/// The tool whose binary is the only one of `tofu` and `terraform` on `search_path`
/// (an executable file of that name in one of its directories); `None` for both or
/// neither.
fn from_path(search_path: &OsStr) -> Option<FlavorChoice> {
    // Relative entries name a checkout's files: they never decide (the process runner's rule).
    let find = |name: &str| tstore_process::find_on_path(name, search_path);
    let tofu = find("tofu");
    let terraform = find("terraform");
    tracing::debug!(
        "flavor: on PATH, tofu {}, terraform {}",
        tofu.as_deref()
            .map_or("not found".into(), |p| p.display().to_string()),
        terraform
            .as_deref()
            .map_or("not found".into(), |p| p.display().to_string()),
    );
    let (flavor, binary) = match (tofu, terraform) {
        (Some(p), None) => (Flavor::Tofu, p),
        (None, Some(p)) => (Flavor::Terraform, p),
        _ => return None,
    };
    Some(FlavorChoice {
        flavor,
        decided_by: DecidedBy::Path(binary),
    })
}

/// The flavor as `--json` says it: its name and the rule that decided it.
pub(crate) fn to_json(choice: &FlavorChoice) -> serde_json::Value {
    serde_json::json!({
        "name": choice.flavor.as_str(),
        "decided_by": choice.decided_by.rule(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn tool(dir: &Path, name: &str, mode: u32) {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn only_one_tool_on_path_decides() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(from_path(&path), None, "neither");
        tool(&b, "terraform", 0o644);
        assert_eq!(from_path(&path), None, "not executable");
        tool(&b, "terraform", 0o755);
        let choice = from_path(&path).unwrap();
        assert_eq!(choice.flavor, Flavor::Terraform);
        assert_eq!(choice.decided_by, DecidedBy::Path(b.join("terraform")));
        std::fs::create_dir(a.join("tofu")).unwrap();
        assert_eq!(
            from_path(&path).unwrap().flavor,
            Flavor::Terraform,
            "a directory is no tool"
        );
        std::fs::remove_dir(a.join("tofu")).unwrap();
        tool(&a, "tofu", 0o755);
        assert_eq!(from_path(&path), None, "both");
    }

    #[test]
    fn given_wins_and_the_lock_file_comes_before_tofu_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.tofu"), "").unwrap();
        std::fs::write(
            dir.path().join(".terraform.lock.hcl"),
            "# This file is maintained automatically by \"terraform init\".\n",
        )
        .unwrap();
        let no_path = OsStr::new("");
        let given = FlavorChoice {
            flavor: Flavor::Tofu,
            decided_by: DecidedBy::Flag,
        };
        assert_eq!(resolve(Some(&given), dir.path(), no_path).unwrap(), given);
        let got = resolve(None, dir.path(), no_path).unwrap();
        assert_eq!(got.flavor, Flavor::Terraform);
        assert_eq!(got.decided_by.rule(), "lock file header");
        std::fs::remove_file(dir.path().join(".terraform.lock.hcl")).unwrap();
        assert_eq!(
            resolve(None, dir.path(), no_path)
                .unwrap()
                .decided_by
                .rule(),
            ".tofu files"
        );
    }
}
