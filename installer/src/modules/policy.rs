//! Policy for a whole repository or machine: which module sources are trusted read-only
//! (linked) or must be copied, for the packages whose authors make no statement.
//!
//! Two places hold it, with the same grammar:
//! - the repository file `.tstore.hcl`, the first one found walking up from the working
//!   directory: `modules { … }` (its top-level `flavor = "tofu" | "terraform"` is read
//!   by [`find_repository_flavor`]);
//! - the CLI configuration (`TF_CLI_CONFIG_FILE`, `~/.tofurc`, …): a `tstore_modules { … }`
//!   block, the machine's or user's policy (tofu and terraform ignore blocks they do not know).
//!
//! ```hcl
//! modules {
//!   read_only = ["registry.terraform.io/terraform-aws-modules/*", "git::https://git.example.com/platform/*"]
//!   copy      = ["*/lambda/aws", "*notify-slack*"]
//!   default   = "auto"   # for sources no pattern names: "auto", "copy" or "link"
//! }
//! ```
//!
//! Rules, in the order they apply to a package instance (see `decide`):
//! 1. the package's own `module-package.meta.hcl` (and its callers' and the root's
//!    statements) — an author's statement wins;
//! 2. the repository file: a `copy` pattern matching the call's source, then a `read_only`
//!    one (copying is the safe answer when both match);
//! 3. the machine's block, the same way;
//! 4. the first `default` written (repository, then machine), else `--assume-read-only`
//!    (link), else `auto`: linked unless write detection (`tstore_tofu::writes`) finds that
//!    a module of the package may write into its own directory, which copies it. `copy` is
//!    the compatible setting (what `tofu init` does for every package).
//!
//! A pattern matches the source as written in the `module` block or, for a registry
//! address, its full form `HOST/NAMESPACE/NAME/SYSTEM`; `*` matches any run of characters
//! (including `/`), `?` one character, everything else itself.

use std::path::{Path, PathBuf};

use hcl::{Body, Expression, Structure};

use tstore_tofu::module_source::ModuleSource;

use super::error::PolicyError;
use super::repository_file::find_repository_file;

/// What to do with packages nobody made a statement about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// A private copy (the compatible default).
    Copy,
    /// A read-only link.
    Link,
    /// Linked unless a module of the package may write into its own directory
    /// (`tstore_tofu::writes`), then copied.
    Auto,
}

/// One policy (a repository file or a machine block).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceRules {
    /// Where it was read from, for messages.
    pub origin: String,
    /// Patterns of sources trusted read-only.
    pub read_only: Vec<String>,
    /// Patterns of sources that must be copied.
    pub copy: Vec<String>,
    /// The fallback it sets, if any.
    pub default: Option<Fallback>,
}

/// The repository and machine policies, in precedence order.
#[derive(Clone, Debug, Default)]
pub struct ModulePolicy {
    /// Repository first, then machine.
    pub levels: Vec<SourceRules>,
    /// `--assume-read-only`.
    pub assume_read_only: bool,
}

impl ModulePolicy {
    /// The policy of the working directory `dir`: the repository's `.tstore.hcl` (nearest
    /// at or above it), then `machine`, the CLI configuration's `tstore_modules` block (the
    /// file it is in, and its body).
    pub fn load(
        dir: &Path,
        machine: Option<(&str, &str)>,
        assume_read_only: bool,
    ) -> Result<ModulePolicy, PolicyError> {
        let mut levels = Vec::new();
        levels.extend(find_repository_rules(dir)?);
        if let Some((file, body)) = machine {
            let origin = format!("the tstore_modules block of {file}");
            levels.push(parse_machine_rules(body, &origin)?);
        }
        Ok(ModulePolicy {
            levels,
            assume_read_only,
        })
    }
}

/// What a policy says about one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Link it.
    ReadOnly(String),
    /// Copy it.
    Copy(String),
}

