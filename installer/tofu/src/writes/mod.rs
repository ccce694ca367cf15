//! Write detection: does a module write into its own directory during plan or apply?
//!
//! A module package is shared read-only between checkouts; a module that writes next to
//! its own files (an `archive_file` building `${path.module}/fn.zip`) fails there with
//! "Read-only file system" and needs a private writable copy. [`detect_self_writes`]
//! reads one module directory's configuration files (not its child modules: the caller
//! runs it on every module directory of a package) and reports every place that may
//! write into that directory. It evaluates nothing.
//!
//! # Rules
//!
//! **Writers.** Only arguments known to name a file that is written count:
//! - `archive_file` (resource and data source): `output_path`. Its `source_dir`,
//!   `source_file` and `source` are read.
//! - `local_file` and `local_sensitive_file` resources: `filename` (the data sources of
//!   the same names only read it).
//! - `template_dir` resources: `destination_dir`.
//!
//! A `provisioner "file"` copies to the remote host: its `destination` is not local and
//! its `source` is read, so it is never a write.
//!
//! **Programs.** A `provisioner "local-exec"` in any resource (`null_resource`,
//! `terraform_data`, …), a `data "external"` and a `shell_script` resource or data source
//! run a program, which can write anywhere. They count as follows:
//! - a working directory (`working_dir`, `working_directory`) in the module's directory
//!   is a [`WriteKind::Write`]: whatever the program writes by a relative path lands
//!   there, and builds run this way are the common case;
//! - a working directory that cannot be known here is [`WriteKind::Unknown`];
//! - without a working directory the program runs in terraform's working directory (the
//!   root module's), not the module's: relative paths in it are not into the module;
//! - a command, interpreter or program that names the module's directory (e.g.
//!   `"${path.module}/build.sh"`), or is told it (local-exec `environment`, external
//!   `query`), is a [`WriteKind::MaybeWrite`]: it may only read or run a script there,
//!   but a program that writes cannot be told apart;
//! - a command that is only a variable or another value not known here is not reported:
//!   it is the caller's command, and the caller's `path.module` is another directory.
//!
//! **Inside the module's directory.** A path expression is in the module's directory when
//! it mentions `path.module` anywhere outside a function whose result is not a path into
//! its argument (`file`, `templatefile`, `fileset`, `filemd5`, `basename`, hashes, …), so
//! `"${path.module}/x"`, `format("%s/x", path.module)`, `join("/", [path.module, "x"])`,
//! `abspath(path.module)` and `coalesce(var.out, "${path.module}/x")` all are, and
//! `"${path.root}/${filemd5("${path.module}/x")}.zip"` is not. Locals are followed.
//! Otherwise the leading component decides:
//! - a literal, relative or absolute, is not the module's directory: terraform resolves
//!   relative paths against its working directory, the root module's, and a package is
//!   never the root module;
//! - `path.root` and `path.cwd` are not the module's directory;
//! - a variable is the caller's value: [`WriteKind::Unknown`]. Terraform refuses
//!   references in a variable's default, but a default that mentions `path.module` anyway
//!   makes it a write;
//! - anything else not known here (another resource's attribute, `each`, `count`, a
//!   template directive) is [`WriteKind::Unknown`].
//!
//! [`WriteKind::Unknown`] and [`WriteKind::MaybeWrite`] exist so that a caller can copy to
//! be safe; only [`WriteKind::Write`] is certain.
//!
//! **Override files** are read like primary files and not merged: an argument an override
//! replaces is still reported from the primary file, which errs towards copying.
//!
//! **Not looked at:** what a program does (a script of the module is not read), values a
//! caller passes into a child module's variables (the child reports them as unknown), and
//! providers that write files of their own accord.

mod expr;
mod read;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use self::expr::{Place, Values};
use self::read::{Arg, Resource};
use crate::config::{module_files, ConfigError};
use crate::flavor::Flavor;
use crate::read::{read_capped, MAX_CONFIG_FILE};
use crate::span::SourcePos;

/// How sure a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriteKind {
    /// A file is written into the module's directory (or a program runs there).
    Write,
    /// A program names the module's directory; it may write there.
    MaybeWrite,
    /// A written path (or a program's working directory) not known here.
    Unknown,
}

/// One place that may write into the module's own directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfWrite {
    /// The file and line of the argument (no line in a JSON file, as elsewhere in this
    /// crate).
    pub at: SourcePos,
    /// The block: `data.archive_file.this`, `resource.local_file.x`,
    /// `resource.null_resource.build provisioner "local-exec"`.
    pub block: String,
    /// The argument: `output_path`, `command`, `working_dir`.
    pub argument: String,
    /// How sure.
    pub kind: WriteKind,
    /// Why, in words: "`output_path` is under path.module".
    pub why: String,
}

