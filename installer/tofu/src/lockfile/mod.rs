//! The dependency lock file, `.terraform.lock.hcl`.
//!
//! Reading validates like OpenTofu's `depsfile` package, with its wording
//! (<https://github.com/opentofu/opentofu/blob/main/internal/depsfile/locks_file.go>);
//! writing reproduces its byte layout exactly, so a lock file written by tofu
//! or Terraform and rewritten by tstore produces no diff.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::io;
use std::path::{Path, PathBuf};

use hcl::edit::structure::Structure;

use crate::addr::ProviderAddr;
use crate::flavor::{DecidedBy, Flavor, FlavorChoice};
use crate::hclwrite::{write_aligned_attributes, write_string_list};
use crate::string_literal::quote;
use crate::version::Version;
use read::Ctx;

/// What is wrong with a lock file; each names the tofu diagnostic it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockErrorKind {
    /// HCL syntax error.
    Syntax,
    /// "Unsupported block type".
    UnsupportedBlockType,
    /// "Unsupported argument".
    UnsupportedArgument,
    /// "Missing required argument".
    MissingArgument,
    /// "Attribute redefined".
    DuplicateArgument,
    /// Wrong number of block labels.
    InvalidLabels,
    /// "Invalid provider source address" (unparseable or not lockable).
    InvalidSourceAddress,
    /// "Non-normalized provider source address".
    NonNormalizedAddress,
    /// "Invalid provider source address" for `terraform.io/builtin/terraform`.
    BuiltinProvider,
    /// "Duplicate provider lock".
    DuplicateProvider,
    /// "Invalid provider version number".
    InvalidVersion,
    /// "Invalid provider version constraints".
    InvalidConstraints,
    /// "Invalid provider hash string".
    InvalidHash,
    /// "Invalid provider hash set".
    InvalidHashSet,
    /// An argument value of the wrong type (e.g. not a string literal).
    InvalidValue,
}

/// Errors from reading a lock file.
#[derive(Debug, thiserror::Error)]
pub enum LockFileError {
    /// The file exists but could not be read.
    #[error("cannot read dependency lock file {path}")]
    Read {
        /// The lock file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        err: io::Error,
    },
    /// The file is not a valid lock file.
    #[error("{file}:{line}: {summary}: {detail}")]
    Invalid {
        /// Which check failed.
        kind: LockErrorKind,
        /// File name as given to the parser.
        file: String,
        /// One-based line of the offending construct.
        line: usize,
        /// Short summary, in tofu's words.
        summary: &'static str,
        /// Explanation, in tofu's words.
        detail: String,
    },
}

impl LockFileError {
    /// The check that failed, if the file was read.
    pub fn kind(&self) -> Option<LockErrorKind> {
        match self {
            LockFileError::Read { .. } => None,
            LockFileError::Invalid { kind, .. } => Some(*kind),
        }
    }
}

/// The selection recorded for one provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedProvider {
    /// The selected version.
    pub version: Version,
    /// The canonical constraints string, when the configuration had any.
    pub constraints: Option<String>,
    /// Accepted package hashes (`h1:…`, `zh:…`, unknown schemes kept as-is).
    pub hashes: BTreeSet<String>,
}

/// A parsed `.terraform.lock.hcl`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockFile {
    /// The leading comment lines as found (each ending in `\n`), kept on rewrite.
    pub header: Option<String>,
    /// Locked providers, in lock file order.
    pub providers: BTreeMap<ProviderAddr, LockedProvider>,
    /// Warnings to show the user (e.g. about ignored `module` blocks).
    pub warnings: Vec<String>,
}

impl LockFile {
    /// Whether `other` records what this lock file records, as the tools compare two lock
    /// files before they write one (`depsfile.Locks.Equal`): the same providers at the same
    /// versions (build metadata included) with the same hashes. The recorded constraints are
    /// a hint for the tool's messages and never make a lock file change on their own; nor do
    /// the header or the layout.
    ///
    /// upstream: internal/depsfile/locks.go (`Locks.Equal`), terraform v1.0.3 and v1.11.4,
    /// OpenTofu v1.12.x; internal/command/init.go writes the file only when it is not equal.
    pub fn records_the_same(&self, other: &LockFile) -> bool {
        self.providers.len() == other.providers.len()
            && self.providers.iter().all(|(addr, mine)| {
                other.providers.get(addr).is_some_and(|theirs| {
                    theirs.version == mine.version && theirs.hashes == mine.hashes
                })
            })
    }

