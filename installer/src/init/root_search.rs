//! The roots under a directory, for `init --recursive` and `fetch --recursive`: a
//! directory of the tree with configuration files that no directory of the tree calls as a
//! local module (`source = "./…"`, `"../…"`). `.terraform` and hidden directories are not
//! entered, symlinks are not followed, and the `--exclude` globs leave out the roots whose
//! path relative to the top matches.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use tstore_tofu::config::load_module_requirements_shown_as;
use tstore_tofu::flavor::Flavor;
use tstore_tofu::static_eval::{Inputs, RootInputs};

/// Why the roots under a directory could not be found.
#[derive(Debug, thiserror::Error)]
pub enum RootSearchError {
    #[error("cannot list {}", top.display())]
    List {
        top: PathBuf,
        #[source]
        source: walkdir::Error,
    },
    #[error("--exclude {glob:?} is not a valid glob")]
    Glob {
        glob: String,
        #[source]
        source: globset::Error,
    },
    #[error("cannot compile the --exclude globs")]
    Compile(#[source] globset::Error),
}

/// The roots under `top` (see the module docs), sorted.
pub fn find_roots(top: &Path, exclude: &[String]) -> Result<Vec<PathBuf>, RootSearchError> {
    let exclude = exclude_set(exclude)?;
    let mut candidates = Vec::new();
    let walk = walkdir::WalkDir::new(top)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || (e.file_type().is_dir() && {
                    let name = e.file_name().to_string_lossy();
                    !name.starts_with('.')
                })
        });
    for entry in walk {
        let entry = entry.map_err(|source| RootSearchError::List {
            top: top.to_path_buf(),
            source,
        })?;
        let dir = entry.path();
        if [Flavor::Tofu, Flavor::Terraform]
            .iter()
            .any(|f| tstore_tofu::config::is_config_dir(dir, *f))
        {
            candidates.push(dir.to_path_buf());
        }
    }
    // What the tree calls as a local module is a module, not a root.
    let mut called = HashSet::new();
    for dir in &candidates {
        // Provider requirements are evaluated (as terraform ≥ 1.17 does) so that a root
        // whose requirements use variables still names the modules it calls.
        let inputs = Inputs::Root(Arc::new(
            RootInputs::default().with_provider_requirements(true),
        ));
        let Ok(module) = load_module_requirements_shown_as(dir, dir, Flavor::Tofu, inputs) else {
            continue;
        };
        for call in module.module_calls.values() {
            if tstore_tofu::module_source::is_local(&call.source) {
                if let Ok(path) = dir.join(&call.source).canonicalize() {
                    called.insert(path);
                }
            }
        }
    }
    Ok(candidates
        .into_iter()
        .filter(|d| !called.contains(d))
        .filter(|d| {
            let rel = d
                .strip_prefix(top)
                .unwrap_or(d)
                .to_string_lossy()
                .into_owned();
            !exclude.is_match(&rel)
        })
        .collect())
}

/// The `--exclude` globs as one matcher (globset: linear in the path's length, whatever the
/// pattern): `*`, `?` and `[…]` within one component, `**` any number of components; a
/// leading or trailing `/` is ignored.
fn exclude_set(exclude: &[String]) -> Result<globset::GlobSet, RootSearchError> {
    let mut set = globset::GlobSetBuilder::new();
    for glob in exclude {
        let parsed = globset::GlobBuilder::new(glob.trim_matches('/'))
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|source| RootSearchError::Glob {
                glob: glob.clone(),
                source,
            })?;
        set.add(parsed);
    }
    set.build().map_err(RootSearchError::Compile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob_matches(glob: &str, path: &str) -> bool {
        exclude_set(&[glob.to_owned()]).unwrap().is_match(path)
    }

    #[test]
    fn globs_match_components_and_any_depth() {
        assert!(glob_matches("stacks/*", "stacks/app"));
        assert!(!glob_matches("stacks/*", "stacks/app/eu"));
        assert!(glob_matches("stacks/**", "stacks/app/eu"));
        assert!(glob_matches("**/test?", "a/b/test1"));
        assert!(glob_matches("**", "x"));
        assert!(!glob_matches("legacy", "legacy2"));
    }

    #[test]
    fn a_pathological_glob_is_matched_in_linear_time() {
        // Twelve `*` pieces against one long name that never matches: backtracking takes
        // exponential time; the automaton answers at once.
        let glob = "*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let name = "a".repeat(10_000);
        assert!(!glob_matches(glob, &name));
        assert!(exclude_set(&["[".into()]).is_err());
    }

    #[test]
    fn roots_are_directories_no_other_calls() {
        let top = tempfile::tempdir().unwrap();
        let top = top.path().canonicalize().unwrap();
        let write = |rel: &str, text: &str| {
            let p = top.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "stacks/a/main.tf",
            "module \"n\" {\n  source = \"../../modules/net\"\n}\n",
        );
        write("stacks/b/main.tf", "");
        write("modules/net/main.tf", "");
        write("stacks/b/.terraform/modules/x/main.tf", "");
        write(".hidden/main.tf", "");
        write("legacy/main.tf", "");
        let rel = |roots: Vec<PathBuf>| -> Vec<String> {
            roots
                .iter()
                .map(|r| r.strip_prefix(&top).unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            rel(find_roots(&top, &[]).unwrap()),
            ["legacy", "stacks/a", "stacks/b"]
        );
        assert_eq!(
            rel(find_roots(&top, &["legacy".into()]).unwrap()),
            ["stacks/a", "stacks/b"]
        );
    }
}
