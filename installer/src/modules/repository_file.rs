//! What `.tstore.hcl` may say at its top level, checked before any of it is used: a
//! repository's policy (which sources are linked, the module mirror, the cooldown) is a
//! security setting, and a misspelt key that passed silently would be no policy at all. An
//! argument or block this release does not know is an error naming the file, the line and
//! the nearest known name, as terraform says "Unsupported argument"; a name a later
//! release of tstore reads is said to need that release.

use super::error::PolicyError;
use hcl::{Body, Expression, Structure};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The repository policy file's name.
pub(crate) const REPOSITORY_FILE: &str = ".tstore.hcl";

/// The largest policy file read.
const MAX_POLICY_FILE: u64 = 1 << 20;

/// The repository file: `.tstore.hcl` in `dir` or the nearest directory above it, with
/// its parsed body.
///
/// The search stops at the repository's root (the nearest directory holding `.git`): a
/// parent of the checkout belongs to someone else's decisions. On the way, as git's
/// `safe.directory` judges a repository, an entry owned by neither the user nor root is
/// ignored (a shared host's world-writable parent cannot set the flavor or module policy of
/// the checkouts below it), and so is a directory of that name (it must not fail every init
/// below it). A symlink, FIFO or device of the user's is an error, never followed.
pub(super) fn find_repository_file(dir: &Path) -> Result<Option<(PathBuf, Body)>, PolicyError> {
    use std::os::unix::fs::MetadataExt as _;
    let me = nix::unistd::geteuid().as_raw();
    for d in dir.ancestors() {
        let path = d.join(REPOSITORY_FILE);
        let usable = match std::fs::symlink_metadata(&path) {
            Ok(meta) => {
                let owner_ok = meta.uid() == me || meta.uid() == 0;
                if !owner_ok {
                    tracing::debug!(
                        "ignoring {}: owned by user id {}, neither you nor root",
                        path.display(),
                        meta.uid()
                    );
                }
                owner_ok && !meta.is_dir()
            }
            Err(_) => false,
        };
        if usable {
            if let Some(text) = crate::own_files::read_own_file(&path, MAX_POLICY_FILE)
                .map_err(|e| PolicyError::Read(path.clone(), e))?
            {
                let body: Body = hcl::parse(&text).map_err(|e| PolicyError::Syntax {
                    origin: path.display().to_string(),
                    message: crate::own_files::syntax_error(&e),
                })?;
                check(&path, &text, &body)?;
                return Ok(Some((path, body)));
            }
        }
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            break;
        }
    }
    Ok(None)
}

/// The shape of a top-level setting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Argument,
    Block,
}

/// Every top-level setting of `.tstore.hcl` this release reads.
const KNOWN: &[(&str, Shape)] = &[
    ("flavor", Shape::Argument),
    ("module_mirror", Shape::Argument),
    ("min_release_age", Shape::Argument),
    ("min_release_age_exclude", Shape::Argument),
    ("modules", Shape::Block),
];

/// Settings later releases read, with the release that brought them: an older tstore
/// that meets one says so, instead of calling it a typo. (Empty while this is the newest.)
const LATER: &[(&str, &str)] = &[];

/// Check the top level of the repository file `path` (its text `text`, parsed as `body`).
pub(crate) fn check(path: &Path, text: &str, body: &Body) -> Result<(), PolicyError> {
    for structure in body.iter() {
        let (name, shape) = match structure {
            Structure::Attribute(a) => (a.key.as_str(), Shape::Argument),
            Structure::Block(b) => (b.identifier.as_str(), Shape::Block),
        };
        let known = KNOWN.iter().find(|(k, _)| *k == name);
        let problem = match known {
            Some((_, s)) if *s == shape => continue,
            Some((_, Shape::Block)) => format!(
                "Unsupported argument: {name} is a block here (`{name} {{ … }}`), not an \
                 argument"
            ),
            Some((_, Shape::Argument)) => format!(
                "Unsupported block type: {name} is an argument here (`{name} = …`), not a \
                 block"
            ),
            None => unknown(name, shape),
        };
        let at = match line_of(text, name) {
            Some(line) => format!("{}:{line}", path.display()),
            None => path.display().to_string(),
        };
        return Err(PolicyError::Invalid {
            origin: at,
            message: problem,
        });
    }
    Ok(())
}

/// The cooldown a repository file sets: `min_release_age = "7d"` and
/// `min_release_age_exclude = ["PATTERN", …]` at its top level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepositoryReleaseAge {
    /// `min_release_age`, if set (zero: off).
    pub min_age: Option<Duration>,
    /// `min_release_age_exclude`.
    pub exclude: Vec<String>,
    /// The file.
    pub file: PathBuf,
}

