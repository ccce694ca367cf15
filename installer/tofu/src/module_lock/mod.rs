//! The module lock file, `.tstore.lock.hcl`: for every remote module call of a
//! configuration, what `tstore init` installed for it, so that the next install gets the
//! same bytes or says why not.
//!
//! # Why it exists
//!
//! `.terraform.lock.hcl` locks providers only; a module call is resolved afresh by every
//! install. A git tag moved to another commit, a registry version re-published with other
//! content, an archive replaced at the same URL: each installs something else, and nothing
//! tells. This file records what each call resolved to (a version, a commit) and the hashes
//! of what was installed, so that a later install can verify them and `-lockfile=readonly`
//! can refuse a change. It sits beside `.terraform.lock.hcl` and, like it, is committed by
//! the user.
//!
//! # The format
//!
//! ```hcl
//! # This file is maintained automatically by "tstore init".
//! # Manual edits may be lost in future updates.
//!
//! module "network.vpc" {
//!   source      = "registry.terraform.io/terraform-aws-modules/vpc/aws"
//!   version     = "5.5.3"
//!   constraints = "~> 5.5"
//!   hashes = [
//!     "h1:…",
//!     "zh:…",
//!   ]
//! }
//! ```
//!
//! One `module` block per remote module call, labelled with the call's path: the call names
//! from the root module down, joined by `.` (`network.vpc`), as the keys of
//! `.terraform/modules/modules.json`. Its arguments:
//!
//! - `source` (required): the package address the call was installed from.
//! - `version`: for a registry module the version selected; for a git module the ref as
//!   written in the source (`?ref=`).
//! - `constraints`: the call's `version` argument as written, when it has one.
//! - `commit`: git modules only: the full id of the commit the ref resolved to, 40
//!   (SHA-1) or 64 (SHA-256) lowercase hexadecimal digits.
//! - `hashes`: `h1:` of the package tree (Go's dirhash `Hash1`, as providers' `h1:`), and
//!   `zh:` of the archive (sha256, lowercase hex; for an OCI module, the layer digest) where
//!   there is one. Hashes of other schemes (`scheme:…`) are kept as they are, as the
//!   provider lock file keeps them, so a later tstore can add a scheme this one does not
//!   know.
//!
//! The file is committed, so a `source` must never carry credentials: stripping them is
//! the caller's job.
//!
//! # Reading
//!
//! [`parse`] is strict, as the provider lock file's reader is: an argument or a block it
//! does not know is an error, not something to skip. Top-level blocks other than `module`
//! are errors too, as the provider lock file rejects blocks other than `provider` and
//! `module`. A hash of scheme `h1:` or `zh:` must be well formed; a `commit` must be a full
//! commit id; `hashes`, when present, must list at least one hash. Comments, and so the
//! header, are not kept. Windows line endings (CRLF) are read as LF.
//!
//! An error names the file, line and column and the rule broken. It may name an argument
//! or a block type, but never quotes a string value or a line of the file: a hand-edited
//! file may hold a credential, and errors end up in CI logs.
//!
//! # Writing
//!
//! [`render`] is canonical, so that the same content is the same bytes and a rewrite that
//! changes nothing makes no diff: the two-line [`HEADER`], then the blocks sorted by call
//! path, each preceded by a blank line; in a block the arguments in the order `source`,
//! `version`, `constraints`, `commit` (those present), their `=` aligned one space past
//! the longest name as hclwrite aligns a run of one-line arguments (as in
//! `.terraform.lock.hcl`), then `hashes = [` with one hash per line, sorted, each with a
//! trailing comma, and `]`; `hashes` is left out when there are none. Lines end in LF and
//! the file ends with a newline. A lock without entries renders to the header alone: the
//! caller decides whether to write such a file.
//!
//! # OpenTofu's Module Version Locking RFC
//!
//! The shape follows the draft RFC `rfc/20251202-module-version-locking.md` (OpenTofu
//! branch `rfc-locking-modules`, not merged when this was written), so that entries can
//! move into `.terraform.lock.hcl` the day the tools read them there. The RFC has `module`
//! blocks in `.terraform.lock.hcl` with `version`, `constraints` and `hashes` (one `h1:` of
//! the extracted directory, one `zh:` of the archive) exactly as here. It differs in:
//!
//! - **the file**: OpenTofu today warns about `module` blocks in `.terraform.lock.hcl`,
//!   ignores them, and does not write them back; so they live in their own file until
//!   then;
//! - **the label**: the RFC labels a block with the fully qualified registry address, so
//!   calls of one source and version share an entry (and its open question 2 is two
//!   versions of one source); here the label is the call path and the address is in
//!   `source`. Moving entries into the RFC's form groups them by `source` and `version`;
//! - **what is locked**: the RFC locks registry modules only, and only those declared
//!   read-only (`module-package.meta.hcl`); here every remote call is locked (git, HTTP
//!   archives, OCI), and `commit` is this file's own, for git modules.