    /// Read and parse the lock file at `path`; `Ok(None)` if it does not exist.
    pub fn load(path: &Path) -> Result<Option<LockFile>, LockFileError> {
        let src = match crate::read::read_capped(path, crate::read::MAX_LOCK_FILE) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(LockFileError::Read {
                    path: path.to_owned(),
                    err,
                })
            }
        };
        Self::parse(&src, &path.display().to_string()).map(Some)
    }

    /// Parse lock file source; `filename` is used in error messages.
    pub fn parse(src: &str, filename: &str) -> Result<LockFile, LockFileError> {
        let ctx = Ctx { src, filename };
        let body = hcl::edit::parser::parse_body(src).map_err(|e| LockFileError::Invalid {
            kind: LockErrorKind::Syntax,
            file: filename.to_owned(),
            line: e.location().line(),
            summary: "Invalid HCL syntax",
            detail: e.message().to_owned(),
        })?;

        let mut lock = LockFile {
            header: leading_comments(src),
            ..LockFile::default()
        };
        // Where each provider was first declared, for the duplicate message.
        let mut seen: BTreeMap<ProviderAddr, usize> = BTreeMap::new();
        for structure in body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    return Err(ctx.unsupported_argument(attr));
                }
                Structure::Block(block) => match block.ident.as_str() {
                    "provider" => {
                        let (addr, locked) = ctx.provider_block(block)?;
                        let line = ctx.line(block);
                        if let Some(first) = seen.get(&addr) {
                            return Err(ctx.err(
                                LockErrorKind::DuplicateProvider,
                                line,
                                "Duplicate provider lock",
                                format!(
                                    "This lockfile already declared a lock for provider {addr} at {filename}:{first}."
                                ),
                            ));
                        }
                        seen.insert(addr.clone(), line);
                        lock.providers.insert(addr, locked);
                    }
                    "module" => {
                        ctx.expect_one_label(block)?;
                        // One warning is enough to make the point, as in tofu.
                        if lock.warnings.is_empty() {
                            lock.warnings.push(format!(
                                "{filename}:{}: Dependency locks for modules are not yet supported: this lock file contains module blocks, which are ignored; it may have been written by a later version.",
                                ctx.line(block)
                            ));
                        }
                    }
                    other => {
                        return Err(ctx.err(
                            LockErrorKind::UnsupportedBlockType,
                            ctx.line(block),
                            "Unsupported block type",
                            format!("Blocks of type {other:?} are not expected here."),
                        ))
                    }
                },
            }
        }
        Ok(lock)
    }

    /// What OpenTofu does with the entries terraform wrote, before it installs under the
    /// tofu flavor: for every `registry.terraform.io/hashicorp/TYPE` entry without an
    /// entry for `registry.opentofu.org/hashicorp/TYPE`, that entry is added with the same
    /// version and constraints and no hashes (the two registries' packages are not the
    /// same bytes), so the install selects the same version. The old entries stay here;
    /// the install drops them when the configuration no longer requires them. Other
    /// namespaces and hosts are left alone: nothing says a provider there is the same one
    /// in the other registry. Returns each `(old, new)` pair added, in address order, so
    /// the caller can say what changed.
    ///
    /// upstream: internal/depsfile/locks.go@v1.10.0 (`UpgradeFromPredecessorProject`),
    /// called by internal/command/meta_dependencies.go@v1.10.0 for `tofu init` and
    /// `tofu providers lock`.
    pub fn upgrade_from_predecessor(&mut self) -> Vec<(ProviderAddr, ProviderAddr)> {
        let old_host = Flavor::Terraform.default_registry_host();
        let new_host = Flavor::Tofu.default_registry_host();
        let mut added = Vec::new();
        for (old, locked) in &self.providers {
            if old.host != old_host || old.namespace != "hashicorp" {
                continue;
            }
            let new = ProviderAddr {
                host: new_host.to_owned(),
                ..old.clone()
            };
            if self.providers.contains_key(&new) {
                continue;
            }
            added.push((old.clone(), new, locked.clone()));
        }
        added
            .into_iter()
            .map(|(old, new, locked)| {
                self.providers.insert(
                    new.clone(),
                    LockedProvider {
                        hashes: BTreeSet::new(),
                        ..locked
                    },
                );
                (old, new)
            })
            .collect()
    }

    /// Render the lock file exactly as OpenTofu writes it.
    ///
    /// The header is the one read from the existing file, or the standard two
    /// comment lines naming `flavor`'s init command.
    pub fn to_string_with_header(&self, flavor: Flavor) -> String {
        let mut out = match &self.header {
            Some(h) => {
                let mut h = h.clone();
                if !h.ends_with('\n') {
                    h.push('\n');
                }
                h
            }
            None => format!(
                "# This file is maintained automatically by \"{}\".\n# Manual edits may be lost in future updates.\n",
                flavor.init_command()
            ),
        };
        for (addr, p) in &self.providers {
            out.push('\n');
            let _ = writeln!(out, "provider {} {{", quote(&addr.to_string()));
            let mut attrs = vec![("version", quote(&p.version.to_string()))];
            if let Some(c) = p.constraints.as_deref().filter(|c| !c.is_empty()) {
                attrs.push(("constraints", quote(c)));
            }
            write_aligned_attributes(&mut out, "  ", &attrs);
            if !p.hashes.is_empty() {
                write_string_list(
                    &mut out,
                    "  ",
                    "hashes",
                    p.hashes.iter().map(String::as_str),
                );
            }
            out.push_str("}\n");
        }
        out
    }
}