impl fmt::Display for SelfWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {:?} {} {}: {}",
            self.at, self.kind, self.block, self.argument, self.why
        )
    }
}

/// Resource types whose arguments name a file they write: (mode, type, argument).
const PATH_WRITERS: &[(&str, &str, &str)] = &[
    ("resource", "archive_file", "output_path"),
    ("data", "archive_file", "output_path"),
    ("resource", "local_file", "filename"),
    ("resource", "local_sensitive_file", "filename"),
    ("resource", "template_dir", "destination_dir"),
];

/// Programs: (mode, type or provisioner, working directory argument, command arguments).
/// A command argument may be a nested block's (`lifecycle_commands.`, a prefix).
const PROGRAMS: &[(&str, &str, &str, &[&str])] = &[
    (
        "provisioner",
        "local-exec",
        "working_dir",
        &["command", "interpreter", "environment"],
    ),
    ("data", "external", "working_dir", &["program", "query"]),
    (
        "resource",
        "shell_script",
        "working_directory",
        &["lifecycle_commands.", "interpreter", "environment"],
    ),
    (
        "data",
        "shell_script",
        "working_directory",
        &["lifecycle_commands.", "interpreter", "environment"],
    ),
];

/// Every place in the module in `module_dir` (its primary and override files under
/// `flavor`; not its child modules) that may write into `module_dir` during plan or apply,
/// in file order. See the module documentation for the rules.
pub fn detect_self_writes(
    module_dir: &Path,
    flavor: Flavor,
) -> Result<Vec<SelfWrite>, ConfigError> {
    let (primary, overrides) = module_files(module_dir, flavor).map_err(|err| {
        let err = match err {
            ConfigError::ReadDir { err, .. } => err,
            other => io::Error::other(other.to_string()),
        };
        ConfigError::ReadDir {
            dir: module_dir.to_owned(),
            err,
        }
    })?;
    let paths: Vec<&PathBuf> = primary.iter().chain(&overrides).collect();
    let read = |path: &PathBuf| {
        read_capped(path, MAX_CONFIG_FILE).map_err(|err| ConfigError::Read {
            path: path.clone(),
            err,
        })
    };
    // What these files say was found before (by any process) when the facts recorded it:
    // the files' names and contents, in order, are its key. A package's files are named by
    // its tree and not read when the facts answer.
    let rules = format!("writes {flavor} {}", crate::config::FACTS_FORMAT);
    let mut sources: Vec<Option<String>> = vec![None; paths.len()];
    let mut key = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        key.extend_from_slice(name.as_bytes());
        key.push(0);
        let id = match crate::config::facts::content_id(path) {
            Some(id) => id,
            None => {
                let src = read(path)?;
                let id = crate::config::facts::id_of(src.as_bytes());
                sources[i] = Some(src);
                match id {
                    Some(id) => id,
                    None => break,
                }
            }
        };
        key.extend_from_slice(&id);
    }
    if let Some(found) = crate::config::facts::recorded_as(&rules, &key)
        .and_then(|bytes| recorded::decode(&bytes, module_dir))
    {
        return Ok(found);
    }
    let mut loaded = Vec::new();
    for (path, src) in paths.iter().zip(sources) {
        let src = match src {
            Some(src) => src,
            None => read(path)?,
        };
        loaded.push((*path, src));
    }
    let sources = loaded;
    let mut resources = Vec::new();
    let mut values = Values::default();
    for (path, src) in &sources {
        if path.to_string_lossy().ends_with(".json") {
            read::json_file(src, path, &mut resources, &mut values)?;
        } else {
            read::hcl_file(src, path, &mut resources, &mut values)?;
        }
    }
    let mut found = Vec::new();
    for r in &resources {
        inspect(r, &values, &mut found);
    }
    if let Some(bytes) = recorded::encode(&found, module_dir) {
        crate::config::facts::record_as(&rules, &key, &bytes);
    }
    Ok(found)
}

/// A module directory's findings as a file's facts record them: each position as the file's
/// name in the directory and its line.
mod recorded {
    use std::path::Path;

    use super::{SelfWrite, WriteKind};
    use crate::span::SourcePos;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Finding {
        file: String,
        line: Option<usize>,
        block: String,
        argument: String,
        kind: u8,
        why: String,
    }