impl ModulePolicy {
    /// The first level with a pattern matching `source` (as written) decides.
    pub fn verdict(&self, source: &str, default_host: &str) -> Option<Verdict> {
        let forms = source_forms(source, default_host);
        for level in &self.levels {
            let hit = |patterns: &[String]| {
                patterns
                    .iter()
                    .find(|p| forms.iter().any(|f| crate::wildcard::matches(p, f)))
                    .cloned()
            };
            if let Some(p) = hit(&level.copy) {
                return Some(Verdict::Copy(format!(
                    "{}: copy pattern {p:?} matches {source:?}",
                    level.origin
                )));
            }
            if let Some(p) = hit(&level.read_only) {
                return Some(Verdict::ReadOnly(format!(
                    "{}: read_only pattern {p:?} matches {source:?}",
                    level.origin
                )));
            }
        }
        None
    }

    /// The fallback for sources no pattern names, and who set it.
    pub fn fallback(&self) -> (Fallback, String) {
        if let Some(level) = self.levels.iter().find(|l| l.default.is_some()) {
            let d = level.default.expect("found");
            return (d, format!("{} sets default = {:?}", level.origin, name(d)));
        }
        if self.assume_read_only {
            return (Fallback::Link, "--assume-read-only".into());
        }
        (Fallback::Auto, "the default policy (auto)".into())
    }
}

fn name(f: Fallback) -> &'static str {
    match f {
        Fallback::Copy => "copy",
        Fallback::Link => "link",
        Fallback::Auto => "auto",
    }
}

/// The forms a pattern may match: as written, and a registry address in full.
fn source_forms(source: &str, default_host: &str) -> Vec<String> {
    let mut forms = vec![source.to_owned()];
    if let Ok(ModuleSource::Registry {
        host,
        namespace,
        name,
        system,
        ..
    }) = ModuleSource::parse(source, default_host)
    {
        forms.push(format!("{host}/{namespace}/{name}/{system}"));
    }
    forms
}

/// The repository policy: the `modules` block of `.tstore.hcl` in `dir` or the nearest
/// directory above it.
pub fn find_repository_rules(dir: &Path) -> Result<Option<SourceRules>, PolicyError> {
    let Some((path, body)) = find_repository_file(dir)? else {
        return Ok(None);
    };
    let block = body.into_inner().into_iter().find_map(|s| match s {
        Structure::Block(b) if b.identifier.as_str() == "modules" => Some(b.body),
        _ => None,
    });
    match block {
        Some(b) => parse_rules(b, path.display().to_string()).map(Some),
        None => Ok(None),
    }
}

/// The repository's flavor: `flavor = "tofu"` or `"terraform"` at the top level of the
/// same `.tstore.hcl` (nearest at or above `dir`), and that file.
pub fn find_repository_flavor(
    dir: &Path,
) -> Result<Option<(tstore_tofu::flavor::Flavor, PathBuf)>, PolicyError> {
    let Some((path, body)) = find_repository_file(dir)? else {
        return Ok(None);
    };
    let Some(attr) = body.into_inner().into_iter().find_map(|s| match s {
        Structure::Attribute(a) if a.key.as_str() == "flavor" => Some(a),
        _ => None,
    }) else {
        return Ok(None);
    };
    // The value is not quoted back: the file may not be what it seems.
    let invalid = || PolicyError::Invalid {
        origin: path.display().to_string(),
        message: "flavor must be \"tofu\" or \"terraform\"".into(),
    };
    match attr.expr {
        Expression::String(s) => match s.as_str() {
            "tofu" => Ok(Some((tstore_tofu::flavor::Flavor::Tofu, path))),
            "terraform" => Ok(Some((tstore_tofu::flavor::Flavor::Terraform, path))),
            _ => Err(invalid()),
        },
        _ => Err(invalid()),
    }
}