mod reader;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::io;
use std::path::{Path, PathBuf};

use crate::flavor::{DecidedBy, Flavor, FlavorChoice};
use crate::hclwrite::{write_aligned_attributes, write_string_list};
use crate::string_literal::quote;

/// The module lock file's name, in the root module's directory.
pub const FILE_NAME: &str = ".tstore.lock.hcl";

/// The comment lines every rendered module lock file starts with.
pub const HEADER: &str = "# This file is maintained automatically by \"tstore init\".\n# Manual edits may be lost in future updates.\n";

/// A module lock file: what each remote module call was installed from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleLock {
    /// The entries by call path (`a.b.c`).
    pub entries: BTreeMap<String, ModuleLockEntry>,
}

/// What one remote module call was installed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleLockEntry {
    /// The package address installed.
    pub source: String,
    /// Registry: the version selected; git: the ref as written.
    pub version: Option<String>,
    /// The call's `version` argument as written, when it has one.
    pub constraints: Option<String>,
    /// Git only: the full commit id the ref resolved to.
    pub commit: Option<String>,
    /// `h1:` of the package tree, `zh:` of the archive where there is one; other schemes
    /// kept as read.
    pub hashes: BTreeSet<String>,
}

/// One argument of a module lock entry, for [`Change::Changed`]; shown as its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `source`.
    Source,
    /// `version`.
    Version,
    /// `constraints`.
    Constraints,
    /// `commit`.
    Commit,
    /// `hashes`.
    Hashes,
}