impl fmt::Display for LockFile {
    /// Renders with the OpenTofu header when none was read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_with_header(Flavor::Tofu))
    }
}

/// The comment lines (`#` or `//`) at the very top of the file.
fn leading_comments(src: &str) -> Option<String> {
    let mut header = String::new();
    for line in src.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('#') || t.starts_with("//") {
            header.push_str(line);
        } else {
            break;
        }
    }
    (!header.is_empty()).then_some(header)
}

/// Whether `hash` starts with a scheme of at least one character and a colon, the one rule
/// tofu applies to a lock file's hash strings. The scheme itself is not checked, so hashes
/// of schemes this version does not know survive a rewrite.
pub(crate) fn has_hash_scheme(hash: &str) -> bool {
    hash.find(':').is_some_and(|i| i > 0)
}

/// What the existing lock file at `path` says about the tool that wrote it: its header
/// (`# This file is maintained automatically by "terraform init".` or `"tofu init"`),
/// else its providers' hosts when all of them that are a default registry host are the
/// same one. `None` when there is no such file, it cannot be read, or it says neither
/// (a file that cannot be parsed is reported by the install that reads it, not here).
pub fn flavor_evidence(path: &Path) -> Option<FlavorChoice> {
    let text = crate::read::read_capped(path, crate::read::MAX_LOCK_FILE).ok()?;
    let header_line = text.lines().take_while(|l| {
        let t = l.trim_start();
        t.starts_with('#') || t.starts_with("//")
    });
    for line in header_line {
        for flavor in [Flavor::Tofu, Flavor::Terraform] {
            if line.contains(&format!(
                "maintained automatically by \"{}\"",
                flavor.init_command()
            )) {
                return Some(FlavorChoice {
                    flavor,
                    decided_by: DecidedBy::LockFileHeader(path.to_owned()),
                });
            }
        }
    }
    let lock = LockFile::parse(&text, &path.display().to_string()).ok()?;
    let mut hosts = [Flavor::Tofu, Flavor::Terraform].into_iter().filter(|f| {
        lock.providers
            .keys()
            .any(|a| a.host == f.default_registry_host())
    });
    match (hosts.next(), hosts.next()) {
        (Some(flavor), None) => Some(FlavorChoice {
            flavor,
            decided_by: DecidedBy::LockFileHosts(path.to_owned()),
        }),
        _ => None,
    }
}

mod read;
#[cfg(test)]
mod tests;