/// The repository's module mirror: `module_mirror = "oci://REGISTRY/REPOSITORY"` at the top
/// level of the same `.tstore.hcl` (nearest at or above `dir`).
pub fn find_repository_module_mirror(
    dir: &Path,
) -> Result<Option<crate::modules::mirror::ModuleMirror>, PolicyError> {
    let Some((path, body)) = find_repository_file(dir)? else {
        return Ok(None);
    };
    let Some(attr) = body.into_inner().into_iter().find_map(|s| match s {
        Structure::Attribute(a) if a.key.as_str() == "module_mirror" => Some(a),
        _ => None,
    }) else {
        return Ok(None);
    };
    let origin = path.display().to_string();
    // The value is not quoted back: the file may not be what it seems.
    let invalid = || PolicyError::Invalid {
        origin: origin.clone(),
        message: "module_mirror must be \"oci://REGISTRY/REPOSITORY\"".into(),
    };
    match attr.expr {
        Expression::String(s) => crate::modules::mirror::ModuleMirror::parse(&s, &origin)
            .map(Some)
            .map_err(|_| invalid()),
        _ => Err(invalid()),
    }
}

/// A `tstore_modules { … }` block of the CLI configuration, given as its body's text.
pub fn parse_machine_rules(body_text: &str, origin: &str) -> Result<SourceRules, PolicyError> {
    let body: Body = hcl::parse(body_text).map_err(|e| PolicyError::Syntax {
        origin: origin.to_owned(),
        message: crate::own_files::syntax_error(&e),
    })?;
    parse_rules(body, origin.to_owned())
}