/// The cooldown of the repository file nearest at or above `dir` (`None`: no file; a file
/// that sets neither setting gives no age and no exclusion).
pub fn find_repository_release_age(
    dir: &Path,
) -> Result<Option<RepositoryReleaseAge>, PolicyError> {
    let Some((path, body)) = find_repository_file(dir)? else {
        return Ok(None);
    };
    let origin = path.display().to_string();
    let invalid = |message: String| PolicyError::Invalid {
        origin: origin.clone(),
        message,
    };
    let mut found = RepositoryReleaseAge {
        file: path.clone(),
        ..RepositoryReleaseAge::default()
    };
    for structure in body.into_inner() {
        let Structure::Attribute(a) = structure else {
            continue;
        };
        match a.key.as_str() {
            "min_release_age" => {
                // The value is not quoted back: the file may not be what it seems.
                let Expression::String(text) = a.expr else {
                    return Err(invalid(
                        "min_release_age must be a string such as \"7d\", \"36h\" or \"0\"".into(),
                    ));
                };
                let age = crate::ReleaseAge::parse_age(&text)
                    .map_err(|e| invalid(format!("min_release_age: {e}")))?;
                found.min_age = Some(age);
            }
            "min_release_age_exclude" => {
                let Expression::Array(items) = a.expr else {
                    return Err(invalid(
                        "min_release_age_exclude must be a list of source patterns".into(),
                    ));
                };
                for item in items {
                    match item {
                        Expression::String(p) if !p.is_empty() => found.exclude.push(p),
                        _ => {
                            return Err(invalid(
                                "min_release_age_exclude must be a list of non-empty strings"
                                    .into(),
                            ))
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Some(found))
}

/// What to say of a name this release does not read.
fn unknown(name: &str, shape: Shape) -> String {
    let what = match shape {
        Shape::Argument => "Unsupported argument",
        Shape::Block => "Unsupported block type",
    };
    if let Some((_, release)) = LATER.iter().find(|(k, _)| *k == name) {
        return format!(
            "{what}: {name:?} is read by tstore {release} and later, not by this release \
             ({}); upgrade tstore, or remove it",
            env!("CARGO_PKG_VERSION")
        );
    }
    let known: Vec<&str> = KNOWN.iter().map(|(k, _)| *k).collect();
    match nearest(name, &known) {
        Some(near) => format!(
            "{what}: {name:?} is not a setting of .tstore.hcl; did you mean {near:?}? (the \
             settings are {})",
            known.join(", ")
        ),
        None => format!(
            "{what}: {name:?} is not a setting of .tstore.hcl (the settings are {})",
            known.join(", ")
        ),
    }
}

/// The known name nearest to `name`, if one is near enough to be a misspelling of it.
fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The line (from 1) on which the top-level setting `name` starts: the first line outside
/// any block whose text starts with the name, then `=`, `{`, a label or a space.
fn line_of(text: &str, name: &str) -> Option<usize> {
    let mut depth: i64 = 0;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if depth == 0 {
            if let Some(rest) = trimmed.strip_prefix(name) {
                if rest.is_empty()
                    || rest.starts_with(|c: char| c.is_whitespace() || c == '=' || c == '{')
                    || rest.starts_with('"')
                {
                    return Some(n + 1);
                }
            }
        }
        depth += braces(trimmed);
    }
    None
}

/// The change in brace depth a line makes, outside strings and comments.
fn braces(line: &str) -> i64 {
    let mut depth = 0;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '#' => break,
            '/' if chars.peek() == Some(&'/') => break,
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(text: &str) -> Result<(), String> {
        let body: Body = hcl::parse(text).unwrap();
        check(Path::new("/repo/.tstore.hcl"), text, &body).map_err(|e| e.to_string())
    }

    #[test]
    fn known_settings_pass_and_a_misspelt_one_names_its_line_and_the_nearest() {
        assert_eq!(
            checked(
                "flavor = \"tofu\"\nmodules {\n  default = \"copy\"\n}\nmin_release_age = \"7d\"\n"
            ),
            Ok(())
        );
        let err = checked("flavor = \"tofu\"\n\nmin_relase_age = \"7d\"\n").unwrap_err();
        assert!(
            err.starts_with("/repo/.tstore.hcl:3: Unsupported argument"),
            "{err}"
        );
        assert!(err.contains("did you mean \"min_release_age\"?"), "{err}");
    }

    #[test]
    fn an_unknown_block_and_a_wrong_shape_are_errors() {
        let err = checked("modules {\n}\n\nmodule {\n  x = 1\n}\n").unwrap_err();
        assert!(
            err.starts_with("/repo/.tstore.hcl:4: Unsupported block type"),
            "{err}"
        );
        assert!(err.contains("did you mean \"modules\"?"), "{err}");
        let err = checked("modules = \"copy\"\n").unwrap_err();
        assert!(
            err.contains(":1: Unsupported argument: modules is a block"),
            "{err}"
        );
        let err = checked("zzz = 1\n").unwrap_err();
        assert!(!err.contains("did you mean"), "{err}");
    }

    #[test]
    fn a_name_inside_a_block_or_a_string_is_not_its_line() {
        let text = "modules {\n  flavorx = \"{\"\n}\n# flavorx\nflavorx = 1\n";
        assert_eq!(line_of(text, "flavorx"), Some(5));
    }
}