impl Field {
    /// The argument's name in the file.
    pub fn name(self) -> &'static str {
        match self {
            Field::Source => "source",
            Field::Version => "version",
            Field::Constraints => "constraints",
            Field::Commit => "commit",
            Field::Hashes => "hashes",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one call path's entry differs between two module locks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// In the new lock only.
    Added(String),
    /// In the old lock only.
    Removed(String),
    /// In both, with these arguments different (in file order, never empty).
    Changed {
        /// The call path.
        key: String,
        /// The arguments that differ.
        fields: Vec<Field>,
    },
}

impl Change {
    /// The call path the change is about.
    pub fn key(&self) -> &str {
        match self {
            Change::Added(key) | Change::Removed(key) | Change::Changed { key, .. } => key,
        }
    }
}

/// What is wrong in a module lock file; shown without any of the file's text but names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModuleLockProblem {
    /// Not HCL; the parser's message names what it expected, never the text it met.
    #[error("invalid HCL syntax: {0}")]
    Syntax(String),
    /// An argument outside any block.
    #[error("unexpected argument {0:?} at the top level; this file holds only \"module\" blocks")]
    TopLevelArgument(String),
    /// A block other than `module`, at the top level or inside one.
    #[error("unsupported block type {0:?}; this file holds only \"module\" blocks, each with arguments only")]
    UnsupportedBlock(String),
    /// A `module` block without exactly one label.
    #[error("a module block takes one label, the module call path; found {0}")]
    LabelCount(usize),
    /// A label that is not a call path ([`is_call_path`]).
    #[error(
        "the module block label is not a module call path (names of letters, digits, \"_\" and \"-\" joined by \".\")"
    )]
    InvalidCallPath,
    /// A second block for the same call path.
    #[error("duplicate module block {key:?}; the first is at line {first_line}")]
    DuplicateCallPath {
        /// The call path.
        key: String,
        /// Where its first block starts.
        first_line: usize,
    },
    /// An argument a module block does not have.
    #[error("unsupported argument {0:?} in a module block; expected source, version, constraints, commit or hashes")]
    UnknownArgument(String),
    /// A module block without `source`.
    #[error("the argument \"source\" is required, but no definition was found")]
    MissingSource,
    /// A `source` of the empty string.
    #[error("the argument \"source\" must not be empty")]
    EmptySource,
    /// `source`, `version`, `constraints` or `commit` not a plain string.
    #[error("the argument {0:?} must be a string literal")]
    NotAString(&'static str),
    /// `hashes` not a list.
    #[error("the argument \"hashes\" must be a list of string literals")]
    HashesNotAList,
    /// A `hashes` item not a plain string.
    #[error("each hash must be a string literal")]
    HashNotAString,
    /// `hashes = []`.
    #[error("the argument \"hashes\" must either be omitted or list at least one hash")]
    EmptyHashes,
    /// A hash without a `scheme:` prefix.
    #[error("invalid hash: a hash must start with a scheme keyword followed by a colon")]
    HashWithoutScheme,
    /// An `h1:` hash that is not the base64 of a sha256 digest.
    #[error("invalid h1: hash: expected the standard base64 of 32 bytes (44 characters ending in \"=\")")]
    InvalidH1,
    /// A `zh:` hash that is not a sha256 digest in hex.
    #[error("invalid zh: hash: expected 64 lowercase hexadecimal digits")]
    InvalidZh,
    /// A `commit` that is not a full commit id.
    #[error(
        "the argument \"commit\" must be a full commit id: 40 or 64 lowercase hexadecimal digits"
    )]
    InvalidCommit,
}

/// Errors from reading a module lock file.
#[derive(Debug, thiserror::Error)]
pub enum ModuleLockError {
    /// The file exists but could not be read.
    #[error("cannot read module lock file {}", path.display())]
    Read {
        /// The lock file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        err: io::Error,
    },
    /// The file is not a valid module lock file.
    #[error("{}:{line}:{column}: {problem}", path.display())]
    Invalid {
        /// The lock file, as given to [`parse`].
        path: PathBuf,
        /// One-based line of the offending construct.
        line: usize,
        /// One-based column (in characters) of the offending construct.
        column: usize,
        /// What is wrong.
        problem: ModuleLockProblem,
    },
}

impl ModuleLockError {
    /// What is wrong, if the file was read.
    pub fn problem(&self) -> Option<&ModuleLockProblem> {
        match self {
            ModuleLockError::Read { .. } => None,
            ModuleLockError::Invalid { problem, .. } => Some(problem),
        }
    }
}