fn parse_rules(body: Body, origin: String) -> Result<SourceRules, PolicyError> {
    let invalid = |message: String| PolicyError::Invalid {
        origin: origin.clone(),
        message,
    };
    let mut rules = SourceRules {
        origin: origin.clone(),
        ..SourceRules::default()
    };
    for s in body.into_inner() {
        let Structure::Attribute(a) = s else {
            return Err(invalid(
                "only read_only, copy and default may be set".into(),
            ));
        };
        let key = a.key.as_str();
        match key {
            "read_only" | "copy" => {
                let Expression::Array(items) = a.expr else {
                    return Err(invalid(format!("{key} must be a list of strings")));
                };
                let mut patterns = Vec::new();
                for item in items {
                    match item {
                        Expression::String(p) if !p.is_empty() => patterns.push(p),
                        _ => {
                            return Err(invalid(format!(
                                "{key} must be a list of non-empty strings"
                            )))
                        }
                    }
                }
                if key == "copy" {
                    rules.copy = patterns;
                } else {
                    rules.read_only = patterns;
                }
            }
            "default" => {
                rules.default = Some(match a.expr {
                    Expression::String(s) if s == "copy" => Fallback::Copy,
                    Expression::String(s) if s == "link" => Fallback::Link,
                    Expression::String(s) if s == "auto" => Fallback::Auto,
                    _ => {
                        return Err(invalid(
                            "default must be \"auto\", \"copy\" or \"link\"".into(),
                        ))
                    }
                });
            }
            other => {
                return Err(invalid(format!(
                    "unknown setting {other:?} (read_only, copy and default are known)"
                )))
            }
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::repository_file::REPOSITORY_FILE;

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("*", "anything/at/all", true),
            (
                "terraform-aws-modules/*",
                "terraform-aws-modules/vpc/aws",
                true,
            ),
            ("*/lambda/aws", "terraform-aws-modules/lambda/aws", true),
            (
                "*/lambda/aws",
                "terraform-aws-modules/lambda/aws//modules/x",
                false,
            ),
            (
                "git::https://git.example.com/platform/*",
                "git::https://git.example.com/platform/net.git?ref=v1",
                true,
            ),
            (
                "git::https://git.example.com/platform/*",
                "git::https://git.example.com/other/net.git",
                false,
            ),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*notify*", "x/notify-slack/aws", true),
            ("", "", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(crate::wildcard::matches(p, t), want, "{p} ~ {t}");
        }
    }

    fn rules(
        origin: &str,
        read_only: &[&str],
        copy: &[&str],
        default: Option<Fallback>,
    ) -> SourceRules {
        SourceRules {
            origin: origin.into(),
            read_only: read_only.iter().map(|s| (*s).to_owned()).collect(),
            copy: copy.iter().map(|s| (*s).to_owned()).collect(),
            default,
        }
    }

    #[test]
    fn levels_in_order_copy_before_read_only() {
        let policy = ModulePolicy {
            levels: vec![
                rules("repo", &["acme/*"], &["acme/lambda/*"], None),
                rules("machine", &["*"], &[], Some(Fallback::Link)),
            ],
            assume_read_only: false,
        };
        let host = "registry.example.org";
        let v = |s: &str| policy.verdict(s, host);
        assert!(matches!(v("acme/vpc/aws"), Some(Verdict::ReadOnly(r)) if r.starts_with("repo")));
        assert!(matches!(v("acme/lambda/aws"), Some(Verdict::Copy(r)) if r.starts_with("repo")));
        assert!(matches!(v("other/x/aws"), Some(Verdict::ReadOnly(r)) if r.starts_with("machine")));
        // The full registry form matches too.
        let full = ModulePolicy {
            levels: vec![rules("repo", &["registry.example.org/acme/*"], &[], None)],
            assume_read_only: false,
        };
        assert!(full.verdict("acme/vpc/aws", host).is_some());
        assert!(full.verdict("./local", host).is_none());
        assert_eq!(policy.fallback().0, Fallback::Link);
        assert_eq!(ModulePolicy::default().fallback().0, Fallback::Auto);
        let assume = ModulePolicy {
            assume_read_only: true,
            ..ModulePolicy::default()
        };
        assert_eq!(assume.fallback().0, Fallback::Link);
    }

    #[test]
    fn files_and_blocks_parse_or_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("stacks/a");
        fs_err::create_dir_all(&sub).unwrap();
        assert_eq!(find_repository_rules(&sub).unwrap(), None);
        fs_err::write(
            dir.path().join(REPOSITORY_FILE),
            "modules {\n  read_only = [\"acme/*\"]\n  copy = [\"acme/lambda/*\"]\n  default = \"link\"\n}\n",
        )
        .unwrap();
        let found = find_repository_rules(&sub).unwrap().unwrap();
        assert_eq!(found.read_only, ["acme/*"]);
        assert_eq!(found.copy, ["acme/lambda/*"]);
        assert_eq!(found.default, Some(Fallback::Link));
        for bad in [
            "read_only = \"acme/*\"\n",
            "copy = [1]\n",
            "default = \"sometimes\"\n",
            "links = []\n",
        ] {
            let err = parse_machine_rules(bad, "cli.tfrc")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("cli.tfrc: "), "{err}");
        }
        assert!(parse_machine_rules("read_only = [\"x/*\"]\n", "cli").is_ok());
    }

    #[test]
    fn repository_flavor_at_the_top_of_the_nearest_file() {
        use tstore_tofu::flavor::Flavor;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("stacks/a");
        fs_err::create_dir_all(&sub).unwrap();
        let file = dir.path().join(REPOSITORY_FILE);
        assert_eq!(find_repository_flavor(&sub).unwrap(), None);
        fs_err::write(&file, "modules {\n  default = \"copy\"\n}\n").unwrap();
        assert_eq!(find_repository_flavor(&sub).unwrap(), None, "no flavor set");
        fs_err::write(
            &file,
            "flavor = \"terraform\"\nmodules {\n  default = \"copy\"\n}\n",
        )
        .unwrap();
        assert_eq!(
            find_repository_flavor(&sub).unwrap(),
            Some((Flavor::Terraform, file.clone()))
        );
        // The modules block is still read beside it.
        assert_eq!(
            find_repository_rules(&sub).unwrap().unwrap().default,
            Some(Fallback::Copy)
        );
        // Inside a block it is no setting of the repository.
        fs_err::write(&file, "modules {\n  flavor = \"tofu\"\n}\n").unwrap();
        assert_eq!(find_repository_flavor(&sub).unwrap(), None);
        // Anything but the two names is an error that does not quote the value.
        fs_err::write(&file, "flavor = \"s3cr3t\"\n").unwrap();
        let err = find_repository_flavor(&sub).unwrap_err().to_string();
        assert!(err.contains("flavor must be"), "{err}");
        assert!(!err.contains("s3cr3t"), "{err}");
    }
}