    pub(super) fn encode(found: &[SelfWrite], dir: &Path) -> Option<Vec<u8>> {
        let findings = found
            .iter()
            .map(|w| {
                Some(Finding {
                    file: w.at.file.strip_prefix(dir).ok()?.to_str()?.to_owned(),
                    line: w.at.line,
                    block: w.block.clone(),
                    argument: w.argument.clone(),
                    kind: match w.kind {
                        WriteKind::Write => 0,
                        WriteKind::MaybeWrite => 1,
                        WriteKind::Unknown => 2,
                    },
                    why: w.why.clone(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        serde_json::to_vec(&findings).ok()
    }

    pub(super) fn decode(bytes: &[u8], dir: &Path) -> Option<Vec<SelfWrite>> {
        let findings: Vec<Finding> = serde_json::from_slice(bytes).ok()?;
        findings
            .into_iter()
            .map(|f| {
                let name = Path::new(&f.file);
                // A file of the directory itself, never a path out of it.
                if name.components().count() != 1 || name.is_absolute() {
                    return None;
                }
                Some(SelfWrite {
                    at: SourcePos {
                        file: dir.join(name),
                        line: f.line,
                    },
                    block: f.block,
                    argument: f.argument,
                    kind: match f.kind {
                        0 => WriteKind::Write,
                        1 => WriteKind::MaybeWrite,
                        2 => WriteKind::Unknown,
                        _ => return None,
                    },
                    why: f.why,
                })
            })
            .collect()
    }
}

fn inspect(r: &Resource, values: &Values, found: &mut Vec<SelfWrite>) {
    let block = format!("{}.{}.{}", r.mode, r.rtype, r.name);
    for &(mode, rtype, argument) in PATH_WRITERS {
        if (mode, rtype) != (r.mode.as_str(), r.rtype.as_str()) {
            continue;
        }
        if let Some(arg) = r.arg(argument) {
            if let Some(w) = written_path(&block, argument, arg, values) {
                found.push(w);
            }
        }
    }
    for &(mode, kind, dir_arg, command_args) in PROGRAMS {
        if mode == "provisioner" {
            for p in r.provisioners.iter().filter(|p| p.kind == kind) {
                let block = format!("{block} provisioner {kind:?}");
                program(
                    &block,
                    p.arg(dir_arg),
                    dir_arg,
                    &p.args,
                    command_args,
                    values,
                    found,
                );
            }
        } else if (mode, kind) == (r.mode.as_str(), r.rtype.as_str()) {
            program(
                &block,
                r.arg(dir_arg),
                dir_arg,
                &r.args,
                command_args,
                values,
                found,
            );
        }
    }
}

/// A writer's path argument.
fn written_path(block: &str, argument: &str, arg: &Arg, values: &Values) -> Option<SelfWrite> {
    let verdict = values.place(&arg.expr);
    let (kind, why) = match verdict.place {
        Place::Elsewhere => return None,
        Place::Module => (
            WriteKind::Write,
            format!("`{argument}` is under path.module (via {})", verdict.via),
        ),
        Place::Unknown => (
            WriteKind::Unknown,
            format!("`{argument}` depends on {}, not known here", verdict.via),
        ),
    };
    Some(SelfWrite {
        at: arg.at.clone(),
        block: block.to_owned(),
        argument: argument.to_owned(),
        kind,
        why,
    })
}

/// A program: its working directory, then the arguments that make up its command.
fn program(
    block: &str,
    dir: Option<&Arg>,
    dir_arg: &str,
    args: &[(String, Arg)],
    command_args: &[&str],
    values: &Values,
    found: &mut Vec<SelfWrite>,
) {
    if let Some(dir) = dir {
        let verdict = values.place(&dir.expr);
        let finding = match verdict.place {
            Place::Elsewhere => None,
            Place::Module => Some((
                WriteKind::Write,
                format!(
                    "the program runs in the module's directory (`{dir_arg}` via {}): what it writes by a relative path lands there",
                    verdict.via
                ),
            )),
            Place::Unknown => Some((
                WriteKind::Unknown,
                format!("`{dir_arg}` depends on {}, not known here", verdict.via),
            )),
        };
        if let Some((kind, why)) = finding {
            found.push(SelfWrite {
                at: dir.at.clone(),
                block: block.to_owned(),
                argument: dir_arg.to_owned(),
                kind,
                why,
            });
        }
    }
    for (name, arg) in args {
        let is_command = command_args
            .iter()
            .any(|c| name == c || (c.ends_with('.') && name.starts_with(c)));
        if !is_command {
            continue;
        }
        let mut seen = Default::default();
        if let Some(via) = values.names_module(&arg.expr, &mut seen) {
            found.push(SelfWrite {
                at: arg.at.clone(),
                block: block.to_owned(),
                argument: name.clone(),
                kind: WriteKind::MaybeWrite,
                why: format!(
                    "`{name}` names the module's directory (via {via}); a program may write there"
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests;