/// Whether `key` is a module call path as the install writes it: segments joined by `.`,
/// each one or more ASCII letters, digits, `_` or `-` (a call's name is an identifier; a
/// test file's call path also holds the file's directory and stem, `test.tests.001_basic.x`).
/// Such a key is one plain file name: never empty, never `.`/`..`, no `/`, no NUL. The
/// reader accepts exactly the keys the writer can produce, and the working directory's
/// guard uses the same rule.
pub fn is_call_path(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

/// Read and parse the module lock file at `path`; `Ok(None)` if it does not exist. It is
/// tstore's own file in a checkout: read only as a regular file under its name, never
/// through a symlink (whose target, another file of the machine, would be parsed and its
/// names quoted in errors).
pub fn load(path: &Path) -> Result<Option<ModuleLock>, ModuleLockError> {
    match crate::read::read_own_capped(path, crate::read::MAX_LOCK_FILE) {
        Ok(text) => parse(&text, path).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(ModuleLockError::Read {
            path: path.to_owned(),
            err,
        }),
    }
}

/// Parse a module lock file's text; `path` names the file in errors. The rules are in
/// the module documentation.
pub fn parse(text: &str, path: &Path) -> Result<ModuleLock, ModuleLockError> {
    reader::parse(text, path)
}

/// The canonical text of `lock`: the same content always renders to the same bytes. The
/// rules are in the module documentation.
pub fn render(lock: &ModuleLock) -> String {
    let mut out = String::from(HEADER);
    for (key, entry) in &lock.entries {
        out.push('\n');
        let _ = writeln!(out, "module {} {{", quote(key));
        let mut attrs = vec![(Field::Source.name(), quote(&entry.source))];
        for (field, value) in [
            (Field::Version, &entry.version),
            (Field::Constraints, &entry.constraints),
            (Field::Commit, &entry.commit),
        ] {
            if let Some(value) = value {
                attrs.push((field.name(), quote(value)));
            }
        }
        write_aligned_attributes(&mut out, "  ", &attrs);
        if !entry.hashes.is_empty() {
            write_string_list(
                &mut out,
                "  ",
                Field::Hashes.name(),
                entry.hashes.iter().map(String::as_str),
            );
        }
        out.push_str("}\n");
    }
    out
}

/// How `new` differs from `old`, one [`Change`] per call path that differs, in call path
/// order.
pub fn diff(old: &ModuleLock, new: &ModuleLock) -> Vec<Change> {
    let keys: BTreeSet<&String> = old.entries.keys().chain(new.entries.keys()).collect();
    keys.into_iter()
        .filter_map(|key| match (old.entries.get(key), new.entries.get(key)) {
            (None, Some(_)) => Some(Change::Added(key.clone())),
            (Some(_), None) => Some(Change::Removed(key.clone())),
            (Some(before), Some(after)) => {
                let fields = before.changed_fields(after);
                (!fields.is_empty()).then(|| Change::Changed {
                    key: key.clone(),
                    fields,
                })
            }
            (None, None) => None,
        })
        .collect()
}

impl ModuleLockEntry {
    /// The arguments that differ between `self` and `other`, in file order.
    pub fn changed_fields(&self, other: &ModuleLockEntry) -> Vec<Field> {
        [
            (Field::Source, self.source == other.source),
            (Field::Version, self.version == other.version),
            (Field::Constraints, self.constraints == other.constraints),
            (Field::Commit, self.commit == other.commit),
            (Field::Hashes, self.hashes == other.hashes),
        ]
        .into_iter()
        .filter_map(|(field, same)| (!same).then_some(field))
        .collect()
    }
}

/// What the existing module lock file at `path` says about the tool that wrote it: the
/// flavor whose default registry host every entry naming a default host names (a module
/// from the default registry is locked as `HOST/NS/NAME/SYSTEM`). `None` when there is no
/// such file, it cannot be read or parsed, or its entries name both hosts or neither.
pub fn flavor_evidence(path: &Path) -> Option<FlavorChoice> {
    let text = crate::read::read_capped(path, crate::read::MAX_LOCK_FILE).ok()?;
    let lock = parse(&text, path).ok()?;
    let mut hosts = [Flavor::Tofu, Flavor::Terraform].into_iter().filter(|f| {
        let prefix = format!("{}/", f.default_registry_host());
        lock.entries.values().any(|e| e.source.starts_with(&prefix))
    });
    match (hosts.next(), hosts.next()) {
        (Some(flavor), None) => Some(FlavorChoice {
            flavor,
            decided_by: DecidedBy::ModuleLockHosts(path.to_owned()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
